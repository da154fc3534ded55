//! A fake signal-cli HTTP daemon for the integration tests, so the Signal
//! channel can be driven end to end with no phone, no account and no Java.
//!
//! [`FakeSignal`] is a real HTTP/1.1 server on 127.0.0.1 that answers the
//! three endpoints `signal-cli -a ACCOUNT daemon --http` serves, the way
//! it serves them:
//! - `POST /api/v1/rpc`: JSON-RPC 2.0, one request or a batch, answered
//!   with HTTP 200 and `{"jsonrpc":"2.0","result"|"error","id"}` (201 with
//!   no body for a notification); `send`, `sendTyping` and `getAttachment`
//!   are modelled, with signal-cli's checks and error codes (-32700 parse
//!   error, -32600 invalid request, -32601 unknown method, -1 user error);
//!   a request without a JSON content type gets 415;
//! - `GET /api/v1/events`: server-sent events, chunked, `event:receive`
//!   plus one `data:` line of `{"envelope":...,"account":...}` per message
//!   and a bare `:` keep-alive line on an interval (15 s, as signal-cli;
//!   tests shorten it);
//! - `GET /api/v1/check`: 200 with no body.
//!
//! As signal-cli does, it answers 421 to a Host header other than its own
//! address, 404 to other paths and 405 to other methods.
//!
//! Messages pushed while no stream is open wait for the next one, as they
//! wait on Signal's servers for a daemon run with `--receive-mode
//! on-connection`. signal-cli writes each message to every open stream; a
//! client holds one at a time, so the fake writes each message once, to
//! the newest open stream, and keeps it queued until a write succeeds.
//!
//! The test side pushes messages ([`FakeSignal::push_message`] and
//! friends), reads what was sent ([`FakeSignal::sent`]) and every call
//! ([`FakeSignal::requests_for`]), and injects faults: failed sends
//! ([`FakeSignal::fail_next_send`]), a daemon that stops writing while
//! keeping connections open ([`FakeSignal::hang`]), and dropped streams
//! ([`FakeSignal::drop_streams`]).

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::http_server::{self, HttpRequest, read_request, reason};

/// How often signal-cli writes a keep-alive comment on an event stream.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// signal-cli's JSON-RPC error code for a user error (a bad recipient, a
/// failed send, a missing attachment).
pub const USER_ERROR: i64 = -1;
/// JSON-RPC's code for an unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's code for an invalid request (signal-cli also uses it for
/// params it cannot map).
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for a body that is not JSON.
pub const PARSE_ERROR: i64 = -32700;

/// The styles signal-cli's `textStyle` accepts.
const STYLES: &[&str] = &[
    "NONE",
    "BOLD",
    "ITALIC",
    "SPOILER",
    "STRIKETHROUGH",
    "MONOSPACE",
];

/// A fake signal-cli daemon on 127.0.0.1. Dropping it stops accepting
/// connections and ends its event streams.
pub struct FakeSignal {
    addr: SocketAddr,
    account: String,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// One message sent with `send`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    /// The numbers in `recipient`.
    pub recipients: Vec<String>,
    /// `groupId`, for a group message.
    pub group_id: Option<String>,
    /// The text.
    pub message: String,
    /// `textStyle` entries (`start:length:STYLE`), as sent.
    pub text_styles: Vec<String>,
    /// Each attachment: file name, content type and size in bytes (from a
    /// data URI, or from the file a path names).
    pub attachments: Vec<(String, String, usize)>,
    /// Each attachment's bytes, decoded from its data URI (or read from the
    /// path), in the same order.
    pub data: Vec<Vec<u8>>,
    /// The timestamp the fake gave it (its id).
    pub timestamp: i64,
    /// Every param, as sent.
    pub params: Value,
}

/// One JSON-RPC request the daemon received.
#[derive(Clone, Debug)]
pub struct Request {
    /// The method.
    pub method: String,
    /// The params (`Null` when absent).
    pub params: Value,
    /// The request id (`Null` for a notification).
    pub id: Value,
}

/// What the test and the connection threads share.
struct Shared {
    port: u16,
    state: Mutex<State>,
    /// Signalled on every change a waiter may care about: a request, a
    /// pushed message, a stream opened or closed, `hang(false)`, drop.
    changed: Condvar,
    stopping: AtomicBool,
}

