//! JSON-RPC 2.0 as MCP uses it: building our messages, sorting the
//! server's, and the table of requests waiting for their answers.
//!
//! One connection carries many calls at once (a hanging call must not hold
//! up the others), so every request gets a numeric id and a [`Slot`] its
//! caller waits on; the transport's reader fills the slot when the answer
//! with that id arrives, or fails every slot at once when the connection
//! dies. Waiting is bounded by the call's deadline and wakes for the
//! owner's `/stop` within [`STOP_POLL`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hearth_sdk::calls::Stop;
use serde_json::{Value, json};

/// How often a waiting call looks at its stop flag. The host gives a
/// stopped call a second to end; a tenth of that is prompt enough and
/// costs nothing while no call waits.
pub const STOP_POLL: Duration = Duration::from_millis(100);

/// JSON-RPC's "method not found", our answer to server requests we do not
/// serve (`roots/list`, `sampling/createMessage`, `elicitation/create`).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// MCP 2026-07-28: the request's protocol version is not served.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// MCP 2026-07-28: the HTTP headers and the body disagree.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the server needs a client capability we did not declare.
pub const MISSING_CAPABILITY: i64 = -32021;

/// An error a server answered.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// The server's message.
    pub message: String,
    /// Its `data`, if any.
    pub data: Option<Value>,
}

impl RpcError {
    fn from_value(value: &Value) -> RpcError {
        RpcError {
            code: value.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            data: value.get("data").cloned(),
        }
    }

    /// Whether this is one of the errors only a 2026-07-28 (modern) server
    /// sends, which tell a client not to fall back to `initialize`.
    pub fn is_modern(&self) -> bool {
        matches!(
            self.code,
            UNSUPPORTED_PROTOCOL_VERSION | HEADER_MISMATCH | MISSING_CAPABILITY
        )
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (JSON-RPC error {})", self.message, self.code)
    }
}

/// One message from a server, sorted.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of our requests.
    Response {
        /// Our id, as we sent it (a number).
        id: Option<u64>,
        /// The result, or the server's error.
        outcome: Result<Value, RpcError>,
    },
    /// A request from the server (`ping`, `roots/list`, ...).
    Request {
        /// The server's id, echoed in our answer.
        id: Value,
        /// The method.
        method: String,
    },
    /// A notification from the server.
    Notification {
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// Valid JSON, but no JSON-RPC message.
    Invalid,
}

/// Sorts one parsed message. A batch (an array, 2025-03-26 only) is the
/// caller's to split first.
pub fn classify(message: Value) -> Incoming {
    let Value::Object(mut m) = message else {
        return Incoming::Invalid;
    };
    match (m.remove("method"), m.remove("id")) {
        (Some(Value::String(method)), Some(id)) if !id.is_null() => {
            Incoming::Request { id, method }
        }
        (Some(Value::String(method)), None) => Incoming::Notification {
            method,
            params: m.remove("params").unwrap_or(Value::Null),
        },
        (None, id) => {
            let id = id.and_then(|id| match id {
                Value::Number(n) => n.as_u64(),
                // We send numbers; a server that echoes them as strings is
                // still answering us.
                Value::String(s) => s.parse().ok(),
                _ => None,
            });
            if let Some(error) = m.get("error") {
                Incoming::Response {
                    id,
                    outcome: Err(RpcError::from_value(error)),
                }
            } else if let Some(result) = m.remove("result") {
                Incoming::Response {
                    id,
                    outcome: Ok(result),
                }
            } else {
                Incoming::Invalid
            }
        }
        _ => Incoming::Invalid,
    }
}

/// A request message.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    if params.is_null() {
        json!({"jsonrpc": "2.0", "id": id, "method": method})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }
}

/// A notification message.
pub fn notification(method: &str, params: Value) -> Value {
    if params.is_null() {
        json!({"jsonrpc": "2.0", "method": method})
    } else {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }
}

/// `notifications/cancelled` for our request `id`.
pub fn cancelled(id: u64, reason: &str) -> Value {
    notification(
        "notifications/cancelled",
        json!({"requestId": id, "reason": reason}),
    )
}

/// Our answer to a request from the server: `ping` gets `{}`; everything
/// else "method not found", since we declare no client capabilities (no
/// roots, sampling or elicitation).
pub fn answer_server_request(id: Value, method: &str) -> Value {
    if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": METHOD_NOT_FOUND,
            "message": format!("hearth does not support {method}"),
        }})
    }
}

/// Why waiting for an answer ended without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    /// The deadline passed.
    TimedOut,
    /// The owner stopped the call.
    Stopped,
}

/// Where one answer lands: a JSON-RPC outcome from a connection's reader,
/// or a whole HTTP exchange from the thread that ran it.
pub struct Slot<T> {
    answer: Mutex<Option<T>>,
    ready: Condvar,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot {
            answer: Mutex::new(None),
            ready: Condvar::new(),
        }
    }
}

impl<T> Slot<T> {
    /// Fills the slot (the first answer wins) and wakes its waiter.
    pub fn fill(&self, answer: T) {
        let mut slot = lock(&self.answer);
        if slot.is_none() {
            *slot = Some(answer);
            self.ready.notify_all();
        }
    }

