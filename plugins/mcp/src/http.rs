//! A server reached over Streamable HTTP, with blocking `reqwest` (rustls
//! and ring, as the web plugin) and plain threads.
//!
//! Every message is one POST. The answer to a request is a JSON body or an
//! event stream carrying notifications (and, before 2026, requests from
//! the server) ahead of the response. A call waits on its own thread for
//! its exchange, so it can give up at its deadline or when the owner stops
//! it; the exchange itself is bounded by the same deadline. Change
//! notifications come on a long-lived stream (the GET stream of 2025
//! revisions, `subscriptions/listen` in 2026-07-28) read by one thread
//! that wakes every [`TICK`] to see whether it should end, since a blocked
//! read cannot be interrupted otherwise.
//!
//! Bodies and events are bounded by [`MAX_MESSAGE`]; redirects are followed
//! only within the configured origin.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

use crate::config::HttpConfig;
use crate::jsonrpc::{self, Incoming, RpcError, Slot, lock};
use crate::sse;
use crate::transport::{Events, Options, RequestError};
use crate::version::Version;

/// The largest body or event a server may send.
pub const MAX_MESSAGE: usize = 16 << 20;
/// How long a read of the listening stream blocks before it looks at the
/// stop flag: what stopping an HTTP server can take.
pub const TICK: Duration = Duration::from_secs(2);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an error body quoted in a message.
const QUOTED: usize = 300;
/// How many times a request's event stream is resumed (2025-11-25 servers
/// may close it early and expect a GET with `Last-Event-ID`).
const MAX_RESUMES: usize = 5;

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// A Streamable HTTP server.
pub struct HttpLink {
    server: String,
    url: Url,
    headers: HeaderMap,
    client: Client,
    /// The `Mcp-Session-Id` a 2025 server gave at `initialize`.
    session: Mutex<Option<String>>,
    /// The revision agreed, once agreed: sent in `MCP-Protocol-Version`.
    version: Mutex<Option<Version>>,
    events: Arc<dyn Events>,
    next_id: AtomicU64,
    stopping: AtomicBool,
    listener: Mutex<Option<JoinHandle<()>>>,
    helpers: Mutex<Vec<JoinHandle<()>>>,
}

/// Which long-lived stream brings change notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// 2025 revisions: GET on the endpoint.
    Get,
    /// 2026-07-28: a `subscriptions/listen` request for tool list changes.
    Subscribe,
}

