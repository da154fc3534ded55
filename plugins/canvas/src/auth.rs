//! Who may use the canvas: the login token, the session cookie, and the
//! brake on token guessing.
//!
//! The token is 256 random bits in `$HEARTH_HOME/canvas.token` (mode 0600),
//! made on first start. A browser trades it for a session cookie whose value
//! is a random nonce and its HMAC-SHA256 under the token: the canvas keeps
//! no session table and a cookie survives a daemon restart. The token file
//! is the one source of truth: every check stats it (one `stat`, the file
//! re-read only when its identity changes), so deleting it logs every
//! browser out at once and refuses every login until a new token exists
//! (the next start makes one; a valid token written there is taken at
//! once), and replacing it invalidates every cookie the old one signed.
//! Every comparison of secrets is constant-time (`ring::hmac::verify`).

use std::collections::HashMap;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The token file's name in `$HEARTH_HOME`.
pub const TOKEN_FILE: &str = "canvas.token";
/// The session cookie's name.
pub const COOKIE: &str = "hearth_session";
/// Wrong tokens allowed per address per window.
pub const PER_ADDRESS: usize = 5;
/// Wrong tokens allowed from everyone together per window: the brake on
/// guessing from many addresses (behind a proxy, or a botnet), at the
/// price that a flood of guesses also keeps the owner from logging in
/// for a minute (their open sessions are not affected).
pub const OVERALL: usize = 30;
/// The rate limit's window.
const WINDOW: Duration = Duration::from_secs(60);

/// The token and what is derived from it.
pub struct Auth {
    path: PathBuf,
    current: Mutex<Current>,
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
}

/// The token file as last seen.
struct Current {
    /// Its identity when it was read; `None` when it was missing.
    stamp: Option<Stamp>,
    /// The token it held, if it held a valid one.
    key: Option<Arc<Keyed>>,
}

/// A file's identity: a rename, a rewrite, a deletion all change it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// One token and its HMAC key.
struct Keyed {
    token: String,
    key: hmac::Key,
}

/// The outcome of a login attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Login {
    /// Right token: set this cookie value.
    Granted(String),
    /// Wrong token.
    Refused,
    /// Too many wrong tokens lately: try again after this long.
    Throttled(Duration),
    /// The token file is gone (or no longer holds a token): nobody can
    /// log in until there is a new one.
    NoToken,
}

/// Why the token could not be loaded or made.
#[derive(Debug)]
pub struct TokenError(pub String);

