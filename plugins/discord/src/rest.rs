//! The REST API: sending messages, the typing indicator, the Gateway's
//! address, with Discord's rate limits kept.
//!
//! Discord limits each route (per bucket) and all requests together. Every
//! answer's `X-RateLimit-Remaining` and `X-RateLimit-Reset-After` say when
//! the route may be used again; a request is held until then rather than
//! refused. A 429 names `retry_after` (seconds) and whether the limit was
//! the global one; the request waits that long and is sent again. A
//! server error is tried again a few times; any other refusal is returned
//! with Discord's own message.
//!
//! A message with files goes as `multipart/form-data`: the message itself
//! in a `payload_json` part, each file in a `files[n]` part that the
//! payload's `attachments` names by `id: n`. The form is built again for
//! each try, from bytes shared rather than copied.

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The tries one request gets (429s and server errors).
const TRIES: u32 = 5;
/// The longest wait a 429 may ask for before the request fails instead.
const MOST_WAIT: Duration = Duration::from_secs(60);
/// The time any request gets; an upload gets more, by its size.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The slowest upload allowed to finish, in bytes a second: a slow uplink
/// still gets a 10 MiB file through, a stalled one still ends.
const SLOWEST_UPLOAD: u64 = 64 << 10;
/// Discord's error code for a request over its size limit.
const TOO_LARGE: u64 = 40005;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RestError {
    /// Discord refused it (the status and Discord's message).
    #[error("Discord refused {what}: {status} {message}")]
    Refused {
        /// The request.
        what: String,
        /// The HTTP status.
        status: u16,
        /// Discord's error code (`40005`), when the answer had one.
        code: Option<u64>,
        /// Discord's message.
        message: String,
    },
    /// The connection failed, or every try did.
    #[error("Discord could not be reached for {what}: {why}")]
    Unreachable {
        /// The request.
        what: String,
        /// Why.
        why: String,
    },
}

impl RestError {
    /// Whether sending the same request again cannot help: Discord refused
    /// it as malformed (400), forbidden (403: no access to the channel,
    /// a user who takes no direct messages) or unknown (404: the channel
    /// is gone). A 429 is waited out before it gets here; a 5xx or a
    /// connection that failed may pass later.
    pub fn is_for_good(&self) -> bool {
        matches!(
            self,
            RestError::Refused {
                status: 400 | 403 | 404 | 413,
                ..
            }
        )
    }

    /// Whether Discord refused the request as too large (413, or error
    /// 40005): the same request will never go through.
    pub fn too_large(&self) -> bool {
        matches!(
            self,
            RestError::Refused { status: 413, .. }
                | RestError::Refused {
                    code: Some(TOO_LARGE),
                    ..
                }
        )
    }
}

/// A file to send with a message.
#[derive(Clone, Debug, PartialEq)]
pub struct Upload {
    /// The name Discord shows (and saves it under).
    pub name: String,
    /// Its media type.
    pub mime: String,
    /// Its bytes, shared by every try of the request.
    pub bytes: Arc<[u8]>,
}

/// What a request carries.
enum Body<'a> {
    /// Nothing.
    Empty,
    /// A JSON body.
    Json(&'a Value),
    /// `payload_json` and its files, as `multipart/form-data`.
    Form(&'a Value, &'a [Upload]),
}

/// A client of one bot.
pub struct Rest {
    client: reqwest::blocking::Client,
    base: String,
    auth: String,
    /// Per route: not before this instant.
    routes: Mutex<HashMap<String, Instant>>,
    /// All routes: not before this instant.
    global: Mutex<Option<Instant>>,
}