impl HttpLink {
    /// A link to `config.url`; nothing is sent yet.
    pub fn new(
        server: &str,
        config: &HttpConfig,
        events: Arc<dyn Events>,
    ) -> Result<Arc<HttpLink>, String> {
        let url = Url::parse(&config.url).map_err(|e| format!("its url is not valid ({e})"))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            // Both were checked when the config was read.
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.insert(n, v);
            }
        }
        // rustls needs one process-wide provider; ring, as in the host. If
        // one is already installed this fails, which is fine: it is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let origin = url.origin();
        let client = Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // The default wait of a blocking read: only the listening
            // stream relies on it, every exchange sets its own deadline.
            .timeout(TICK)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() < 5 && attempt.url().origin() == origin {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .map_err(|e| format!("no HTTP client could be built ({e})"))?;
        Ok(Arc::new(HttpLink {
            server: server.to_owned(),
            url,
            headers,
            client,
            session: Mutex::new(None),
            version: Mutex::new(None),
            events,
            next_id: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            listener: Mutex::new(None),
            helpers: Mutex::new(Vec::new()),
        }))
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// Records the revision agreed, sent from now on in
    /// `MCP-Protocol-Version`.
    pub fn set_version(&self, version: Version) {
        *lock(&self.version) = Some(version);
    }

    /// Forgets the session, before a new `initialize`.
    pub fn forget_session(&self) {
        *lock(&self.session) = None;
    }

    /// Sends a request on a thread of its own and waits for its answer
    /// until the deadline or a stop; then tells a 2025 server to cancel
    /// (a 2026-07-28 server sees its stream closed when the exchange
    /// ends, at the deadline at the latest).
    pub fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        options: &Options<'_>,
    ) -> Result<Value, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let message = jsonrpc::request(id, method, params);
        let modern = is_modern(&message);
        let remaining = options.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(RequestError::TimedOut);
        }
        // The exchange may outlive our wait by a little, so that the wait
        // (which knows about stops) always decides first.
        let budget = remaining + Duration::from_secs(2);
        let slot: Arc<Slot<Result<Value, RequestError>>> = Arc::default();
        let work = {
            let (link, slot, message) = (Arc::clone(self), Arc::clone(&slot), message.clone());
            let headers = options.headers.clone();
            move || {
                let answer = link
                    .exchange(&message, Some(id), budget, &headers)
                    .and_then(|outcome| match outcome {
                        Some(Ok(result)) => Ok(result),
                        Some(Err(error)) => Err(RequestError::Rpc(error)),
                        None => Err(RequestError::Protocol(
                            "it answered a request with 202 Accepted".into(),
                        )),
                    });
                slot.fill(answer);
            }
        };
        self.run_helper(format!("mcp-{}-req", self.server), work);
        match slot.wait(options.deadline, options.stop) {
            Ok(answer) => answer,
            Err(interrupted) => {
                let (error, reason) = match interrupted {
                    jsonrpc::Interrupted::TimedOut => (RequestError::TimedOut, "timed out"),
                    jsonrpc::Interrupted::Stopped => {
                        (RequestError::Stopped, "stopped by the owner")
                    }
                };
                if !modern && method != "initialize" {
                    let link = Arc::clone(self);
                    let cancel = jsonrpc::cancelled(id, reason);
                    self.run_helper(format!("mcp-{}-cancel", self.server), move || {
                        let _ = link.exchange(&cancel, None, Duration::from_secs(5), &[]);
                    });
                }
                Err(error)
            }
        }
    }

    /// Sends a notification and waits for its 202.
    pub fn notify(&self, method: &str, params: Value, deadline: Instant) -> Result<(), String> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let message = jsonrpc::notification(method, params);
        self.exchange(&message, None, remaining.max(Duration::from_secs(1)), &[])
            .map(|_| ())
            .map_err(|e| describe(&e))
    }

    /// Starts the thread that keeps a change-notification stream open.
    pub fn listen(self: &Arc<Self>, how: Listen) {
        let mut listener = lock(&self.listener);
        if listener.is_some() || self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let link = Arc::clone(self);
        *listener = std::thread::Builder::new()
            .name(format!("mcp-{}-listen", self.server))
            .spawn(move || link.keep_listening(how))
            .ok();
    }

    /// Ends the link: the listening thread, the session (DELETE), and the
    /// exchanges still running, waited for a little (one blocked on an
    /// unresponsive server ends at its own deadline; it calls the host
    /// only through the shutdown gate).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Each lock is released before the work: `base` locks the session
        // again, and the listener may need its lock to end. The session is
        // ended first: a server then closes its stream, and the listener
        // ends at once rather than at its next tick.
        let session = lock(&self.session).take();
        if let Some(session) = session {
            let _ = self
                .base(self.client.delete(self.url.clone()), None)
                .header("Mcp-Session-Id", session)
                .timeout(Duration::from_secs(2))
                .send();
        }
        let listener = lock(&self.listener).take();
        if let Some(listener) = listener {
            let _ = listener.join();
        }
        let helpers: Vec<JoinHandle<()>> = lock(&self.helpers).drain(..).collect();
        let until = Instant::now() + TICK;
        for handle in helpers {
            while !handle.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }

    fn run_helper(&self, name: String, work: impl FnOnce() + Send + 'static) {
        let mut helpers = lock(&self.helpers);
        helpers.retain(|h| !h.is_finished());
        match std::thread::Builder::new().name(name).spawn(work) {
            Ok(handle) => helpers.push(handle),
            Err(e) => tracing::warn!(server = %self.server, "no thread for an HTTP request: {e}"),
        }
    }

    /// The headers every request carries: the configured ones, the
    /// revision (the message's own in 2026-07-28, else the one agreed) and
    /// the session.
    fn base(&self, request: RequestBuilder, message: Option<&Value>) -> RequestBuilder {
        let mut request = request.headers(self.headers.clone());
        let agreed = *lock(&self.version);
        let version = message
            .and_then(modern_version)
            .or(agreed.map(Version::as_str));
        if let Some(version) = version {
            request = request.header("MCP-Protocol-Version", version);
        }
        let session = lock(&self.session).clone();
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        request
    }

    /// POSTs one message and reads the answer: for a request (`id`), its
    /// outcome; for a notification or a response, nothing.
    fn exchange(
        &self,
        message: &Value,
        id: Option<u64>,
        timeout: Duration,
        extra: &[(String, String)],
    ) -> Result<Option<Result<Value, RpcError>>, RequestError> {
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let mut request = self
            .base(self.client.post(self.url.clone()), Some(message))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .timeout(timeout)
            .body(message.to_string());
        if is_modern(message) {
            // 2026-07-28 mirrors the body into headers, for gateways.
            request = request.header("Mcp-Method", method);
            let params = message.get("params");
            if let Some(name) = params
                .and_then(|p| p.get("name").or_else(|| p.get("uri")))
                .and_then(Value::as_str)
            {
                request = request.header("Mcp-Name", header_value(name));
            }
        }
        for (name, value) in extra {
            request = request.header(name.as_str(), value.as_str());
        }
        let had_session = lock(&self.session).is_some();
        let response = request.send().map_err(|e| self.send_error(&e))?;
        if method == "initialize" {
            if let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            {
                *lock(&self.session) = Some(session.to_owned());
            }
        }
        let status = response.status();
        if !status.is_success() {
            return Err(self.refusal(response, had_session));
        }
        let Some(id) = id else {
            return Ok(None);
        };
        if status == StatusCode::ACCEPTED {
            return Ok(None);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            return self.read_stream(response, id, timeout).map(Some);
        }
        if !content_type.starts_with("application/json") {
            return Err(RequestError::Protocol(format!(
                "it answered with {content_type:?}, neither JSON nor an event stream"
            )));
        }
        let body = read_bounded(response, MAX_MESSAGE)?;
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| RequestError::Protocol(format!("its answer is not JSON ({e})")))?;
        let messages = match value {
            Value::Array(list) => list,
            one => vec![one],
        };
        let mut found = None;
        for message in messages {
            if let Some(outcome) = self.handle(message, id) {
                found = Some(outcome);
            }
        }
        found.map(Some).ok_or_else(|| {
            RequestError::Protocol("its answer held no response to our request".into())
        })
    }

    /// Reads a request's event stream until our response, handling what
    /// comes before it; resumes a stream a 2025-11-25 server closed early.
    fn read_stream(
        &self,
        mut response: Response,
        id: u64,
        timeout: Duration,
    ) -> Result<Result<Value, RpcError>, RequestError> {
        let until = Instant::now() + timeout;
        let mut parser = sse::Parser::new(MAX_MESSAGE);
        let mut buf = vec![0u8; 16 << 10];
        let mut resumes = 0;
        loop {
            let n = match response.read(&mut buf) {
                Ok(n) => n,
                Err(e) if is_timeout(&e) => return Err(RequestError::TimedOut),
                Err(e) => {
                    return Err(RequestError::Transport(format!(
                        "its event stream broke ({e})"
                    )));
                }
            };
            if n == 0 {
                // Ended without our response: resume where it stopped, if
                // the server gave event ids; else the request is lost.
                let Some(last) = parser.last_id.clone() else {
                    return Err(RequestError::Protocol(
                        "its event stream ended before the response".into(),
                    ));
                };
                resumes += 1;
                let wait = Duration::from_millis(parser.retry_ms.unwrap_or(500).min(5000));
                if resumes > MAX_RESUMES || Instant::now() + wait >= until {
                    return Err(RequestError::Protocol(
                        "its event stream ended before the response".into(),
                    ));
                }
                std::thread::sleep(wait);
                response = self
                    .base(self.client.get(self.url.clone()), None)
                    .header(ACCEPT, "text/event-stream")
                    .header("Last-Event-ID", last)
                    .timeout(until.saturating_duration_since(Instant::now()))
                    .send()
                    .map_err(|e| self.send_error(&e))?;
                if !response.status().is_success() {
                    return Err(RequestError::Protocol(format!(
                        "its event stream ended before the response, and resuming it was \
                         refused (HTTP {})",
                        response.status().as_u16()
                    )));
                }
                continue;
            }
            let events = parser
                .feed(&buf[..n])
                .map_err(|e| RequestError::Protocol(e.to_string()))?;
            for event in events {
                let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
                    tracing::warn!(server = %self.server, "an event that is not JSON: {:?}",
                        crate::text::cut(&event.data, QUOTED));
                    continue;
                };
                if let Some(outcome) = self.handle(message, id) {
                    return Ok(outcome);
                }
            }
        }
    }

    /// Handles one message from the server; returns the outcome when it is
    /// the response to `ours`.
    fn handle(&self, message: Value, ours: u64) -> Option<Result<Value, RpcError>> {
        match jsonrpc::classify(message) {
            Incoming::Response {
                id: Some(id),
                outcome,
            } if id == ours => Some(outcome),
            Incoming::Response { .. } | Incoming::Invalid => None,
            Incoming::Request { id, method } => {
                // A 2025 server's question (roots, sampling, ping): our
                // answer is POSTed back.
                let answer = jsonrpc::answer_server_request(id, &method);
                if let Err(e) = self.exchange(&answer, None, Duration::from_secs(10), &[]) {
                    tracing::warn!(server = %self.server, "could not answer {method}: {}", describe(&e));
                }
                None
            }
            Incoming::Notification { method, params } => {
                self.events.notification(&method, &params);
                None
            }
        }
    }

    /// The error for a non-2xx answer.
    fn refusal(&self, response: Response, had_session: bool) -> RequestError {
        let status = response.status();
        let body = read_bounded(response, 64 << 10).unwrap_or_default();
        let text = String::from_utf8_lossy(&body).into_owned();
        // A 2025 server that forgot our session answers 404; the
        // TypeScript SDK's own check answers 400 "No valid session ID".
        if had_session
            && (status == StatusCode::NOT_FOUND
                || (status == StatusCode::BAD_REQUEST
                    && text.to_ascii_lowercase().contains("session")))
        {
            return RequestError::SessionExpired;
        }
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            if let Incoming::Response {
                outcome: Err(error),
                ..
            } = jsonrpc::classify(value)
            {
                return RequestError::Refused {
                    status: status.as_u16(),
                    error,
                };
            }
        }
        let why = if status.is_redirection() {
            " (a redirect to another origin, not followed)".to_owned()
        } else if text.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", crate::text::cut(text.trim(), QUOTED))
        };
        RequestError::Transport(format!(
            "{} answered HTTP {}{why}",
            self.url,
            status.as_u16()
        ))
    }

    fn send_error(&self, e: &reqwest::Error) -> RequestError {
        if e.is_timeout() {
            return RequestError::TimedOut;
        }
        let root = root_cause(e);
        if e.is_connect() {
            RequestError::Unreachable(format!("cannot connect to {} ({root})", self.url))
        } else {
            RequestError::Transport(format!("the request to {} failed ({root})", self.url))
        }
    }

    /// The listening thread: opens the stream, reads it, and after it
    /// drops reopens it with backoff, asking for a re-list (notifications
    /// sent meanwhile are lost, never replayed).
    fn keep_listening(self: Arc<Self>, how: Listen) {
        let mut backoff = Duration::from_secs(1);
        let mut first = true;
        while !self.stopping.load(Ordering::SeqCst) {
            let opened = Instant::now();
            let was_open = match self.listen_once(how, first) {
                Listened::NotOffered => return,
                Listened::Ended => true,
                Listened::Failed => false,
            };
            first = false;
            if opened.elapsed() > Duration::from_secs(60) {
                backoff = Duration::from_secs(1);
            }
            let until = Instant::now() + backoff;
            while Instant::now() < until {
                if self.stopping.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            backoff = (backoff * 2).min(Duration::from_secs(60));
            if was_open {
                // Whatever changed while the stream was down was not
                // replayed: look again.
                self.events
                    .notification("notifications/tools/list_changed", &Value::Null);
            }
        }
    }

    fn listen_once(&self, how: Listen, first: bool) -> Listened {
        let request = match how {
            Listen::Get => self
                .base(self.client.get(self.url.clone()), None)
                .header(ACCEPT, "text/event-stream"),
            Listen::Subscribe => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
                let message = jsonrpc::request(
                    id,
                    "subscriptions/listen",
                    json!({
                        "_meta": crate::version::modern_meta(Version::V2026_07_28),
                        "notifications": {"toolsListChanged": true},
                    }),
                );
                self.base(self.client.post(self.url.clone()), Some(&message))
                    .header(ACCEPT, "application/json, text/event-stream")
                    .header(CONTENT_TYPE, "application/json")
                    .header("Mcp-Method", "subscriptions/listen")
                    .body(message.to_string())
            }
        };
        let mut response = match request.send() {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(server = %self.server, "listening stream: {}", describe(&self.send_error(&e)));
                return Listened::Failed;
            }
        };
        let status = response.status();
        // 405 (a 2025 server without a GET stream), 409 (one is open
        // already), 501, or any refusal of the first attempt (a server
        // that does not know `subscriptions/listen`): none is offered.
        if matches!(
            status,
            StatusCode::METHOD_NOT_ALLOWED | StatusCode::CONFLICT | StatusCode::NOT_IMPLEMENTED
        ) || (first && status.is_client_error())
        {
            tracing::debug!(server = %self.server, "no listening stream (HTTP {})", status.as_u16());
            return Listened::NotOffered;
        }
        if !status.is_success() {
            return Listened::Failed;
        }
        let mut parser = sse::Parser::new(MAX_MESSAGE);
        let mut buf = vec![0u8; 8 << 10];
        loop {
            if self.stopping.load(Ordering::SeqCst) {
                return Listened::Ended;
            }
            match response.read(&mut buf) {
                Ok(0) => return Listened::Ended,
                Ok(n) => match parser.feed(&buf[..n]) {
                    Ok(events) => {
                        for event in events {
                            if let Ok(message) = serde_json::from_str::<Value>(&event.data) {
                                // No response is ours on this stream.
                                self.handle(message, 0);
                            }
                        }
                    }
                    Err(_) => return Listened::Ended,
                },
                // The tick: nothing came; look at the stop flag again.
                Err(e) if is_timeout(&e) => continue,
                Err(_) => return Listened::Ended,
            }
        }
    }
}

