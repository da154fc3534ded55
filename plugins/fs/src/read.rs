//! `read_file`: a file's content as text (whole or a line range) or base64,
//! capped at `max_read_bytes`; an image, for the model to see.
//!
//! The file is streamed, so a line range near the start of a huge file or
//! the head of an over-cap file costs only what is returned. An image file
//! (JPEG, PNG, GIF, WebP by its first bytes) read without `encoding` is
//! answered with an `image` member naming it, which the host turns into an
//! image the model sees (it reads, checks and downscales the file itself).
//! A document (PDF, DOCX, XLSX, ODS by its bytes) read so is answered with
//! its text and notes on what was cut (`document`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use base64::Engine;
use hearth_sdk::PluginError;
use hearth_sdk::files::{IMAGE_SNIFF_BYTES, image_mime};
use serde_json::{Value, json};

use crate::Fs;
use crate::args::{Args, Encoding, encoding, invalid};
use crate::document::read_document;
use crate::paths::io_error;

/// Runs `read_file`.
pub fn read_file(fs: &Fs, args: &Value) -> Result<Value, PluginError> {
    let args = Args::new(args, &["path", "offset_line", "limit_lines", "encoding"])?;
    let path = fs.roots.resolve("path", args.string("path")?)?;
    let offset = args.opt_u64("offset_line", 1)?;
    let limit = args.opt_u64("limit_lines", 1)?;
    let encoding = encoding(&args)?;
    if encoding == Encoding::Base64 && (offset.is_some() || limit.is_some()) {
        let field = if offset.is_some() {
            "offset_line"
        } else {
            "limit_lines"
        };
        return Err(invalid(field, "line ranges need encoding \"text\""));
    }
    fs.roots.check_readable("path", &path)?;
    let mut file = File::open(&path).map_err(|e| io_error("cannot open", &path, &e))?;
    // Checked again on what was opened: the path may have been swapped
    // for a link since.
    fs.roots
        .check_readable("path", &opened_path(&file).unwrap_or_else(|| path.clone()))?;
    let meta = file
        .metadata()
        .map_err(|e| io_error("cannot stat", &path, &e))?;
    if meta.is_dir() {
        return Err(PluginError::failed(format!(
            "{} is a directory; use list_directory",
            path.display()
        )));
    }
    let size = meta.len();
    let cap = fs.max_read_bytes;
    let shown = path.display().to_string();
    if encoding == Encoding::Text
        && offset.is_none()
        && limit.is_none()
        && let Some(mime) =
            sniff_image(&mut file).map_err(|e| io_error("cannot read", &path, &e))?
    {
        return Ok(json!({
            "path": shown,
            "encoding": "image",
            "mime": mime,
            "size": size,
            "image": { "path": shown, "mime": mime },
        }));
    }
    if encoding == Encoding::Text
        && offset.is_none()
        && limit.is_none()
        && let Some(document) = read_document(&mut file, &shown, size, &fs.documents)?
    {
        return Ok(document);
    }
    if encoding == Encoding::Base64 {
        let mut head = Vec::new();
        file.take(cap)
            .read_to_end(&mut head)
            .map_err(|e| io_error("cannot read", &path, &e))?;
        let truncated = (head.len() as u64) < size;
        return Ok(json!({
            "path": shown,
            "content": base64::engine::general_purpose::STANDARD.encode(&head),
            "encoding": "base64",
            "size": size,
            "truncated": truncated,
        }));
    }
    let first = offset.unwrap_or(1);
    let last = limit.map_or(u64::MAX, |n| first.saturating_add(n - 1));
    // Counting every line costs a full read: worth it only within the cap.
    let count_all = size <= cap;
    let taken = take_lines(BufReader::new(file), first, last, cap, count_all)
        .map_err(|e| io_error("cannot read", &path, &e))?;
    let mut bytes = taken.bytes;
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        // A cut in the middle of a character is the cap's doing, not binary.
        Err(e) if taken.truncated && e.error_len().is_none() => bytes.truncate(e.valid_up_to()),
        Err(_) => return Err(not_text(&shown)),
    }
    let content = String::from_utf8(bytes).map_err(|_| not_text(&shown))?;
    if offset.is_some() && !taken.reached_first && !(first == 1 && size == 0) {
        return Err(invalid(
            "offset_line",
            &format!(
                "line {first} is past the end of {shown}, which has {} lines",
                taken.lines_seen
            ),
        ));
    }
    let mut out = json!({
        "path": shown,
        "content": content,
        "encoding": "text",
        "size": size,
        "truncated": taken.truncated,
    });
    if count_all {
        out["lines"] = json!(taken.lines_seen);
    }
    if offset.is_some() || limit.is_some() {
        out["start_line"] = json!(first);
        out["end_line"] = json!(taken.last_line.unwrap_or(first.saturating_sub(1)));
    }
    Ok(out)
}

