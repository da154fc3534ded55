//! The control token, `$HEARTH_HOME/control.token`: how the control
//! socket knows the owner.
//!
//! Programs the agent runs (shell commands, background processes) have the
//! owner's user id, so the socket's mode 0600 does not keep them out; a
//! client is the owner only if it can show this token, which the kernel
//! floor hides from every program hearth runs. The daemon makes a fresh
//! one at every start (32 random bytes, in hex), written to a new file
//! that is 0600 from its creation and then renamed into place, so no
//! moment exists when it is readable by anyone else or half-written; it
//! removes the file when it stops cleanly. Clients read it and send it in
//! their hello; the daemon compares in constant time.

use hearth_base::hex::hex;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The token's file name in `$HEARTH_HOME`.
pub const TOKEN_FILE: &str = "control.token";

/// How many random bytes a token holds (sent as twice as many hex digits).
const TOKEN_BYTES: usize = 32;

/// Why the token could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The system's random source failed.
    #[error("cannot make the control token: the system's random source failed")]
    Random,
    /// The file could not be written.
    #[error(
        "cannot write the control token {path}: {source}; the control socket cannot tell \
         the owner from the programs hearth runs without it, so the daemon does not start"
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// This daemon's token, in memory and in its file.
pub struct Token {
    value: String,
    path: PathBuf,
}

impl Token {
    /// Makes a fresh token and writes it to `home`'s token file, replacing
    /// an earlier daemon's.
    pub fn create(home: &Path) -> Result<Token, TokenError> {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; TOKEN_BYTES];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| TokenError::Random)?;
        let value = hex(&bytes);
        let path = home.join(TOKEN_FILE);
        write_new(home, &path, &value).map_err(|source| TokenError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(Token { value, path })
    }

    /// Whether `given` is this token. The comparison takes the same time
    /// wherever the first difference is, so timing the answers cannot
    /// reveal the token a digit at a time.
    pub fn matches(&self, given: &str) -> bool {
        let (want, given) = (self.value.as_bytes(), given.as_bytes());
        // The length is no secret: every token is 64 hex digits.
        if want.len() != given.len() {
            return false;
        }
        let diff = want
            .iter()
            .zip(given)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b));
        // Keeps the compiler from turning the fold into an early exit.
        std::hint::black_box(diff) == 0
    }

    /// The token's value, for the daemon's own redaction.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Removes the file (the daemon stops): a client then finds no token
    /// and no daemon, rather than a token no daemon accepts.
    pub fn remove(&self) {
        // Only if it is still ours: a daemon started since may have
        // written its own.
        if std::fs::read_to_string(&self.path).is_ok_and(|on_disk| self.matches(on_disk.trim())) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Reads the token a client sends, from `home`'s token file.
pub fn read(home: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(home.join(TOKEN_FILE)).map(|t| t.trim().to_owned())
}

/// Writes `value` to a new file beside `path`, mode 0600 from the moment
/// it exists, then renames it over `path`.
fn write_new(home: &Path, path: &Path, value: &str) -> std::io::Result<()> {
    let temp = home.join(format!(".{TOKEN_FILE}.{}.tmp", std::process::id()));
    // A file left by a crashed start with this pid; `create_new` below
    // refuses anything already there, a link included.
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(value.as_bytes())?;
        file.write_all(b"\n")?;
        // No fsync: the rename shows readers the whole file either way,
        // and the token matters only while this daemon runs; after a
        // crash the next start writes a new one. An fsync here cost
        // every start a disk flush before the control socket was up.
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_fresh_owner_only_token_at_each_start_matched_exactly() {
        let home = tempfile::tempdir().unwrap();
        let first = Token::create(home.path()).unwrap();
        let path = home.path().join(TOKEN_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let on_disk = read(home.path()).unwrap();
        assert_eq!(on_disk.len(), 2 * TOKEN_BYTES);
        assert!(first.matches(&on_disk));
        // The value the daemon's redaction is given is the one on disk.
        assert_eq!(first.value(), on_disk);
        // Two digits changed the same way: differences must not cancel out.
        let twice: String = on_disk
            .bytes()
            .enumerate()
            .map(|(i, b)| char::from(if i < 2 { b ^ 0x01 } else { b }))
            .collect();
        for wrong in [
            "",
            "x",
            &on_disk[1..],
            &on_disk.to_ascii_uppercase(),
            &twice,
        ] {
            assert!(!first.matches(wrong), "{wrong:?}");
        }
        // Debug shows where the token is, never what.
        let shown = format!("{first:?}");
        assert!(
            shown.starts_with("Token") && shown.contains(&path.display().to_string()),
            "{shown}"
        );
        assert!(!shown.contains(&on_disk), "{shown}");

        let second = Token::create(home.path()).unwrap();
        let again = read(home.path()).unwrap();
        assert_ne!(again, on_disk);
        assert!(second.matches(&again) && !first.matches(&again));
        // The first daemon's removal leaves the second one's file alone.
        first.remove();
        assert!(path.exists());
        second.remove();
        assert!(!path.exists());
        // Nothing else was left in the home.
        assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_home_it_cannot_write_is_a_clear_error() {
        let err = Token::create(Path::new("/nonexistent/hearth-home"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/nonexistent/hearth-home/control.token")
                && err.contains("does not start"),
            "{err}"
        );
    }
}
