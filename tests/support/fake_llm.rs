//! A fake LLM provider for the integration tests, so hearth's model client can
//! be driven end to end with no network and no API key.
//!
//! [`FakeLlm`] is a real HTTP/1.1 server on 127.0.0.1 that answers both the
//! Anthropic Messages API (`POST /v1/messages`) and the OpenAI-compatible chat
//! completions API (`POST /v1/chat/completions` or `POST /chat/completions`).
//! A test scripts the answers as a queue of [`Reply`] values, one popped per
//! request, and reads back every request it received as a [`Recorded`].
//! Requests to any other path are recorded too, and answered 404 without
//! touching the script, so a wrong base URL fails loudly. The model
//! catalogues (Anthropic's `GET /v1/models/{id}`, OpenAI's `GET /models`)
//! are answered from [`FakeLlm::serve_models`]'s list, and
//! [`FakeLlm::require_key`] makes every route refuse another key with the
//! provider's 401. The builder
//! functions ([`anthropic_text`], [`openai_tool_call`], ...) produce
//! streams shaped like the providers' own, quirks included; [`reporting`]
//! makes a built stream report chosen token counts (cache reads and writes
//! too), and [`FakeLlm::reported`] adds up what every answer sent
//! reported, read back from the streams as a client of the real APIs
//! would. [`FakeLlm::respond_with`] answers from a function of the
//! request instead of a script, for runs too long to script (the soak).
//! [`FakeLlm::keep_prompt_cache`] runs every model request through a
//! [`PromptCache`] first: a request its rules refuse gets the provider's
//! 400, and every stream sent reports the cache's counts instead of the
//! scripted ones, so tests can measure what a real cache would serve.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_server::{self, write_json};
use crate::prompt_cache::{self, CacheError, CacheOutcome, Clock, Plan, PromptCache, Provider};

/// The model name every built stream reports.
const MODEL: &str = "fake-model";

/// The `created` timestamp of every built OpenAI chunk (2025-01-01).
const CREATED: u64 = 1_735_689_600;

/// The prompt size every built stream reports.
const INPUT_TOKENS: usize = 25;

/// A fake provider listening on 127.0.0.1. Dropping it stops accepting
/// connections and closes the ones parked on [`Reply::Hang`].
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// What the test and the connection threads share.
struct Shared {
    state: Mutex<State>,
    /// Signalled when a request is recorded, on `release` and on drop.
    changed: Condvar,
    stopping: AtomicBool,
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    /// Replies for requests whose system prompt contains a marker, taken
    /// before the script: several agents asking at once each get theirs.
    routed: Vec<(String, Reply)>,
    requests: Vec<Recorded>,
    /// How many times `release` was called; a parked request waits for it to
    /// move past the value it saw when it parked.
    releases: u64,
    /// When each answer was completely written.
    answered: Vec<Instant>,
    /// The models the catalogue routes list (`fake-model` when empty).
    models: Vec<String>,
    /// The only API key accepted, when set.
    key: Option<String>,
    /// What each completely written stream reported.
    reported: Vec<Tokens>,
    /// Answers a request once the script has run out, when set.
    responder: Option<Responder>,
    /// The prompt cache every model request goes through, when kept.
    cache: Option<PromptCache>,
    /// What the cache made of each request answered with a stream.
    outcomes: Vec<CacheOutcome>,
}

/// A request's cache outcome, waiting for its answer: committed, and put
/// into the stream, once a stream is sent.
struct Pending {
    plan: Plan,
    /// The request asked for `stream_options.include_usage` (OpenAI).
    include_usage: bool,
}

/// Builds the answer to a request when the script has run out: for tests
/// that cannot know how many requests will come (a daemon killed and
/// restarted at random).
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The request method, e.g. `POST`.
    pub method: String,
    /// The request target as sent, e.g. `/v1/messages`.
    pub path: String,
    /// Every header in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when empty, a JSON string holding the
    /// raw text when it is not JSON.
    pub body: Value,
    /// When the whole request had arrived.
    pub received: Instant,
}

impl Recorded {
    /// A header by lowercased name (matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A raw SSE body (already framed text, e.g. from a recorded stream
    /// file), sent as 200 `text/event-stream`, chunked, one chunk per event
    /// (events end at blank lines).
    Sse(String),
    /// An HTTP error: status, extra headers (e.g. `("retry-after", "1")`) and
    /// a JSON body.
    Error {
        /// The HTTP status code.
        status: u16,
        /// Headers sent besides `content-type` and `content-length`.
        headers: Vec<(String, String)>,
        /// The response body.
        body: Value,
    },
    /// Sends the first `events` SSE events of `sse`, then drops the
    /// connection abruptly (no final chunk).
    Disconnect {
        /// The whole stream, of which only a prefix is sent.
        sse: String,
        /// How many events to send before hanging up.
        events: usize,
    },
    /// A 200 answer with a JSON body (the model catalogues).
    Json(Value),
    /// Parks the request until [`FakeLlm::release`] is called, then answers
    /// it with the next reply in the script.
    Hang,
    /// Like [`Reply::Sse`], waiting `gap` before each event, as a model
    /// that takes its time.
    Paced {
        /// The whole stream.
        sse: String,
        /// The pause before each event.
        gap: Duration,
    },
}

