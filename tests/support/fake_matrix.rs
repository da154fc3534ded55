//! A fake Matrix homeserver on 127.0.0.1, speaking the client-server API
//! routes the channel uses: `GET /account/whoami` (401 `M_UNKNOWN_TOKEN`
//! for a bad token), `GET /sync` (long-polled, `since` tokens, joined
//! rooms' timelines and invites), `PUT /rooms/{room}/send/...` (one event
//! per transaction id, 429 `M_LIMIT_EXCEEDED` with `retry_after_ms` when
//! asked), `POST /rooms/{room}/join` and `PUT .../typing/...`; and the
//! media repository: `POST /_matrix/media/v3/upload` (413 `M_TOO_LARGE`
//! over a size set with `max_upload`), `GET
//! /_matrix/client/v1/media/download/{server}/{id}` (authenticated), and
//! the old unauthenticated `GET /_matrix/media/v3/download/...`, which,
//! as on a server with authenticated media, finds no new media (404
//! `M_NOT_FOUND`); `legacy_media` makes it an older server instead, one
//! that knows only the old route (404 `M_UNRECOGNIZED` for the new one).
//! Errors are the spec's JSON: `{"errcode", "error"}`.
//!
//! Users write with `say`, `say_file`, `say_content`, `reply` and `react`,
//! invite with `invite`; the test reads what the bot sent (`wait_sent`),
//! the files it uploaded (`media`) and the rooms it joined.

use std::io::{self, BufReader};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::http_server::{HttpRequest, read_request, wait_until, write_bytes, write_json};

/// The bot's user id.
pub const BOT: &str = "@hearth:fake.example";
/// The homeserver's name, in its `mxc://` URLs.
pub const SERVER: &str = "fake.example";

/// A message the bot sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// The room.
    pub room: String,
    /// Its event id.
    pub event_id: String,
    /// Its content.
    pub content: Value,
    /// When its request arrived.
    pub received: Instant,
}