impl Rest {
    /// A client for the bot with `token` at `base` (the API's base URL).
    pub fn new(base: &str, token: &str) -> Result<Rest, String> {
        let client = reqwest::blocking::Client::builder()
            .tls_backend_rustls()
            .connect_timeout(Duration::from_secs(10))
            .timeout(TIMEOUT)
            .user_agent(concat!(
                "DiscordBot (hearth, ",
                env!("CARGO_PKG_VERSION"),
                ")"
            ))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Rest {
            client,
            base: base.trim_end_matches('/').to_owned(),
            auth: format!("Bot {token}"),
            routes: Mutex::default(),
            global: Mutex::default(),
        })
    }

    /// Sends `content` to `channel`, with message `components` (buttons)
    /// if any; the new message's id. Mentions in it ping nobody. With a
    /// `nonce` (at most 25 characters), Discord creates the message once
    /// however often it is sent within a few minutes: a send repeated
    /// after a crash is not shown twice.
    pub fn send_message(
        &self,
        channel: &str,
        content: &str,
        components: Option<&Value>,
        nonce: Option<&str>,
    ) -> Result<String, RestError> {
        let mut body = message_payload(content, nonce);
        if let Some(components) = components {
            body["components"] = components.clone();
        }
        self.create_message(channel, &Body::Json(&body))
    }

    /// As [`Rest::send_message`] without buttons, with `files` (at most
    /// ten) attached after `content`, which may then be empty. A file
    /// over Discord's limit fails the whole message
    /// ([`RestError::too_large`]).
    pub fn send_files(
        &self,
        channel: &str,
        content: &str,
        files: &[Upload],
        nonce: Option<&str>,
    ) -> Result<String, RestError> {
        let mut payload = message_payload(content, nonce);
        if files.is_empty() {
            return self.create_message(channel, &Body::Json(&payload));
        }
        payload["attachments"] = files
            .iter()
            .enumerate()
            .map(|(n, file)| json!({ "id": n, "filename": file.name }))
            .collect();
        self.create_message(channel, &Body::Form(&payload, files))
    }

    fn create_message(&self, channel: &str, body: &Body) -> Result<String, RestError> {
        let path = format!("/channels/{channel}/messages");
        let answer = self.request(reqwest::Method::POST, &path, body)?;
        Ok(answer["id"].as_str().unwrap_or_default().to_owned())
    }

    /// The messages of `channel` after message `after`, oldest first (at
    /// most 100: what a day away leaves in a direct message).
    pub fn messages_after(&self, channel: &str, after: &str) -> Result<Vec<Value>, RestError> {
        let path = format!("/channels/{channel}/messages?after={after}&limit=100");
        let answer = self.request(reqwest::Method::GET, &path, &Body::Empty)?;
        let mut messages = answer.as_array().cloned().unwrap_or_default();
        // Ids grow with time; as numbers, a longer id is a later one.
        messages.sort_by_key(|m| {
            let id = m["id"].as_str().unwrap_or_default().to_owned();
            (id.len(), id)
        });
        Ok(messages)
    }

    /// The bytes of an attachment at `url`, at most `cap` of them. Only
    /// Discord's own file hosts are fetched (or, for a test's fake, the
    /// API's own loopback address): a message cannot send the bot to an
    /// address of its choosing.
    pub fn download(&self, url: &str, cap: u64) -> Result<Vec<u8>, String> {
        use std::io::Read;
        if !serves_files(&self.base, url) {
            return Err(format!("{url} is not one of Discord's file hosts"));
        }
        let response = self
            .client
            .get(url)
            .timeout(Duration::from_secs(120))
            .send()
            .map_err(|e| format!("the download failed: {}", e.without_url()))?;
        if !response.status().is_success() {
            return Err(format!("the download failed: {}", response.status()));
        }
        if let Some(size) = response.content_length().filter(|s| *s > cap) {
            return Err(format!("it is {size} bytes, over the {cap}-byte limit"));
        }
        let mut bytes = Vec::new();
        response
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("the download broke off: {e}"))?;
        if bytes.len() as u64 > cap {
            return Err(format!("it is over the {cap}-byte limit"));
        }
        Ok(bytes)
    }

    /// Replaces message `id`'s text in `channel` and takes its buttons away.
    pub fn edit_message(&self, channel: &str, id: &str, content: &str) -> Result<(), RestError> {
        let path = format!("/channels/{channel}/messages/{id}");
        let body = json!({ "content": content, "components": [] });
        self.request(reqwest::Method::PATCH, &path, &Body::Json(&body))
            .map(|_| ())
    }

    /// The direct-message channel with `user` (made if need be).
    pub fn dm_channel(&self, user: &str) -> Result<String, RestError> {
        let answer = self.request(
            reqwest::Method::POST,
            "/users/@me/channels",
            &Body::Json(&json!({ "recipient_id": user })),
        )?;
        answer["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| RestError::Unreachable {
                what: "POST /users/@me/channels".into(),
                why: "the answer has no id".into(),
            })
    }

    /// Answers a button press (`id` and `token` from the interaction)
    /// with "deferred update": the card stays until it is edited.
    pub fn acknowledge(&self, id: &str, token: &str) -> Result<(), RestError> {
        let path = format!("/interactions/{id}/{token}/callback");
        self.request(
            reqwest::Method::POST,
            &path,
            &Body::Json(&json!({ "type": 6 })),
        )
        .map(|_| ())
    }

    /// Shows "typing…" in `channel` for ten seconds.
    pub fn typing(&self, channel: &str) -> Result<(), RestError> {
        let path = format!("/channels/{channel}/typing");
        self.request(reqwest::Method::POST, &path, &Body::Empty)
            .map(|_| ())
    }

    /// The Gateway's address (`GET /gateway/bot`), which also checks the
    /// token.
    pub fn gateway_url(&self) -> Result<String, RestError> {
        let answer = self.request(reqwest::Method::GET, "/gateway/bot", &Body::Empty)?;
        answer["url"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| RestError::Unreachable {
                what: "GET /gateway/bot".into(),
                why: "the answer has no url".into(),
            })
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Body,
    ) -> Result<Value, RestError> {
        let what = format!("{method} {path}");
        let mut last = String::new();
        for attempt in 0..TRIES {
            self.wait_turn(&what);
            let mut request = self
                .client
                .request(method.clone(), format!("{}{path}", self.base))
                .header("Authorization", &self.auth);
            match body {
                Body::Empty => {}
                Body::Json(body) => request = request.json(body),
                Body::Form(payload, files) => {
                    let size: u64 = files.iter().map(|f| f.bytes.len() as u64).sum();
                    request = request
                        .timeout(TIMEOUT + Duration::from_secs(size / SLOWEST_UPLOAD))
                        .multipart(form(payload, files));
                }
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
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            if header("x-ratelimit-remaining").as_deref() == Some("0")
                && let Some(after) = header("x-ratelimit-reset-after").and_then(|s| seconds(&s))
            {
                self.hold(&what, after, false);
            }
            let global = header("x-ratelimit-global").is_some();
            let text = response.text().unwrap_or_default();
            let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            match status {
                200..=299 => return Ok(answer),
                429 => {
                    let after = answer["retry_after"]
                        .as_f64()
                        .map(Duration::from_secs_f64)
                        .unwrap_or(Duration::from_secs(1));
                    if after > MOST_WAIT {
                        return Err(RestError::Unreachable {
                            what,
                            why: format!("rate limited for {} s", after.as_secs()),
                        });
                    }
                    let global = global || answer["global"] == Value::Bool(true);
                    tracing::debug!(route = %what, ms = after.as_millis() as u64, global, "discord: rate limited");
                    self.hold(&what, after, global);
                    last = format!("rate limited ({})", answer["message"]);
                }
                500..=599 => {
                    last = format!("{status}");
                    std::thread::sleep(Duration::from_millis(500 << attempt));
                }
                _ => {
                    return Err(RestError::Refused {
                        what,
                        status,
                        code: answer["code"].as_u64(),
                        message: answer["message"]
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| text.chars().take(200).collect()),
                    });
                }
            }
        }
        Err(RestError::Unreachable { what, why: last })
    }

    /// Waits until `route` and the global limit allow a request.
    fn wait_turn(&self, route: &str) {
        let until = {
            let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
            let global = *self.global.lock().unwrap_or_else(|p| p.into_inner());
            routes.get(route).copied().max(global)
        };
        if let Some(until) = until {
            let now = Instant::now();
            if until > now {
                std::thread::sleep(until - now);
            }
        }
    }

    fn hold(&self, route: &str, after: Duration, global: bool) {
        let until = Instant::now() + after;
        if global {
            *self.global.lock().unwrap_or_else(|p| p.into_inner()) = Some(until);
        } else {
            self.routes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(route.to_owned(), until);
        }
    }
}

