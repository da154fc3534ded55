//! The DevTools protocol over the two pipes Chromium opens with
//! `--remote-debugging-pipe`: JSON messages, each ended by a NUL byte,
//! commands written to the browser's descriptor 3, answers and events read
//! from its descriptor 4.
//!
//! Pipes, not the usual WebSocket on a port: a port on 127.0.0.1 is open to
//! every program on the machine, so any program hearth runs could drive the
//! owner's logged-in browser through it. A pipe reaches only the process
//! that holds its other end. It also needs no WebSocket stack and no
//! generated protocol types: the browser plugin uses some twenty methods,
//! written as JSON where they are used.
//!
//! One reader thread owns the browser's output. It hands each answer to the
//! call waiting for it (by id) and passes each event to the `on_event`
//! callback, which runs on the reader thread and may send commands of its
//! own (a dialog must be answered while the call that opened it waits).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// The largest message read from the browser: a full-page screenshot of a
/// long page is the biggest thing it sends.
pub const MAX_MESSAGE: usize = 64 << 20;

/// Why a protocol call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CdpError {
    /// The browser answered with an error object.
    #[error("{method}: {message}")]
    Protocol {
        /// The method called.
        method: String,
        /// The browser's message.
        message: String,
    },
    /// No answer came within the call's time.
    #[error("{method}: no answer from the browser in {seconds} s")]
    Timeout {
        /// The method called.
        method: String,
        /// How long the call waited.
        seconds: u64,
    },
    /// The browser's pipes closed: it exited or crashed.
    #[error("the browser exited")]
    Closed,
}

/// An event the browser sent: its method, its params, and the session
/// (tab) it belongs to, if any.
#[derive(Debug, Clone)]
pub struct Event {
    /// For example `Page.javascriptDialogOpening`.
    pub method: String,
    /// The event's parameters.
    pub params: Value,
    /// The session it came on; `None` for the browser's own.
    pub session: Option<String>,
}

/// A connection to one browser process.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

struct Shared {
    writer: Mutex<File>,
    pending: Mutex<HashMap<u64, Sender<Result<Value, CdpError>>>>,
    next_id: AtomicU64,
    closed: AtomicBool,
}

impl Connection {
    /// Starts the reader thread on `from_browser`; commands go to
    /// `to_browser`. `on_event` sees every event, on the reader thread.
    pub fn start(
        to_browser: File,
        from_browser: File,
        on_event: impl Fn(&Connection, Event) + Send + 'static,
    ) -> std::io::Result<Connection> {
        let connection = Connection {
            shared: Arc::new(Shared {
                writer: Mutex::new(to_browser),
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                closed: AtomicBool::new(false),
            }),
        };
        let reader = connection.clone();
        thread::Builder::new()
            .name("hearth-browser-cdp".into())
            .spawn(move || reader.read_all(BufReader::new(from_browser), on_event))?;
        Ok(connection)
    }