struct State {
    requests: Vec<Request>,
    sent: Vec<Sent>,
    /// Errors `send` calls answer, in order: each once at least that many
    /// messages were sent.
    failures: VecDeque<(usize, i64, String)>,
    /// Attachments by id: bytes, content type, file name.
    attachments: HashMap<String, (Vec<u8>, String, String)>,
    /// Event data not yet written to a stream.
    events: VecDeque<String>,
    /// Open streams, oldest first.
    streams: Vec<u64>,
    streams_opened: usize,
    /// Bumped by `drop_streams`: streams opened before end.
    generation: u64,
    hung: bool,
    keepalive: Duration,
    last_timestamp: i64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State>, timeout: Duration) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(guard, timeout)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|p| p.into_inner().0)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

impl State {
    /// A fresh timestamp: now in ms, and later than every one before, as
    /// Signal's message ids are.
    fn timestamp(&mut self) -> i64 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.last_timestamp = now.max(self.last_timestamp + 1);
        self.last_timestamp
    }
}

impl FakeSignal {
    /// Starts a daemon for `account` (E.164) on 127.0.0.1:0.
    pub fn start(account: &str) -> FakeSignal {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake signal-cli: bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("fake signal-cli: local address");
        let shared = Arc::new(Shared {
            port: addr.port(),
            state: Mutex::new(State {
                requests: Vec::new(),
                sent: Vec::new(),
                failures: VecDeque::new(),
                attachments: HashMap::new(),
                events: VecDeque::new(),
                streams: Vec::new(),
                streams_opened: 0,
                generation: 0,
                hung: false,
                keepalive: KEEPALIVE,
                last_timestamp: 0,
            }),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("fake-signal-accept".into())
            .spawn(move || http_server::accept_each(&listener, &accepting, Shared::stopping, serve))
            .expect("fake signal-cli: spawn the accept thread");
        FakeSignal {
            addr,
            account: account.to_owned(),
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT`: the base for `[plugins.signal] url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The account the daemon runs as.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// Queues a direct text message from `from`; returns its timestamp.
    pub fn push_message(&self, from: &str, text: &str) -> i64 {
        self.push_data_message(from, json!({ "message": text }))
    }

    /// Queues a text message from `from` in the group `group_id`; returns
    /// its timestamp.
    pub fn push_group_message(&self, from: &str, group_id: &str, text: &str) -> i64 {
        self.push_data_message(
            from,
            json!({
                "message": text,
                "groupInfo": {
                    "groupId": group_id,
                    "groupName": "Test group",
                    "revision": 2,
                    "type": "DELIVER",
                },
            }),
        )
    }

    /// Queues a data message from `from` whose `dataMessage` has these
    /// fields (`message`, `attachments`, `quote`, `groupInfo`, ...) besides
    /// the ones every data message has; returns its timestamp.
    pub fn push_data_message(&self, from: &str, fields: Value) -> i64 {
        let timestamp = self.shared.lock().timestamp();
        let mut data = json!({
            "timestamp": timestamp,
            "message": null,
            "expiresInSeconds": 0,
            "isExpirationUpdate": false,
            "viewOnce": false,
        });
        if let (Some(data), Some(fields)) = (data.as_object_mut(), fields.as_object()) {
            data.extend(fields.clone());
        }
        let mut envelope = envelope(from, timestamp);
        envelope["dataMessage"] = data;
        self.push_envelope(envelope);
        timestamp
    }

    /// Queues an envelope exactly as given (e.g. the same one twice, or a
    /// typing notice); it is wrapped with the account as signal-cli does.
    pub fn push_envelope(&self, envelope: Value) {
        let data = json!({ "envelope": envelope, "account": self.account });
        let mut state = self.shared.lock();
        state.events.push_back(data.to_string());
        self.shared.changed.notify_all();
    }

    /// Stores a file as signal-cli stores a received attachment; returns
    /// the attachment object a data message lists it with.
    pub fn add_attachment(&self, bytes: &[u8], mime: &str, name: &str) -> Value {
        let mut state = self.shared.lock();
        let id = format!("att{}{}", state.attachments.len() + 1, extension(name));
        state.attachments.insert(
            id.clone(),
            (bytes.to_vec(), mime.to_owned(), name.to_owned()),
        );
        json!({
            "contentType": mime,
            "filename": name,
            "id": id,
            "size": bytes.len(),
            "width": null,
            "height": null,
            "caption": null,
            "uploadTimestamp": state.last_timestamp,
        })
    }

    /// Every message sent so far, in order.
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

    /// Every JSON-RPC request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// The requests for one method.
    pub fn requests_for(&self, method: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method)
            .collect()
    }

    /// Blocks until `pred` holds for the requests so far or `timeout`
    /// passes; returns whether it held.
    pub fn wait_for_requests(&self, timeout: Duration, pred: impl Fn(&[Request]) -> bool) -> bool {
        let state = self.shared.lock();
        http_server::wait_until(&self.shared.changed, state, timeout, |s| pred(&s.requests)).1
    }

    /// Makes the next `send` call fail with this JSON-RPC error (each call
    /// queues one more failure).
    pub fn fail_next_send(&self, code: i64, message: &str) {
        self.fail_send_after(0, code, message);
    }

    /// Makes the first `send` call after `successes` messages were sent
    /// fail with this JSON-RPC error (to fail a long reply midway).
    pub fn fail_send_after(&self, successes: usize, code: i64, message: &str) {
        self.shared
            .lock()
            .failures
            .push_back((successes, code, message.to_owned()));
    }

    /// With `true`, the event streams write nothing at all, keep-alives
    /// included, while their connections stay open (streams opened
    /// meanwhile too), as a daemon stuck in a deadlock; `false` resumes.
    pub fn hang(&self, on: bool) {
        self.shared.lock().hung = on;
        self.shared.changed.notify_all();
    }

    /// Closes every open event stream (the daemon restarting).
    pub fn drop_streams(&self) {
        self.shared.lock().generation += 1;
        self.shared.changed.notify_all();
    }

    /// Sets the keep-alive interval of every stream.
    pub fn keepalive_every(&self, interval: Duration) {
        self.shared.lock().keepalive = interval;
        self.shared.changed.notify_all();
    }

    /// How many event streams were opened so far.
    pub fn streams_opened(&self) -> usize {
        self.shared.lock().streams_opened
    }

    /// How many event streams are open now.
    pub fn streams_open(&self) -> usize {
        self.shared.lock().streams.len()
    }

    /// Blocks until at least `n` streams were opened or `timeout` passes;
    /// returns whether they were.
    pub fn wait_for_streams(&self, n: usize, timeout: Duration) -> bool {
        let state = self.shared.lock();
        http_server::wait_until(&self.shared.changed, state, timeout, |s| {
            s.streams_opened >= n
        })
        .1
    }

    /// How many pushed messages no stream has taken yet.
    pub fn undelivered(&self) -> usize {
        self.shared.lock().events.len()
    }
}

impl Drop for FakeSignal {
    fn drop(&mut self) {
        {
            // Under the lock, so a stream about to wait sees the flag.
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

/// An envelope from `from` at `timestamp`, without content (add
/// `dataMessage`, `typingMessage`, ... to it), shaped as signal-cli's
/// `JsonMessageEnvelope`.
pub fn envelope(from: &str, timestamp: i64) -> Value {
    json!({
        "source": from,
        "sourceNumber": from,
        "sourceUuid": uuid_for(from),
        "sourceName": format!("User {from}"),
        "sourceDevice": 1,
        "timestamp": timestamp,
        "serverReceivedTimestamp": timestamp + 20,
        "serverDeliveredTimestamp": timestamp + 40,
    })
}

/// A stable made-up ACI for a number.
fn uuid_for(number: &str) -> String {
    let digits: String = number.chars().filter(char::is_ascii_digit).collect();
    format!("00000000-0000-4000-8000-{digits:0>12.12}")
}

fn extension(name: &str) -> &str {
    name.rfind('.').map_or("", |at| &name[at..])
}

/// Answers requests on one connection until either side closes it, or
/// turns it into an event stream.
fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(http) = read_request(&mut reader)? {
        let path = http.target.split('?').next().unwrap_or_default();
        if !host_allowed(shared, &http) {
            respond(&mut out, 421, None)?;
        } else if !matches!(path, "/api/v1/rpc" | "/api/v1/events" | "/api/v1/check") {
            respond(&mut out, 404, None)?;
        } else if (path == "/api/v1/rpc") != (http.method == "POST") {
            respond(&mut out, 405, None)?;
        } else if path == "/api/v1/events" {
            return events(out, shared);
        } else if path == "/api/v1/check" {
            respond(&mut out, 200, None)?;
        } else if !http
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
        {
            respond(&mut out, 415, None)?;
        } else {
            match rpc(shared, &http.body) {
                Some(answer) => respond(&mut out, 200, Some(&answer.to_string()))?,
                None => respond(&mut out, 201, None)?,
            }
        }
        if !http.keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

/// signal-cli pins the Host header to the address it listens on (against
/// DNS rebinding from a browser).
fn host_allowed(shared: &Shared, http: &HttpRequest) -> bool {
    let Some(host) = http.header("host") else {
        return false;
    };
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => (name, Some(port)),
        _ => (host, None),
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    ["127.0.0.1", "localhost", "::1"].contains(&name.to_ascii_lowercase().as_str())
        && port.is_none_or(|p| p.parse() == Ok(shared.port))
}

/// Writes an answer as Java's `HttpServer` does: capitalised header names,
/// a JSON body or none.
fn respond(out: &mut TcpStream, status: u16, body: Option<&str>) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    match body {
        Some(body) => head.push_str(&format!(
            "Content-type: application/json\r\nContent-length: {}\r\n\r\n{body}",
            body.len()
        )),
        None => head.push_str("Content-length: 0\r\n\r\n"),
    }
    out.write_all(head.as_bytes())?;
    out.flush()
}

/// Answers one JSON-RPC body (a request or a batch); `None` when nothing
/// needs an answer (notifications only).
fn rpc(shared: &Shared, body: &[u8]) -> Option<Value> {
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(error(PARSE_ERROR, &e.to_string(), Value::Null)),
    };
    match parsed {
        Value::Array(batch) => {
            let answers: Vec<Value> = batch.iter().filter_map(|r| one(shared, r)).collect();
            (!answers.is_empty()).then_some(Value::Array(answers))
        }
        request @ Value::Object(_) => one(shared, &request),
        other => Some(error(
            INVALID_REQUEST,
            &format!("unexpected type: {}", type_name(&other)),
            Value::Null,
        )),
    }
}

/// Answers one request object; `None` for a notification.
fn one(shared: &Shared, request: &Value) -> Option<Value> {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    if request["jsonrpc"] != "2.0" {
        return Some(error(
            INVALID_REQUEST,
            "only jsonrpc version 2.0 is supported",
            id,
        ));
    }
    let Some(method) = request["method"].as_str() else {
        return Some(error(INVALID_REQUEST, "method field must be set", id));
    };
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let mut state = shared.lock();
    state.requests.push(Request {
        method: method.to_owned(),
        params: params.clone(),
        id: id.clone(),
    });
    shared.changed.notify_all();
    let params = match params {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return reply(
                Err((
                    INVALID_REQUEST,
                    format!(
                        "Cannot deserialize value of type `java.util.HashMap<java.lang.String,java.lang.Object>` from {} value",
                        type_name(&other)
                    ),
                )),
                id,
            );
        }
    };
    let outcome = match method {
        "send" => send(shared, &mut state, &params),
        "sendTyping" => send_typing(&mut state, &params),
        "getAttachment" => get_attachment(&state, &params),
        _ => Err((METHOD_NOT_FOUND, "Method not implemented".to_owned())),
    };
    reply(outcome, id)
}

type Outcome = Result<Value, (i64, String)>;

/// The response to a request with `id`; `None` for a notification (no id),
/// whose errors signal-cli drops too.
fn reply(outcome: Outcome, id: Value) -> Option<Value> {
    if id.is_null() {
        return None;
    }
    Some(match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "result": result, "id": id}),
        Err((code, message)) => error(code, &message, id),
    })
}

fn error(code: i64, message: &str, id: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "error": {"code": code, "message": message, "data": null},
        "id": id,
    })
}