/// A new message's JSON: `content`, pinging nobody, and the `nonce` that
/// makes Discord create it once.
fn message_payload(content: &str, nonce: Option<&str>) -> Value {
    let mut body = json!({ "content": content, "allowed_mentions": { "parse": [] } });
    if let Some(nonce) = nonce {
        body["nonce"] = Value::String(nonce.chars().take(25).collect());
        body["enforce_nonce"] = Value::Bool(true);
    }
    body
}

/// The `multipart/form-data` body of a message with files: `payload_json`,
/// then `files[n]` for each.
fn form(payload: &Value, files: &[Upload]) -> reqwest::blocking::multipart::Form {
    use reqwest::blocking::multipart::{Form, Part};
    let mut form = Form::new().text("payload_json", payload.to_string());
    for (n, file) in files.iter().enumerate() {
        let length = file.bytes.len() as u64;
        let part = Part::reader_with_length(Cursor::new(Arc::clone(&file.bytes)), length)
            .file_name(file.name.clone());
        // A media type reqwest cannot parse is sent as plain bytes rather
        // than not at all.
        let part = match part.mime_str(&file.mime) {
            Ok(part) => part,
            Err(_) => Part::reader_with_length(Cursor::new(Arc::clone(&file.bytes)), length)
                .file_name(file.name.clone()),
        };
        form = form.part(format!("files[{n}]"), part);
    }
    form
}

