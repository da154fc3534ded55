//! A fake Telegram Bot API server for the integration tests, so a Telegram
//! channel can be driven end to end with no network and no real bot.
//!
//! [`FakeTelegram`] is a real HTTP/1.1 server on 127.0.0.1 that answers
//! `GET|POST /bot<token>/<method>` the way the Bot API does: every answer is
//! `{"ok":true,"result":...}` or `{"ok":false,"error_code":...,"description":...}`
//! with the same HTTP status, parameters come as a query string, a JSON body,
//! a form or `multipart/form-data`, and method names are case-insensitive.
//! The test side pushes incoming updates ([`FakeTelegram::push_message`],
//! [`FakeTelegram::push_callback`]), reads what the bot sent
//! ([`FakeTelegram::sent`]) and every request ([`FakeTelegram::requests`]),
//! and injects the faults a channel must survive: flood limits (429 with
//! `retry_after`), a server that stops answering, and one-off errors.
//!
//! What the real server checks and the fake checks too: the token, the
//! 4096-character text limit (counted after entity parsing, in UTF-16 code
//! units as entity offsets are), HTML markup (supported tags, balanced,
//! with tdlib's error wording), editing to identical content, `getUpdates`
//! while a webhook is set, and two `getUpdates` at once.

use std::collections::HashMap;
use std::io::{self, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::http_server::{self, HttpRequest, read_request, write_json};

/// The longest message text the Bot API accepts, after entity parsing.
pub const MAX_TEXT: usize = 4096;

/// The HTML tags the Bot API's `parse_mode: "HTML"` accepts.
const HTML_TAGS: &[&str] = &[
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "code",
    "pre",
    "blockquote",
    "tg-emoji",
];

/// A fake Bot API listening on 127.0.0.1. Dropping it stops accepting
/// connections and answers nothing more, including long polls and requests
/// held by [`FakeTelegram::hang`].
pub struct FakeTelegram {
    addr: SocketAddr,
    token: String,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// One message the bot sent (`sendMessage`, `sendDocument`, `sendPhoto`,
/// `sendVoice`, `sendAudio`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    /// The method that sent it, as the bot spelled it.
    pub method: String,
    /// The target chat.
    pub chat_id: i64,
    /// The current text (or caption) as sent, markup included; edits
    /// replace it.
    pub text: String,
    /// `parse_mode`, when given.
    pub parse_mode: Option<String>,
    /// `reply_markup` parsed as JSON, when given.
    pub reply_markup: Option<Value>,
    /// The message replied to, from `reply_to_message_id` or
    /// `reply_parameters.message_id`.
    pub reply_to: Option<i64>,
    /// The id the fake gave it.
    pub message_id: i64,
    /// Every text set by `editMessageText`, in order.
    pub edits: Vec<String>,
    /// For uploads: the file field's name, file name and size in bytes.
    pub file: Option<(String, String, usize)>,
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Request {
    /// `GET` or `POST`.
    pub http_method: String,
    /// The Bot API method as the client spelled it (`sendMessage`), or the
    /// whole path for requests outside `/bot<token>/`.
    pub method: String,
    /// Every parameter as a JSON object: the query string, then the body.
    /// Form and multipart values that parse as JSON numbers, objects or
    /// arrays are stored parsed; uploaded files as
    /// `{"filename": ..., "size": ...}`.
    pub params: Value,
    /// Whether the token in the path was the right one.
    pub authorized: bool,
    /// When the whole request had arrived.
    pub received: Instant,
}

/// What `setWebhook` stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    /// The webhook URL.
    pub url: String,
    /// `secret_token`, when given.
    pub secret_token: Option<String>,
}

impl FakeTelegram {
    /// Starts the server on 127.0.0.1:0 for the bot token `token`
    /// (`123456:ABC...`; the number before the colon is the bot's user id).
    pub fn start(token: &str) -> FakeTelegram {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake Telegram: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake Telegram: local address");
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            state: Mutex::new(State {
                next_update_id: 1,
                next_message_id: 1,
                ..State::default()
            }),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("fake-telegram-accept".into())
            .spawn(move || http_server::accept_each(&listener, &accepting, Shared::stopping, serve))
            .expect("fake Telegram: spawn the accept thread");
        FakeTelegram {
            addr,
            token: token.to_owned(),
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT` (no trailing slash): the API base a client
    /// puts `/bot<token>/<method>` after.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The token the server accepts.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Queues a private text message from user `from_id` in chat `chat_id`
    /// (a `bot_command` entity when it starts with `/`); returns its
    /// `update_id`.
    pub fn push_message(&self, chat_id: i64, from_id: i64, text: &str) -> i64 {
        let mut state = self.shared.lock();
        let message_id = state.take_message_id();
        let mut message = json!({
            "message_id": message_id,
            "from": user(from_id),
            "chat": chat(chat_id, from_id),
            "date": now(),
            "text": text,
        });
        if text.starts_with('/') {
            let command = text.split_whitespace().next().unwrap_or_default();
            message["entities"] = json!([{
                "offset": 0,
                "length": utf16_len(command),
                "type": "bot_command",
            }]);
        }
        state.push_update("message", message, &self.shared.changed)
    }

    /// Queues a press on an inline button with callback `data`, under the
    /// bot's message `message_id` in `chat_id`; returns its `update_id`.
    /// The callback query's id is `cb<update_id>`.
    pub fn push_callback(&self, chat_id: i64, from_id: i64, message_id: i64, data: &str) -> i64 {
        let mut state = self.shared.lock();
        let text = state
            .sent
            .iter()
            .find(|s| s.message_id == message_id)
            .map_or_else(String::new, |s| s.text.clone());
        let update_id = state.next_update_id;
        let query = json!({
            "id": format!("cb{update_id}"),
            "from": user(from_id),
            "message": {
                "message_id": message_id,
                "from": bot_user(&self.shared.token),
                "chat": chat(chat_id, from_id),
                "date": now(),
                "text": text,
            },
            "chat_instance": format!("{chat_id}"),
            "data": data,
        });
        state.push_update("callback_query", query, &self.shared.changed)
    }

    /// Queues a raw update; its `update_id` is set to the next one when it
    /// has none. Returns the `update_id`.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let mut state = self.shared.lock();
        let update_id = match update["update_id"].as_i64() {
            Some(id) => id,
            None => {
                update["update_id"] = json!(state.next_update_id);
                state.next_update_id
            }
        };
        state.next_update_id = state.next_update_id.max(update_id + 1);
        state.updates.push(update);
        self.shared.changed.notify_all();
        update_id
    }

    /// The updates not yet confirmed by a `getUpdates` offset.
    pub fn pending_updates(&self) -> Vec<Value> {
        self.shared.lock().updates.clone()
    }

    /// Everything the bot sent so far, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.lock().sent.clone()
    }

    /// Blocks until at least `n` messages were sent or `timeout` passes;
    /// returns all of them either way.
    pub fn wait_for_sent(&self, n: usize, timeout: Duration) -> Vec<Sent> {
        let state = self.shared.lock();
        let (state, _) =
            http_server::wait_until(&self.shared.changed, state, timeout, |s| s.sent.len() >= n);
        state.sent.clone()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// The requests for one Bot API method (matched case-insensitively).
    pub fn requests_for(&self, method: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method.eq_ignore_ascii_case(method))
            .collect()
    }

    /// Blocks until at least `n` requests have arrived or `timeout` passes;
    /// returns whether they did. A request counts as soon as it is read,
    /// before it is answered (or held by [`FakeTelegram::hang`]).
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let state = self.shared.lock();
        http_server::wait_until(&self.shared.changed, state, timeout, |s| {
            s.requests.len() >= n
        })
        .1
    }

    /// The webhook `setWebhook` set, until `deleteWebhook`.
    pub fn webhook(&self) -> Option<Webhook> {
        self.shared.lock().webhook.clone()
    }

    /// Queues a voice note (`voice`: Ogg/Opus, as Telegram's apps record
    /// it) of `seconds` from user `from_id` in chat `chat_id`, downloadable
    /// through `getFile`; returns its `update_id`.
    pub fn push_voice(&self, chat_id: i64, from_id: i64, bytes: &[u8], seconds: u32) -> i64 {
        let mut state = self.shared.lock();
        let file_id = state.add_file("voice/file.oga", bytes.to_vec());
        let message_id = state.take_message_id();
        let message = json!({
            "message_id": message_id,
            "from": user(from_id),
            "chat": chat(chat_id, from_id),
            "date": now(),
            "voice": {
                "file_id": file_id,
                "file_unique_id": format!("U{file_id}"),
                "duration": seconds,
                "mime_type": "audio/ogg",
                "file_size": bytes.len(),
            },
        });
        state.push_update("message", message, &self.shared.changed)
    }

    /// Queues an audio file (`audio`: music or a recording sent as a file)
    /// named `file_name`, of type `mime`, from user `from_id` in chat
    /// `chat_id`; returns its `update_id`.
    pub fn push_audio(
        &self,
        chat_id: i64,
        from_id: i64,
        bytes: &[u8],
        file_name: &str,
        mime: &str,
    ) -> i64 {
        let mut state = self.shared.lock();
        let file_id = state.add_file(&format!("music/{file_name}"), bytes.to_vec());
        let message_id = state.take_message_id();
        let message = json!({
            "message_id": message_id,
            "from": user(from_id),
            "chat": chat(chat_id, from_id),
            "date": now(),
            "audio": {
                "file_id": file_id,
                "file_unique_id": format!("U{file_id}"),
                "duration": 1,
                "file_name": file_name,
                "mime_type": mime,
                "file_size": bytes.len(),
            },
        });
        state.push_update("message", message, &self.shared.changed)
    }

    /// The bytes the bot uploaded with the message `message_id` it sent
    /// (`sendVoice`, `sendDocument`, ...).
    pub fn uploaded(&self, message_id: i64) -> Option<Vec<u8>> {
        let state = self.shared.lock();
        let file_id = state.uploads.get(&message_id)?;
        state.files.get(file_id).map(|(_, bytes)| bytes.clone())
    }

    /// Makes a file downloadable through `getFile`; returns its `file_id`.
    pub fn add_file(&self, bytes: &[u8]) -> String {
        self.shared
            .lock()
            .add_file("documents/file.bin", bytes.to_vec())
    }

    /// The next `requests` calls of a send or edit method answer 429
    /// `Too Many Requests: retry after <retry_after_s>` with
    /// `parameters.retry_after`, as the flood limit does.
    pub fn rate_limit(&self, requests: usize, retry_after_s: u64) {
        let mut state = self.shared.lock();
        state.rate_limited = requests;
        state.retry_after = retry_after_s;
    }

    /// While on, requests are read and recorded but not answered; turning it
    /// off answers the held ones normally. For dead-connection detection.
    pub fn hang(&self, on: bool) {
        self.shared.lock().hang = on;
        self.shared.changed.notify_all();
    }

    /// The next call of `method` (case-insensitive) fails with HTTP status
    /// and `error_code` `code` and `description`, e.g.
    /// `fail_next("sendMessage", 403, "Forbidden: bot was blocked by the user")`.
    pub fn fail_next(&self, method: &str, code: u16, description: &str) {
        self.shared.lock().failures.push((
            method.to_ascii_lowercase(),
            code,
            description.to_owned(),
        ));
    }
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        {
            // Under the lock, so a request about to wait sees the flag.
            let _state = self.shared.lock();
            self.shared.stopping.store(true, Ordering::SeqCst);
            self.shared.changed.notify_all();
        }
        // Wake the blocked `accept` so the listener closes before we return.
        let woken = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let (Ok(_), Some(acceptor)) = (woken, self.acceptor.take()) {
            // The accept loop never panics; a failed join has nothing to report.
            let _ = acceptor.join();
        }
    }
}

/// What the test and the connection threads share.
struct Shared {
    token: String,
    state: Mutex<State>,
    /// Signalled on every change a waiter may care about: a request, an
    /// update, a sent message, `hang(false)`, a newer poll, and drop.
    changed: Condvar,
    stopping: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>, left: Duration) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(state, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
struct State {
    /// Updates not yet confirmed, in `update_id` order.
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    sent: Vec<Sent>,
    requests: Vec<Request>,
    /// file_id → (file_path, bytes).
    files: HashMap<String, (String, Vec<u8>)>,
    /// message_id of a sent upload → its file_id.
    uploads: HashMap<i64, String>,
    rate_limited: usize,
    retry_after: u64,
    hang: bool,
    /// (lowercased method, code, description), first match used once.
    failures: Vec<(String, u16, String)>,
    webhook: Option<Webhook>,
    /// Bumped by every `getUpdates`; a long poll that sees it move was
    /// superseded, and answers 409 as the real server does.
    polls: u64,
}

impl State {
    fn take_message_id(&mut self) -> i64 {
        let id = self.next_message_id;
        self.next_message_id += 1;
        id
    }

    fn push_update(&mut self, kind: &str, payload: Value, changed: &Condvar) -> i64 {
        let update_id = self.next_update_id;
        self.next_update_id += 1;
        self.updates
            .push(json!({"update_id": update_id, kind: payload}));
        changed.notify_all();
        update_id
    }

    fn add_file(&mut self, path: &str, bytes: Vec<u8>) -> String {
        let n = self.files.len() + 1;
        let file_id = format!("FAKEFILE{n:06}");
        let (dir, name) = path.rsplit_once('/').unwrap_or(("documents", path));
        self.files
            .insert(file_id.clone(), (format!("{dir}/file_{n}_{name}"), bytes));
        file_id
    }
}

/// A Bot API answer: HTTP status and body.
type Answer = (u16, Value);

fn ok(result: Value) -> Answer {
    (200, json!({"ok": true, "result": result}))
}

fn error(code: u16, description: &str) -> Answer {
    (
        code,
        json!({"ok": false, "error_code": code, "description": description}),
    )
}

fn bad_request(what: &str) -> Answer {
    error(400, &format!("Bad Request: {what}"))
}

/// Answers requests on one connection until either side closes it.
fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(http) = read_request(&mut reader)? {
        let (path, query) = http
            .target
            .split_once('?')
            .unwrap_or((http.target.as_str(), ""));
        if let Some(rest) = path.strip_prefix("/file/bot") {
            match download(shared, rest) {
                Some(bytes) => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\n\r\n",
                        bytes.len()
                    );
                    out.write_all(head.as_bytes())?;
                    out.write_all(&bytes)?;
                    out.flush()?;
                }
                None => send(&mut out, &error(404, "Not Found"))?,
            }
        } else {
            let Some(answer) = api(shared, &http, path, query) else {
                return Ok(());
            };
            send(&mut out, &answer)?;
        }
        if !http.keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

/// A file's bytes for `/file/bot<token>/<file_path>`, given what follows
/// `/file/bot`.
fn download(shared: &Shared, rest: &str) -> Option<Vec<u8>> {
    let (token, file_path) = rest.split_once('/')?;
    if token != shared.token {
        return None;
    }
    let state = shared.lock();
    state
        .files
        .values()
        .find(|(path, _)| path == file_path)
        .map(|(_, bytes)| bytes.clone())
}

/// Records and answers one `/bot<token>/<method>` request; `None` when the
/// server stopped while the request was held.
fn api(shared: &Shared, http: &HttpRequest, path: &str, query: &str) -> Option<Answer> {
    let (token, method) = path
        .strip_prefix("/bot")
        .and_then(|rest| rest.split_once('/'))
        .unwrap_or(("", path));
    let authorized = token == shared.token;
    let mut params = Map::new();
    parse_form(query, &mut params);
    parse_body(http, &mut params);
    // Uploaded bytes are kept for the file store, not the request log.
    let mut logged = params.clone();
    for value in logged.values_mut() {
        if let Some(upload) = value.as_object_mut() {
            upload.remove("bytes");
        }
    }
    let mut state = shared.lock();
    state.requests.push(Request {
        http_method: http.method.clone(),
        method: method.to_owned(),
        params: Value::Object(logged),
        authorized,
        received: Instant::now(),
    });
    shared.changed.notify_all();
    while state.hang && !shared.stopping() {
        state = shared.wait(state, Duration::from_secs(3600));
    }
    if shared.stopping() {
        return None;
    }
    if !path.starts_with("/bot") {
        return Some(error(404, "Not Found"));
    }
    if !authorized {
        return Some(error(401, "Unauthorized"));
    }
    let lower = method.to_ascii_lowercase();
    if let Some(at) = state.failures.iter().position(|(m, _, _)| *m == lower) {
        let (_, code, description) = state.failures.remove(at);
        return Some(error(code, &description));
    }
    let throttled = lower.starts_with("send") || lower.starts_with("edit");
    if throttled && state.rate_limited > 0 {
        state.rate_limited -= 1;
        let after = state.retry_after;
        let (code, mut body) = error(429, &format!("Too Many Requests: retry after {after}"));
        body["parameters"] = json!({"retry_after": after});
        return Some((code, body));
    }
    let answer = match lower.as_str() {
        "getme" => ok(bot_user(&shared.token)),
        "getupdates" => return get_updates(shared, state, &params),
        "sendmessage" => send_message(shared, &mut state, method, &params),
        "editmessagetext" => edit_message_text(&mut state, &params),
        "senddocument" => send_file(shared, &mut state, method, "document", &params),
        "sendphoto" => send_file(shared, &mut state, method, "photo", &params),
        "sendvoice" => send_file(shared, &mut state, method, "voice", &params),
        "sendaudio" => send_file(shared, &mut state, method, "audio", &params),
        "answercallbackquery" => match params.get("callback_query_id") {
            Some(_) => ok(json!(true)),
            None => bad_request("query_id is empty"),
        },
        "sendchataction" => match (int(&params, "chat_id"), text(&params, "action")) {
            (Some(_), Some(_)) => ok(json!(true)),
            _ => bad_request("chat_id is empty"),
        },
        "setwebhook" => {
            let url = text(&params, "url").unwrap_or_default();
            state.webhook = (!url.is_empty()).then(|| Webhook {
                url,
                secret_token: text(&params, "secret_token"),
            });
            shared.changed.notify_all();
            ok(json!(true))
        }
        "deletewebhook" => {
            state.webhook = None;
            if params.get("drop_pending_updates").is_some_and(truthy) {
                state.updates.clear();
            }
            ok(json!(true))
        }
        "getfile" => {
            let id = text(&params, "file_id").unwrap_or_default();
            match state.files.get(&id) {
                // Bots download files of up to 20 MB.
                Some((_, bytes)) if bytes.len() > 20 << 20 => bad_request("file is too big"),
                Some((path, bytes)) => ok(json!({
                    "file_id": id,
                    "file_unique_id": format!("U{id}"),
                    "file_size": bytes.len(),
                    "file_path": path,
                })),
                None => bad_request("invalid file_id"),
            }
        }
        _ => error(404, "Not Found"),
    };
    Some(answer)
}

/// `getUpdates`: confirms by `offset`, then answers at once if updates are
/// waiting, else holds the request up to `timeout` seconds.
fn get_updates(
    shared: &Shared,
    mut state: MutexGuard<'_, State>,
    params: &Map<String, Value>,
) -> Option<Answer> {
    if state.webhook.is_some() {
        return Some(error(
            409,
            "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
        ));
    }
    let offset = int(params, "offset").unwrap_or(0);
    let limit = int(params, "limit").unwrap_or(100).clamp(1, 100) as usize;
    let timeout = int(params, "timeout").unwrap_or(0).max(0) as u64;
    if offset < 0 {
        // A negative offset keeps only the last -offset updates.
        let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
        let len = state.updates.len();
        state.updates.drain(..len.saturating_sub(keep));
    }
    state.polls += 1;
    let poll = state.polls;
    shared.changed.notify_all();
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        if shared.stopping() {
            return None;
        }
        if state.polls != poll {
            return Some(error(
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            ));
        }
        // Confirming by offset forgets every older update for good.
        if offset > 0 {
            state
                .updates
                .retain(|u| u["update_id"].as_i64().is_some_and(|id| id >= offset));
        }
        if !state.updates.is_empty() {
            let batch: Vec<Value> = state.updates.iter().take(limit).cloned().collect();
            return Some(ok(Value::Array(batch)));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Some(ok(json!([])));
        }
        state = shared.wait(state, left);
    }
}

fn send_message(
    shared: &Shared,
    state: &mut State,
    method: &str,
    params: &Map<String, Value>,
) -> Answer {
    let Some(chat_id) = int(params, "chat_id") else {
        return bad_request("chat not found");
    };
    let raw = text(params, "text").unwrap_or_default();
    let parse_mode = text(params, "parse_mode");
    let plain = match checked_text(&raw, parse_mode.as_deref(), "message text") {
        Ok(plain) => plain,
        Err(answer) => return answer,
    };
    let message_id = state.take_message_id();
    let mut message = bot_message(shared, chat_id, message_id);
    message["text"] = json!(plain);
    record(state, method, chat_id, raw, params, message_id, None);
    shared.changed.notify_all();
    ok(message)
}

fn edit_message_text(state: &mut State, params: &Map<String, Value>) -> Answer {
    let (Some(chat_id), Some(message_id)) = (int(params, "chat_id"), int(params, "message_id"))
    else {
        return bad_request("message to edit not found");
    };
    let raw = text(params, "text").unwrap_or_default();
    let parse_mode = text(params, "parse_mode");
    let plain = match checked_text(&raw, parse_mode.as_deref(), "message text") {
        Ok(plain) => plain,
        Err(answer) => return answer,
    };
    let markup = markup(params);
    let Some(sent) = state
        .sent
        .iter_mut()
        .find(|s| s.chat_id == chat_id && s.message_id == message_id)
    else {
        return bad_request("message to edit not found");
    };
    if sent.text == raw && sent.parse_mode == parse_mode && sent.reply_markup == markup {
        return bad_request(
            "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
        );
    }
    sent.text.clone_from(&raw);
    sent.parse_mode = parse_mode;
    sent.reply_markup = markup;
    sent.edits.push(raw);
    ok(json!({
        "message_id": message_id,
        "chat": {"id": chat_id, "type": chat_type(chat_id)},
        "date": now(),
        "edit_date": now(),
        "text": plain,
    }))
}

/// `sendDocument` / `sendPhoto` / `sendVoice` / `sendAudio`: the file is
/// an upload (multipart), a `file_id` the fake knows, or a URL. A voice
/// message needs Ogg/Opus; any other upload to `sendVoice` comes back as a
/// document, the way Telegram files audio it cannot play as voice.
fn send_file(
    shared: &Shared,
    state: &mut State,
    method: &str,
    field: &str,
    params: &Map<String, Value>,
) -> Answer {
    let Some(chat_id) = int(params, "chat_id") else {
        return bad_request("chat not found");
    };
    let caption = text(params, "caption").unwrap_or_default();
    if let Err(answer) = checked_text(&caption, text(params, "parse_mode").as_deref(), "caption") {
        return answer;
    }
    let (name, size, file_id) = match params.get(field) {
        Some(Value::Object(upload)) => {
            let name = upload["filename"].as_str().unwrap_or("file").to_owned();
            let data: Vec<u8> = upload["bytes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|b| b.as_u64()?.try_into().ok())
                        .collect()
                })
                .unwrap_or_default();
            let size = data.len();
            let id = state.add_file(&format!("{field}s/{name}"), data);
            (name, size, id)
        }
        Some(Value::String(s)) if state.files.contains_key(s) => {
            let size = state.files[s].1.len();
            (s.clone(), size, s.clone())
        }
        Some(Value::String(s)) if s.starts_with("http://") || s.starts_with("https://") => {
            let id = state.add_file(&format!("{field}s/remote"), Vec::new());
            (s.clone(), 0, id)
        }
        Some(_) => return bad_request("wrong file identifier/HTTP URL specified"),
        None => return bad_request(&format!("there is no {field} in the request")),
    };
    let message_id = state.take_message_id();
    let mut message = bot_message(shared, chat_id, message_id);
    let file =
        json!({"file_id": file_id, "file_unique_id": format!("U{file_id}"), "file_size": size});
    let bytes = state.files.get(&file_id).map_or(&[][..], |(_, b)| b);
    if field == "photo" {
        let mut photo = file;
        photo["width"] = json!(90);
        photo["height"] = json!(90);
        message["photo"] = json!([photo]);
    } else if field == "voice" && is_ogg_opus(bytes) {
        let mut voice = file;
        voice["duration"] = json!(int(params, "duration").unwrap_or(0));
        voice["mime_type"] = json!("audio/ogg");
        message["voice"] = voice;
    } else if field == "audio" {
        let mut audio = file;
        audio["duration"] = json!(int(params, "duration").unwrap_or(0));
        audio["file_name"] = json!(name);
        message["audio"] = audio;
    } else {
        let mut document = file;
        document["file_name"] = json!(name);
        message["document"] = document;
    }
    if !caption.is_empty() {
        message["caption"] = json!(caption);
    }
    state.uploads.insert(message_id, file_id);
    let file = Some((field.to_owned(), name, size));
    record(state, method, chat_id, caption, params, message_id, file);
    shared.changed.notify_all();
    ok(message)
}

fn record(
    state: &mut State,
    method: &str,
    chat_id: i64,
    text_sent: String,
    params: &Map<String, Value>,
    message_id: i64,
    file: Option<(String, String, usize)>,
) {
    let reply_to = int(params, "reply_to_message_id").or_else(|| {
        params
            .get("reply_parameters")
            .map(parsed)
            .and_then(|p| p["message_id"].as_i64())
    });
    state.sent.push(Sent {
        method: method.to_owned(),
        chat_id,
        text: text_sent,
        parse_mode: text(params, "parse_mode"),
        reply_markup: markup(params),
        reply_to,
        message_id,
        edits: Vec::new(),
        file,
    });
}

/// The text as a client would see it, after the checks the server makes:
/// entity parsing, then emptiness (for messages) and the length limit.
fn checked_text(raw: &str, parse_mode: Option<&str>, what: &str) -> Result<String, Answer> {
    let plain = match parse_mode {
        None | Some("") => raw.to_owned(),
        Some(mode) if mode.eq_ignore_ascii_case("html") => {
            parse_html(raw).map_err(|e| bad_request(&format!("can't parse entities: {e}")))?
        }
        // Markdown is not modelled: the text is taken as it is.
        Some(mode) if mode.eq_ignore_ascii_case("markdown") => raw.to_owned(),
        Some(mode) if mode.eq_ignore_ascii_case("markdownv2") => raw.to_owned(),
        Some(_) => return Err(bad_request("unsupported parse_mode")),
    };
    if what == "message text" && plain.trim().is_empty() {
        return Err(bad_request("message text is empty"));
    }
    if what == "message text" && utf16_len(&plain) > MAX_TEXT {
        return Err(bad_request("message is too long"));
    }
    if what == "caption" && utf16_len(&plain) > 1024 {
        return Err(bad_request("message caption is too long"));
    }
    Ok(plain)
}

/// Parses Bot API HTML the way tdlib does, enough for its errors: returns
/// the text without tags and with entities decoded, or the error after
/// `can't parse entities: `. Byte offsets are into `html`.
fn parse_html(html: &str) -> Result<String, String> {
    let bytes = html.as_bytes();
    let mut plain = String::new();
    let mut open: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'&' => {
                let (decoded, used) = entity(&html[i..]);
                plain.push_str(&decoded);
                i += used;
            }
            b'<' if bytes.get(i + 1) == Some(&b'/') => {
                let start = i;
                let Some(end) = html[i..].find('>') else {
                    return Err(format!("Unclosed end tag at byte offset {start}"));
                };
                let name = html[i + 2..i + end].trim().to_ascii_lowercase();
                let Some(expected) = open.pop() else {
                    return Err(format!("Unexpected end tag at byte offset {start}"));
                };
                if !name.is_empty() && name != expected {
                    return Err(format!(
                        "Unmatched end tag at byte offset {start}, expected \"</{expected}>\", found \"</{name}>\""
                    ));
                }
                i += end + 1;
            }
            b'<' => {
                let start = i;
                let rest = &html[i + 1..];
                let name_len = rest
                    .find(|c: char| c.is_ascii_whitespace() || c == '>')
                    .ok_or_else(|| format!("Unclosed start tag at byte offset {start}"))?;
                let name = rest[..name_len].to_ascii_lowercase();
                if !HTML_TAGS.contains(&name.as_str()) {
                    return Err(format!(
                        "Unsupported start tag \"{name}\" at byte offset {start}"
                    ));
                }
                let close = tag_end(&rest[name_len..])
                    .ok_or_else(|| format!("Unclosed start tag at byte offset {start}"))?;
                open.push(name);
                i += 1 + name_len + close + 1;
            }
            _ => {
                let next = html[i..].find(['&', '<']).map_or(html.len(), |at| i + at);
                plain.push_str(&html[i..next]);
                i = next;
            }
        }
    }
    match open.last() {
        Some(tag) => Err(format!(
            "Can't find end tag corresponding to start tag \"{tag}\""
        )),
        None => Ok(plain),
    }
}

/// Where the `>` closing a start tag is in `attrs` (what follows the tag
/// name), skipping quoted attribute values.
fn tag_end(attrs: &str) -> Option<usize> {
    let mut quote = None;
    for (at, c) in attrs.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(at),
            _ => {}
        }
    }
    None
}

