//! A fake Discord on 127.0.0.1: the Gateway (a WebSocket speaking the
//! documented opcodes: Hello, Identify, Ready, heartbeats and their acks,
//! Resume with the missed events replayed, close code 4004 for a bad token)
//! and the REST routes the channel uses (`GET /gateway/bot`, `POST
//! /channels/{id}/messages` with the rate-limit headers and 429s, as JSON
//! or as `multipart/form-data` with `payload_json` and `files[n]` parts
//! and an upload limit answered 413, `PATCH` of a message, `POST
//! /users/@me/channels`, an interaction's callback).
//!
//! A test makes users write (`dm`, `say_in_guild`), drops the connection
//! (`drop_connection`), makes the next sends rate-limited
//! (`rate_limit_next`), lowers the upload limit (`max_upload`), presses a
//! card's button (`press`), and reads what the bot sent (`wait_sent`, with
//! each message's files) and tried to upload (`uploads`).

use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::Message;
use tungstenite::protocol::CloseFrame;
use tungstenite::protocol::frame::coding::CloseCode;

use crate::http_server::{HttpRequest, read_request, wait_until, write_bytes, write_json};

/// The bot's user id.
pub const BOT_ID: &str = "900000000000000001";
/// The ids of users' messages count up from here, as snowflakes grow.
const FIRST_MESSAGE_ID: u64 = 1_300_000_000_000_000_000;
/// How often the fake asks for heartbeats.
const HEARTBEAT_MS: u64 = 500;
/// The largest file Discord takes from a bot in a server without boosts.
const DEFAULT_MAX_UPLOAD: usize = 10 << 20;
/// The most files one message may carry.
const MAX_FILES: usize = 10;

/// A message the bot sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// Its id.
    pub id: String,
    /// The channel.
    pub channel: String,
    /// The text (as last edited).
    pub content: String,
    /// Its components (buttons), `null` for none.
    pub components: Value,
    /// How many times it was edited.
    pub edits: u32,
    /// When the request that made it arrived.
    pub received: Instant,
    /// The files attached to it, in the order of its `attachments`.
    pub files: Vec<SentFile>,
}