fn send(shared: &Shared, state: &mut State, params: &Map<String, Value>) -> Outcome {
    let recipients = list(params, "recipient")?;
    let groups = list(params, "groupId")?;
    if recipients.is_empty() && groups.is_empty() {
        return Err((USER_ERROR, "No recipients given".into()));
    }
    let message = match params.get("message") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err((INVALID_REQUEST, mapping_error("message", other))),
    };
    let styles = list(params, "textStyle")?;
    for style in &styles {
        check_style(style)?;
    }
    let (attachments, data): (Vec<_>, Vec<_>) = list(params, "attachments")?
        .iter()
        .map(|a| attachment(a))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|(name, mime, bytes)| ((name, mime, bytes.len()), bytes))
        .unzip();
    if message.is_empty() && attachments.is_empty() {
        return Err((
            USER_ERROR,
            "Sending empty message is not allowed, either a message, attachment or sticker must be given.".into(),
        ));
    }
    if state
        .failures
        .front()
        .is_some_and(|(after, ..)| state.sent.len() >= *after)
    {
        if let Some((_, code, message)) = state.failures.pop_front() {
            return Err((code, message));
        }
    }
    let timestamp = state.timestamp();
    state.sent.push(Sent {
        recipients: recipients.clone(),
        group_id: groups.first().cloned(),
        message,
        text_styles: styles,
        attachments,
        data,
        timestamp,
        params: Value::Object(params.clone()),
    });
    shared.changed.notify_all();
    Ok(json!({ "timestamp": timestamp, "results": results(&recipients, &groups) }))
}

