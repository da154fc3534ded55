//! A fake OpenAI-compatible embeddings API for the recall tests: a real
//! HTTP/1.1 server on 127.0.0.1 answering `POST /v1/embeddings` in
//! OpenAI's wire format, byte for byte as OpenAI writes it (`object`,
//! `data[].object`, `index`, `embedding`, `model`, `usage`), its errors as
//! `{"error": {"message", "type", "param", "code"}}` with the HTTP status,
//! and 429 with `retry-after` when told to rate limit.
//!
//! Meaning is made findable deterministically: each word is looked up in
//! a small built-in table of concepts ([`CONCEPTS`]: `sister`, `Anna`
//! and `brother` share the family dimension; `birthday`, `turns` and
//! `born` the birthday one), and a word outside it adds a little to one
//! of the other dimensions by its hash. "what did I say about my sister's
//! birthday" is then close to "Anna turns 40 on 3 May" although they
//! share no word. Tests switch the server off ([`FakeEmbeddings::set_down`]:
//! every connection is closed unanswered), script failures and broken
//! answers ([`FakeEmbeddings::fail_next`], [`FakeEmbeddings::break_next`]),
//! and read every request back.

use std::collections::VecDeque;
use std::io::{self, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http_server::{self, read_request, write_json};

/// The length of every vector.
pub const DIMS: usize = 32;

/// The concept table: words (lower case, without a trailing `'s`) that
/// share a dimension. The first dimensions are these; the rest take the
/// words outside the table, by hash.
pub const CONCEPTS: &[&[&str]] = &[
    &["sister", "brother", "anna", "sibling", "mother", "family"],
    &["birthday", "born", "turns", "anniversary", "age", "party"],
    &["garden", "tomatoes", "beans", "plants", "water", "shed"],
    &["train", "trip", "flight", "travel", "late"],
    &["tea", "lemon", "dinner", "recipe", "cook"],
];

/// How an answer is broken, for [`FakeEmbeddings::break_next`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// Vectors of 7 numbers instead of [`DIMS`].
    WrongDims,
    /// A `NaN` among the numbers, as Python's `json.dumps` writes it.
    NaN,
    /// One vector more than texts sent.
    TooMany,
}

/// One request the server answered.
#[derive(Clone, Debug)]
pub struct EmbeddingsRequest {
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
    /// The JSON body.
    pub body: Value,
    /// The status answered.
    pub status: u16,
}

