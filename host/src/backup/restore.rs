//! Restoring an archive into a stopped home.
//!
//! Two passes over the archive: the first reads it whole and checks
//! everything (gzip and tar intact, the manifest first, every entry a
//! plain file at a path inside the home that the manifest lists, every
//! size and SHA-256 as listed, the schema no newer than this build's)
//! and writes nothing; the second writes the files into a staging folder
//! inside the home, checking each again, and only then moves them into
//! place. A refused archive leaves the home as it was.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use flate2::read::GzDecoder;
use jiff::Timestamp;

use super::manifest::{self, FileEntry, Manifest};
use super::{DB_FILES, MEDIA_TREES, RestoreError, SECRETS, TREES};
use hearth_base::store::SCHEMA_VERSION;

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// The home it wrote.
    pub home: PathBuf,
    /// The archive's manifest.
    pub manifest: Manifest,
    /// Where the files it replaced were moved (with `--force`).
    pub moved_aside: Option<PathBuf>,
}

/// Checks `archive` whole without writing anything; its manifest.
pub fn verify(archive: &Path) -> Result<Manifest, RestoreError> {
    read(archive, |_, _| Ok(std::io::sink()), |_| Ok(()))
}

/// Restores `archive` into `home`: refused while a daemon runs there,
/// and, unless `force`, when the home holds anything (with `force` the
/// files it replaces are moved into `home/before-restore-<time>/`).
pub fn restore(
    archive: &Path,
    home: &Path,
    force: bool,
    now: Timestamp,
) -> Result<Restored, RestoreError> {
    if daemon_runs(home) {
        return Err(RestoreError::DaemonRuns {
            home: home.to_owned(),
        });
    }
    let manifest = verify(archive)?;
    let existing = entries(home)?;
    if !existing.is_empty() && !force {
        return Err(RestoreError::NotEmpty {
            home: home.to_owned(),
            found: existing.into_iter().take(5).collect::<Vec<_>>().join(", "),
        });
    }
    let io = |what: &str, path: &Path| {
        let (what, path) = (what.to_owned(), path.to_owned());
        move |source| RestoreError::Io { what, path, source }
    };
    mkdir(home).map_err(io("create the home", home))?;
    let stamp = now.strftime("%Y-%m-%dT%H%M%SZ").to_string();
    let staging = Staging(home.join(format!(".restore-{stamp}")));
    let _ = std::fs::remove_dir_all(&staging.0);
    mkdir(&staging.0).map_err(io("create a staging folder", &staging.0))?;
    read(
        archive,
        |entry, _| {
            let target = staging.0.join(&entry.path);
            if let Some(parent) = target.parent() {
                mkdir(parent)?;
            }
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&target)
        },
        |file| file.sync_all(),
    )?;
    let tops = top_level(&manifest);
    let mut moved_aside = None;
    if !existing.is_empty() {
        let aside = home.join(format!("before-restore-{stamp}"));
        for name in tops.iter().flat_map(|top| {
            let wal = DB_FILES
                .contains(&top.as_str())
                .then(|| [format!("{top}-wal"), format!("{top}-shm")]);
            std::iter::once(top.clone()).chain(wal.into_iter().flatten())
        }) {
            let old = home.join(&name);
            if old.symlink_metadata().is_err() {
                continue;
            }
            mkdir(&aside).map_err(io("create", &aside))?;
            std::fs::rename(&old, aside.join(&name)).map_err(io("move aside", &old))?;
            moved_aside = Some(aside.clone());
        }
    }
    for top in &tops {
        let from = staging.0.join(top);
        std::fs::rename(&from, home.join(top)).map_err(io("move into place", &from))?;
    }
    if let Ok(dir) = File::open(home) {
        let _ = dir.sync_all();
    }
    Ok(Restored {
        home: home.to_owned(),
        manifest,
        moved_aside,
    })
}

/// Whether a daemon answers on `home`'s control socket.
pub fn daemon_runs(home: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(home.join(crate::daemon::control::SOCKET)).is_ok()
}

