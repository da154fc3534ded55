//! The client-server API calls the channel makes: who the bot is, `/sync`,
//! sending (with a transaction id, so a retried send is one event), joining
//! a room, the typing notice, and files: downloaded through the
//! authenticated media API (`/_matrix/client/v1/media/download`, falling
//! back to the old `/_matrix/media/v3/download` on a server that does not
//! know it), at most a given number of bytes, and uploaded to
//! `/_matrix/media/v3/upload`. A 429 `M_LIMIT_EXCEEDED` waits its
//! `retry_after_ms` and tries again; a server error is tried again a few
//! times; any other refusal comes back with the server's `errcode` and
//! `error`.

use std::io::Read;
use std::time::Duration;

use serde_json::{Value, json};

/// The tries one request gets.
const TRIES: u32 = 5;
/// The longest wait a rate limit may ask for before the request fails.
const MOST_WAIT: Duration = Duration::from_secs(60);
/// How long moving one file may take: 50 MiB at under 1 MB/s.
const FILE_TIMEOUT: Duration = Duration::from_secs(120);

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
    /// A file is bigger than the bot takes.
    #[error("it is {} bytes, over the {cap}-byte limit", size.map_or_else(|| "more".into(), |s| s.to_string()))]
    TooLarge {
        /// Its size, when the server said it.
        size: Option<u64>,
        /// The limit.
        cap: u64,
    },
}

/// A client of one account.
pub struct Client {
    http: reqwest::blocking::Client,
    /// The homeserver, without a trailing slash.
    root: String,
    auth: String,
}

/// A request's body.
enum Body<'a> {
    None,
    Json(Value),
    /// Bytes of a media type.
    Bytes(&'a [u8], &'a str),
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
            root: homeserver.trim_end_matches('/').to_owned(),
            auth: format!("Bearer {token}"),
        })
    }

    /// The account's user id (`GET /account/whoami`), which also checks
    /// the token.
    pub fn whoami(&self) -> Result<String, ClientError> {
        let answer = self.api(reqwest::Method::GET, "/account/whoami", Body::None, None)?;
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
        self.api(
            reqwest::Method::GET,
            &path,
            Body::None,
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
        let answer = self.api(
            reqwest::Method::PUT,
            &path,
            Body::Json(content.clone()),
            None,
        )?;
        Ok(answer["event_id"].as_str().unwrap_or_default().to_owned())
    }

    /// Joins `room` (after an allowed user's invite).
    pub fn join(&self, room: &str) -> Result<(), ClientError> {
        let path = format!("/rooms/{}/join", encode(room));
        self.api(reqwest::Method::POST, &path, Body::Json(json!({})), None)
            .map(|_| ())
    }

    /// Shows (or stops showing) that the bot is typing in `room`.
    pub fn typing(&self, room: &str, me: &str, typing: bool) -> Result<(), ClientError> {
        let path = format!("/rooms/{}/typing/{}", encode(room), encode(me));
        let body = json!({ "typing": typing, "timeout": 20_000 });
        self.api(reqwest::Method::PUT, &path, Body::Json(body), None)
            .map(|_| ())
    }

    /// The bytes of `mxc://{server}/{media_id}`, at most `cap` of them.
    /// Asked of the authenticated media API first (Matrix 1.11; servers
    /// now refuse new media to the old route without a token); a server
    /// older than that does not know the route (404 `M_UNRECOGNIZED`),
    /// and then the old unauthenticated one is asked.
    pub fn download(&self, server: &str, media_id: &str, cap: u64) -> Result<Vec<u8>, ClientError> {
        let tail = format!("/download/{}/{}", encode(server), encode(media_id));
        let response = match self.attempt(
            reqwest::Method::GET,
            &format!("/_matrix/client/v1/media{tail}"),
            &Body::None,
            Some(FILE_TIMEOUT),
        ) {
            Err(ClientError::Refused {
                status: 404,
                errcode,
                ..
            }) if errcode == "M_UNRECOGNIZED" => self.attempt(
                reqwest::Method::GET,
                &format!("/_matrix/media/v3{tail}"),
                &Body::None,
                Some(FILE_TIMEOUT),
            )?,
            other => other?,
        };
        if let Some(size) = response.content_length().filter(|s| *s > cap) {
            return Err(ClientError::TooLarge {
                size: Some(size),
                cap,
            });
        }
        let mut bytes = Vec::new();
        response
            .take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| ClientError::Unreachable {
                what: "GET /download".into(),
                why: format!("the download broke off: {e}"),
            })?;
        if bytes.len() as u64 > cap {
            return Err(ClientError::TooLarge { size: None, cap });
        }
        Ok(bytes)
    }

    /// Uploads `bytes` of type `mime` as a file named `name`; its
    /// `mxc://` URL.
    pub fn upload(&self, name: &str, mime: &str, bytes: &[u8]) -> Result<String, ClientError> {
        let path = format!("/_matrix/media/v3/upload?filename={}", encode(name));
        let response = self.attempt(
            reqwest::Method::POST,
            &path,
            &Body::Bytes(bytes, mime),
            Some(FILE_TIMEOUT),
        )?;
        let answer: Value =
            serde_json::from_str(&response.text().unwrap_or_default()).unwrap_or(Value::Null);
        answer["content_uri"]
            .as_str()
            .filter(|uri| uri.starts_with("mxc://"))
            .map(str::to_owned)
            .ok_or_else(|| ClientError::Unreachable {
                what: "POST /upload".into(),
                why: "the answer has no content_uri".into(),
            })
    }

    /// A client-server API call (`path` under `/_matrix/client/v3`); its
    /// JSON answer.
    fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Body<'_>,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let response =
            self.attempt(method, &format!("/_matrix/client/v3{path}"), &body, timeout)?;
        let text = response.text().unwrap_or_default();
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Sends a request (`path` under the homeserver) until it succeeds or
    /// is refused; the successful response, its body unread.
    fn attempt(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Body<'_>,
        timeout: Option<Duration>,
    ) -> Result<reqwest::blocking::Response, ClientError> {
        let what = format!("{method} {}", path.split('?').next().unwrap_or(path));
        let mut last = String::new();
        for attempt in 0..TRIES {
            let mut request = self
                .http
                .request(method.clone(), format!("{}{path}", self.root))
                .header("Authorization", &self.auth)
                .timeout(timeout.unwrap_or(Duration::from_secs(30)));
            request = match body {
                Body::None => request,
                Body::Json(value) => request.json(value),
                // A copy per try: a retry needs the bytes again, and
                // retries are rare next to the upload itself.
                Body::Bytes(bytes, mime) => {
                    request.header("Content-Type", *mime).body(bytes.to_vec())
                }
            };
            let response = match request.send() {
                Ok(response) => response,
                Err(e) => {
                    last = e.without_url().to_string();
                    std::thread::sleep(Duration::from_millis(500 << attempt));
                    continue;
                }
            };
            let status = response.status().as_u16();
            if (200..=299).contains(&status) {
                return Ok(response);
            }
            let text = response.text().unwrap_or_default();
            let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            match status {
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
