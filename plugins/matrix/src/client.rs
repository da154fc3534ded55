//! The client-server API calls the channel makes: who the bot is, `/sync`,
//! sending (with a transaction id, so a retried send is one event), joining
//! a room, the typing notice. A 429 `M_LIMIT_EXCEEDED` waits its
//! `retry_after_ms` and tries again; a server error is tried again a few
//! times; any other refusal comes back with the server's `errcode` and
//! `error`.

use std::time::Duration;

use serde_json::{Value, json};

/// The tries one request gets.
const TRIES: u32 = 5;
/// The longest wait a rate limit may ask for before the request fails.
const MOST_WAIT: Duration = Duration::from_secs(60);

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The server refused it.
    #[error("the homeserver refused {what}: {status} {errcode}: {message}")]
    Refused {
        /// The request.
        what: String,
        /// The HTTP status.
        status: u16,
        /// The Matrix error code (`M_UNKNOWN_TOKEN`...).
        errcode: String,
        /// The server's words.
        message: String,
    },
    /// The server could not be reached, or every try failed.
    #[error("the homeserver could not be reached for {what}: {why}")]
    Unreachable {
        /// The request.
        what: String,
        /// Why.
        why: String,
    },
}

/// A client of one account.
pub struct Client {
    http: reqwest::blocking::Client,
    base: String,
    auth: String,
}

impl Client {
    /// A client for the account with access token `token` on `homeserver`.
    pub fn new(homeserver: &str, token: &str) -> Result<Client, String> {
        let http = reqwest::blocking::Client::builder()
            .tls_backend_rustls()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Client {
            http,
            base: format!("{}/_matrix/client/v3", homeserver.trim_end_matches('/')),
            auth: format!("Bearer {token}"),
        })
    }

    /// The account's user id (`GET /account/whoami`), which also checks
    /// the token.
    pub fn whoami(&self) -> Result<String, ClientError> {
        let answer = self.request(reqwest::Method::GET, "/account/whoami", None, None)?;
        answer["user_id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ClientError::Unreachable {
                what: "GET /account/whoami".into(),
                why: "the answer has no user_id".into(),
            })
    }

    /// One `/sync`: from `since` (none: the first), waiting up to `wait`
    /// for something new.
    pub fn sync(&self, since: Option<&str>, wait: Duration) -> Result<Value, ClientError> {
        let mut path = format!("/sync?timeout={}", wait.as_millis());
        if let Some(since) = since {
            path.push_str(&format!("&since={}", encode(since)));
        }
        self.request(
            reqwest::Method::GET,
            &path,
            None,
            Some(wait + Duration::from_secs(30)),
        )
    }

    /// Sends a message event to `room` with transaction id `txn`; its
    /// event id. The same `txn` again is the same event.
    pub fn send(&self, room: &str, txn: &str, content: &Value) -> Result<String, ClientError> {
        let path = format!(
            "/rooms/{}/send/m.room.message/{}",
            encode(room),
            encode(txn)
        );
        let answer = self.request(reqwest::Method::PUT, &path, Some(content.clone()), None)?;
        Ok(answer["event_id"].as_str().unwrap_or_default().to_owned())
    }

    /// Joins `room` (after an allowed user's invite).
    pub fn join(&self, room: &str) -> Result<(), ClientError> {
        let path = format!("/rooms/{}/join", encode(room));
        self.request(reqwest::Method::POST, &path, Some(json!({})), None)
            .map(|_| ())
    }

    /// Shows (or stops showing) that the bot is typing in `room`.
    pub fn typing(&self, room: &str, me: &str, typing: bool) -> Result<(), ClientError> {
        let path = format!("/rooms/{}/typing/{}", encode(room), encode(me));
        let body = json!({ "typing": typing, "timeout": 20_000 });
        self.request(reqwest::Method::PUT, &path, Some(body), None)
            .map(|_| ())
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let what = format!("{method} {}", path.split('?').next().unwrap_or(path));
        let mut last = String::new();
        for attempt in 0..TRIES {
            let mut request = self
                .http
                .request(method.clone(), format!("{}{path}", self.base))
                .header("Authorization", &self.auth)
                .timeout(timeout.unwrap_or(Duration::from_secs(30)));
            if let Some(body) = &body {
                request = request.json(body);
            }
            let response = match request.send() {
                Ok(response) => response,
                Err(e) => {
                    last = e.without_url().to_string();
                    std::thread::sleep(Duration::from_millis(500 << attempt));
                    continue;
                }
            };
            let status = response.status().as_u16();
            let text = response.text().unwrap_or_default();
            let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            match status {
                200..=299 => return Ok(answer),
                429 => {
                    let wait = answer["retry_after_ms"]
                        .as_u64()
                        .map(Duration::from_millis)
                        .unwrap_or(Duration::from_secs(1));
                    if wait > MOST_WAIT {
                        return Err(ClientError::Unreachable {
                            what,
                            why: format!("rate limited for {} s", wait.as_secs()),
                        });
                    }
                    tracing::debug!(request = %what, ms = wait.as_millis() as u64, "matrix: rate limited");
                    std::thread::sleep(wait);
                    last = "rate limited".into();
                }
                500..=599 => {
                    last = format!("{status}");
                    std::thread::sleep(Duration::from_millis(500 << attempt));
                }
                _ => {
                    return Err(ClientError::Refused {
                        what,
                        status,
                        errcode: answer["errcode"].as_str().unwrap_or("M_UNKNOWN").to_owned(),
                        message: answer["error"]
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| text.chars().take(200).collect()),
                    });
                }
            }
        }
        Err(ClientError::Unreachable { what, why: last })
    }
}

/// `text` percent-encoded for a path segment or query value.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_ids_and_tokens_are_encoded_for_the_path() {
        assert_eq!(encode("!abc:example.org"), "%21abc%3Aexample.org");
        assert_eq!(encode("s72594_4483_1934"), "s72594_4483_1934");
        assert_eq!(encode("a/b c"), "a%2Fb%20c");
    }
}