fn send_typing(state: &mut State, params: &Map<String, Value>) -> Outcome {
    let recipients = list(params, "recipient")?;
    let groups = list(params, "groupId")?;
    if recipients.is_empty() && groups.is_empty() {
        return Err((USER_ERROR, "No recipients given".into()));
    }
    let timestamp = state.timestamp();
    Ok(json!({ "timestamp": timestamp, "results": results(&recipients, &groups) }))
}

fn get_attachment(state: &State, params: &Map<String, Value>) -> Outcome {
    let Some(id) = params.get("id").and_then(Value::as_str) else {
        return Err((USER_ERROR, "Missing attachment id parameter".into()));
    };
    match state.attachments.get(id) {
        Some((bytes, ..)) => Ok(json!({ "data": base64(bytes) })),
        None => Err((
            USER_ERROR,
            format!("Could not find attachment with ID: {id}"),
        )),
    }
}

/// One `SendMessageResult` per recipient, all successful.
fn results(recipients: &[String], groups: &[String]) -> Vec<Value> {
    let mut results: Vec<Value> = recipients
        .iter()
        .map(|number| {
            json!({
                "recipientAddress": {"uuid": uuid_for(number), "number": number, "username": null},
                "type": "SUCCESS",
            })
        })
        .collect();
    for group in groups {
        results.push(json!({
            "recipientAddress": {"uuid": uuid_for("+10000000000"), "number": "+10000000000", "username": null},
            "groupId": group,
            "type": "SUCCESS",
        }));
    }
    results
}