/// A file attached to a message the bot sent.
#[derive(Debug, Clone, PartialEq)]
pub struct SentFile {
    /// Its name as Discord shows it: the payload's `filename`, else the
    /// part's.
    pub name: String,
    /// The part's `content-type`, if it had one.
    pub content_type: Option<String>,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The running fake.
pub struct FakeDiscord {
    /// The REST base, as `api_url`.
    pub api_url: String,
    /// The Gateway's address, as `gateway_url`.
    pub gateway_url: String,
    shared: Arc<Shared>,
}

struct Shared {
    token: String,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    sent: Vec<Sent>,
    /// Every dispatch of the session, with its sequence number, so a
    /// resume can replay those after the client's.
    dispatched: Vec<(u64, Value)>,
    /// Dispatches not yet written to a live connection.
    pending: Vec<(u64, Value)>,
    /// The live session's connection, by its number: a dispatch is
    /// written to it at once, as Discord pushes events, rather than when
    /// the connection's thread next looks.
    live: Option<(u64, TcpStream)>,
    /// Connections accepted so far (each one's number).
    connections: u64,
    seq: u64,
    session: u32,
    identifies: u32,
    /// The `seq` of each resume the client asked for.
    resumes: Vec<u64>,
    heartbeats: u32,
    /// Cut the live connection without a close frame.
    drop_now: bool,
    /// The next this many message sends get a 429.
    rate_limited: u32,
    /// The next message send is refused with this status, error code and
    /// message.
    refuse: Option<(u16, u64, String)>,
    /// How many sends were refused that way.
    refused: u32,
    /// How many 429s were answered.
    limited: u32,
    /// Interactions the bot acknowledged, by id.
    acknowledged: Vec<String>,
    /// Every message users wrote, oldest first (`GET .../messages`).
    history: Vec<Value>,
    /// The history reads the bot made: (channel, after).
    reads: Vec<(String, String)>,
    /// The nonce of each sent message ("" for none), as `sent`.
    nonces: Vec<String>,
    /// When each dispatch was written to the bot's connection, by its
    /// sequence number.
    written: Vec<(u64, Instant)>,
    /// Files served at `/files/<name>`, as Discord's CDN serves attachments.
    files: Vec<(String, Vec<u8>)>,
    /// The largest file part taken; `None`: Discord's default.
    max_upload: Option<usize>,
    /// The file name of every file part that arrived, taken or not.
    uploads: Vec<String>,
    connected: bool,
}

impl FakeDiscord {
    /// Starts both servers; the bot's token is `token`.
    pub fn start(token: &str) -> FakeDiscord {
        let rest = TcpListener::bind("127.0.0.1:0").expect("bind the REST server");
        let gateway = TcpListener::bind("127.0.0.1:0").expect("bind the gateway");
        let gateway_url = format!("ws://{}", gateway.local_addr().expect("address"));
        let api_url = format!("http://{}/api/v10", rest.local_addr().expect("address"));
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            state: Mutex::default(),
            changed: Condvar::new(),
        });
        let for_rest = Arc::clone(&shared);
        let url = gateway_url.clone();
        std::thread::spawn(move || {
            for stream in rest.incoming().flatten() {
                let shared = Arc::clone(&for_rest);
                let url = url.clone();
                std::thread::spawn(move || serve_rest(stream, &shared, &url));
            }
        });
        let for_gateway = Arc::clone(&shared);
        let url = gateway_url.clone();
        std::thread::spawn(move || {
            for stream in gateway.incoming().flatten() {
                let shared = Arc::clone(&for_gateway);
                let url = url.clone();
                std::thread::spawn(move || serve_gateway(stream, &shared, &url));
            }
        });
        FakeDiscord {
            api_url,
            gateway_url,
            shared,
        }
    }

    /// `author` writes `content` to the bot in a direct message (channel
    /// `dm-<author>`).
    pub fn dm(&self, author: &str, content: &str) {
        self.dispatch_message(
            author,
            None,
            &format!("dm-{author}"),
            content,
            &[],
            Vec::new(),
        );
    }

    /// As [`FakeDiscord::dm`], with a file attached: `bytes` served as
    /// `name`, and `size` as the message says it (a lie, if it differs).
    pub fn dm_with_file(&self, author: &str, content: &str, name: &str, bytes: &[u8], size: u64) {
        let url = {
            let mut state = self.lock();
            state.files.push((name.to_owned(), bytes.to_vec()));
            format!("{}/files/{name}", self.api_url.trim_end_matches("/api/v10"))
        };
        let file = json!({ "id": "1", "filename": name, "size": size, "url": url,
            "proxy_url": url, "content_type": "text/plain; charset=utf-8" });
        self.dispatch_message(
            author,
            None,
            &format!("dm-{author}"),
            content,
            &[],
            vec![file],
        );
    }

    /// `author` writes `content` in guild channel `channel`, mentioning
    /// the bot if `mention`.
    pub fn say_in_guild(&self, author: &str, channel: &str, content: &str, mention: bool) {
        let (content, mentions) = if mention {
            (format!("<@{BOT_ID}> {content}"), vec![BOT_ID])
        } else {
            (content.to_owned(), Vec::new())
        };
        self.dispatch_message(
            author,
            Some("guild-1"),
            channel,
            &content,
            &mentions,
            Vec::new(),
        );
    }

    fn dispatch_message(
        &self,
        author: &str,
        guild: Option<&str>,
        channel: &str,
        content: &str,
        mentions: &[&str],
        attachments: Vec<Value>,
    ) {
        let mut state = self.lock();
        state.seq += 1;
        let seq = state.seq;
        let payload = json!({
            "op": 0, "s": seq, "t": "MESSAGE_CREATE",
            "d": {
                "id": (FIRST_MESSAGE_ID + seq).to_string(), "channel_id": channel, "guild_id": guild,
                "content": content,
                "author": { "id": author, "username": format!("user{author}") },
                "mentions": mentions.iter().map(|id| json!({ "id": id })).collect::<Vec<_>>(),
                "attachments": attachments,
            }
        });
        state.history.push(payload["d"].clone());
        state.dispatched.push((seq, payload.clone()));
        state.push(seq, payload);
        self.shared.changed.notify_all();
    }

    /// When the last dispatch was written to the bot's connection.
    pub fn last_written(&self) -> Option<Instant> {
        self.lock().written.last().map(|(_, at)| *at)
    }

    /// The history reads the bot made: (channel, after).
    pub fn reads(&self) -> Vec<(String, String)> {
        self.lock().reads.clone()
    }

    /// `user` presses the button `custom_id` on message `message`.
    pub fn press(&self, user: &str, message: &str, custom_id: &str) {
        let mut state = self.lock();
        state.seq += 1;
        let seq = state.seq;
        let payload = json!({
            "op": 0, "s": seq, "t": "INTERACTION_CREATE",
            "d": {
                "id": format!("interaction-{seq}"), "token": format!("itoken-{seq}"),
                "type": 3, "channel_id": format!("dm-{user}"),
                "user": { "id": user, "username": format!("user{user}") },
                "message": { "id": message },
                "data": { "custom_id": custom_id, "component_type": 2 },
            }
        });
        state.dispatched.push((seq, payload.clone()));
        state.push(seq, payload);
        self.shared.changed.notify_all();
    }

    /// The interactions the bot acknowledged.
    pub fn acknowledged(&self) -> Vec<String> {
        self.lock().acknowledged.clone()
    }

    /// Waits until `done` holds for what the bot has sent; returns it.
    pub fn sent_until(&self, timeout: Duration, done: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
        let (state, _) = wait_until(&self.shared.changed, self.lock(), timeout, |s| {
            done(&s.sent)
        });
        state.sent.clone()
    }

    /// Cuts the live connection (no close frame), as a network drop does.
    pub fn drop_connection(&self) {
        self.lock().drop_now = true;
        self.shared.changed.notify_all();
    }

    /// The next message send is refused with HTTP `status` and Discord's
    /// JSON error (`code`, `message`), as Discord refuses a send to a
    /// channel the bot cannot see: `refuse_next(403, 50001, "Missing Access")`.
    pub fn refuse_next(&self, status: u16, code: u64, message: &str) {
        self.lock().refuse = Some((status, code, message.to_owned()));
    }

    /// How many sends [`FakeDiscord::refuse_next`] refused.
    pub fn refused(&self) -> u32 {
        self.lock().refused
    }

    /// The next `n` message sends are answered 429.
    pub fn rate_limit_next(&self, n: u32) {
        self.lock().rate_limited = n;
    }

    /// Files over `bytes` are refused with a 413, as Discord refuses a
    /// file over the server's upload limit.
    pub fn max_upload(&self, bytes: usize) {
        self.lock().max_upload = Some(bytes);
    }

    /// The file name of every file part the bot uploaded, taken or
    /// refused, in arrival order.
    pub fn uploads(&self) -> Vec<String> {
        self.lock().uploads.clone()
    }

    /// How many 429s were answered.
    pub fn limited(&self) -> u32 {
        self.lock().limited
    }

    /// How many sessions were identified, and the `seq` of every resume.
    pub fn sessions(&self) -> (u32, Vec<u64>) {
        let state = self.lock();
        (state.identifies, state.resumes.clone())
    }

    /// How many heartbeats the bot sent.
    pub fn heartbeats(&self) -> u32 {
        self.lock().heartbeats
    }

    /// Waits until the bot has sent at least `n` messages; returns them.
    pub fn wait_sent(&self, n: usize, timeout: Duration) -> Vec<Sent> {
        let (state, _) = wait_until(&self.shared.changed, self.lock(), timeout, |s| {
            s.sent.len() >= n
        });
        state.sent.clone()
    }

    /// Waits until a client is connected and identified or resumed.
    pub fn wait_connected(&self, timeout: Duration) -> bool {
        let (state, held) = wait_until(&self.shared.changed, self.lock(), timeout, |s| s.connected);
        drop(state);
        held
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    /// Writes dispatch `seq` to the live connection now, or keeps it for
    /// the next one (none is live, or a drop is on its way: what comes
    /// meanwhile waits).
    fn push(&mut self, seq: u64, payload: Value) {
        if !self.drop_now
            && let Some((_, stream)) = self.live.as_mut()
            && write_text(stream, &payload.to_string()).is_ok()
        {
            self.written.push((seq, Instant::now()));
            return;
        }
        self.pending.push((seq, payload));
    }
}

