//! `manifest.json`, the first entry of every archive: what made it, the
//! schema of its `hearth.db`, and each file with its size and SHA-256, so
//! a restore checks everything before it writes anything.

use std::io::Read;

use serde::{Deserialize, Serialize};

/// The manifest's own format; a restore refuses a newer one.
pub const FORMAT: u32 = 1;

/// The manifest's name inside an archive.
pub const NAME: &str = "manifest.json";

/// The largest manifest a restore reads.
pub const MAX_SIZE: u64 = 16 << 20;

/// What an archive holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`] when it was written.
    pub format: u32,
    /// The hearth version that made it.
    pub hearth: String,
    /// `hearth.db`'s `PRAGMA user_version` in the snapshot.
    pub schema_version: i64,
    /// When it was made (RFC 3339, UTC).
    pub created: String,
    /// The `$HEARTH_HOME` it was made from.
    pub home: String,
    /// Where the config file was (it is `hearth.toml` in the archive).
    pub config: Option<String>,
    /// Whether `secrets.json` is in it.
    pub secrets: bool,
    /// Every file, by its path in the archive (relative to the home).
    pub files: Vec<FileEntry>,
}

/// One file of an archive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Its path, relative to the home, `/`-separated.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
}

/// The size and SHA-256 (hex) of what `reader` yields, copied to `sink`
/// on the way.
pub fn hash_copy(
    mut reader: impl Read,
    mut sink: impl std::io::Write,
) -> std::io::Result<(u64, String)> {
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 64 << 10];
    let mut size = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        digest.update(&buf[..n]);
        sink.write_all(&buf[..n])?;
        size += n as u64;
    }
    let hex = digest
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((size, hex))
}