impl Auth {
    /// Reads the token from `home`, making it on first start. Returns the
    /// auth and whether the token is new.
    pub fn load_or_create(home: &Path) -> Result<(Auth, bool), TokenError> {
        let path = home.join(TOKEN_FILE);
        let created = match std::fs::read_to_string(&path) {
            Ok(text) if valid_token(text.trim()) => false,
            Ok(_) => {
                return Err(TokenError(format!(
                    "{} does not hold a canvas token (64 hex digits); delete it to make a new one",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                create(&path)?;
                true
            }
            Err(e) => return Err(TokenError(format!("cannot read {}: {e}", path.display()))),
        };
        let auth = Auth {
            path,
            current: Mutex::new(Current {
                stamp: None,
                key: None,
            }),
            failures: Mutex::new(HashMap::new()),
        };
        if auth.keyed().is_none() {
            return Err(TokenError(format!(
                "{} changed while it was being read; start again",
                auth.path.display()
            )));
        }
        Ok((auth, created))
    }

    /// The token, for the login URL; `None` when the file is gone.
    pub fn token(&self) -> Option<String> {
        self.keyed().map(|k| k.token.clone())
    }

    /// Checks a login attempt from `from`.
    pub fn login(&self, from: IpAddr, candidate: &str) -> Login {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        failures.retain(|_, times| {
            times.retain(|t| now.duration_since(*t) < WINDOW);
            !times.is_empty()
        });
        let mine = failures.get(&from).map_or(0, Vec::len);
        let all: usize = failures.values().map(Vec::len).sum();
        if mine >= PER_ADDRESS || all >= OVERALL {
            let oldest = failures
                .get(&from)
                .filter(|t| t.len() >= PER_ADDRESS)
                .and_then(|t| t.first().copied())
                .or_else(|| failures.values().flatten().min().copied())
                .unwrap_or(now);
            return Login::Throttled(WINDOW.saturating_sub(now.duration_since(oldest)));
        }
        let Some(keyed) = self.keyed() else {
            return Login::NoToken;
        };
        let expected = hmac::sign(&keyed.key, keyed.token.as_bytes());
        if hmac::verify(&keyed.key, candidate.trim().as_bytes(), expected.as_ref()).is_ok() {
            drop(failures);
            Login::Granted(new_session(&keyed.key))
        } else {
            failures.entry(from).or_default().push(now);
            Login::Refused
        }
    }

    /// Whether `cookie` (the value of [`COOKIE`]) is a session the
    /// current token signed.
    pub fn session_valid(&self, cookie: &str) -> bool {
        let Some((nonce, tag)) = cookie.split_once('.') else {
            return false;
        };
        let Some(tag) = unhex(tag) else {
            return false;
        };
        if nonce.len() != 32 {
            return false;
        }
        self.keyed()
            .is_some_and(|k| hmac::verify(&k.key, &session_message(nonce), &tag).is_ok())
    }

    /// The token as the file holds it now: one `stat`, and a read only
    /// when the file is not the one read last time.
    fn keyed(&self) -> Option<Arc<Keyed>> {
        let stamp = std::fs::metadata(&self.path).ok().map(|m| Stamp::of(&m));
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.stamp == stamp {
            return current.key.clone();
        }
        let had_key = current.key.is_some();
        let key = stamp.and_then(|_| std::fs::read_to_string(&self.path).ok());
        let key = match key {
            Some(text) if valid_token(text.trim()) => {
                let token = text.trim().to_owned();
                let key = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
                Some(Arc::new(Keyed { token, key }))
            }
            _ => None,
        };
        match (&key, stamp) {
            (None, None) if had_key => tracing::warn!(
                "{} is gone: every canvas session has ended and no login works until there \
                 is a new token (restart the daemon to make one)",
                self.path.display()
            ),
            (None, Some(_)) => tracing::warn!(
                "{} does not hold a canvas token (64 hex digits): every canvas session has \
                 ended; delete it and restart the daemon to make a new one",
                self.path.display()
            ),
            _ => {}
        }
        *current = Current {
            stamp,
            key: key.clone(),
        };
        key
    }
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

fn new_session(key: &hmac::Key) -> String {
    let nonce = hex(&random::<16>());
    let tag = hmac::sign(key, &session_message(&nonce));
    format!("{nonce}.{}", hex(tag.as_ref()))
}

/// The session cookie's value in a `Cookie` header, if any.
pub fn session_cookie(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

/// Random bytes.
pub fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // The kernel's random source does not fail once the system is up; if it
    // did, a zero token would be refused by `valid_token` on the next start.
    let _ = SystemRandom::new().fill(&mut bytes);
    bytes
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn session_message(nonce: &str) -> Vec<u8> {
    format!("hearth-canvas-session:{nonce}").into_bytes()
}

fn valid_token(text: &str) -> bool {
    text.len() == 64
        && text.bytes().all(|b| b.is_ascii_hexdigit())
        && text.bytes().any(|b| b != b'0')
}

fn create(path: &Path) -> Result<String, TokenError> {
    let token = hex(&random::<32>());
    if !valid_token(&token) {
        return Err(TokenError(
            "the system's random source gave no randomness".into(),
        ));
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| TokenError(format!("cannot create {}: {e}", path.display())))?;
    writeln!(file, "{token}")
        .map_err(|e| TokenError(format!("cannot write {}: {e}", path.display())))?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// A token file that holds something else, or cannot be read, is an
    /// error that says so: never accepted as a token, never replaced.
    #[test]
    fn a_bad_or_unreadable_token_file_is_an_error() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(TOKEN_FILE);
        std::fs::write(&path, "not a token\n").unwrap();
        let Err(TokenError(why)) = Auth::load_or_create(home.path()) else {
            panic!("a file without a token was accepted");
        };
        assert!(why.contains("does not hold a canvas token"), "{why}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a token\n");
        std::fs::remove_file(&path).unwrap();
        // A folder in its place cannot be read: not taken for "missing".
        std::fs::create_dir(&path).unwrap();
        let Err(TokenError(why)) = Auth::load_or_create(home.path()) else {
            panic!("an unreadable token file was accepted");
        };
        assert!(why.contains("cannot read"), "{why}");
    }

    /// Tokens and session nonces are random, and a session's tag is bound
    /// to its own nonce: another nonce with a valid tag is no session.
    #[test]
    fn tokens_and_sessions_are_random_and_bound_to_their_nonce() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let token = |home: &Path| Auth::load_or_create(home).unwrap().0.token().unwrap();
        assert_ne!(token(a.path()), token(b.path()));
        let (_home, auth) = auth_with(TOKEN);
        let (first, second) = (granted(&auth), granted(&auth));
        assert_ne!(first, second);
        let (_, tag) = first.split_once('.').unwrap();
        let (other_nonce, _) = second.split_once('.').unwrap();
        assert!(auth.session_valid(&first));
        assert!(!auth.session_valid(&format!("{other_nonce}.{tag}")));
        for (text, valid) in [
            (TOKEN, true),
            (&"0".repeat(64)[..], false),
            (&"g".repeat(64)[..], false),
            ("0123abcd", false),
            (&TOKEN[..63], false),
        ] {
            assert_eq!(valid_token(text), valid, "{text:?}");
        }
    }

    /// An auth whose token file holds `token`, in a fresh home.
    fn auth_with(token: &str) -> (tempfile::TempDir, Auth) {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(TOKEN_FILE), format!("{token}\n")).unwrap();
        let (auth, created) = Auth::load_or_create(home.path()).unwrap();
        assert!(!created);
        (home, auth)
    }

    fn granted(auth: &Auth) -> String {
        match auth.login([127, 0, 0, 1].into(), TOKEN) {
            Login::Granted(cookie) => cookie,
            other => panic!("the right token was refused: {other:?}"),
        }
    }

    #[test]
    fn the_first_start_makes_a_private_token() {
        let home = tempfile::tempdir().unwrap();
        let (auth, created) = Auth::load_or_create(home.path()).unwrap();
        assert!(created);
        let token = auth.token().unwrap();
        assert!(valid_token(&token));
        let mode = std::fs::metadata(home.path().join(TOKEN_FILE))
            .unwrap()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (again, created) = Auth::load_or_create(home.path()).unwrap();
        assert!(!created);
        assert_eq!(again.token(), Some(token));
    }

    #[test]
    fn sessions_are_bound_to_the_token() {
        let (_home, auth) = auth_with(TOKEN);
        let cookie = granted(&auth);
        assert!(auth.session_valid(&cookie));
        let (_other_home, other) = auth_with(&TOKEN.replace('0', "1"));
        assert!(!other.session_valid(&cookie));
        let (nonce, tag) = cookie.split_once('.').unwrap();
        let flipped = format!(
            "{nonce}.{}{}",
            if tag.starts_with('0') { '1' } else { '0' },
            &tag[1..]
        );
        for forged in [
            "",
            ".",
            "x.y",
            &cookie[..cookie.len() - 2],
            &format!("{cookie}00"),
            &flipped,
        ] {
            assert!(!auth.session_valid(forged), "{forged:?} passed");
        }
    }

    #[test]
    fn the_token_file_decides_every_check() {
        let (home, auth) = auth_with(TOKEN);
        let path = home.path().join(TOKEN_FILE);
        let cookie = granted(&auth);
        // Gone: no session, no login.
        std::fs::remove_file(&path).unwrap();
        assert!(!auth.session_valid(&cookie));
        assert_eq!(auth.login([127, 0, 0, 1].into(), TOKEN), Login::NoToken);
        assert_eq!(auth.token(), None);
        // The same token back: its sessions are valid again.
        std::fs::write(&path, TOKEN).unwrap();
        assert!(auth.session_valid(&cookie));
        // Another token: the old cookies are not.
        let other = TOKEN.replace('0', "2");
        std::fs::write(&path, &other).unwrap();
        assert!(!auth.session_valid(&cookie));
        assert_eq!(auth.token(), Some(other));
        // Garbage: nothing is valid.
        std::fs::write(&path, "not a token").unwrap();
        assert_eq!(auth.token(), None);
        assert_eq!(auth.login([127, 0, 0, 1].into(), TOKEN), Login::NoToken);
    }

    #[test]
    fn guesses_are_throttled_per_address() {
        let (_home, auth) = auth_with(TOKEN);
        let me: IpAddr = [10, 0, 0, 1].into();
        for _ in 0..PER_ADDRESS {
            assert_eq!(auth.login(me, "wrong"), Login::Refused);
        }
        assert!(matches!(auth.login(me, TOKEN), Login::Throttled(_)));
        assert!(matches!(
            auth.login([10, 0, 0, 2].into(), TOKEN),
            Login::Granted(_)
        ));
    }

    #[test]
    fn guesses_are_throttled_across_addresses() {
        let (_home, auth) = auth_with(TOKEN);
        for n in 0..OVERALL {
            let from: IpAddr = [10, 0, 1, n as u8].into();
            assert_eq!(auth.login(from, "wrong"), Login::Refused);
        }
        let fresh: IpAddr = [10, 0, 2, 1].into();
        let Login::Throttled(wait) = auth.login(fresh, TOKEN) else {
            panic!("the global brake did not hold");
        };
        assert!(wait <= WINDOW && wait > Duration::ZERO, "{wait:?}");
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        assert_eq!(session_cookie("a=1; hearth_session=x.y; b=2"), Some("x.y"));
        assert_eq!(session_cookie("hearth_sessionx=1"), None);
    }
}