/// Writes `text` as one unmasked WebSocket text frame (RFC 6455 5.2), as a
/// server sends it. Every frame the gateway sends goes through here, under
/// the state's lock, so frames written from two threads never interleave.
fn write_text(stream: &mut TcpStream, text: &str) -> io::Result<()> {
    let len = text.len();
    let mut frame = Vec::with_capacity(len + 10);
    frame.push(0x81);
    match len {
        0..=125 => frame.push(len as u8),
        126..=0xFFFF => {
            frame.push(126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            frame.push(127);
            frame.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(text.as_bytes());
    stream.write_all(&frame)
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|p| p.into_inner())
}

fn serve_rest(stream: TcpStream, shared: &Shared, gateway_url: &str) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(request) = read_request(&mut reader)? {
        // The CDN: attachments, with no token (its URLs are signed).
        if let Some(name) = request.target.strip_prefix("/files/") {
            let file = lock(shared)
                .files
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, b)| b.clone());
            match file {
                Some(bytes) => write_bytes(&mut out, 200, "text/plain; charset=utf-8", &bytes)?,
                None => write_json(&mut out, 404, &[], r#"{"message": "404: Not Found"}"#)?,
            }
            if !request.keep_alive {
                return Ok(());
            }
            continue;
        }
        let (status, headers, body) = answer(&request, shared, gateway_url);
        if status == 204 {
            // No content, and no length: as Discord answers.
            out.write_all(b"HTTP/1.1 204 No Content\r\n\r\n")?;
        } else {
            write_json(&mut out, status, &headers, &body.to_string())?;
        }
        if !request.keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

fn answer(
    request: &HttpRequest,
    shared: &Shared,
    gateway_url: &str,
) -> (u16, Vec<(String, String)>, Value) {
    if request.header("authorization") != Some(&format!("Bot {}", shared.token)) {
        return (
            401,
            Vec::new(),
            json!({ "message": "401: Unauthorized", "code": 0 }),
        );
    }
    let path = request.target.split('?').next().unwrap_or_default();
    let path = path.strip_prefix("/api/v10").unwrap_or(path);
    match (request.method.as_str(), path) {
        ("GET", "/gateway/bot") => (
            200,
            Vec::new(),
            json!({ "url": gateway_url, "shards": 1,
                "session_start_limit": { "total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1 } }),
        ),
        ("GET", p) if p.starts_with("/channels/") && p.ends_with("/messages") => {
            let channel = p
                .trim_start_matches("/channels/")
                .trim_end_matches("/messages")
                .to_owned();
            let after = request
                .target
                .split_once("after=")
                .map(|(_, rest)| rest.split('&').next().unwrap_or_default().to_owned())
                .unwrap_or_default();
            let mut state = lock(shared);
            state.reads.push((channel.clone(), after.clone()));
            let number = |id: &str| id.parse::<u64>().unwrap_or(0);
            let mut newer: Vec<Value> = state
                .history
                .iter()
                .filter(|m| m["channel_id"] == channel.as_str())
                .filter(|m| number(m["id"].as_str().unwrap_or_default()) > number(&after))
                .cloned()
                .collect();
            // Discord lists the newest first.
            newer.reverse();
            (200, Vec::new(), Value::Array(newer))
        }
        ("POST", p) if p.starts_with("/channels/") && p.ends_with("/messages") => {
            let channel = p
                .trim_start_matches("/channels/")
                .trim_end_matches("/messages")
                .to_owned();
            let mut state = lock(shared);
            let bucket = |remaining: &str, after: &str| {
                vec![
                    ("x-ratelimit-bucket".to_owned(), "msgs".to_owned()),
                    ("x-ratelimit-limit".to_owned(), "5".to_owned()),
                    ("x-ratelimit-remaining".to_owned(), remaining.to_owned()),
                    ("x-ratelimit-reset-after".to_owned(), after.to_owned()),
                ]
            };
            if let Some((status, code, message)) = state.refuse.take() {
                state.refused += 1;
                shared.changed.notify_all();
                return (
                    status,
                    Vec::new(),
                    json!({ "message": message, "code": code }),
                );
            }
            if state.rate_limited > 0 {
                state.rate_limited -= 1;
                state.limited += 1;
                let mut headers = bucket("0", "0.300");
                headers.push(("retry-after".to_owned(), "1".to_owned()));
                headers.push(("x-ratelimit-scope".to_owned(), "user".to_owned()));
                return (
                    429,
                    headers,
                    json!({ "message": "You are being rate limited.", "retry_after": 0.3, "global": false }),
                );
            }
            let (body, files) = match message_body(request) {
                Ok(body) => body,
                Err(why) => {
                    return (
                        400,
                        Vec::new(),
                        json!({ "message": "Invalid Form Body", "code": 50035, "detail": why }),
                    );
                }
            };
            state.uploads.extend(
                files
                    .iter()
                    .map(|(_, part)| part.filename.clone().unwrap_or_default()),
            );
            // A file over the limit is refused before anything else looks
            // at the message.
            let max = state.max_upload.unwrap_or(DEFAULT_MAX_UPLOAD);
            if files.iter().any(|(_, part)| part.data.len() > max) {
                shared.changed.notify_all();
                return (
                    413,
                    Vec::new(),
                    json!({ "code": 40005, "message": "Request entity too large" }),
                );
            }
            let content = body["content"].as_str().unwrap_or_default().to_owned();
            // `enforce_nonce`: the same nonce again returns the message
            // made the first time, and makes none.
            if body["enforce_nonce"] == Value::Bool(true)
                && let Some(nonce) = body["nonce"].as_str()
            {
                if nonce.chars().count() > 25 {
                    return (
                        400,
                        Vec::new(),
                        json!({ "message": "Invalid Form Body", "code": 50035 }),
                    );
                }
                if let Some(at) = state.nonces.iter().position(|n| n == nonce) {
                    let sent = &state.sent[at];
                    return (
                        200,
                        bucket("4", "1.000"),
                        json!({ "id": sent.id, "channel_id": sent.channel, "content": sent.content }),
                    );
                }
            }
            if content.is_empty() && files.is_empty() {
                return (
                    400,
                    Vec::new(),
                    json!({ "message": "Cannot send an empty message", "code": 50006 }),
                );
            }
            if content.chars().count() > 2000 {
                return (
                    400,
                    Vec::new(),
                    json!({ "message": "Invalid Form Body", "code": 50035,
                        "errors": { "content": { "_errors": [{ "code": "BASE_TYPE_MAX_LENGTH",
                            "message": "Must be 2000 or fewer in length." }] } } }),
                );
            }
            let id = format!("sent-{}", state.sent.len() + 1);
            let nonce = body["nonce"].as_str().unwrap_or_default().to_owned();
            state.nonces.push(nonce);
            state.sent.push(Sent {
                id: id.clone(),
                channel: channel.clone(),
                content: content.clone(),
                components: body["components"].clone(),
                edits: 0,
                received: Instant::now(),
                files: files
                    .into_iter()
                    .map(|(name, part)| SentFile {
                        name,
                        content_type: part.content_type,
                        bytes: part.data,
                    })
                    .collect(),
            });
            shared.changed.notify_all();
            (
                200,
                bucket("4", "1.000"),
                json!({ "id": id, "channel_id": channel, "content": content }),
            )
        }
        ("POST", p) if p.ends_with("/typing") => (204, Vec::new(), Value::Null),
        ("PATCH", p) if p.starts_with("/channels/") => {
            let id = p.rsplit('/').next().unwrap_or_default();
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let mut state = lock(shared);
            let Some(sent) = state.sent.iter_mut().find(|s| s.id == id) else {
                return (
                    404,
                    Vec::new(),
                    json!({ "message": "Unknown Message", "code": 10008 }),
                );
            };
            if let Some(content) = body["content"].as_str() {
                sent.content = content.to_owned();
            }
            if !body["components"].is_null() {
                sent.components = body["components"].clone();
            }
            sent.edits += 1;
            let answer = json!({ "id": sent.id, "content": sent.content });
            shared.changed.notify_all();
            (200, Vec::new(), answer)
        }
        ("POST", "/users/@me/channels") => {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let user = body["recipient_id"].as_str().unwrap_or_default();
            (
                200,
                Vec::new(),
                json!({ "id": format!("dm-{user}"), "type": 1 }),
            )
        }
        ("POST", p) if p.starts_with("/interactions/") && p.ends_with("/callback") => {
            let id = p.split('/').nth(2).unwrap_or_default().to_owned();
            lock(shared).acknowledged.push(id);
            shared.changed.notify_all();
            (204, Vec::new(), Value::Null)
        }
        _ => (
            404,
            Vec::new(),
            json!({ "message": "404: Not Found", "code": 0 }),
        ),
    }
}

/// One part of a `multipart/form-data` body.
struct FormPart {
    /// The field's name (`payload_json`, `files[0]`).
    name: String,
    /// The file name, for a file field.
    filename: Option<String>,
    /// Its `content-type`, when given.
    content_type: Option<String>,
    /// Its bytes.
    data: Vec<u8>,
}

/// A message create's JSON and its files (each with the name Discord
/// shows), from a JSON body or, as Discord takes uploads, from
/// `multipart/form-data` with the JSON in `payload_json` and the files in
/// `files[n]` parts that the JSON's `attachments` name by `id: n`.
fn message_body(request: &HttpRequest) -> Result<(Value, Vec<(String, FormPart)>), String> {
    let content_type = request.header("content-type").unwrap_or_default();
    if !content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        let body = serde_json::from_slice(&request.body).map_err(|e| format!("not JSON: {e}"))?;
        return Ok((body, Vec::new()));
    }
    let mut payload = None;
    let mut files = Vec::new();
    for part in parse_form(content_type, &request.body)? {
        if part.name == "payload_json" {
            let json = serde_json::from_slice(&part.data)
                .map_err(|e| format!("payload_json is not JSON: {e}"))?;
            payload = Some(json);
        } else if let Some(n) = part
            .name
            .strip_prefix("files[")
            .and_then(|rest| rest.strip_suffix(']'))
        {
            let n: u64 = n
                .parse()
                .map_err(|_| format!("bad part name {}", part.name))?;
            if part.filename.is_none() {
                return Err(format!("{} has no filename", part.name));
            }
            files.push((n, part));
        } else {
            return Err(format!("unknown part {}", part.name));
        }
    }
    let payload: Value = payload.ok_or("no payload_json part")?;
    if files.len() > MAX_FILES {
        return Err(format!("{} files, more than {MAX_FILES}", files.len()));
    }
    let described = payload["attachments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for entry in &described {
        let id = entry["id"]
            .as_u64()
            .or_else(|| entry["id"].as_str().and_then(|id| id.parse().ok()));
        if !files.iter().any(|(n, _)| Some(*n) == id) {
            return Err(format!("attachment {entry} has no files[n] part"));
        }
    }
    let named = files
        .into_iter()
        .map(|(n, part)| {
            let name = described
                .iter()
                .find(|e| e["id"].as_u64() == Some(n) || e["id"] == n.to_string().as_str())
                .and_then(|e| e["filename"].as_str().map(str::to_owned))
                .or_else(|| part.filename.clone())
                .unwrap_or_default();
            (name, part)
        })
        .collect();
    Ok((payload, named))
}

/// The parts of a `multipart/form-data` body (RFC 7578), read as a server
/// reads them: the boundary from `content_type` (quoted or not), parts
/// between `CRLF--boundary` delimiters up to the closing `--boundary--`,
/// and `content-disposition` parameters as quoted strings (with their
/// backslash escapes, and `;` inside them) or RFC 8187 `name*=` values.
fn parse_form(content_type: &str, body: &[u8]) -> Result<Vec<FormPart>, String> {
    let boundary = parameters(content_type)
        .into_iter()
        .find(|(key, _)| key == "boundary")
        .map(|(_, value)| value)
        .filter(|b| !b.is_empty())
        .ok_or("no boundary")?;
    let delimiter = format!("\r\n--{boundary}").into_bytes();
    // The first delimiter may start the body, with no line break before.
    let mut rest: &[u8] = if body.starts_with(&delimiter[2..]) {
        &body[delimiter.len() - 2..]
    } else {
        let at = find(body, &delimiter).ok_or("no opening boundary")?;
        &body[at + delimiter.len()..]
    };
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        // Transport padding, then the line break that ends the delimiter.
        while rest.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
            rest = &rest[1..];
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or("a boundary not followed by a line break")?;
        let end = find(rest, &delimiter).ok_or("no closing boundary")?;
        let part = &rest[..end];
        rest = &rest[end + delimiter.len()..];
        let (head, data) = if let Some(data) = part.strip_prefix(b"\r\n") {
            (&b""[..], data)
        } else {
            let split = find(part, b"\r\n\r\n").ok_or("a part without a blank line")?;
            (&part[..split], &part[split + 4..])
        };
        let head = std::str::from_utf8(head).map_err(|_| "a part's head is not UTF-8")?;
        let mut disposition = None;
        let mut content_type = None;
        for line in head.split("\r\n") {
            let (key, value) = line.split_once(':').ok_or("a malformed part header")?;
            match key.trim().to_ascii_lowercase().as_str() {
                "content-disposition" => disposition = Some(value.trim().to_owned()),
                "content-type" => content_type = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let disposition = disposition.ok_or("a part without content-disposition")?;
        if !disposition.to_ascii_lowercase().starts_with("form-data") {
            return Err(format!("a part that is not form-data: {disposition}"));
        }
        let params = parameters(&disposition);
        let param = |key: &str| {
            params
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let name = param("name")
            .or_else(|| param("name*").and_then(|v| ext_value(&v)))
            .ok_or("a part without a name")?;
        parts.push(FormPart {
            name,
            filename: param("filename"),
            content_type,
            data: data.to_vec(),
        });
    }
}

/// The `key=value` parameters after a header's first `;`, keys
/// lowercased, quoted values unquoted and unescaped.
fn parameters(header: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut chars = header.chars().peekable();
    // The value before the first `;` (`form-data`, the media type).
    for c in chars.by_ref() {
        if c == ';' {
            break;
        }
    }
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ';') {
            chars.next();
        }
        let key: String = chars
            .by_ref()
            .take_while(|c| *c != '=')
            .collect::<String>()
            .trim()
            .to_ascii_lowercase();
        if key.is_empty() {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
            // Up to the next parameter.
            for c in chars.by_ref() {
                if c == ';' {
                    break;
                }
            }
        } else {
            value = chars
                .by_ref()
                .take_while(|c| *c != ';')
                .collect::<String>()
                .trim()
                .to_owned();
        }
        params.push((key, value));
    }
}

/// An RFC 8187 value (`utf-8''files%5B0%5D`), decoded.
fn ext_value(value: &str) -> Option<String> {
    let (charset, rest) = value.split_once('\'')?;
    let (_, encoded) = rest.split_once('\'')?;
    if !charset.eq_ignore_ascii_case("utf-8") {
        return None;
    }
    let bytes = encoded.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn serve_gateway(stream: TcpStream, shared: &Shared, url: &str) {
    let Ok(mut socket) = tungstenite::accept(stream.try_clone().expect("clone")) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let id = {
        let mut state = lock(shared);
        state.connections += 1;
        state.connections
    };
    // However this connection ends, dispatches stop being written to it.
    let _live = Unlive { shared, id };
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let send = |out: &mut TcpStream, payload: Value| {
        let _state = lock(shared);
        write_text(out, &payload.to_string())
    };
    if send(
        &mut out,
        json!({ "op": 10, "d": { "heartbeat_interval": HEARTBEAT_MS } }),
    )
    .is_err()
    {
        return;
    }
    let mut live = false;
    let started = Instant::now();
    loop {
        if live {
            let mut state = lock(shared);
            if std::mem::take(&mut state.drop_now) {
                state.connected = false;
                state.live = None;
                drop(state);
                // Gone without a close frame; what comes meanwhile waits.
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return;
            }
        } else if started.elapsed() > Duration::from_secs(10) {
            return;
        }
        let payload: Value = match socket.read() {
            Ok(Message::Text(text)) => serde_json::from_str(&text).unwrap_or(Value::Null),
            Ok(Message::Close(_)) => {
                lock(shared).connected = false;
                return;
            }
            Ok(_) => continue,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => {
                lock(shared).connected = false;
                return;
            }
        };
        match payload["op"].as_u64() {
            Some(1) => {
                lock(shared).heartbeats += 1;
                if send(&mut out, json!({ "op": 11 })).is_err() {
                    return;
                }
            }
            Some(2) => {
                if payload["d"]["token"] != shared.token.as_str() {
                    let _ = socket.close(Some(CloseFrame {
                        code: CloseCode::Library(4004),
                        reason: "Authentication failed.".into(),
                    }));
                    let _ = socket.flush();
                    return;
                }
                let mut state = lock(shared);
                state.identifies += 1;
                state.session += 1;
                // A new session: nothing before it is owed.
                state.dispatched.clear();
                state.pending.clear();
                state.seq += 1;
                let ready = json!({ "op": 0, "s": state.seq, "t": "READY", "d": {
                    "v": 10, "session_id": format!("session-{}", state.session),
                    "resume_gateway_url": url,
                    "user": { "id": BOT_ID, "username": "hearthbot", "bot": true },
                    "guilds": [],
                }});
                if write_text(&mut out, &ready.to_string()).is_err() {
                    return;
                }
                if !go_live(&mut state, id, &out) {
                    return;
                }
                shared.changed.notify_all();
                live = true;
            }
            Some(6) => {
                let seq = payload["d"]["seq"].as_u64().unwrap_or(0);
                let mut state = lock(shared);
                let known = format!("session-{}", state.session);
                if payload["d"]["session_id"] != known.as_str() {
                    if write_text(&mut out, &json!({ "op": 9, "d": false }).to_string()).is_err() {
                        return;
                    }
                    continue;
                }
                state.resumes.push(seq);
                state.pending.clear();
                state.seq += 1;
                let resumed = state.seq;
                let mut replay: Vec<Value> = state
                    .dispatched
                    .iter()
                    .filter(|(s, _)| *s > seq)
                    .map(|(_, p)| p.clone())
                    .collect();
                replay.push(json!({ "op": 0, "s": resumed, "t": "RESUMED", "d": {} }));
                for payload in replay {
                    if write_text(&mut out, &payload.to_string()).is_err() {
                        return;
                    }
                }
                if !go_live(&mut state, id, &out) {
                    return;
                }
                shared.changed.notify_all();
                live = true;
            }
            _ => {}
        }
    }
}

/// Makes connection `id` (its writing half `out`) the live one, and writes
/// what waited for it. `false` if it cannot be written to.
fn go_live(state: &mut State, id: u64, out: &TcpStream) -> bool {
    let Ok(stream) = out.try_clone() else {
        return false;
    };
    state.connected = true;
    state.live = Some((id, stream));
    for (seq, payload) in std::mem::take(&mut state.pending) {
        state.push(seq, payload);
    }
    true
}

/// Ends a connection's turn as the live one when its thread returns.
struct Unlive<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Unlive<'_> {
    fn drop(&mut self) {
        let mut state = lock(self.shared);
        if state
            .live
            .as_ref()
            .is_some_and(|(live, _)| *live == self.id)
        {
            state.live = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_is_read_as_a_server_reads_it() {
        let body = b"--b0\r\n\
            Content-Disposition: form-data; name=\"payload_json\"\r\n\r\n\
            {\"content\":\"hi\"}\r\n\
            --b0  \r\n\
            Content-Disposition: form-data; name*=utf-8''files%5B0%5D; filename=\"a; \\\"b\\\".txt\"\r\n\
            Content-Type: text/plain\r\n\r\n\
            line one\r\nline two\r\n\r\n\
            --b0--\r\n";
        let parts = parse_form("multipart/form-data; boundary=\"b0\"", body).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "payload_json");
        assert_eq!(parts[0].data, b"{\"content\":\"hi\"}");
        assert_eq!(parts[1].name, "files[0]");
        assert_eq!(parts[1].filename.as_deref(), Some("a; \"b\".txt"));
        assert_eq!(parts[1].content_type.as_deref(), Some("text/plain"));
        assert_eq!(parts[1].data, b"line one\r\nline two\r\n");
        for bad in [
            &b"--b0\r\nno blank line"[..],
            b"nothing",
            b"--b0\r\n\r\nunclosed",
        ] {
            assert!(parse_form("multipart/form-data; boundary=b0", bad).is_err());
        }
    }
}