/// The image type of `file` by its first bytes, leaving it at its start.
fn sniff_image(file: &mut File) -> std::io::Result<Option<&'static str>> {
    use std::io::{Seek, SeekFrom};
    let mut head = Vec::with_capacity(IMAGE_SNIFF_BYTES);
    (&mut *file)
        .take(IMAGE_SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(image_mime(&head))
}

fn not_text(shown: &str) -> PluginError {
    PluginError::failed(format!(
        "{shown} is not valid UTF-8 text (a binary file?); read it with encoding \"base64\""
    ))
}

/// What [`take_lines`] found.
struct Taken {
    bytes: Vec<u8>,
    truncated: bool,
    reached_first: bool,
    /// The last line (1-based) any byte of which was returned.
    last_line: Option<u64>,
    /// Lines seen: all of them when counting to the end, else up to the stop.
    lines_seen: u64,
}

/// Copies lines `first..=last` from `reader`, at most `cap` bytes; reads on
/// to the end to count lines when `count_all`.
fn take_lines(
    mut reader: impl BufRead,
    first: u64,
    last: u64,
    cap: u64,
    count_all: bool,
) -> std::io::Result<Taken> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut taken = Taken {
        bytes: Vec::new(),
        truncated: false,
        reached_first: false,
        last_line: None,
        lines_seen: 0,
    };
    // The 1-based number of the line the next byte belongs to.
    let mut line: u64 = 1;
    let mut at_line_start = true;
    let mut copying = true;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        let mut i = 0;
        while i < len {
            let end = buf[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(len, |p| i + p + 1);
            let segment = &buf[i..end];
            if at_line_start {
                taken.lines_seen = line;
            }
            if copying && line >= first && line <= last {
                taken.reached_first = true;
                let room = cap - taken.bytes.len();
                if segment.len() > room {
                    taken.bytes.extend_from_slice(&segment[..room]);
                    taken.truncated = true;
                    copying = false;
                } else {
                    taken.bytes.extend_from_slice(segment);
                }
                taken.last_line = Some(line);
            }
            at_line_start = segment.last() == Some(&b'\n');
            if at_line_start {
                line += 1;
                if line > last {
                    copying = false;
                }
            }
            i = end;
        }
        reader.consume(len);
        if !copying && !count_all {
            break;
        }
    }
    Ok(taken)
}

/// The path the kernel gives an open file (`/proc/self/fd/N`), to check
/// what was really opened.
pub fn opened_path(file: &File) -> Option<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_counts_and_caps() {
        let text = b"one\ntwo\nthree\nfour";
        let cases: &[(u64, u64, u64, &str, u64, bool)] = &[
            (1, u64::MAX, 100, "one\ntwo\nthree\nfour", 4, false),
            (2, 3, 100, "two\nthree\n", 4, false),
            (4, u64::MAX, 100, "four", 4, false),
            (1, u64::MAX, 5, "one\nt", 4, true),
            (3, 3, 2, "th", 4, true),
        ];
        for &(first, last, cap, want, lines, truncated) in cases {
            let got = take_lines(&text[..], first, last, cap, true).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&got.bytes),
                want,
                "{first}..{last} cap {cap}"
            );
            assert_eq!(got.lines_seen, lines, "{first}..{last}");
            assert_eq!(got.truncated, truncated, "{first}..{last}");
        }
        let past = take_lines(&text[..], 9, 9, 100, true).unwrap();
        assert!(!past.reached_first);
        let trailing = take_lines(&b"a\nb\n"[..], 1, u64::MAX, 100, true).unwrap();
        assert_eq!(trailing.lines_seen, 2);
    }
}