impl FakeLlm {
    /// Starts the server on 127.0.0.1:0 with an empty script.
    pub fn start() -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake LLM: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake LLM: local address");
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("fake-llm-accept".into())
            .spawn(move || http_server::accept_each(&listener, &accepting, Shared::stopping, serve))
            .expect("fake LLM: spawn the accept thread");
        FakeLlm {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The models the catalogue routes know, instead of `fake-model`.
    pub fn serve_models(&self, names: &[&str]) {
        self.shared.lock().models = names.iter().map(|n| (*n).to_owned()).collect();
    }

    /// Refuses every request that does not carry `key` (`x-api-key` or a
    /// bearer token) with the provider's 401.
    pub fn require_key(&self, key: &str) {
        self.shared.lock().key = Some(key.to_owned());
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().script.push_back(reply);
    }

    /// Answers every request the script and the routed replies leave
    /// unanswered with `responder`'s reply, instead of a 500. Such
    /// requests are recorded without their body: an hour of prompts would
    /// otherwise fill the test's memory.
    pub fn respond_with(&self, responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) {
        self.shared.lock().responder = Some(Arc::new(responder));
    }

    /// Keeps a prompt cache from now on, by the rules of
    /// [`prompt_cache`]: every request to the model routes is run through
    /// it before the script. A request its rules refuse (a fifth
    /// breakpoint, a bad `ttl`) is answered with Anthropic's 400
    /// `invalid_request_error`, taking nothing from the script. Every
    /// other request is answered as scripted, but a stream reports the
    /// cache's counts instead of its own (Anthropic's `message_start` and
    /// `message_delta` usage; OpenAI's usage chunk, added when the request
    /// asked for `stream_options.include_usage` and the stream has none);
    /// only then is the request's cache write stored, so an error reply
    /// writes nothing. Returns the cache's clock, for moving it forward
    /// past a TTL; calling it again keeps the same cache.
    pub fn keep_prompt_cache(&self) -> Clock {
        let mut state = self.shared.lock();
        state
            .cache
            .get_or_insert_with(PromptCache::new)
            .clock()
            .clone()
    }

    /// What the prompt cache made of every request answered with a stream
    /// since [`FakeLlm::keep_prompt_cache`], in the order the answers were
    /// sent.
    pub fn cache_outcomes(&self) -> Vec<CacheOutcome> {
        self.shared.lock().outcomes.clone()
    }

    /// The share of prompt tokens read from the cache over every request
    /// but the first: [`prompt_cache::hit_share`] of
    /// [`FakeLlm::cache_outcomes`].
    pub fn cache_hit_share(&self) -> f64 {
        prompt_cache::hit_share(&self.shared.lock().outcomes)
    }

    /// Queues a reply for the next request whose system prompt contains
    /// `marker` (an agent's name, say), ahead of the plain script.
    pub fn push_for(&self, marker: &str, reply: Reply) {
        self.shared.lock().routed.push((marker.to_owned(), reply));
    }

    /// When each answer was completely written, in order.
    pub fn answered(&self) -> Vec<Instant> {
        self.shared.lock().answered.clone()
    }

    /// When each request had fully arrived, in order: what a benchmark
    /// needs, without copying every request body each time it asks.
    pub fn received(&self) -> Vec<Instant> {
        self.shared
            .lock()
            .requests
            .iter()
            .map(|r| r.received)
            .collect()
    }

    /// The token counts of every stream written whole so far, in order
    /// (streams cut off or errors report nothing).
    pub fn reported(&self) -> Vec<Tokens> {
        self.shared.lock().reported.clone()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Blocks until at least `n` requests have arrived or `timeout` passes;
    /// returns whether they did. A request counts once its reply has been
    /// taken from the script, so a request that parked on [`Reply::Hang`] is
    /// already waiting for [`FakeLlm::release`] when this returns.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let state = self.shared.lock();
        http_server::wait_until(&self.shared.changed, state, timeout, |s| {
            s.requests.len() >= n
        })
        .1
    }

    /// Lets every connection currently parked on [`Reply::Hang`] continue:
    /// each pops the next reply from the script and answers with it. Call
    /// [`FakeLlm::wait_for_requests`] first so the request is parked.
    pub fn release(&self) {
        let mut state = self.shared.lock();
        state.releases += 1;
        self.shared.changed.notify_all();
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        {
            // Under the lock, so a request about to park sees the flag.
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

/// Answers requests on one connection until either side closes it.
fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some((mut request, keep_alive)) = read_request(&mut reader)? {
        if shared.stopping.load(Ordering::SeqCst) {
            return Ok(());
        }
        let scripted = request.method == "POST"
            && matches!(
                request.path.split('?').next(),
                Some("/v1/messages" | "/v1/chat/completions" | "/chat/completions")
            );
        let (reply, releases, pending) = {
            let mut state = shared.lock();
            let system = system_prompt(&request.body);
            let routed = state
                .routed
                .iter()
                .position(|(marker, _)| system.contains(marker.as_str()));
            // As the real services do, a tool name outside their pattern
            // fails the whole request before any model runs.
            let refused = scripted
                .then(|| bad_tool_name(&request).or_else(|| bad_thinking(&request)))
                .flatten();
            // Planned only: committed once a stream is sent.
            let planned = match &mut state.cache {
                Some(cache) if scripted => Some(plan(cache, &request)),
                _ => None,
            };
            let mut pending = None;
            let reply = if let Some(refusal) = unauthorized(&request, &state) {
                refusal
            } else if let Some(refusal) = refused {
                refusal
            } else if let Some(listing) = catalogue(&request, &state) {
                listing
            } else if let Some(Err(error)) = &planned {
                anthropic_error(400, "invalid_request_error", &error.message, None)
            } else if let (true, Some(i)) = (scripted, routed) {
                pending = planned.and_then(Result::ok);
                state.routed.remove(i).1
            } else if scripted {
                pending = planned.and_then(Result::ok);
                match (state.script.pop_front(), &state.responder) {
                    (Some(reply), _) => reply,
                    (None, Some(responder)) => {
                        let reply = responder(&request);
                        request.body = Value::Null;
                        reply
                    }
                    (None, None) => no_reply_left(),
                }
            } else {
                let message = format!("fake: no route for {} {}", request.method, request.path);
                anthropic_error(404, "not_found_error", &message, None)
            };
            state.requests.push(request);
            shared.changed.notify_all();
            (reply, state.releases, pending)
        };
        let (more, sent) = answer(&mut out, reply, shared, releases, pending)?;
        // Stamped before the stream is read back: the benches time the
        // host's side from here.
        let answered = Instant::now();
        let reported = sent.as_deref().and_then(usage_of);
        let mut state = shared.lock();
        state.answered.push(answered);
        state.reported.extend(reported);
        drop(state);
        if !more || !keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

/// Sends `reply`; returns whether the connection may carry another
/// request, and the stream if one was sent whole. `releases` is the
/// release count when the reply was taken; `pending`, the request's cache
/// outcome when a cache is kept, goes into a stream sent.
fn answer(
    out: &mut TcpStream,
    reply: Reply,
    shared: &Shared,
    releases: u64,
    pending: Option<Pending>,
) -> io::Result<(bool, Option<String>)> {
    match reply {
        Reply::Sse(body) => {
            let body = through_cache(body, pending, shared);
            write_stream(out, &split_events(&body))?;
            out.write_all(b"0\r\n\r\n")?;
            Ok((true, Some(body)))
        }
        Reply::Error {
            status,
            headers,
            body,
        } => {
            write_json(out, status, &headers, &body.to_string())?;
            Ok((true, None))
        }
        Reply::Json(body) => {
            write_json(out, 200, &[], &body.to_string())?;
            Ok((true, None))
        }
        Reply::Paced { sse, gap } => {
            let sse = through_cache(sse, pending, shared);
            write_stream(out, &[])?;
            for event in split_events(&sse) {
                std::thread::sleep(gap);
                out.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())?;
                out.flush()?;
            }
            out.write_all(b"0\r\n\r\n")?;
            Ok((true, Some(sse)))
        }
        Reply::Disconnect { sse, events } => {
            let sse = through_cache(sse, pending, shared);
            let all = split_events(&sse);
            write_stream(out, &all[..events.min(all.len())])?;
            out.shutdown(Shutdown::Both)?;
            Ok((false, None))
        }
        Reply::Hang => {
            let mut state = shared.lock();
            while state.releases == releases && !shared.stopping.load(Ordering::SeqCst) {
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if shared.stopping.load(Ordering::SeqCst) {
                return Ok((false, None));
            }
            let next = state.script.pop_front().unwrap_or_else(no_reply_left);
            let releases = state.releases;
            drop(state);
            answer(out, next, shared, releases, pending)
        }
    }
}

/// What the cache makes of a request to a model route, by the rules of the
/// provider the path belongs to.
fn plan(cache: &mut PromptCache, request: &Recorded) -> Result<Pending, CacheError> {
    let plan = if request.path.starts_with("/v1/messages") {
        cache.plan_anthropic(&request.body)?
    } else {
        cache.plan_openai(&request.body)
    };
    Ok(Pending {
        plan,
        include_usage: request.body["stream_options"]["include_usage"] == true,
    })
}

/// A stream about to be sent, with the cache's counts in it when a cache
/// is kept; the request's cache write is stored and its outcome recorded
/// here, as the stream starts.
fn through_cache(sse: String, pending: Option<Pending>, shared: &Shared) -> String {
    let Some(Pending {
        plan,
        include_usage,
    }) = pending
    else {
        return sse;
    };
    let sse = with_cache_usage(&sse, &plan.outcome, include_usage);
    let mut state = shared.lock();
    state.outcomes.push(plan.outcome.clone());
    if let Some(cache) = &mut state.cache {
        cache.commit(plan);
    }
    sse
}

/// A request's system prompt, in either provider's shape.
/// The system prompt of a request body as one text: Anthropic's `system`
/// (a string, or text blocks joined by a blank line) or the OpenAI
/// request's first message.
pub fn system_prompt(body: &Value) -> String {
    match &body["system"] {
        Value::String(text) => text.clone(),
        Value::Null => body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        other => other.to_string(),
    }
}

/// The 400 the service answers when a tool's name breaks its pattern:
/// Anthropic's `^[a-zA-Z0-9_-]{1,128}$`, OpenAI's `^[a-zA-Z0-9_-]+$` (at
/// most 64), each with its own error body.
/// Anthropic's rules for extended thinking, as its API answers them with
/// a 400 `invalid_request_error`: `budget_tokens` at least 1,024 and below
/// `max_tokens`; and with thinking on, a last assistant message that asks
/// for tools must start with the thinking block that came with it, sent
/// back unchanged (a block without its signature is refused).
pub fn bad_thinking(request: &Recorded) -> Option<Reply> {
    if request.path.contains("chat/completions") {
        return None;
    }
    let body = &request.body;
    let refuse = |message: String| {
        Some(anthropic_error(
            400,
            "invalid_request_error",
            &message,
            None,
        ))
    };
    if body["thinking"]["type"] == "adaptive" {
        // The model decides whether to think, so an answer may come
        // without thinking; whatever came must go back sealed.
        if body["thinking"].get("budget_tokens").is_some() {
            return refuse(
                "thinking.adaptive.budget_tokens: Extra inputs are not permitted".into(),
            );
        }
        return unsealed(body);
    }
    if body["thinking"]["type"] == "enabled" {
        let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
        let max = body["max_tokens"].as_u64().unwrap_or(0);
        if budget < 1024 {
            return refuse(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            );
        }
        if budget >= max {
            return refuse("`max_tokens` must be greater than `thinking.budget_tokens`".into());
        }
    } else {
        return None;
    }
    let messages = body["messages"].as_array()?;
    let (i, last) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m["role"] == "assistant")?;
    let content = last["content"].as_array()?;
    let asks_tools = content.iter().any(|b| b["type"] == "tool_use");
    let first = content
        .first()
        .map(|b| b["type"].as_str().unwrap_or_default());
    if asks_tools && !matches!(first, Some("thinking" | "redacted_thinking")) {
        return refuse(format!(
            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found \
             `{}`. When `thinking` is enabled, a final `assistant` message must start with a \
             thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
            first.unwrap_or("nothing")
        ));
    }
    unsealed(body)
}

/// A thinking block sent back without its signature, which Anthropic
/// refuses.
fn unsealed(body: &Value) -> Option<Reply> {
    for (i, message) in body["messages"].as_array()?.iter().enumerate() {
        for (j, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if block["type"] == "thinking"
                && block["signature"].as_str().unwrap_or_default().is_empty()
            {
                let message =
                    format!("messages.{i}.content.{j}.thinking.signature: Field required");
                return Some(anthropic_error(
                    400,
                    "invalid_request_error",
                    &message,
                    None,
                ));
            }
        }
    }
    None
}

fn bad_tool_name(request: &Recorded) -> Option<Reply> {
    let openai = request.path.contains("chat/completions");
    let tools = request.body["tools"].as_array()?;
    let index = tools.iter().enumerate().find_map(|(i, tool)| {
        let name = if openai {
            tool["function"]["name"].as_str()
        } else {
            tool["name"].as_str()
        }
        .unwrap_or_default();
        let max = if openai { 64 } else { 128 };
        let fits = (1..=max).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        (!fits).then_some(i)
    })?;
    Some(if openai {
        let param = format!("tools[{index}].function.name");
        Reply::Error {
            status: 400,
            headers: Vec::new(),
            body: json!({"error": {
                "message": format!("Invalid '{param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."),
                "type": "invalid_request_error", "param": param, "code": "invalid_value"}}),
        }
    } else {
        anthropic_error(
            400,
            "invalid_request_error",
            &format!(
                "tools.{index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            ),
            None,
        )
    })
}

/// The answer when the script has run out.
fn no_reply_left() -> Reply {
    anthropic_error(500, "api_error", "fake: no scripted reply left", None)
}

/// Reads one request as a [`Recorded`]; `None` when the client closed the
/// connection between requests. The flag says whether the connection may be
/// kept open.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<(Recorded, bool)>> {
    let Some(http) = http_server::read_request(reader)? else {
        return Ok(None);
    };
    // Stamped before the body is parsed: the host's part ends with its last
    // byte, and the turn benches must not count this server's JSON parsing.
    let received = Instant::now();
    let body = match serde_json::from_slice(&http.body) {
        Ok(value) => value,
        Err(_) if http.body.is_empty() => Value::Null,
        Err(_) => Value::String(String::from_utf8_lossy(&http.body).into_owned()),
    };
    let request = Recorded {
        method: http.method,
        path: http.target,
        headers: http.headers,
        body,
        received,
    };
    Ok(Some((request, http.keep_alive)))
}

/// Splits an SSE body into events, each ending with its blank line; blank
/// lines before an event belong to it, and any unterminated tail is the last.
fn split_events(sse: &str) -> Vec<&str> {
    let mut events = Vec::new();
    let (mut start, mut end, mut filled) = (0, 0, false);
    for line in sse.split_inclusive('\n') {
        end += line.len();
        if !line.trim_end_matches(['\r', '\n']).is_empty() {
            filled = true;
        } else if filled {
            events.push(&sse[start..end]);
            (start, filled) = (end, false);
        }
    }
    if start < sse.len() {
        events.push(&sse[start..]);
    }
    events
}

/// Sends a 200 event-stream head and one chunk per event, without the final
/// chunk.
fn write_stream(out: &mut TcpStream, events: &[&str]) -> io::Result<()> {
    out.write_all(
        b"HTTP/1.1 200 OK\r\n\
          content-type: text/event-stream\r\n\
          cache-control: no-cache\r\n\
          transfer-encoding: chunked\r\n\r\n",
    )?;
    for event in events {
        out.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

/// Token counts as hearth should record them: four disjoint counts, with
/// `input` leaving out the cache's reads and writes (Anthropic's meaning;
/// OpenAI's `prompt_tokens` is `input + cache_read`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Prompt tokens read afresh.
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache.
    pub cache_write: u64,
}

impl Tokens {
    /// All four.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

impl std::ops::Add for Tokens {
    type Output = Tokens;

    fn add(self, other: Tokens) -> Tokens {
        Tokens {
            input: self.input + other.input,
            output: self.output + other.output,
            cache_read: self.cache_read + other.cache_read,
            cache_write: self.cache_write + other.cache_write,
        }
    }
}

impl std::iter::Sum for Tokens {
    fn sum<I: Iterator<Item = Tokens>>(iter: I) -> Tokens {
        iter.fold(Tokens::default(), |a, b| a + b)
    }
}

/// `reply` (a built stream) reporting `tokens` as its provider does:
/// Anthropic's in `message_start` (input, cache writes and reads, one
/// output token so far) and again, cumulative, in `message_delta`;
/// OpenAI's in the final usage chunk, with `prompt_tokens` including
/// `prompt_tokens_details.cached_tokens` (OpenAI reports no cache writes,
/// so `tokens.cache_write` must be 0 there). Panics on a stream without a
/// usage to replace, so a test never reports nothing by mistake.
pub fn reporting(reply: Reply, tokens: Tokens) -> Reply {
    let rewrite = |sse: &str| {
        let (out, replaced) = edit_events(sse, |data| set_usage(data, tokens));
        assert!(replaced, "fake: this stream reports no usage to replace");
        out
    };
    match reply {
        Reply::Sse(sse) => Reply::Sse(rewrite(&sse)),
        Reply::Paced { sse, gap } => Reply::Paced {
            sse: rewrite(&sse),
            gap,
        },
        Reply::Disconnect { sse, events } => Reply::Disconnect {
            sse: rewrite(&sse),
            events,
        },
        other => panic!("fake: only a stream reports usage, not {other:?}"),
    }
}

/// `sse` with `edit` applied to the data of each event that is JSON;
/// returns it and whether `edit` ever returned true.
fn edit_events(sse: &str, mut edit: impl FnMut(&mut Value) -> bool) -> (String, bool) {
    let mut edited = false;
    let mut out = String::new();
    for event in split_events(sse) {
        let mut lines = Vec::new();
        for line in event.lines() {
            let Some(data) = line.strip_prefix("data: ") else {
                lines.push(line.to_owned());
                continue;
            };
            let mut value: Value = match serde_json::from_str(data) {
                Ok(v) => v,
                Err(_) => {
                    lines.push(line.to_owned());
                    continue;
                }
            };
            edited |= edit(&mut value);
            lines.push(format!("data: {value}"));
        }
        out.push_str(&lines.join("\n"));
        out.push_str("\n\n");
    }
    (out, edited)
}

/// `sse` reporting what the prompt cache computed for its request,
/// whatever it was scripted to report. Anthropic: `input_tokens`,
/// `cache_creation_input_tokens` (split by TTL in `cache_creation`) and
/// `cache_read_input_tokens` in `message_start`'s usage and in any
/// `message_delta` usage, output tokens kept. OpenAI: every usage object
/// gets `prompt_tokens` (cached included),
/// `prompt_tokens_details.cached_tokens` and a `total_tokens` to match,
/// completion tokens kept; a stream without one gets a usage chunk before
/// `[DONE]` when `include_usage` (the request asked for it), its
/// completion tokens estimated from the text and arguments streamed.
fn with_cache_usage(sse: &str, outcome: &CacheOutcome, include_usage: bool) -> String {
    if outcome.provider == Provider::Anthropic {
        let counts = json!({
            "input_tokens": outcome.uncached,
            "cache_creation_input_tokens": outcome.written,
            "cache_read_input_tokens": outcome.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": outcome.written - outcome.written_1h,
                "ephemeral_1h_input_tokens": outcome.written_1h,
            },
        });
        let put = |usage: &mut Value| {
            if !usage.is_object() {
                *usage = json!({"output_tokens": 1});
            }
            for (key, count) in counts.as_object().into_iter().flatten() {
                usage[key] = count.clone();
            }
        };
        return edit_events(sse, |data| match data["type"].as_str() {
            Some("message_start") => {
                put(&mut data["message"]["usage"]);
                true
            }
            Some("message_delta") if data["usage"].is_object() => {
                put(&mut data["usage"]);
                true
            }
            _ => false,
        })
        .0;
    }
    let mut id = None;
    let mut streamed = 0;
    let (mut out, found) = edit_events(sse, |data| {
        if id.is_none() {
            id = data["id"].as_str().map(str::to_owned);
        }
        for choice in data["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            streamed += delta["content"].as_str().map_or(0, |t| t.chars().count());
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                streamed += match &call["function"]["arguments"] {
                    Value::String(args) => args.chars().count(),
                    Value::Null => 0,
                    args => args.to_string().chars().count(),
                };
            }
        }
        let usage = &mut data["usage"];
        if !usage.is_object() {
            return false;
        }
        let completion = usage["completion_tokens"].as_u64().unwrap_or(0);
        usage["prompt_tokens"] = json!(outcome.total);
        usage["total_tokens"] = json!(outcome.total + completion);
        if !usage["prompt_tokens_details"].is_object() {
            usage["prompt_tokens_details"] = json!({});
        }
        usage["prompt_tokens_details"]["cached_tokens"] = json!(outcome.read);
        true
    });
    if !found && include_usage {
        let completion = streamed.div_ceil(4) as u64;
        let chunk = json!({
            "id": id.unwrap_or_else(|| format!("chatcmpl-FakeLlm{:013}", serial())),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": MODEL,
            "choices": [],
            "usage": {
                "prompt_tokens": outcome.total,
                "completion_tokens": completion,
                "total_tokens": outcome.total + completion,
                "prompt_tokens_details": {"cached_tokens": outcome.read},
            }
        });
        let at = out.find("data: [DONE]").unwrap_or(out.len());
        out.insert_str(at, &format!("data: {chunk}\n\n"));
    }
    out
}

/// Puts `tokens` into one event's data where its provider reports usage;
/// returns whether it did.
fn set_usage(data: &mut Value, tokens: Tokens) -> bool {
    let anthropic = json!({
        "input_tokens": tokens.input,
        "cache_creation_input_tokens": tokens.cache_write,
        "cache_read_input_tokens": tokens.cache_read,
    });
    match data["type"].as_str() {
        Some("message_start") => {
            // Cumulative counts never fall: at most the final output.
            let mut usage = anthropic;
            usage["output_tokens"] = json!(tokens.output.min(1));
            data["message"]["usage"] = usage;
            true
        }
        Some("message_delta") => {
            let mut usage = anthropic;
            usage["output_tokens"] = json!(tokens.output);
            data["usage"] = usage;
            true
        }
        _ if data["usage"].is_object() => {
            assert_eq!(
                tokens.cache_write, 0,
                "fake: OpenAI reports no cache writes"
            );
            let prompt = tokens.input + tokens.cache_read;
            data["usage"] = json!({
                "prompt_tokens": prompt,
                "completion_tokens": tokens.output,
                "total_tokens": prompt + tokens.output,
                "prompt_tokens_details": {"cached_tokens": tokens.cache_read, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}
            });
            true
        }
        _ => false,
    }
}

/// What a stream reported, read as a client of either API reads it:
/// Anthropic's `message_start` counts, updated by `message_delta`'s;
/// OpenAI's usage chunk, its cached tokens split off `prompt_tokens`.
fn usage_of(sse: &str) -> Option<Tokens> {
    let mut found = None;
    for event in split_events(sse) {
        for line in event.lines() {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let Ok(data) = serde_json::from_str::<Value>(data) else {
                continue;
            };
            let count = |v: &Value, key: &str| v[key].as_u64();
            match data["type"].as_str() {
                Some("message_start" | "message_delta") => {
                    let usage = if data["type"] == "message_start" {
                        &data["message"]["usage"]
                    } else {
                        &data["usage"]
                    };
                    let tokens: &mut Tokens = found.get_or_insert_with(Tokens::default);
                    let fields: [(&str, &mut u64); 4] = [
                        ("input_tokens", &mut tokens.input),
                        ("output_tokens", &mut tokens.output),
                        ("cache_read_input_tokens", &mut tokens.cache_read),
                        ("cache_creation_input_tokens", &mut tokens.cache_write),
                    ];
                    for (key, field) in fields {
                        if let Some(n) = count(usage, key) {
                            *field = n;
                        }
                    }
                }
                _ if data["usage"].is_object() => {
                    let usage = &data["usage"];
                    let prompt = count(usage, "prompt_tokens").unwrap_or(0);
                    let cached = usage["prompt_tokens_details"]["cached_tokens"]
                        .as_u64()
                        .unwrap_or(0);
                    found = Some(Tokens {
                        input: prompt - cached,
                        output: count(usage, "completion_tokens").unwrap_or(0),
                        cache_read: cached,
                        cache_write: 0,
                    });
                }
                _ => {}
            }
        }
    }
    found
}

/// A number that differs on every call, for message and completion ids.
fn serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `text` cut into about `count` pieces at character boundaries; none when
/// `text` is empty.
fn pieces(text: &str, count: usize) -> Vec<&str> {
    let size = text.chars().count().div_ceil(count).max(1);
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest.char_indices().nth(size).map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}

/// A rough token count for generated text.
fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4).max(1)
}

/// Builds an Anthropic Messages stream block by block.
struct AnthropicStream {
    body: String,
    blocks: usize,
    output_tokens: usize,
}

impl AnthropicStream {
    fn new() -> AnthropicStream {
        let mut stream = AnthropicStream {
            body: String::new(),
            blocks: 0,
            output_tokens: 0,
        };
        stream.event(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": format!("msg_01FakeLlm{:013}", serial()),
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {
                        "input_tokens": INPUT_TOKENS,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1
                    }
                }
            }),
        );
        stream
    }

    fn event(&mut self, name: &str, data: &Value) {
        self.body
            .push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }

    /// Opens a block; the first is followed by a ping, as the API does.
    fn open(&mut self, block: Value) -> usize {
        let index = self.blocks;
        self.blocks += 1;
        self.event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        );
        if index == 0 {
            self.event("ping", &json!({"type": "ping"}));
        }
        index
    }

    fn delta(&mut self, index: usize, delta: Value) {
        self.event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
    }

    fn close(&mut self, index: usize) {
        self.event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }

    fn text(&mut self, text: &str) {
        let index = self.open(json!({"type": "text", "text": ""}));
        for piece in pieces(text, 3) {
            self.delta(index, json!({"type": "text_delta", "text": piece}));
        }
        self.output_tokens += tokens(text);
        self.close(index);
    }

    /// A `thinking` block as the API streams one: the thought in
    /// `thinking_delta`s, then its seal in one `signature_delta`.
    fn thinking(&mut self, thought: &str, signature: &str) {
        let index = self.open(json!({"type": "thinking", "thinking": "", "signature": ""}));
        for piece in pieces(thought, 3) {
            self.delta(index, json!({"type": "thinking_delta", "thinking": piece}));
        }
        self.delta(
            index,
            json!({"type": "signature_delta", "signature": signature}),
        );
        self.output_tokens += tokens(thought);
        self.close(index);
    }

    fn tool_use(&mut self, id: &str, name: &str, input: &Value) {
        let index = self.open(json!({"type": "tool_use", "id": id, "name": name, "input": {}}));
        let json = input.to_string();
        for piece in std::iter::once("").chain(pieces(&json, 3)) {
            self.delta(
                index,
                json!({"type": "input_json_delta", "partial_json": piece}),
            );
        }
        self.output_tokens += tokens(&json);
        self.close(index);
    }

    fn finish(mut self, stop_reason: &str) -> Reply {
        let usage = json!({"output_tokens": self.output_tokens});
        self.event(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": usage
            }),
        );
        self.event("message_stop", &json!({"type": "message_stop"}));
        Reply::Sse(self.body)
    }
}