/// Decodes the HTML entity at the start of `s` (which starts with `&`):
/// the four named ones and numeric ones; anything else stays literal.
fn entity(s: &str) -> (String, usize) {
    let Some(end) = s.find(';').filter(|&end| end <= 10) else {
        return ("&".to_owned(), 1);
    };
    let name = &s[1..end];
    let decoded = match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        _ => name.strip_prefix('#').and_then(|number| {
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => number.parse().ok(),
            };
            code.and_then(char::from_u32)
        }),
    };
    match decoded {
        Some(c) => (c.to_string(), end + 1),
        None => ("&".to_owned(), 1),
    }
}

/// Whether `bytes` are an Ogg stream of Opus (`OggS`, then `OpusHead` as
/// the first packet).
fn is_ogg_opus(bytes: &[u8]) -> bool {
    let Some(&segments) = bytes.get(26) else {
        return false;
    };
    let start = 27 + usize::from(segments);
    bytes.starts_with(b"OggS") && bytes.get(start..start + 8) == Some(b"OpusHead".as_slice())
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// A parameter as an integer, whether sent as a number or a string.
fn int(params: &Map<String, Value>, key: &str) -> Option<i64> {
    match params.get(key)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A parameter as text, whether sent as a string or another scalar.
fn text(params: &Map<String, Value>, key: &str) -> Option<String> {
    match params.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// A parameter that may arrive as JSON or as JSON serialized into a string
/// (form and multipart requests serialize objects).
fn parsed(value: &Value) -> Value {
    match value {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

fn markup(params: &Map<String, Value>) -> Option<Value> {
    params.get("reply_markup").map(parsed)
}

fn truthy(value: &Value) -> bool {
    matches!(value, Value::Bool(true)) || value.as_str() == Some("true")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The User object of a person with id `id`.
fn user(id: i64) -> Value {
    json!({
        "id": id,
        "is_bot": false,
        "first_name": format!("User{id}"),
        "username": format!("user{id}"),
        "language_code": "en",
    })
}

/// The bot's own User object, as `getMe` returns it; its id is the number
/// before the colon in the token.
fn bot_user(token: &str) -> Value {
    let id: i64 = token
        .split(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    json!({
        "id": id,
        "is_bot": true,
        "first_name": "Hearth Test Bot",
        "username": "hearth_test_bot",
        "can_join_groups": true,
        "can_read_all_group_messages": false,
        "supports_inline_queries": false,
        "can_connect_to_business": false,
        "has_main_web_app": false,
    })
}

/// Positive chat ids are private chats, negative ones groups (as in Telegram,
/// where supergroups are `-100...`).
fn chat_type(chat_id: i64) -> &'static str {
    if chat_id > 0 { "private" } else { "supergroup" }
}

/// The Chat object for `chat_id`; a private chat carries the user's name.
fn chat(chat_id: i64, from_id: i64) -> Value {
    if chat_id > 0 {
        json!({
            "id": chat_id,
            "first_name": format!("User{from_id}"),
            "username": format!("user{from_id}"),
            "type": "private",
        })
    } else {
        json!({"id": chat_id, "title": format!("Group{chat_id}"), "type": "supergroup"})
    }
}

/// A Message the bot sent, without its content.
fn bot_message(shared: &Shared, chat_id: i64, message_id: i64) -> Value {
    json!({
        "message_id": message_id,
        "from": bot_user(&shared.token),
        "chat": chat(chat_id, chat_id),
        "date": now(),
    })
}

/// Adds the body's parameters: a JSON object, a form, or multipart.
fn parse_body(http: &HttpRequest, params: &mut Map<String, Value>) {
    let kind = http.header("content-type").unwrap_or_default().to_owned();
    if kind.starts_with("multipart/form-data") {
        if let Some(boundary) = kind.split("boundary=").nth(1) {
            parse_multipart(&http.body, boundary.trim_matches('"'), params);
        }
    } else if kind.starts_with("application/x-www-form-urlencoded") {
        parse_form(&String::from_utf8_lossy(&http.body), params);
    } else if let Ok(Value::Object(object)) = serde_json::from_slice(&http.body) {
        params.extend(object);
    }
}

/// Adds `a=1&b=x` pairs, percent-decoded.
fn parse_form(form: &str, params: &mut Map<String, Value>) {
    for pair in form.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        params.insert(decode(key), form_value(decode(value)));
    }
}

/// A form value: numbers, objects and arrays parsed, anything else a string.
fn form_value(value: String) -> Value {
    match serde_json::from_str(&value) {
        Ok(v @ (Value::Number(_) | Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(value),
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| Some((hex(*bytes.get(i + 1)?)? << 4) | hex(*bytes.get(i + 2)?)?))
            .flatten();
        match (bytes[i], escaped) {
            (_, Some(byte)) => {
                out.push(byte);
                i += 2;
            }
            (b'+', None) => out.push(b' '),
            (byte, None) => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Adds the parts of a `multipart/form-data` body: text fields as values,
/// file fields as `{"filename", "size", "bytes"}` (bytes are dropped from
/// the recorded request).
fn parse_multipart(body: &[u8], boundary: &str, params: &mut Map<String, Value>) {
    let delimiter = format!("--{boundary}");
    for part in split_bytes(body, delimiter.as_bytes()).into_iter().skip(1) {
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let Some(split) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]);
        let data = &part[split + 4..];
        let data = data.strip_suffix(b"\r\n").unwrap_or(data);
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"))
            .unwrap_or_default();
        let Some(name) = attribute(disposition, "name") else {
            continue;
        };
        let value = match attribute(disposition, "filename") {
            Some(filename) => json!({"filename": filename, "size": data.len(), "bytes": data}),
            None => form_value(String::from_utf8_lossy(data).into_owned()),
        };
        params.insert(name, value);
    }
}

/// `name="value"` from a `content-disposition` header (not `filename` when
/// asked for `name`).
fn attribute(header: &str, key: &str) -> Option<String> {
    header.split(';').find_map(|piece| {
        let (k, v) = piece.trim().split_once('=')?;
        (k == key).then(|| v.trim_matches('"').to_owned())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn split_bytes<'a>(mut body: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    while let Some(at) = find(body, delimiter) {
        parts.push(&body[..at]);
        body = &body[at + delimiter.len()..];
    }
    parts
}

fn send(out: &mut TcpStream, (status, body): &Answer) -> io::Result<()> {
    write_json(out, *status, &[], &body.to_string())
}