    /// Calls `method` with `params` on `session` (a tab's, or the
    /// browser's own with `None`) and waits at most `timeout` for the
    /// answer's `result`.
    pub fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        let (tx, rx) = mpsc::channel();
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        self.pending().insert(id, tx);
        let sent = self.send(id, session, method, params);
        if sent.is_err() {
            self.pending().remove(&id);
            return Err(CdpError::Closed);
        }
        match rx.recv_timeout(timeout) {
            Ok(answer) => answer.map_err(|e| match e {
                CdpError::Protocol { message, .. } => CdpError::Protocol {
                    method: method.to_owned(),
                    message,
                },
                other => other,
            }),
            Err(RecvTimeoutError::Timeout) => {
                self.pending().remove(&id);
                Err(CdpError::Timeout {
                    method: method.to_owned(),
                    seconds: timeout.as_secs().max(1),
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(CdpError::Closed),
        }
    }

    /// Sends `method` without waiting for its answer (from the event
    /// callback, which must not wait on the thread that reads answers).
    pub fn notify(&self, session: Option<&str>, method: &str, params: Value) {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        // Nobody waits: a failure shows as the browser having closed.
        let _ = self.send(id, session, method, params);
    }

    /// Whether the browser's pipes have closed.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    fn send(
        &self,
        id: u64,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> std::io::Result<()> {
        if self.is_closed() {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.to_owned());
        }
        let mut bytes = serde_json::to_vec(&message)?;
        bytes.push(0);
        let mut writer = self.shared.writer.lock().unwrap_or_else(|p| p.into_inner());
        writer.write_all(&bytes)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Sender<Result<Value, CdpError>>>> {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn read_all(&self, mut from: BufReader<File>, on_event: impl Fn(&Connection, Event)) {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match from
                .by_ref()
                .take(MAX_MESSAGE as u64 + 1)
                .read_until(0, &mut buf)
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if buf.last() != Some(&0) {
                // Longer than any message the browser should send, or cut
                // off by its exit: either way the stream is lost.
                tracing::warn!(
                    bytes = buf.len(),
                    "browser: a message without its end; closing"
                );
                break;
            }
            buf.pop();
            let Ok(message) = serde_json::from_slice::<Value>(&buf) else {
                tracing::warn!("browser: a message that is not JSON; skipped");
                continue;
            };
            self.dispatch(message, &on_event);
        }
        self.shared.closed.store(true, Ordering::Release);
        // Every waiting call learns the browser is gone.
        for (_, waiting) in self.pending().drain() {
            let _ = waiting.send(Err(CdpError::Closed));
        }
    }

    fn dispatch(&self, mut message: Value, on_event: &impl Fn(&Connection, Event)) {
        let session = message
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let Some(waiting) = self.pending().remove(&id) else {
                return;
            };
            let answer = match message.get_mut("error") {
                Some(error) => Err(CdpError::Protocol {
                    method: String::new(),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error")
                        .to_owned(),
                }),
                None => Ok(message
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            let _ = waiting.send(answer);
        } else if let Some(method) = message.get("method").and_then(Value::as_str) {
            let event = Event {
                method: method.to_owned(),
                params: message
                    .get_mut("params")
                    .map(Value::take)
                    .unwrap_or(Value::Null),
                session,
            };
            on_event(self, event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};

    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors are fresh and owned by nothing else.
        unsafe {
            (
                File::from(OwnedFd::from_raw_fd(fds[0])),
                File::from(OwnedFd::from_raw_fd(fds[1])),
            )
        }
    }

    /// A fake browser on the other ends: answers each command with
    /// `answer(command)`, and sends `event` first.
    fn fake(answer: fn(&Value) -> Option<Value>) -> (Connection, Arc<Mutex<Vec<Event>>>) {
        let (commands_read, commands_write) = pipe();
        let (answers_read, mut answers_write) = pipe();
        thread::spawn(move || {
            let mut commands = BufReader::new(commands_read);
            answers_write
                .write_all(b"{\"method\":\"Target.targetCreated\",\"params\":{\"x\":1}}\0")
                .unwrap();
            let mut buf = Vec::new();
            while commands.read_until(0, &mut buf).unwrap_or(0) > 0 {
                buf.pop();
                let command: Value = serde_json::from_slice(&buf).unwrap();
                buf.clear();
                if let Some(mut reply) = answer(&command) {
                    reply["id"] = command["id"].clone();
                    let mut bytes = serde_json::to_vec(&reply).unwrap();
                    bytes.push(0);
                    answers_write.write_all(&bytes).unwrap();
                }
            }
        });
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        let connection = Connection::start(commands_write, answers_read, move |_, e| {
            seen.lock().unwrap().push(e)
        })
        .unwrap();
        (connection, events)
    }

    #[test]
    fn answers_reach_their_call_and_events_the_callback() {
        let (connection, events) = fake(|c| {
            Some(match c["method"].as_str() {
                Some("Echo") => {
                    json!({ "result": { "got": c["params"], "session": c["sessionId"] } })
                }
                _ => json!({ "error": { "code": -32601, "message": "'Nope' wasn't found" } }),
            })
        });
        let got = connection
            .call(Some("S1"), "Echo", json!({"a": 1}), Duration::from_secs(5))
            .unwrap();
        assert_eq!(got, json!({ "got": {"a": 1}, "session": "S1" }));
        let error = connection
            .call(None, "Nope", json!({}), Duration::from_secs(5))
            .unwrap_err();
        assert_eq!(error.to_string(), "Nope: 'Nope' wasn't found");
        assert_eq!(events.lock().unwrap()[0].method, "Target.targetCreated");
    }

    #[test]
    fn a_call_without_an_answer_times_out_and_a_closed_browser_fails_every_call() {
        let (connection, _) = fake(|c| (c["method"] != "Silent").then(|| json!({ "result": {} })));
        let error = connection
            .call(None, "Silent", json!({}), Duration::from_millis(100))
            .unwrap_err();
        assert!(matches!(error, CdpError::Timeout { .. }), "{error}");

        let (commands_read, commands_write) = pipe();
        let (answers_read, answers_write) = pipe();
        let connection = Connection::start(commands_write, answers_read, |_, _| {}).unwrap();
        drop(answers_write);
        let mut sink = Vec::new();
        thread::spawn(move || BufReader::new(commands_read).read_to_end(&mut sink));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !connection.is_closed() && std::time::Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        let error = connection
            .call(None, "Any", json!({}), Duration::from_secs(5))
            .unwrap_err();
        assert_eq!(error, CdpError::Closed);
    }
}