/// Builds an OpenAI chat completions stream chunk by chunk.
struct OpenAiStream {
    id: String,
    body: String,
    completion_tokens: usize,
}

impl OpenAiStream {
    fn new() -> OpenAiStream {
        OpenAiStream {
            id: format!("chatcmpl-FakeLlm{:013}", serial()),
            body: String::new(),
            completion_tokens: 0,
        }
    }

    fn data(&mut self, data: &Value) {
        self.body.push_str(&format!("data: {data}\n\n"));
    }

    fn chunk(&mut self, delta: Value, finish_reason: Option<&str>) {
        let chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": MODEL,
            "system_fingerprint": "fp_fake",
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason
            }],
            "usage": null
        });
        self.data(&chunk);
    }

    fn finish(mut self, finish_reason: &str) -> Reply {
        self.chunk(json!({}), Some(finish_reason));
        let chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": MODEL,
            "system_fingerprint": "fp_fake",
            "choices": [],
            "usage": {
                "prompt_tokens": INPUT_TOKENS,
                "completion_tokens": self.completion_tokens,
                "total_tokens": INPUT_TOKENS + self.completion_tokens
            }
        });
        self.data(&chunk);
        self.body.push_str("data: [DONE]\n\n");
        Reply::Sse(self.body)
    }
}