/// A file in the media repository.
#[derive(Debug, Clone, PartialEq)]
pub struct Media {
    /// The name it was uploaded with (`?filename=`), if any.
    pub name: Option<String>,
    /// Its `Content-Type`.
    pub mime: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What a route answers.
enum Reply {
    Json(u16, Value),
    Bytes(String, Vec<u8>),
}

/// The running fake.
pub struct FakeMatrix {
    /// The homeserver's base URL.
    pub url: String,
    shared: Arc<Shared>,
}

struct Shared {
    token: String,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Every timeline event: (stream position, room, event).
    events: Vec<(u64, String, Value)>,
    position: u64,
    /// Pending invites: (room, by).
    invites: Vec<(String, String)>,
    joined: Vec<String>,
    sent: Vec<Sent>,
    /// (room, txn) -> event id, so a repeated transaction is one event.
    transactions: Vec<((String, String), String)>,
    rate_limited: u32,
    limited: u32,
    syncs: u32,
    /// The media repository: (media id, file).
    media: Vec<(String, Media)>,
    /// Uploads over this many bytes are refused.
    max_upload: Option<usize>,
    /// An older server, without the authenticated media API.
    legacy_media: bool,
    /// The download requests answered with a file, by path.
    downloads: Vec<String>,
    /// When the last `/sync` answer that carried a user's event was
    /// written.
    last_written: Option<Instant>,
}

impl FakeMatrix {
    /// Starts the server; the bot's access token is `token`.
    pub fn start(token: &str) -> FakeMatrix {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the homeserver");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            state: Mutex::default(),
            changed: Condvar::new(),
        });
        let serving = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = Arc::clone(&serving);
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        FakeMatrix { url, shared }
    }

    /// `sender` writes `body` in `room`; returns the event's id.
    pub fn say(&self, room: &str, sender: &str, body: &str) -> String {
        self.push(
            room,
            sender,
            "m.room.message",
            json!({ "msgtype": "m.text", "body": body }),
        )
    }

    /// Puts a file in the media repository (as if a user uploaded it);
    /// its `mxc://` URL.
    pub fn store_media(&self, name: &str, mime: &str, bytes: &[u8]) -> String {
        let mut state = self.lock();
        store(&mut state, Some(name), mime, bytes)
    }

    /// `sender` sends a file: a `msgtype` message (`m.image`, `m.file`,
    /// ...) named `name`, its bytes in the media repository.
    pub fn say_file(
        &self,
        room: &str,
        sender: &str,
        msgtype: &str,
        name: &str,
        mime: &str,
        bytes: &[u8],
    ) -> String {
        let url = self.store_media(name, mime, bytes);
        self.say_content(
            room,
            sender,
            json!({ "msgtype": msgtype, "body": name, "url": url,
                "info": { "mimetype": mime, "size": bytes.len() } }),
        )
    }

    /// `sender` sends a message of any `content`.
    pub fn say_content(&self, room: &str, sender: &str, content: Value) -> String {
        self.push(room, sender, "m.room.message", content)
    }

    /// The file at `mxc` (`mxc://fake.example/<id>`), if there is one.
    pub fn media(&self, mxc: &str) -> Option<Media> {
        let id = mxc.strip_prefix(&format!("mxc://{SERVER}/"))?;
        let state = self.lock();
        state
            .media
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, m)| m.clone())
    }

    /// Uploads over `bytes` are refused with 413 `M_TOO_LARGE`.
    pub fn max_upload(&self, bytes: usize) {
        self.lock().max_upload = Some(bytes);
    }

    /// Makes the server an older one, which knows only the
    /// unauthenticated media routes.
    pub fn legacy_media(&self) {
        self.lock().legacy_media = true;
    }

    /// The paths of the downloads answered with a file.
    pub fn downloads(&self) -> Vec<String> {
        self.lock().downloads.clone()
    }

    /// When the last `/sync` answer that carried a user's event was
    /// written to the bot.
    pub fn last_written(&self) -> Option<Instant> {
        self.lock().last_written
    }

    /// `sender` writes an end-to-end encrypted message in `room`.
    pub fn say_encrypted(&self, room: &str, sender: &str) -> String {
        self.push(
            room,
            sender,
            "m.room.encrypted",
            json!({ "algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEn...", "session_id": "x" }),
        )
    }

    /// `sender` replies `body` to event `to`.
    pub fn reply(&self, room: &str, sender: &str, to: &str, body: &str) -> String {
        self.push(
            room,
            sender,
            "m.room.message",
            json!({ "msgtype": "m.text", "body": format!("> <{BOT}> the card\n\n{body}"),
                "m.relates_to": { "m.in_reply_to": { "event_id": to } } }),
        )
    }

    /// `sender` reacts `key` to event `to`.
    pub fn react(&self, room: &str, sender: &str, to: &str, key: &str) -> String {
        self.push(
            room,
            sender,
            "m.reaction",
            json!({ "m.relates_to": { "rel_type": "m.annotation", "event_id": to, "key": key } }),
        )
    }

    /// `by` invites the bot to `room`.
    pub fn invite(&self, room: &str, by: &str) {
        let mut state = self.lock();
        state.position += 1;
        state.invites.push((room.to_owned(), by.to_owned()));
        self.shared.changed.notify_all();
    }

    /// The next `n` sends get a 429.
    pub fn rate_limit_next(&self, n: u32) {
        self.lock().rate_limited = n;
    }

    /// How many 429s were answered.
    pub fn limited(&self) -> u32 {
        self.lock().limited
    }

    /// The rooms the bot joined.
    pub fn joined(&self) -> Vec<String> {
        self.lock().joined.clone()
    }

    /// Waits until the bot has synced at least `n` times.
    pub fn wait_syncs(&self, n: u32, timeout: Duration) -> bool {
        let (state, held) =
            wait_until(&self.shared.changed, self.lock(), timeout, |s| s.syncs >= n);
        drop(state);
        held
    }

    /// Waits until the bot has sent at least `n` messages; returns them.
    pub fn wait_sent(&self, n: usize, timeout: Duration) -> Vec<Sent> {
        let (state, _) = wait_until(&self.shared.changed, self.lock(), timeout, |s| {
            s.sent.len() >= n
        });
        state.sent.clone()
    }

    fn push(&self, room: &str, sender: &str, kind: &str, content: Value) -> String {
        let mut state = self.lock();
        state.position += 1;
        let id = format!("$event{}", state.position);
        let event = json!({ "type": kind, "event_id": id, "sender": sender, "content": content,
            "origin_server_ts": 1_700_000_000_000u64 + state.position, "room_id": room });
        let position = state.position;
        state.events.push((position, room.to_owned(), event));
        self.shared.changed.notify_all();
        id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.shared)
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|p| p.into_inner())
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(request) = read_request(&mut reader)? {
        let received = Instant::now();
        match answer(&request, shared, received) {
            Reply::Json(status, body) => {
                write_json(&mut out, status, &[], &body.to_string())?;
                // The benchmark's clock starts when the bot could read
                // the message: its sync answer is written. The bot's own
                // replies come back in later answers; those do not count.
                let carried = body["rooms"]["join"]
                    .as_object()
                    .into_iter()
                    .flat_map(|rooms| rooms.values())
                    .flat_map(|room| room["timeline"]["events"].as_array().into_iter().flatten())
                    .any(|event| event["sender"] != BOT);
                if request.target.starts_with("/_matrix/client/v3/sync") && carried {
                    lock(shared).last_written = Some(Instant::now());
                }
            }
            Reply::Bytes(mime, bytes) => write_bytes(&mut out, 200, &mime, &bytes)?,
        }
        if !request.keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

/// A Matrix error answer.
fn error(status: u16, errcode: &str, message: &str) -> Reply {
    Reply::Json(status, json!({ "errcode": errcode, "error": message }))
}

fn answer(request: &HttpRequest, shared: &Shared, received: Instant) -> Reply {
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((&request.target, ""));
    let parts: Vec<String> = path.split('/').map(decode).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    // The old media routes need no token.
    if let ("GET", ["", "_matrix", "media", "v3", "download", server, id, ..]) =
        (request.method.as_str(), &parts[..])
    {
        let state = lock(shared);
        return if state.legacy_media {
            download(state, server, id, path)
        } else {
            // Authenticated media freezes the old route: new media is
            // found only through the new one.
            error(404, "M_NOT_FOUND", "Not found")
        };
    }
    match request.header("authorization") {
        None => return error(401, "M_MISSING_TOKEN", "Missing access token"),
        Some(auth) if auth != format!("Bearer {}", shared.token) => {
            return error(401, "M_UNKNOWN_TOKEN", "Unknown access token");
        }
        Some(_) => {}
    }
    match (request.method.as_str(), &parts[..]) {
        ("POST", ["", "_matrix", "media", "v3", "upload"]) => {
            let mut state = lock(shared);
            if state.max_upload.is_some_and(|max| request.body.len() > max) {
                return error(
                    413,
                    "M_TOO_LARGE",
                    "Cannot upload files larger than the limit",
                );
            }
            let name = param(query, "filename");
            let mime = request
                .header("content-type")
                .unwrap_or("application/octet-stream")
                .to_owned();
            let uri = store(&mut state, name.as_deref(), &mime, &request.body);
            return Reply::Json(200, json!({ "content_uri": uri }));
        }
        (
            "GET",
            [
                "",
                "_matrix",
                "client",
                "v1",
                "media",
                "download",
                server,
                id,
                ..,
            ],
        ) => {
            let state = lock(shared);
            return if state.legacy_media {
                error(404, "M_UNRECOGNIZED", "Unrecognized request")
            } else {
                download(state, server, id, path)
            };
        }
        _ => {}
    }
    let Some(path) = path.strip_prefix("/_matrix/client/v3") else {
        return error(404, "M_UNRECOGNIZED", "Unrecognized request");
    };
    let parts: Vec<String> = path.split('/').map(decode).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match (request.method.as_str(), &parts[1..]) {
        ("GET", ["account", "whoami"]) => Reply::Json(200, json!({ "user_id": BOT })),
        ("GET", ["sync"]) => sync(shared, query),
        ("PUT", ["rooms", room, "send", "m.room.message", txn]) => {
            let content: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let mut state = lock(shared);
            if state.rate_limited > 0 {
                state.rate_limited -= 1;
                state.limited += 1;
                return Reply::Json(
                    429,
                    json!({ "errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 300 }),
                );
            }
            let key = ((*room).to_owned(), (*txn).to_owned());
            if let Some((_, id)) = state.transactions.iter().find(|(k, _)| *k == key) {
                return Reply::Json(200, json!({ "event_id": id }));
            }
            state.position += 1;
            let id = format!("$bot{}", state.position);
            let position = state.position;
            let event = json!({ "type": "m.room.message", "event_id": id, "sender": BOT,
                "content": content, "room_id": room });
            state.events.push((position, (*room).to_owned(), event));
            state.transactions.push((key, id.clone()));
            state.sent.push(Sent {
                room: (*room).to_owned(),
                event_id: id.clone(),
                content,
                received,
            });
            shared.changed.notify_all();
            Reply::Json(200, json!({ "event_id": id }))
        }
        ("POST", ["rooms", room, "join"]) => {
            let mut state = lock(shared);
            state.invites.retain(|(r, _)| r != room);
            state.joined.push((*room).to_owned());
            shared.changed.notify_all();
            Reply::Json(200, json!({ "room_id": room }))
        }
        ("PUT", ["rooms", _, "typing", _]) => Reply::Json(200, json!({})),
        _ => error(404, "M_UNRECOGNIZED", "Unrecognized request"),
    }
}

/// Adds a file to the media repository; its `mxc://` URL.
fn store(state: &mut State, name: Option<&str>, mime: &str, bytes: &[u8]) -> String {
    let id = format!("media{}", state.media.len() + 1);
    state.media.push((
        id.clone(),
        Media {
            name: name.map(str::to_owned),
            mime: mime.to_owned(),
            bytes: bytes.to_vec(),
        },
    ));
    format!("mxc://{SERVER}/{id}")
}

/// A download: the file, or 404 `M_NOT_FOUND`.
fn download(
    mut state: std::sync::MutexGuard<'_, State>,
    server: &str,
    id: &str,
    path: &str,
) -> Reply {
    let found = (server == SERVER)
        .then(|| state.media.iter().find(|(i, _)| i == id))
        .flatten()
        .map(|(_, m)| m.clone());
    match found {
        Some(media) => {
            state.downloads.push(path.to_owned());
            Reply::Bytes(media.mime, media.bytes)
        }
        None => error(404, "M_NOT_FOUND", "Not found"),
    }
}

/// The query parameter `name`, decoded.
fn param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .map(decode)
}

/// `/sync`: everything after `since` (all of it on a first sync), waiting
/// up to `timeout` ms for something when there is nothing yet.
fn sync(shared: &Shared, query: &str) -> Reply {
    let param = |name: &str| param(query, name);
    let since: u64 = param("since")
        .and_then(|s| s.strip_prefix('s').and_then(|n| n.parse().ok()))
        .unwrap_or(0);
    let timeout = Duration::from_millis(param("timeout").and_then(|t| t.parse().ok()).unwrap_or(0));
    // Counted as it arrives: a test waits for the bot's live long poll.
    {
        let mut state = lock(shared);
        state.syncs += 1;
        shared.changed.notify_all();
    }
    let (state, _) = wait_until(&shared.changed, lock(shared), timeout, |s| {
        s.position > since
    });
    let mut join: Map<String, Value> = Map::new();
    for (position, room, event) in &state.events {
        if *position > since {
            let timeline = join
                .entry(room.clone())
                .or_insert_with(|| json!({ "timeline": { "events": [] } }));
            if let Some(events) = timeline["timeline"]["events"].as_array_mut() {
                events.push(event.clone());
            }
        }
    }
    let mut invite: Map<String, Value> = Map::new();
    for (room, by) in &state.invites {
        invite.insert(
            room.clone(),
            json!({ "invite_state": { "events": [{ "type": "m.room.member", "state_key": BOT,
                "sender": by, "content": { "membership": "invite" } }] } }),
        );
    }
    let next = state.position;
    shared.changed.notify_all();
    drop(state);
    Reply::Json(
        200,
        json!({ "next_batch": format!("s{next}"), "rooms": { "join": join, "invite": invite } }),
    )
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