/// The staging folder, removed when dropped.
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mkdir(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

/// The names in `home`, or none when it does not exist.
fn entries(home: &Path) -> Result<Vec<String>, RestoreError> {
    match std::fs::read_dir(home) {
        Ok(list) => Ok(list
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(RestoreError::Io {
            what: "list".into(),
            path: home.to_owned(),
            source,
        }),
    }
}

/// The top-level names the manifest's files live under.
fn top_level(manifest: &Manifest) -> Vec<String> {
    let mut tops: Vec<String> = manifest
        .files
        .iter()
        .filter_map(|f| f.path.split('/').next().map(str::to_owned))
        .collect();
    tops.sort();
    tops.dedup();
    tops
}

/// Reads the archive through, checking as [`verify`] says; each file's
/// bytes go to the writer `open` gives, which `done` closes.
fn read<W: Write>(
    archive: &Path,
    mut open: impl FnMut(&FileEntry, &Manifest) -> std::io::Result<W>,
    mut done: impl FnMut(W) -> std::io::Result<()>,
) -> Result<Manifest, RestoreError> {
    let file = File::open(archive).map_err(|source| RestoreError::Io {
        what: "open".into(),
        path: archive.to_owned(),
        source,
    })?;
    let bad = |e: std::io::Error| unreadable(archive, e);
    let mut magic = [0u8; 2];
    let mut reader = BufReader::new(file);
    reader.read_exact(&mut magic).map_err(bad)?;
    if magic != [0x1f, 0x8b] {
        return Err(RestoreError::NotGzip {
            archive: archive.to_owned(),
        });
    }
    let gz = GzDecoder::new(std::io::Cursor::new(magic).chain(reader));
    let mut tar = tar::Archive::new(gz);
    let mut manifest: Option<Manifest> = None;
    let mut seen: Vec<String> = Vec::new();
    let damaged = |why: String| RestoreError::Damaged {
        archive: archive.to_owned(),
        why,
    };
    for entry in tar.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry_path(&entry).map_err(&damaged)?;
        let kind = entry.header().entry_type();
        if !kind.is_file() {
            return Err(RestoreError::NotAFile {
                archive: archive.to_owned(),
                entry: path,
                kind: kind_name(kind).to_owned(),
            });
        }
        let Some(listed) = &manifest else {
            if path != manifest::NAME {
                return Err(RestoreError::NoManifest {
                    archive: archive.to_owned(),
                    first: path,
                });
            }
            manifest = Some(read_manifest(archive, &mut entry)?);
            continue;
        };
        check_path(&path).map_err(|why| RestoreError::UnsafePath {
            archive: archive.to_owned(),
            entry: path.clone(),
            why,
        })?;
        let Some(expected) = listed.files.iter().find(|f| f.path == path) else {
            return Err(damaged(format!("{path} is not in the manifest")));
        };
        if seen.contains(&path) {
            return Err(damaged(format!("{path} is in it twice")));
        }
        let mut head = Vec::new();
        let writer = open(expected, listed).map_err(|source| RestoreError::Io {
            what: "write".into(),
            path: PathBuf::from(&path),
            source,
        })?;
        let mut tee = Head {
            inner: writer,
            head: &mut head,
        };
        let (size, sha256) = manifest::hash_copy(&mut entry, &mut tee).map_err(bad)?;
        done(tee.inner).map_err(|source| RestoreError::Io {
            what: "write".into(),
            path: PathBuf::from(&path),
            source,
        })?;
        if size != expected.size || sha256 != expected.sha256 {
            return Err(damaged(format!(
                "{path} is not what the manifest lists ({size} bytes, SHA-256 {sha256}; \
                 listed: {} bytes, {})",
                expected.size, expected.sha256
            )));
        }
        if path == DB_FILES[0] {
            check_schema(archive, &head, listed.schema_version)?;
        }
        seen.push(path);
    }
    // The gzip trailer (length and CRC) is checked only once the stream is
    // read to its end: a file cut after the tar's last block shows here.
    std::io::copy(&mut tar.into_inner(), &mut std::io::sink()).map_err(bad)?;
    let Some(manifest) = manifest else {
        return Err(RestoreError::NoManifest {
            archive: archive.to_owned(),
            first: "nothing".into(),
        });
    };
    if let Some(missing) = manifest.files.iter().find(|f| !seen.contains(&f.path)) {
        return Err(damaged(format!(
            "{} is in the manifest but not in the archive (is it truncated?)",
            missing.path
        )));
    }
    Ok(manifest)
}

/// Keeps the first 100 bytes written (a database's header).
struct Head<'a, W> {
    inner: W,
    head: &'a mut Vec<u8>,
}