/// A param that may be one string or a list of strings, as signal-cli's
/// multi-valued params are.
fn list(params: &Map<String, Value>, key: &str) -> Result<Vec<String>, (i64, String)> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| (INVALID_REQUEST, mapping_error(key, item)))
            })
            .collect(),
        Some(other) => Err((INVALID_REQUEST, mapping_error(key, other))),
    }
}

/// An attachment param: a data URI (`data:<mime>;filename=<name>;base64,...`,
/// parameters URL-encoded) or a path signal-cli reads. Its name, media
/// type and bytes.
fn attachment(value: &str) -> Result<(String, String, Vec<u8>), (i64, String)> {
    let Some(uri) = value.strip_prefix("data:") else {
        let bytes = std::fs::read(value).map_err(|e| {
            (
                -1,
                format!("Failed to send message: {value} (No such file or directory): {e}"),
            )
        })?;
        let name = value.rsplit('/').next().unwrap_or(value).to_owned();
        return Ok((name, String::new(), bytes));
    };
    let invalid = || (-1, "The given string is not a valid data URI.".to_owned());
    let (head, data) = uri.split_once(',').ok_or_else(invalid)?;
    let head = head.strip_suffix(";base64").ok_or_else(invalid)?;
    let mut fields = head.split(';');
    let mime = fields.next().unwrap_or_default().to_owned();
    let name = fields
        .find_map(|f| f.strip_prefix("filename="))
        .map(percent_decode)
        .unwrap_or_default();
    let bytes = base64_decode(data).ok_or_else(invalid)?;
    Ok((name, mime, bytes))
}