impl EmbeddingsRequest {
    /// The texts asked for.
    pub fn inputs(&self) -> Vec<String> {
        match &self.body["input"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// A scripted answer.
enum Next {
    Fail {
        status: u16,
        message: String,
        kind: String,
        code: Option<String>,
        retry_after: Option<String>,
    },
    Broken(Broken),
}

struct State {
    down: bool,
    key: Option<String>,
    next: VecDeque<Next>,
    requests: Vec<EmbeddingsRequest>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stopping: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// A fake embeddings API on 127.0.0.1. Dropping it stops it.
pub struct FakeEmbeddings {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl FakeEmbeddings {
    /// Starts a server that answers every request.
    pub fn start() -> FakeEmbeddings {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake embeddings: bind");
        let addr = listener.local_addr().expect("fake embeddings: address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                down: false,
                key: None,
                next: VecDeque::new(),
                requests: Vec::new(),
            }),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::Builder::new()
            .name("fake-embeddings-accept".into())
            .spawn(move || http_server::accept_each(&listener, &accepting, Shared::stopping, serve))
            .expect("fake embeddings: spawn");
        FakeEmbeddings {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// Requires `Authorization: Bearer <key>` from now on (401 without).
    pub fn with_key(self, key: &str) -> FakeEmbeddings {
        self.shared.lock().key = Some(key.to_owned());
        self
    }

    /// The API base: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// While down, every connection is closed without an answer.
    pub fn set_down(&self, down: bool) {
        self.shared.lock().down = down;
    }

    /// The next request answers `status` with OpenAI's error body, and
    /// `retry-after` when given.
    pub fn fail_next(&self, status: u16, message: &str, kind: &str, retry_after: Option<&str>) {
        let code = (status == 429).then(|| "rate_limit_exceeded".to_owned());
        self.shared.lock().next.push_back(Next::Fail {
            status,
            message: message.to_owned(),
            kind: kind.to_owned(),
            code,
            retry_after: retry_after.map(str::to_owned),
        });
    }

    /// The next request's answer is broken as `how` says.
    pub fn break_next(&self, how: Broken) {
        self.shared.lock().next.push_back(Next::Broken(how));
    }

    /// Every request answered so far.
    pub fn requests(&self) -> Vec<EmbeddingsRequest> {
        self.shared.lock().requests.clone()
    }

    /// Blocks until `n` requests have been answered or `timeout` passes.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let state = self.shared.lock();
        http_server::wait_until(&self.shared.changed, state, timeout, |s| {
            s.requests.len() >= n
        })
        .1
    }
}

impl Drop for FakeEmbeddings {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let woken = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let (Ok(_), Some(acceptor)) = (woken, self.acceptor.take()) {
            // The accept loop never panics; a failed join has nothing to report.
            let _ = acceptor.join();
        }
    }
}

/// The vector the fake gives `text`: its words' concepts, and a little of
/// a hashed dimension for every other word; never all zeros.
pub fn vector_of(text: &str) -> Vec<f32> {
    let mut v = vec![0.0_f32; DIMS];
    let others = DIMS - CONCEPTS.len();
    for word in text
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        let word = word.trim_end_matches("'s").trim_matches('\'');
        match CONCEPTS.iter().position(|c| c.contains(&word)) {
            Some(dim) => v[dim] += 1.0,
            None => {
                let hash = word.bytes().fold(2166136261_u32, |h, b| {
                    (h ^ u32::from(b)).wrapping_mul(16777619)
                });
                v[CONCEPTS.len() + hash as usize % others] += 0.15;
            }
        }
    }
    if v.iter().all(|x| *x == 0.0) {
        v[DIMS - 1] = 0.01;
    }
    v
}

fn error_body(message: &str, kind: &str, code: Option<&str>) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(http) = read_request(&mut reader)? {
        if shared.lock().down {
            // Closed unanswered, as a server that went away.
            return Ok(());
        }
        let body: Value = serde_json::from_slice(&http.body).unwrap_or(Value::Null);
        let mut record = EmbeddingsRequest {
            authorization: http.header("authorization").map(str::to_owned),
            body: body.clone(),
            status: 200,
        };
        let (status, headers, text) = answer(shared, &http, &body, &record);
        record.status = status;
        {
            let mut state = shared.lock();
            state.requests.push(record);
        }
        shared.changed.notify_all();
        write_json(&mut out, status, &headers, &text)?;
        if !http.keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

fn answer(
    shared: &Shared,
    http: &http_server::HttpRequest,
    body: &Value,
    record: &EmbeddingsRequest,
) -> (u16, Vec<(String, String)>, String) {
    let no_headers = Vec::new();
    if http.method != "POST" || !http.target.ends_with("/v1/embeddings") {
        let message = format!("Invalid URL ({} {})", http.method, http.target);
        return (
            404,
            no_headers,
            error_body(&message, "invalid_request_error", None),
        );
    }
    let key = shared.lock().key.clone();
    if let Some(key) = key
        && record.authorization.as_deref() != Some(&format!("Bearer {key}"))
    {
        return (
            401,
            no_headers,
            error_body(
                "Incorrect API key provided.",
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
        );
    }
    let Some(model) = body["model"].as_str() else {
        return (
            400,
            no_headers,
            error_body(
                "you must provide a model parameter",
                "invalid_request_error",
                None,
            ),
        );
    };
    let inputs = record.inputs();
    if inputs.is_empty() || inputs.iter().any(String::is_empty) {
        return (
            400,
            no_headers,
            error_body("'$.input' is invalid.", "invalid_request_error", None),
        );
    }
    let next = shared.lock().next.pop_front();
    let mut broken = None;
    match next {
        Some(Next::Fail {
            status,
            message,
            kind,
            code,
            retry_after,
        }) => {
            let headers = retry_after
                .map(|r| vec![("retry-after".to_owned(), r)])
                .unwrap_or_default();
            return (
                status,
                headers,
                error_body(&message, &kind, code.as_deref()),
            );
        }
        Some(Next::Broken(how)) => broken = Some(how),
        None => {}
    }
    let mut vectors: Vec<Vec<f32>> = inputs.iter().map(|t| vector_of(t)).collect();
    match broken {
        Some(Broken::WrongDims) => vectors.iter_mut().for_each(|v| v.truncate(7)),
        Some(Broken::TooMany) => vectors.push(vector_of("one more")),
        _ => {}
    }
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(index, embedding)| json!({"object": "embedding", "index": index, "embedding": embedding}))
        .collect();
    let mut text = json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })
    .to_string();
    if broken == Some(Broken::NaN) {
        // JSON has no NaN; servers that leak one write it bare.
        text = text.replacen("\"embedding\":[", "\"embedding\":[NaN,", 1);
    }
    (200, no_headers, text)
}