impl<W: Write> Write for Head<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        let room = 100usize.saturating_sub(self.head.len()).min(n);
        self.head.extend_from_slice(&buf[..room]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The manifest, read and checked.
fn read_manifest(archive: &Path, entry: &mut impl Read) -> Result<Manifest, RestoreError> {
    let mut text = Vec::new();
    entry
        .take(manifest::MAX_SIZE + 1)
        .read_to_end(&mut text)
        .map_err(|e| unreadable(archive, e))?;
    let damaged = |why: String| RestoreError::Damaged {
        archive: archive.to_owned(),
        why,
    };
    if text.len() as u64 > manifest::MAX_SIZE {
        return Err(damaged("manifest.json is over 16 MiB".into()));
    }
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| damaged(format!("manifest.json does not read: {e}")))?;
    if manifest.format > manifest::FORMAT {
        return Err(RestoreError::TooNew {
            archive: archive.to_owned(),
            what: format!(
                "its manifest format {} (this hearth reads up to {})",
                manifest.format,
                manifest::FORMAT
            ),
            hearth: manifest.hearth,
        });
    }
    if manifest.schema_version > SCHEMA_VERSION {
        return Err(RestoreError::TooNew {
            archive: archive.to_owned(),
            what: format!(
                "its database schema version {} (this hearth knows up to {SCHEMA_VERSION})",
                manifest.schema_version
            ),
            hearth: manifest.hearth,
        });
    }
    for file in &manifest.files {
        check_path(&file.path).map_err(|why| RestoreError::UnsafePath {
            archive: archive.to_owned(),
            entry: file.path.clone(),
            why,
        })?;
    }
    if !manifest.files.iter().any(|f| f.path == DB_FILES[0]) {
        return Err(damaged(format!("the manifest lists no {}", DB_FILES[0])));
    }
    Ok(manifest)
}

/// The database's own schema version (its header's `user_version`) must
/// be the manifest's: an archive whose manifest was edited to pass the
/// version check is refused too.
fn check_schema(archive: &Path, head: &[u8], listed: i64) -> Result<(), RestoreError> {
    let damaged = |why: String| RestoreError::Damaged {
        archive: archive.to_owned(),
        why,
    };
    if head.len() < 100 || !head.starts_with(b"SQLite format 3\0") {
        return Err(damaged(format!("{} is not a SQLite database", DB_FILES[0])));
    }
    let version = i64::from(i32::from_be_bytes([head[60], head[61], head[62], head[63]]));
    if version != listed {
        return Err(damaged(format!(
            "{} has schema version {version}, the manifest says {listed}",
            DB_FILES[0]
        )));
    }
    Ok(())
}

/// An entry's path as UTF-8 text.
fn entry_path<R: Read>(entry: &tar::Entry<'_, R>) -> Result<String, String> {
    let bytes = entry.path_bytes();
    std::str::from_utf8(&bytes).map(str::to_owned).map_err(|_| {
        format!(
            "an entry's name is not UTF-8: {:?}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// A path a restore may write: relative, only plain names (no `..`, no
/// `.`, no root), under one of the names a backup holds.
fn check_path(path: &str) -> Result<(), String> {
    let parsed = Path::new(path);
    if parsed.is_absolute() {
        return Err("an absolute path".into());
    }
    if path.is_empty()
        || path
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err("a path that leaves the home or is not plain".into());
    }
    if !parsed
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return Err("a path that leaves the home or is not plain".into());
    }
    let top = path.split('/').next().unwrap_or_default();
    let single = DB_FILES.contains(&path) || path == "hearth.toml" || path == SECRETS;
    let in_tree = (TREES.contains(&top) || MEDIA_TREES.contains(&top)) && path.len() > top.len();
    if !(single || in_tree) {
        return Err(format!(
            "not a file a backup holds ({}, hearth.toml, {SECRETS}, or under {}/, {}/)",
            DB_FILES.join(", "),
            TREES.join("/, "),
            MEDIA_TREES.join("/, ")
        ));
    }
    Ok(())
}

fn kind_name(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "a symbolic link",
        tar::EntryType::Link => "a hard link",
        tar::EntryType::Directory => "a directory",
        tar::EntryType::Char | tar::EntryType::Block => "a device",
        tar::EntryType::Fifo => "a FIFO",
        _ => "not a plain file",
    }
}

/// An I/O error while reading the archive, said for what it likely is.
fn unreadable(archive: &Path, e: std::io::Error) -> RestoreError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        RestoreError::Truncated {
            archive: archive.to_owned(),
        }
    } else {
        RestoreError::Damaged {
            archive: archive.to_owned(),
            why: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_path;

    #[test]
    fn only_plain_paths_under_the_backed_up_names_pass() {
        for good in [
            "hearth.db",
            "agent_data.db",
            "tools/a.lua",
            "pages/x/y.html",
        ] {
            assert_eq!(check_path(good), Ok(()), "{good}");
        }
        for bad in [
            "../x",
            "/etc/passwd",
            "tools/../../x",
            "./hearth.db",
            "tools//a",
            "tools",
            ".bashrc",
            "hearth.sock",
            "",
        ] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
    }
}