enum Listened {
    /// The server has no such stream: stop trying.
    NotOffered,
    /// The stream was open, and ended or broke.
    Ended,
    /// It could not be opened.
    Failed,
}

/// Whether a message carries 2026-07-28 `_meta` (then it gets the
/// mirrored headers and is cancelled by closing its stream).
fn is_modern(message: &Value) -> bool {
    modern_version(message).is_some()
}

fn modern_version(message: &Value) -> Option<&str> {
    message
        .get("params")?
        .get("_meta")?
        .get(META_VERSION)?
        .as_str()
}

fn read_bounded(response: Response, max: usize) -> Result<Vec<u8>, RequestError> {
    let mut body = Vec::new();
    response
        .take(max as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| {
            if is_timeout(&e) {
                RequestError::TimedOut
            } else {
                RequestError::Transport(format!("its answer could not be read ({e})"))
            }
        })?;
    if body.len() > max {
        return Err(RequestError::Protocol(format!(
            "its answer is larger than {} MiB",
            max >> 20
        )));
    }
    Ok(body)
}

fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
            .is_some_and(reqwest::Error::is_timeout)
}

/// The innermost cause of a request failure, in words: "connection
/// refused" rather than "error sending request".
fn root_cause(e: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    let mut last = e.to_string();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return "connection refused".into(),
                std::io::ErrorKind::ConnectionReset => return "connection reset".into(),
                _ => {}
            }
        }
        last = s.to_string();
        source = s.source();
    }
    last
}