/// Standard base64 with padding, as Java's `Base64.getDecoder()` reads it.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if text.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for group in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        let mut padding = 0;
        for &c in group {
            let value = match c {
                b'=' => {
                    padding += 1;
                    0
                }
                _ if padding > 0 => return None,
                _ => ALPHABET.iter().position(|&a| a == c)? as u32,
            };
            n = (n << 6) | value;
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - padding]);
    }
    Some(out)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `start:length:STYLE`, as signal-cli's `send` parses it.
fn check_style(style: &str) -> Result<(), (i64, String)> {
    let syntax = || {
        (
            USER_ERROR,
            format!("Invalid textStyle syntax ({style}) expected 'start:length:STYLE'"),
        )
    };
    let mut fields = style.splitn(3, ':');
    let (Some(start), Some(length), Some(name)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(syntax());
    };
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !number(start) || !number(length) || name.is_empty() {
        return Err(syntax());
    }
    if !STYLES.contains(&name) {
        return Err((USER_ERROR, format!("Invalid style: {name}")));
    }
    Ok(())
}

fn mapping_error(key: &str, value: &Value) -> String {
    format!("Cannot map `{key}` from {} value", type_name(value))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "Null",
        Value::Bool(_) => "Boolean",
        Value::Number(_) => "Number",
        Value::String(_) => "String",
        Value::Array(_) => "Array",
        Value::Object(_) => "Object",
    }
}

/// Serves one event stream until the client leaves, the streams are
/// dropped or the fake stops.
fn events(mut out: TcpStream, shared: &Shared) -> io::Result<()> {
    out.write_all(
        b"HTTP/1.1 200 OK\r\nTransfer-encoding: chunked\r\nContent-type: text/event-stream\r\n\r\n",
    )?;
    out.flush()?;
    let (id, generation) = {
        let mut state = shared.lock();
        state.streams_opened += 1;
        let id = state.streams_opened as u64;
        state.streams.push(id);
        shared.changed.notify_all();
        (id, state.generation)
    };
    let result = pump(&mut out, shared, id, generation);
    let mut state = shared.lock();
    state.streams.retain(|s| *s != id);
    shared.changed.notify_all();
    drop(state);
    // End the chunked body and the connection, as a stopping daemon does.
    let _ = out.write_all(b"0\r\n\r\n");
    let _ = out.shutdown(std::net::Shutdown::Both);
    result
}

fn pump(out: &mut TcpStream, shared: &Shared, id: u64, generation: u64) -> io::Result<()> {
    let mut last_keepalive = Instant::now();
    loop {
        if client_left(out) {
            return Ok(());
        }
        let (batch, keepalive) = {
            let mut state = shared.wait(shared.lock(), Duration::from_millis(20));
            if shared.stopping() || state.generation != generation {
                return Ok(());
            }
            if state.hung {
                continue;
            }
            let newest = state.streams.last() == Some(&id);
            let batch: Vec<String> = if newest {
                state.events.drain(..).collect()
            } else {
                Vec::new()
            };
            let keepalive = last_keepalive.elapsed() >= state.keepalive;
            (batch, keepalive)
        };
        for (sent, data) in batch.iter().enumerate() {
            let event = format!("event:receive\ndata:{data}\n\n");
            if let Err(e) = chunk(out, event.as_bytes()) {
                // Not written: the next stream gets it, in order.
                let mut state = shared.lock();
                for data in batch[sent..].iter().rev() {
                    state.events.push_front(data.clone());
                }
                return Err(e);
            }
        }
        if keepalive {
            chunk(out, b":\n")?;
            last_keepalive = Instant::now();
        }
    }
}

/// Whether the client closed its end (a read sees the end of the stream).
fn client_left(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let left = match stream.peek(&mut byte) {
        Ok(n) => n == 0,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    };
    let _ = stream.set_nonblocking(false);
    left
}

fn chunk(out: &mut TcpStream, bytes: &[u8]) -> io::Result<()> {
    out.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
    out.write_all(bytes)?;
    out.write_all(b"\r\n")?;
    out.flush()
}

/// Standard base64 with padding, as Java's `Base64.getEncoder()` writes it.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