/// Anthropic: a text answer, streamed as several `text_delta` events (the
/// text cut into about three pieces), with a ping; stop reason `end_turn`.
pub fn anthropic_text(text: &str) -> Reply {
    let mut stream = AnthropicStream::new();
    stream.text(text);
    stream.finish("end_turn")
}

/// Anthropic: a text answer streamed as exactly `pieces`, one event each,
/// `gap` apart: for watching text arrive.
pub fn anthropic_text_paced(pieces: &[&str], gap: Duration) -> Reply {
    let mut stream = AnthropicStream::new();
    let index = stream.open(json!({"type": "text", "text": ""}));
    for piece in pieces {
        stream.delta(index, json!({"type": "text_delta", "text": piece}));
    }
    stream.close(index);
    match stream.finish("end_turn") {
        Reply::Sse(sse) => Reply::Paced { sse, gap },
        other => other,
    }
}

/// Anthropic: optional leading text, then one `tool_use` block whose input is
/// streamed as `input_json_delta` fragments, the first of them `""` as the
/// real API sends; stop reason `tool_use`.
pub fn anthropic_tool_use(text: Option<&str>, id: &str, name: &str, input: &Value) -> Reply {
    let mut stream = AnthropicStream::new();
    if let Some(text) = text {
        stream.text(text);
    }
    stream.tool_use(id, name, input);
    stream.finish("tool_use")
}