/// A request error in words, for logs and messages.
pub fn describe(e: &RequestError) -> String {
    match e {
        RequestError::Rpc(error) => error.to_string(),
        RequestError::TimedOut => "it did not answer in time".into(),
        RequestError::Stopped => "the call was stopped".into(),
        RequestError::Closed(why) | RequestError::NotSent(why) => why.clone(),
        RequestError::SessionExpired => "it forgot our session".into(),
        RequestError::Unreachable(why)
        | RequestError::Transport(why)
        | RequestError::Protocol(why) => why.clone(),
        RequestError::Refused { status, error } => format!("HTTP {status}: {error}"),
    }
}

/// A header value as 2026-07-28 wants it: as is when it is plain visible
/// ASCII, else `=?base64?...?=` of its UTF-8.
pub fn header_value(text: &str) -> String {
    let plain = text
        .bytes()
        .all(|b| (0x20..=0x7e).contains(&b) || b == b'\t')
        && text.trim() == text
        && !(text.starts_with("=?base64?") && text.ends_with("?="));
    if plain {
        text.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
        )
    }
}

/// The `Mcp-Param-*` headers a 2026-07-28 `tools/call` carries: for each
/// property of the tool's schema marked `x-mcp-header`, its value in the
/// arguments. Call [`check_param_annotations`] on the schema first.
pub fn param_headers(schema: &Value, args: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    collect_params(schema, Some(args), &mut out);
    out
}