/// Whether `url` is one of Discord's file hosts, or (for a test's fake)
/// the loopback origin of the API at `base`.
fn serves_files(base: &str, url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = parsed.host_str().unwrap_or_default();
    let discord = ["discordapp.com", "discordapp.net", "discord.com"]
        .iter()
        .any(|d| host == *d || host.ends_with(&format!(".{d}")));
    if parsed.scheme() == "https" && discord {
        return true;
    }
    // A test's fake: the API's own loopback origin.
    reqwest::Url::parse(base).is_ok_and(|base| {
        base.scheme() == "http"
            && base.host_str() == Some("127.0.0.1")
            && base.origin() == parsed.origin()
    })
}

/// Whether snowflake `a` is newer than `b` (ids grow with time; compared
/// as numbers, so a longer id is a newer one).
pub fn newer(a: &str, b: &str) -> bool {
    (a.len(), a) > (b.len(), b)
}

/// A header's seconds (`"1.25"`).
fn seconds(text: &str) -> Option<Duration> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(MOST_WAIT.as_secs_f64())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_discords_file_hosts_are_fetched() {
        let base = "https://discord.com/api/v10";
        for (url, fetched) in [
            ("https://cdn.discordapp.com/attachments/1/2/a.png", true),
            ("https://media.discordapp.net/x.png", true),
            ("http://cdn.discordapp.com/a.png", false),
            ("https://discordapp.com.evil.example/a.png", false),
            ("https://192.168.1.1/router", false),
            ("http://127.0.0.1:8080/files/canvas.token", false),
            ("not a url", false),
        ] {
            assert_eq!(serves_files(base, url), fetched, "{url}");
        }
        let fake = "http://127.0.0.1:4000/api/v10";
        assert!(serves_files(fake, "http://127.0.0.1:4000/files/a.txt"));
        assert!(!serves_files(fake, "http://127.0.0.1:8080/files/a.txt"));
    }

    #[test]
    fn a_413_or_error_40005_is_too_large_and_nothing_else_is() {
        let refused = |status, code| RestError::Refused {
            what: "POST /channels/1/messages".into(),
            status,
            code,
            message: String::new(),
        };
        assert!(refused(413, None).too_large());
        assert!(refused(400, Some(TOO_LARGE)).too_large());
        assert!(!refused(400, Some(50035)).too_large());
        assert!(!refused(403, None).too_large());
        let unreachable = RestError::Unreachable {
            what: String::new(),
            why: "413".into(),
        };
        assert!(!unreachable.too_large());
        for (status, for_good) in [
            (400, true),
            (403, true),
            (404, true),
            (413, true),
            (401, false),
            (429, false),
            (500, false),
            (502, false),
        ] {
            assert_eq!(refused(status, None).is_for_good(), for_good, "{status}");
        }
        assert!(!unreachable.is_for_good());
    }

    #[test]
    fn snowflakes_compare_as_numbers() {
        assert!(newer("1000", "999"));
        assert!(newer("1234567890123456790", "1234567890123456789"));
        assert!(!newer("999", "1000"));
        assert!(!newer("5", "5"));
    }

    #[test]
    fn reset_headers_are_read_as_seconds() {
        assert_eq!(seconds("1.25"), Some(Duration::from_millis(1250)));
        assert_eq!(seconds(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(seconds("9999"), Some(MOST_WAIT));
        for bad in ["", "x", "-1", "NaN", "inf"] {
            assert_eq!(seconds(bad), None, "{bad}");
        }
    }
}
