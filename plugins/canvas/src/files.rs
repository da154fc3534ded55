//! `GET /files/<path>`: the files in `$HEARTH_HOME/shared`, and the one
//! way the canvas opens a file someone else placed (the agent's pages
//! read theirs through [`open_within`] too).
//!
//! `shared/` is written by the agent and its tools, so what is in it is
//! not trusted: a symbolic link there may point at `canvas.token` or
//! `/etc`, a hard link may be another name for `secrets.json`. A file is
//! served only if the inode opened is the one at a link-free path inside
//! the allowed directory (checked after opening, so a link swapped in
//! between the check and the open is caught), is a regular file, and is
//! none of the home's credential files. A link inside `shared/` to
//! another file inside it works. Everything refused answers 404, like a
//! file that is not there, so nothing outside can be probed.
//!
//! Responses carry a content type guessed from the name and honour one
//! byte range (`Range: bytes=a-b`), which a `<video>` needs to seek.

use std::fs::{File, Metadata};
use std::io::SeekFrom;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::state::Server;

/// The files in `$HEARTH_HOME` that hold credentials or the owner's
/// data, refused under any other name.
pub const CREDENTIALS: [&str; 6] = [
    "canvas.token",
    "secrets.json",
    "hearth.db",
    "hearth.db-wal",
    "hearth.db-shm",
    "control.token",
];

/// The most a response body reads at once.
const CHUNK: usize = 64 * 1024;

/// Why a file is not served.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The request's path is not a path inside the directory.
    #[error("the path has an empty, `..` or badly escaped part")]
    BadPath,
    /// The file cannot be opened or inspected.
    #[error("cannot open it: {0}")]
    Io(#[from] std::io::Error),
    /// The file's real place is outside the allowed directories.
    #[error("it resolves outside the directories it may be served from")]
    Outside,
    /// The path was changed while it was being opened.
    #[error("it changed while it was being opened")]
    Moved,
    /// A directory, a device, a FIFO.
    #[error("it is not a regular file")]
    NotAFile,
    /// Another name for one of [`CREDENTIALS`].
    #[error("it is one of the home's credential files")]
    Credential,
}

/// Opens `path` for reading if it is a regular file whose real place is
/// inside one of `roots` and it is none of `home`'s [`CREDENTIALS`].
/// Blocking: call it off the async threads.
pub fn open_within(
    roots: &[PathBuf],
    path: &Path,
    home: &Path,
) -> Result<(File, Metadata), Refusal> {
    // O_NONBLOCK: opening a FIFO someone left here must not hang the
    // thread; it changes nothing for a regular file.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Refusal::NotAFile);
    }
    // Where the path leads now, every link followed...
    let real = std::fs::canonicalize(path)?;
    let inside = roots
        .iter()
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .any(|root| real.starts_with(root));
    if !inside {
        return Err(Refusal::Outside);
    }
    // ...and that it is still the file opened: otherwise a link was
    // swapped between the open and the check.
    let there = std::fs::symlink_metadata(&real)?;
    if (there.dev(), there.ino()) != (meta.dev(), meta.ino()) {
        return Err(Refusal::Moved);
    }
    let is_credential = CREDENTIALS.iter().any(|name| {
        std::fs::metadata(home.join(name))
            .is_ok_and(|c| (c.dev(), c.ino()) == (meta.dev(), meta.ino()))
    });
    if is_credential {
        return Err(Refusal::Credential);
    }
    Ok((file, meta))
}

/// `relative` (the URL path after `/files/`, still percent-encoded) as a
/// path under `root`: decoded, then split; empty and `.` parts are
/// skipped, a `..` part refuses the whole path.
pub fn join_url_path(root: &Path, relative: &str) -> Result<PathBuf, Refusal> {
    let decoded = percent_decode(relative).ok_or(Refusal::BadPath)?;
    let mut path = root.to_path_buf();
    for part in decoded.split(|b| *b == b'/') {
        match part {
            b"" | b"." => continue,
            b".." => return Err(Refusal::BadPath),
            _ if part.contains(&0) => return Err(Refusal::BadPath),
            _ => path.push(std::ffi::OsStr::from_bytes(part)),
        }
    }
    if path == root {
        return Err(Refusal::BadPath);
    }
    Ok(path)
}