/// Anthropic with extended thinking: a `thinking` block sealed with
/// `signature`, then a `tool_use` block; stop reason `tool_use`. The next
/// request must send the thinking back, seal and all (see
/// [`bad_thinking`]).
pub fn anthropic_thinking_tool_use(
    thought: &str,
    signature: &str,
    id: &str,
    name: &str,
    input: &Value,
) -> Reply {
    let mut stream = AnthropicStream::new();
    stream.thinking(thought, signature);
    stream.tool_use(id, name, input);
    stream.finish("tool_use")
}

/// Anthropic with extended thinking: a `thinking` block, then the text.
pub fn anthropic_thinking_text(thought: &str, signature: &str, text: &str) -> Reply {
    let mut stream = AnthropicStream::new();
    stream.thinking(thought, signature);
    stream.text(text);
    stream.finish("end_turn")
}

/// An Anthropic answer asking for several tools in one step, in order:
/// `(id, name, input)` each.
pub fn anthropic_tool_uses(calls: &[(&str, &str, Value)]) -> Reply {
    let mut stream = AnthropicStream::new();
    for (id, name, input) in calls {
        stream.tool_use(id, name, input);
    }
    stream.finish("tool_use")
}

/// OpenAI: a text answer in several content deltas, then a chunk with
/// `finish_reason` `"stop"`, then a usage chunk with empty `choices`, then
/// `[DONE]`.
pub fn openai_text(text: &str) -> Reply {
    let mut stream = OpenAiStream::new();
    stream.chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    );
    for piece in pieces(text, 3) {
        stream.chunk(json!({"content": piece}), None);
    }
    stream.completion_tokens = tokens(text);
    stream.finish("stop")
}