    /// Waits for the answer until `deadline`, or until `stop` is set.
    pub fn wait(&self, deadline: Instant, stop: Option<&Stop>) -> Result<T, Interrupted> {
        let mut slot = lock(&self.answer);
        loop {
            if let Some(answer) = slot.take() {
                return Ok(answer);
            }
            if stop.is_some_and(Stop::is_set) {
                return Err(Interrupted::Stopped);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Interrupted::TimedOut);
            }
            let slice = if stop.is_some() {
                (deadline - now).min(STOP_POLL)
            } else {
                deadline - now
            };
            slot = self
                .ready
                .wait_timeout(slot, slice)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// What a connection's reader delivers: the server's answer, or why the
/// connection ended first.
pub type Answer = Result<Result<Value, RpcError>, String>;

/// The requests of one connection waiting for answers.
#[derive(Default)]
pub struct Pending {
    next: AtomicU64,
    state: Mutex<PendingState>,
}

#[derive(Default)]
struct PendingState {
    slots: HashMap<u64, Arc<Slot<Answer>>>,
    /// Set once the connection is gone: new requests fail at once.
    closed: Option<String>,
}

impl Pending {
    /// A fresh id and the slot its answer will land in; fails when the
    /// connection is already closed.
    pub fn open(&self) -> Result<(u64, Arc<Slot<Answer>>), String> {
        let mut state = lock(&self.state);
        if let Some(why) = &state.closed {
            return Err(why.clone());
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = Arc::new(Slot::default());
        state.slots.insert(id, Arc::clone(&slot));
        Ok((id, slot))
    }

    /// A fresh id for a request nobody waits on (`subscriptions/listen`).
    pub fn id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Delivers an answer; returns whether someone was waiting for it.
    pub fn complete(&self, id: u64, outcome: Result<Value, RpcError>) -> bool {
        let slot = lock(&self.state).slots.remove(&id);
        match slot {
            Some(slot) => {
                slot.fill(Ok(outcome));
                true
            }
            None => false,
        }
    }

    /// Forgets a request whose caller gave up.
    pub fn forget(&self, id: u64) {
        lock(&self.state).slots.remove(&id);
    }

    /// Fails every waiting request with `why` and refuses new ones.
    pub fn close(&self, why: &str) {
        let slots: Vec<Arc<Slot<Answer>>> = {
            let mut state = lock(&self.state);
            if state.closed.is_none() {
                state.closed = Some(why.to_owned());
            }
            state.slots.drain().map(|(_, s)| s).collect()
        };
        for slot in slots {
            slot.fill(Err(why.to_owned()));
        }
    }

    /// Why the connection closed, once it has.
    pub fn closed(&self) -> Option<String> {
        lock(&self.state).closed.clone()
    }
}

/// Locks a mutex, taking it over from a thread that panicked: every state
/// guarded here stays consistent between statements.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_sorted_whatever_their_key_order() {
        let cases = [
            (
                json!({"result": {"a": 1}, "jsonrpc": "2.0", "id": 3}),
                Incoming::Response {
                    id: Some(3),
                    outcome: Ok(json!({"a": 1})),
                },
            ),
            (
                json!({"jsonrpc": "2.0", "id": "4", "error": {"code": -32601, "message": "nope"}}),
                Incoming::Response {
                    id: Some(4),
                    outcome: Err(RpcError {
                        code: -32601,
                        message: "nope".into(),
                        data: None,
                    }),
                },
            ),
            (
                json!({"method": "roots/list", "jsonrpc": "2.0", "id": 0}),
                Incoming::Request {
                    id: json!(0),
                    method: "roots/list".into(),
                },
            ),
            (
                json!({"method": "notifications/tools/list_changed", "jsonrpc": "2.0"}),
                Incoming::Notification {
                    method: "notifications/tools/list_changed".into(),
                    params: Value::Null,
                },
            ),
            (json!({"jsonrpc": "2.0", "id": 1}), Incoming::Invalid),
            (json!([1, 2]), Incoming::Invalid),
            (json!("hello"), Incoming::Invalid),
        ];
        for (message, expected) in cases {
            assert_eq!(classify(message.clone()), expected, "for {message}");
        }
    }

    #[test]
    fn server_requests_get_ping_answered_and_the_rest_refused() {
        assert_eq!(
            answer_server_request(json!(7), "ping"),
            json!({"jsonrpc": "2.0", "id": 7, "result": {}})
        );
        let refused = answer_server_request(json!("s1"), "sampling/createMessage");
        assert_eq!(refused["id"], "s1");
        assert_eq!(refused["error"]["code"], METHOD_NOT_FOUND);
    }

    #[test]
    fn a_slot_is_answered_stopped_timed_out_or_closed() {
        let pending = Pending::default();
        let (id, slot) = pending.open().unwrap();
        assert!(pending.complete(id, Ok(json!(1))));
        let far = Instant::now() + Duration::from_secs(60);
        assert_eq!(slot.wait(far, None), Ok(Ok(Ok(json!(1)))));
        assert!(!pending.complete(id, Ok(json!(2))), "answered once");

        let (_, slot) = pending.open().unwrap();
        let soon = Instant::now() + Duration::from_millis(30);
        assert_eq!(slot.wait(soon, None), Err(Interrupted::TimedOut));

        let stop = Stop::new();
        stop.set();
        let (_, slot) = pending.open().unwrap();
        assert_eq!(slot.wait(far, Some(&stop)), Err(Interrupted::Stopped));

        let (_, slot) = pending.open().unwrap();
        pending.close("the server exited");
        assert_eq!(slot.wait(far, None), Ok(Err("the server exited".into())));
        assert_eq!(pending.open().err().as_deref(), Some("the server exited"));
    }

    #[test]
    fn a_waiter_wakes_when_another_thread_answers() {
        let pending = Arc::new(Pending::default());
        let (id, slot) = pending.open().unwrap();
        let other = Arc::clone(&pending);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            other.complete(id, Ok(json!("late")));
        });
        let started = Instant::now();
        let got = slot.wait(started + Duration::from_secs(10), Some(&Stop::new()));
        assert_eq!(got, Ok(Ok(Ok(json!("late")))));
        assert!(started.elapsed() < Duration::from_secs(2));
        t.join().unwrap();
    }
}
