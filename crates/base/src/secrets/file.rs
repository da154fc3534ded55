//! `$HEARTH_HOME/secrets.json` on disk: read only when no one else can
//! read it, written atomically and never readable by anyone but the owner.
//!
//! Writes go to a temporary file created with mode 0600 in the same
//! directory, which is synced and then renamed over the old file, so a
//! crash leaves either the old secrets or the new ones, never half a file
//! and never a moment when the values sit in a file others could read.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{SecretsError, name};

/// The file's name in `$HEARTH_HOME`.
pub const FILE_NAME: &str = "secrets.json";

/// One stored secret.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stored {
    /// The value.
    pub value: String,
    /// When it was set (Unix ms).
    pub set_at_ms: i64,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored")
            .field("value", &"[hidden]")
            .field("set_at_ms", &self.set_at_ms)
            .finish()
    }
}

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    secrets: BTreeMap<String, Stored>,
}

/// What identifies one version of the file: a rename makes a new inode, a
/// write in place changes the size or the times, a `chmod` the mode and
/// the change time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl Stamp {
    /// The stamp of the file at `path`; `None` when there is no file.
    pub fn of(path: &Path) -> Result<Option<Stamp>, SecretsError> {
        match std::fs::metadata(path) {
            Ok(meta) => Ok(Some(Stamp::from_meta(&meta))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SecretsError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    fn from_meta(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mode: meta.mode(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        }
    }
}

/// Reads the file: no file is no secrets. A file that its group or others
/// may read is refused, as is one that does not parse or holds a bad name.
pub fn read(path: &Path) -> Result<(BTreeMap<String, Stored>, Option<Stamp>), SecretsError> {
    let read_err = |source| SecretsError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((BTreeMap::new(), None)),
        Err(e) => return Err(read_err(e)),
    };
    // Checked on the open file, so the file read is the file checked.
    let meta = file.metadata().map_err(read_err)?;
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(SecretsError::Unsafe {
            path: path.to_owned(),
            mode,
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(read_err)?;
    let document: Document = serde_json::from_str(&text).map_err(|e| SecretsError::Parse {
        path: path.to_owned(),
        why: e.to_string(),
    })?;
    for name in document.secrets.keys() {
        name::check_name(name).map_err(|e| SecretsError::Parse {
            path: path.to_owned(),
            why: e.to_string(),
        })?;
    }
    Ok((document.secrets, Some(Stamp::from_meta(&meta))))
}

/// Holds the secrets' lock file (`.secrets.json.lock`, beside it) locked
/// exclusively until dropped: two `hearth secret set` at the same moment
/// each read, change and write the file in turn, and neither change is
/// lost.
pub struct Lock {
    _held: std::fs::File,
}

/// Takes the lock for a read-change-write of the file at `path`, waiting
/// for another holder.
pub fn lock(path: &Path) -> Result<Lock, SecretsError> {
    use std::os::fd::AsRawFd;
    let dir = path.parent().unwrap_or(Path::new("."));
    let lock_path = dir.join(format!(".{FILE_NAME}.lock"));
    let err = |source| SecretsError::Write {
        path: lock_path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(err)?;
    loop {
        // SAFETY: flock on a descriptor this function owns; it takes no
        // pointers.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(Lock { _held: file });
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(err(e));
        }
    }
}

/// Replaces the file with `secrets`, atomically, mode 0600.
pub fn write(path: &Path, secrets: BTreeMap<String, Stored>) -> Result<(), SecretsError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    let write_err = |source| SecretsError::Write {
        path: path.to_owned(),
        source,
    };
    let text = serde_json::to_vec_pretty(&Document { secrets })
        .map_err(|e| write_err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    let written = (|| {
        // A stale temporary file from a crash of this same pid is replaced.
        let _ = std::fs::remove_file(&temp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(&text)?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        // The rename itself is durable once the directory is synced.
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(write_err)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn a_missing_file_is_none_and_any_other_failure_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join(FILE_NAME);
        assert_eq!(Stamp::of(&missing).unwrap(), None);
        assert!(read(&missing).unwrap().0.is_empty());
        // A path through a regular file fails with "not a directory":
        // not a missing file, so not "no secrets".
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        let through = plain.join(FILE_NAME);
        assert!(matches!(
            Stamp::of(&through),
            Err(SecretsError::Read { .. })
        ));
        assert!(matches!(read(&through), Err(SecretsError::Read { .. })));
    }

    #[test]
    fn a_stamp_counts_the_times_to_the_nanosecond() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let file = std::fs::File::create(&path).unwrap();
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        file.set_modified(at).unwrap();
        let stamp = Stamp::of(&path).unwrap().unwrap();
        assert_eq!(stamp.mtime_ns, 1_700_000_000_123_456_789);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(
            stamp.ctime_ns,
            meta.ctime() * 1_000_000_000 + meta.ctime_nsec()
        );
        // A write that keeps the size but moves the time by a nanosecond
        // is a new version.
        file.set_modified(at + Duration::from_nanos(1)).unwrap();
        assert_ne!(Stamp::of(&path).unwrap().unwrap(), stamp);
    }

    #[test]
    fn a_stored_secret_debugs_as_hidden() {
        let stored = Stored {
            value: "value-long-enough".into(),
            set_at_ms: 7,
        };
        let shown = format!("{stored:?}");
        assert!(
            shown.contains("Stored") && shown.contains("[hidden]") && shown.contains('7'),
            "{shown}"
        );
        assert!(!shown.contains("value-long-enough"), "{shown}");
    }
}