/// OpenAI: one tool call streamed as `tool_calls` deltas with `"index": 0`.
/// The first delta carries the id, type `function`, the name and empty
/// arguments; later ones only the index and argument fragments. Then
/// `finish_reason` `"tool_calls"`, a usage chunk and `[DONE]`.
pub fn openai_tool_call(id: &str, name: &str, args: &Value) -> Reply {
    let mut stream = OpenAiStream::new();
    stream.chunk(
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "index": 0,
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": ""}
            }]
        }),
        None,
    );
    let json = args.to_string();
    for piece in pieces(&json, 3) {
        stream.chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        );
    }
    stream.completion_tokens = tokens(&json);
    stream.finish("tool_calls")
}

/// Ollama's quirks: the whole tool call in one chunk, without `index`, with
/// `arguments` as a JSON object rather than a string, and `finish_reason`
/// `"stop"` in that same chunk; then `[DONE]`.
pub fn ollama_tool_call(id: &str, name: &str, args: &Value) -> Reply {
    let chunk = json!({
        "id": format!("chatcmpl-{}", serial()),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "system_fingerprint": "fp_ollama",
        "choices": [{
            "index": 0,
            "delta": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": args}
                }]
            },
            "finish_reason": "stop"
        }]
    });
    Reply::Sse(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
}

