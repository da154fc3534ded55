//! Who may use the canvas: the login token, the session cookie, and the
//! brake on token guessing.
//!
//! The token is 256 random bits in `$HEARTH_HOME/canvas.token` (mode 0600),
//! made on first start. A browser trades it for a session cookie whose value
//! is a random nonce and its HMAC-SHA256 under the token: the canvas keeps
//! no session table, a cookie survives a daemon restart, and deleting the
//! token file logs every browser out. Every comparison of secrets is
//! constant-time (`ring::hmac::verify`).

use std::collections::HashMap;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The token file's name in `$HEARTH_HOME`.
pub const TOKEN_FILE: &str = "canvas.token";
/// The session cookie's name.
pub const COOKIE: &str = "hearth_session";
/// Wrong tokens allowed per address per window.
const PER_ADDRESS: usize = 5;
/// Wrong tokens allowed from everyone together per window.
const OVERALL: usize = 30;
/// The rate limit's window.
const WINDOW: Duration = Duration::from_secs(60);

/// The token and what is derived from it.
pub struct Auth {
    token: String,
    key: hmac::Key,
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
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
}

/// Why the token could not be loaded or made.
#[derive(Debug)]
pub struct TokenError(pub String);

impl Auth {
    /// Reads the token from `home`, making it on first start. Returns the
    /// auth and whether the token is new.
    pub fn load_or_create(home: &Path) -> Result<(Auth, bool), TokenError> {
        let path = home.join(TOKEN_FILE);
        let (token, created) = match std::fs::read_to_string(&path) {
            Ok(text) if valid_token(text.trim()) => (text.trim().to_owned(), false),
            Ok(_) => {
                return Err(TokenError(format!(
                    "{} does not hold a canvas token (64 hex digits); delete it to make a new one",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (create(&path)?, true),
            Err(e) => return Err(TokenError(format!("cannot read {}: {e}", path.display()))),
        };
        Ok((Auth::new(token), created))
    }

    /// An auth for a known token.
    pub fn new(token: String) -> Auth {
        let key = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
        Auth {
            token,
            key,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The token, for the login URL.
    pub fn token(&self) -> &str {
        &self.token
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
                .and_then(|t| t.first().copied())
                .or_else(|| failures.values().flatten().min().copied())
                .unwrap_or(now);
            return Login::Throttled(WINDOW.saturating_sub(now.duration_since(oldest)));
        }
        let expected = hmac::sign(&self.key, self.token.as_bytes());
        if hmac::verify(&self.key, candidate.trim().as_bytes(), expected.as_ref()).is_ok() {
            drop(failures);
            Login::Granted(self.new_session())
        } else {
            failures.entry(from).or_default().push(now);
            Login::Refused
        }
    }

    /// Whether `cookie` (the value of [`COOKIE`]) is a session this token
    /// signed.
    pub fn session_valid(&self, cookie: &str) -> bool {
        let Some((nonce, tag)) = cookie.split_once('.') else {
            return false;
        };
        let Some(tag) = unhex(tag) else {
            return false;
        };
        nonce.len() == 32 && hmac::verify(&self.key, &session_message(nonce), &tag).is_ok()
    }

    fn new_session(&self) -> String {
        let nonce = hex(&random::<16>());
        let tag = hmac::sign(&self.key, &session_message(&nonce));
        format!("{nonce}.{}", hex(tag.as_ref()))
    }
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

fn create(path: &PathBuf) -> Result<String, TokenError> {
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

    #[test]
    fn sessions_are_bound_to_the_token() {
        let auth = Auth::new(TOKEN.into());
        let Login::Granted(cookie) = auth.login([127, 0, 0, 1].into(), TOKEN) else {
            panic!("the right token was refused");
        };
        assert!(auth.session_valid(&cookie));
        let other = Auth::new(TOKEN.replace('0', "1"));
        assert!(!other.session_valid(&cookie));
        for forged in [
            "",
            ".",
            "x.y",
            &cookie[..cookie.len() - 2],
            &format!("{cookie}00"),
        ] {
            assert!(!auth.session_valid(forged), "{forged:?} passed");
        }
    }

    #[test]
    fn guesses_are_throttled_per_address() {
        let auth = Auth::new(TOKEN.into());
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
    fn the_cookie_is_found_among_others() {
        assert_eq!(session_cookie("a=1; hearth_session=x.y; b=2"), Some("x.y"));
        assert_eq!(session_cookie("hearth_sessionx=1"), None);
    }
}