fn collect_params(schema: &Value, value: Option<&Value>, out: &mut Vec<(String, String)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, sub) in properties {
        let here = value.and_then(|v| v.get(key));
        if let Some(name) = sub.get("x-mcp-header").and_then(Value::as_str) {
            let text = match here {
                Some(Value::String(s)) => Some(header_value(s)),
                Some(Value::Bool(b)) => Some(b.to_string()),
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_string()),
                _ => None,
            };
            if let Some(text) = text {
                out.push((format!("Mcp-Param-{name}"), text));
            }
        }
        collect_params(sub, here, out);
    }
}

/// Whether a tool's `x-mcp-header` annotations are valid (2026-07-28): a
/// non-empty token, unique regardless of case, on a string, integer or
/// boolean property reached through `properties` alone. An HTTP client
/// must leave out a tool that breaks this.
pub fn check_param_annotations(schema: &Value) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    check_annotations(schema, true, &mut seen)
}

fn check_annotations(node: &Value, reachable: bool, seen: &mut Vec<String>) -> Result<(), String> {
    match node {
        Value::Object(map) => {
            if let Some(annotation) = map.get("x-mcp-header") {
                let name = annotation.as_str().unwrap_or("");
                let token = !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                if !token {
                    return Err(format!(
                        "x-mcp-header {annotation} is not a valid header name"
                    ));
                }
                if !reachable {
                    return Err(format!(
                        "x-mcp-header {name:?} is not on a property reached through properties alone"
                    ));
                }
                let primitive = matches!(
                    map.get("type").and_then(Value::as_str),
                    Some("string" | "integer" | "boolean")
                );
                if !primitive {
                    return Err(format!(
                        "x-mcp-header {name:?} is on a property that is not a string, integer or boolean"
                    ));
                }
                let lower = name.to_ascii_lowercase();
                if seen.contains(&lower) {
                    return Err(format!("x-mcp-header {name:?} is used twice"));
                }
                seen.push(lower);
            }
            for (key, child) in map {
                if key == "properties" {
                    if let Value::Object(props) = child {
                        for prop in props.values() {
                            check_annotations(prop, reachable, seen)?;
                        }
                    }
                } else if key != "x-mcp-header" {
                    check_annotations(child, false, seen)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| check_annotations(item, false, seen)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_plain_or_base64() {
        let cases = [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ];
        for (raw, expected) in cases {
            assert_eq!(header_value(raw), expected, "for {raw:?}");
        }
    }

    #[test]
    fn marked_parameters_become_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "opts": {"type": "object", "properties": {
                "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                "n": {"type": "integer", "x-mcp-header": "N"}
            }}
        }});
        assert_eq!(check_param_annotations(&schema), Ok(()));
        let mut got = param_headers(
            &schema,
            &json!({"region": "us-west1", "query": "q", "opts": {"dry": true, "n": null}}),
        );
        got.sort();
        assert_eq!(
            got,
            [
                ("Mcp-Param-Dry".to_owned(), "true".to_owned()),
                ("Mcp-Param-Region".to_owned(), "us-west1".to_owned())
            ]
        );
    }

    #[test]
    fn bad_annotations_are_refused() {
        let cases = [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"}}}),
            json!({"properties": {"list": {"type": "array",
                "items": {"type": "string", "x-mcp-header": "Item"}}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
        ];
        for schema in cases {
            assert!(
                check_param_annotations(&schema).is_err(),
                "{schema} should be refused"
            );
        }
    }
}