/// The provider's 401 for a request without the required key, shaped as
/// the provider the path belongs to answers it.
fn unauthorized(request: &Recorded, state: &State) -> Option<Reply> {
    let key = state.key.as_deref()?;
    let bearer = format!("Bearer {key}");
    let sent = request.header("x-api-key") == Some(key)
        || request.header("authorization") == Some(bearer.as_str());
    if sent {
        return None;
    }
    Some(
        if request.path.starts_with("/v1/messages") || request.path.starts_with("/v1/models/") {
            anthropic_error(401, "authentication_error", "invalid x-api-key", None)
        } else {
            Reply::Error {
                status: 401,
                headers: Vec::new(),
                body: json!({"error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error", "param": null, "code": "invalid_api_key",
                }}),
            }
        },
    )
}

/// Anthropic's `GET /v1/models/{id}` (the model, or its 404) and the
/// OpenAI-compatible `GET /models` list.
fn catalogue(request: &Recorded, state: &State) -> Option<Reply> {
    if request.method != "GET" {
        return None;
    }
    let known: Vec<&str> = if state.models.is_empty() {
        vec![MODEL]
    } else {
        state.models.iter().map(String::as_str).collect()
    };
    let path = request.path.split('?').next().unwrap_or_default();
    if let Some(id) = path.strip_prefix("/v1/models/") {
        return Some(if known.contains(&id) {
            Reply::Json(json!({
                "type": "model", "id": id, "display_name": id,
                "created_at": "2025-02-19T00:00:00Z",
            }))
        } else {
            anthropic_error(404, "not_found_error", &format!("model: {id}"), None)
        });
    }
    matches!(path, "/v1/models" | "/models").then(|| {
        let data: Vec<Value> = known
            .iter()
            .map(
                |id| json!({ "id": id, "object": "model", "created": CREATED, "owned_by": "fake" }),
            )
            .collect();
        Reply::Json(json!({ "object": "list", "data": data }))
    })
}