/// `%XX` escapes decoded; `None` for a malformed escape.
fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// `GET /files/*`.
pub async fn serve(State(server): State<Arc<Server>>, request: Request) -> Response {
    let relative = request
        .uri()
        .path()
        .strip_prefix("/files/")
        .unwrap_or_default()
        .to_owned();
    let (shared, home) = (server.shared.clone(), server.home.clone());
    let opened = tokio::task::spawn_blocking(move || {
        let path = join_url_path(&shared, &relative)?;
        let (file, meta) = open_within(std::slice::from_ref(&shared), &path, &home)?;
        Ok::<_, Refusal>((path, file, meta))
    })
    .await;
    let (path, file, meta) = match opened {
        Ok(Ok(opened)) => opened,
        Ok(Err(refusal)) => {
            if !matches!(refusal, Refusal::Io(_) | Refusal::BadPath) {
                tracing::warn!(path = %request.uri().path(), "canvas /files refused: {refusal}");
            }
            return not_found();
        }
        Err(e) => {
            tracing::warn!("canvas /files: the opening task failed: {e}");
            return not_found();
        }
    };
    let len = meta.len();
    let range = match requested_range(request.headers(), len) {
        Ok(range) => range,
        Err(()) => {
            let mut response =
                (StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable\n").into_response();
            if let Ok(value) = HeaderValue::from_str(&format!("bytes */{len}")) {
                response.headers_mut().insert(header::CONTENT_RANGE, value);
            }
            return response;
        }
    };
    let (start, count) = range.map_or((0, len), |(a, b)| (a, b - a + 1));
    let mut file = tokio::fs::File::from_std(file);
    if start > 0
        && let Err(e) = file.seek(SeekFrom::Start(start)).await
    {
        tracing::warn!("canvas /files: cannot seek in {}: {e}", path.display());
        return not_found();
    }
    let mime = mime_guess::from_path(&path).first_or_octet_stream();
    let mut response = Response::new(body(file.take(count)));
    *response.status_mut() = if range.is_some() {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let headers = response.headers_mut();
    let mut set = |name, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    };
    set(header::CONTENT_TYPE, mime.essence_str().to_owned());
    set(header::CONTENT_LENGTH, count.to_string());
    set(header::ACCEPT_RANGES, "bytes".to_owned());
    if let Some((a, b)) = range {
        set(header::CONTENT_RANGE, format!("bytes {a}-{b}/{len}"));
    }
    response
}

/// The one byte range asked for, as inclusive `(first, last)`: `Ok(None)`
/// for the whole file (no `Range`, or one this server ignores, as several
/// ranges), `Err` for a range past the end.
fn requested_range(headers: &HeaderMap, len: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("bytes="))
    else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Ok(None);
    };
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (first, last) = match (number(first), number(last), last.is_empty()) {
        // bytes=a-b and bytes=a-
        (Some(a), Some(b), _) if a <= b => (a, b.min(len.saturating_sub(1))),
        (Some(a), None, true) => (a, len.saturating_sub(1)),
        // bytes=-n: the last n bytes.
        (None, Some(n), _) if first.is_empty() => {
            if n == 0 {
                return Err(());
            }
            (len.saturating_sub(n), len.saturating_sub(1))
        }
        _ => return Ok(None),
    };
    if first >= len {
        return Err(());
    }
    Ok(Some((first, last)))
}

/// A body streamed from `reader` in chunks, ending at its end or its
/// first error.
fn body(reader: tokio::io::Take<tokio::fs::File>) -> Body {
    let chunks = futures_util::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        let mut buf = vec![0u8; CHUNK];
        match reader.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(buf), Some(reader)))
            }
            Err(e) => Some((Err(e), None)),
        }
    });
    Body::from_stream(chunks)
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_paths_stay_under_the_root() {
        let root = Path::new("/home/x/shared");
        let cases = [
            ("notes.txt", Some("/home/x/shared/notes.txt")),
            ("a/b%20c.txt", Some("/home/x/shared/a/b c.txt")),
            ("//etc/passwd", Some("/home/x/shared/etc/passwd")),
            ("./a/./b", Some("/home/x/shared/a/b")),
            ("../x", None),
            ("%2e%2e/x", None),
            ("a%2f..%2f..%2fx", None),
            ("a/../b", None),
            ("a%00b", None),
            ("a%zz", None),
            ("a%2", None),
            ("", None),
            ("/", None),
        ];
        for (relative, expected) in cases {
            let got = join_url_path(root, relative).ok();
            assert_eq!(got.as_deref(), expected.map(Path::new), "{relative}");
        }
    }

    #[test]
    fn ranges_are_read_as_browsers_send_them() {
        let cases = [
            (None, Ok(None)),
            (Some("bytes=2-5"), Ok(Some((2, 5)))),
            (Some("bytes=2-"), Ok(Some((2, 9)))),
            (Some("bytes=-3"), Ok(Some((7, 9)))),
            (Some("bytes=-30"), Ok(Some((0, 9)))),
            (Some("bytes=5-100"), Ok(Some((5, 9)))),
            (Some("bytes=10-"), Err(())),
            (Some("bytes=-0"), Err(())),
            (Some("bytes=5-2"), Ok(None)),
            (Some("bytes=0-1,4-5"), Ok(None)),
            (Some("items=0-1"), Ok(None)),
        ];
        for (range, expected) in cases {
            let mut headers = HeaderMap::new();
            if let Some(range) = range {
                headers.insert(header::RANGE, HeaderValue::from_static(range));
            }
            assert_eq!(requested_range(&headers, 10), expected, "{range:?}");
        }
    }

    #[test]
    fn links_out_of_the_root_and_credentials_are_refused() {
        let home = tempfile::tempdir().unwrap();
        let shared = home.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::write(home.path().join("canvas.token"), "secret").unwrap();
        std::fs::write(home.path().join("other.txt"), "outside").unwrap();
        std::fs::write(shared.join("notes.txt"), "inside").unwrap();
        std::os::unix::fs::symlink("notes.txt", shared.join("inner")).unwrap();
        std::os::unix::fs::symlink("../other.txt", shared.join("outer")).unwrap();
        std::fs::hard_link(home.path().join("canvas.token"), shared.join("hard")).unwrap();
        std::fs::create_dir(shared.join("dir")).unwrap();
        let roots = [shared.clone()];
        let open = |name: &str| open_within(&roots, &shared.join(name), home.path());
        assert!(open("notes.txt").is_ok());
        assert!(open("inner").is_ok());
        assert!(matches!(open("outer"), Err(Refusal::Outside)));
        assert!(matches!(open("hard"), Err(Refusal::Credential)));
        assert!(matches!(open("dir"), Err(Refusal::NotAFile)));
        assert!(matches!(open("missing"), Err(Refusal::Io(_))));
    }
}