/// An Anthropic-style error: `status` with body
/// `{"type":"error","error":{"type": kind,"message": message}}`, and a
/// `retry-after` header when `retry_after_secs` is given (as with 429).
pub fn anthropic_error(
    status: u16,
    kind: &str,
    message: &str,
    retry_after_secs: Option<u64>,
) -> Reply {
    Reply::Error {
        status,
        headers: retry_after_secs
            .map(|secs| ("retry-after".to_owned(), secs.to_string()))
            .into_iter()
            .collect(),
        body: json!({"type": "error", "error": {"type": kind, "message": message}}),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// Posts `body` to the fake and returns the status and every `data:`
    /// payload of the answer (the whole body when it is not a stream).
    fn post(fake: &FakeLlm, path: &str, body: &Value) -> (u16, Vec<String>) {
        let mut stream = TcpStream::connect(fake.addr).expect("connect to the fake");
        let body = body.to_string();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: fake\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream
            .write_all(format!("{head}{body}").as_bytes())
            .expect("send the request");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read the answer");
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let data: Vec<String> = answer
            .lines()
            .filter_map(|line| line.trim_end().strip_prefix("data: "))
            .map(str::to_owned)
            .collect();
        if data.is_empty() {
            let json = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
            return (status, vec![json.to_owned()]);
        }
        (status, data)
    }

    fn events(data: &[String]) -> Vec<Value> {
        data.iter()
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }

    /// An Anthropic body: a long system prompt with a breakpoint, then
    /// `turns` user messages, the last with a breakpoint.
    fn anthropic_body(turns: usize, breakpoints: usize) -> Value {
        let mut system = vec![json!({"type": "text", "text": "s".repeat(6000),
            "cache_control": {"type": "ephemeral"}})];
        for _ in 1..breakpoints.max(1) {
            system.push(json!({"type": "text", "text": "more",
                "cache_control": {"type": "ephemeral"}}));
        }
        let mut messages: Vec<Value> = (0..turns)
            .map(|i| json!({"role": "user", "content": [{"type": "text", "text": format!("turn {i}")}]}))
            .collect();
        if let Some(last) = messages.last_mut() {
            last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"model": "m", "max_tokens": 64, "stream": true, "system": system, "messages": messages})
    }

    #[test]
    fn an_anthropic_stream_carries_the_caches_counts() {
        let fake = FakeLlm::start();
        fake.keep_prompt_cache();
        for _ in 0..3 {
            fake.push(anthropic_text("hello there"));
        }
        for turns in [1, 3] {
            let (status, data) = post(&fake, "/v1/messages", &anthropic_body(turns, 1));
            assert_eq!(status, 200);
            let events = events(&data);
            let outcome = fake.cache_outcomes().last().cloned().expect("an outcome");
            let start = &events[0]["message"]["usage"];
            let delta = &events
                .iter()
                .find(|e| e["type"] == "message_delta")
                .expect("a message_delta")["usage"];
            for usage in [start, delta] {
                assert_eq!(usage["input_tokens"], outcome.uncached);
                assert_eq!(usage["cache_creation_input_tokens"], outcome.written);
                assert_eq!(usage["cache_read_input_tokens"], outcome.read);
            }
            assert_eq!(start["output_tokens"], 1);
            assert!(delta["output_tokens"].as_u64() > Some(1));
        }
        let outcomes = fake.cache_outcomes();
        assert_eq!(outcomes.len(), 2);
        assert_eq!(outcomes[0].read, 0);
        assert_eq!(outcomes[0].written, outcomes[0].total);
        // The system prompt (6,025 bytes) is read back the second time.
        assert_eq!(outcomes[1].read, 1507);
        assert_eq!(outcomes[1].uncached, 0);
        let reported = fake.reported();
        assert_eq!(reported[1].cache_read, 1507);
        assert_eq!(reported[1].input, 0);
        let share = fake.cache_hit_share();
        assert!((share - 1507.0 / outcomes[1].total as f64).abs() < 1e-9);

        // A fifth breakpoint is refused before the script is touched.
        let (status, data) = post(&fake, "/v1/messages", &anthropic_body(1, 4));
        assert_eq!(status, 400);
        let error: Value = serde_json::from_str(&data[0]).expect("an error body");
        assert_eq!(error["type"], "error");
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert_eq!(
            error["error"]["message"],
            "A maximum of 4 blocks with cache_control may be provided. Found 5."
        );
        assert_eq!(fake.cache_outcomes().len(), 2);
        assert_eq!(post(&fake, "/v1/messages", &anthropic_body(1, 1)).0, 200);
    }

    #[test]
    fn an_error_reply_writes_nothing_and_the_clock_expires_entries() {
        let fake = FakeLlm::start();
        let clock = fake.keep_prompt_cache();
        fake.push(anthropic_error(
            429,
            "rate_limit_error",
            "slow down",
            Some(1),
        ));
        for _ in 0..3 {
            fake.push(anthropic_text("ok"));
        }
        let body = anthropic_body(1, 1);
        assert_eq!(post(&fake, "/v1/messages", &body).0, 429);
        post(&fake, "/v1/messages", &body);
        clock.advance(Duration::from_secs(4 * 60));
        post(&fake, "/v1/messages", &body);
        clock.advance(Duration::from_secs(5 * 60));
        post(&fake, "/v1/messages", &body);
        let reads: Vec<u64> = fake.cache_outcomes().iter().map(|o| o.read).collect();
        let total = fake.cache_outcomes()[0].total;
        assert_eq!(reads, vec![0, total, 0]);
    }

    #[test]
    fn openai_streams_get_the_caches_usage() {
        let fake = FakeLlm::start();
        fake.keep_prompt_cache();
        fake.push(openai_text("hi"));
        fake.push(openai_text("hi again"));
        fake.push(ollama_tool_call("c1", "t", &json!({"a": 1})));
        let body = |turn: &str| {
            json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "s".repeat(8000)},
                {"role": "user", "content": turn},
            ]})
        };
        let usage = |data: &[String]| {
            events(data)
                .into_iter()
                .find(|e| e["usage"].is_object())
                .map(|e| e["usage"].clone())
                .expect("a usage chunk")
        };
        for turn in ["one", "two", "three"] {
            let (status, data) = post(&fake, "/v1/chat/completions", &body(turn));
            assert_eq!(status, 200);
            let usage = usage(&data);
            let outcome = fake.cache_outcomes().last().cloned().expect("an outcome");
            assert_eq!(usage["prompt_tokens"], outcome.total);
            assert_eq!(
                usage["prompt_tokens_details"]["cached_tokens"],
                outcome.read
            );
            let completion = usage["completion_tokens"].as_u64().expect("completion");
            assert_eq!(usage["total_tokens"], outcome.total + completion);
            assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
        }
        let reads: Vec<u64> = fake.cache_outcomes().iter().map(|o| o.read).collect();
        // The system message is 8,030 bytes, then `{"content":"` of the next.
        assert_eq!(reads, vec![0, 1920, 1920]);
    }
}
