//! The pool of Lua worker processes, and the deadline that ends every
//! request.
//!
//! A request checks out an idle worker (or starts one, up to `workers`),
//! writes one line, and reads lines until `done`, answering the worker's
//! host requests on the way. If `done` has not come by the deadline plus a
//! small grace, the worker is killed and the caller gets a deadline error;
//! the next request starts a fresh worker. A worker that hit its deadline or
//! memory cap is never reused: its Lua state may be in any condition.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::Value;

use super::wire::{FailureKind, FromWorker, ScriptFailure, ToWorker};

/// How long after the deadline the host waits for the worker's own hook to
/// stop the script before it kills the process.
const GRACE: Duration = Duration::from_millis(40);

/// Worker processes, started on demand.
pub struct Pool {
    program: PathBuf,
    memory_mb: u64,
    max: usize,
    state: Mutex<PoolState>,
    freed: Condvar,
}

/// Answers a worker's host request (`kv.get`, `tool`, ...).
pub type HostHandler<'a> = dyn FnMut(&str, Value) -> Result<Value, String> + 'a;

#[derive(Default)]
struct PoolState {
    idle: Vec<Worker>,
    live: usize,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Pool {
    /// A pool that runs `program __lua-worker`.
    pub fn new(program: PathBuf, memory_mb: u64, max: usize) -> Pool {
        Pool {
            program,
            memory_mb,
            max: max.max(1),
            state: Mutex::new(PoolState::default()),
            freed: Condvar::new(),
        }
    }

    /// Sends `request` and returns the worker's answer, or a failure once
    /// `deadline` has passed.
    /// `label` names the script in its log lines. A `nested` request (a
    /// script calling a tool through `hearth.tool`) may start a worker beyond
    /// the limit: its caller holds a worker while it waits, so making it
    /// queue could deadlock. Nesting depth bounds how far this goes.
    pub fn request(
        &self,
        label: &str,
        request: &ToWorker,
        deadline: Duration,
        nested: bool,
        host: &mut HostHandler<'_>,
    ) -> Result<Value, ScriptFailure> {
        let ends = Instant::now() + deadline;
        let mut worker = self.checkout(ends, nested)?;
        let outcome = worker.exchange(label, request, ends + GRACE, host);
        let reusable = match &outcome {
            Ok(_) => true,
            Err(f) => !matches!(f.kind, FailureKind::Deadline | FailureKind::Memory),
        };
        self.checkin(worker, reusable);
        outcome.map_err(|mut f| {
            if f.kind == FailureKind::Deadline {
                f.message = format!(
                    "the script ran past its deadline of {} ms and was stopped",
                    deadline.as_millis()
                );
            }
            f
        })
    }

    fn checkout(&self, until: Instant, nested: bool) -> Result<Worker, ScriptFailure> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(worker) = state.idle.pop() {
                return Ok(worker);
            }
            if state.live < self.max || nested {
                state.live += 1;
                drop(state);
                return self.spawn().inspect_err(|_| {
                    self.state.lock().unwrap_or_else(|p| p.into_inner()).live -= 1;
                });
            }
            let wait = until.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Err(failure(
                    FailureKind::Deadline,
                    "every script worker stayed busy until the deadline",
                ));
            }
            state = self
                .freed
                .wait_timeout(state, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn checkin(&self, worker: Worker, reusable: bool) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if reusable {
            state.idle.push(worker);
        } else {
            state.live -= 1;
            worker.kill();
        }
        self.freed.notify_one();
    }

    fn spawn(&self) -> Result<Worker, ScriptFailure> {
        let mut child = Command::new(&self.program)
            .arg("__lua-worker")
            .arg("--memory-mb")
            .arg(self.memory_mb.to_string())
            // Scripts must never see the daemon's environment (API keys).
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                failure(
                    FailureKind::Runtime,
                    &format!(
                        "cannot start a script worker ({}): {e}",
                        self.program.display()
                    ),
                )
            })?;
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => {
                return Err(failure(
                    FailureKind::Runtime,
                    "the script worker has no pipes",
                ));
            }
        };
        let (tx, lines) = crossbeam_channel::unbounded();
        let reader = std::thread::Builder::new()
            .name("hearth-lua-read".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        if let Err(e) = reader {
            let _ = child.kill();
            return Err(failure(
                FailureKind::Runtime,
                &format!("cannot start a reader thread: {e}"),
            ));
        }
        Ok(Worker {
            child,
            stdin,
            lines,
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for worker in state.idle.drain(..) {
            worker.kill();
        }
    }
}

impl Worker {
    /// One request, to `done` or to `until`.
    fn exchange(
        &mut self,
        label: &str,
        request: &ToWorker,
        until: Instant,
        host: &mut HostHandler<'_>,
    ) -> Result<Value, ScriptFailure> {
        self.send(request)?;
        loop {
            let wait = until.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(wait) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(failure(FailureKind::Deadline, "deadline"));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(failure(
                        FailureKind::Memory,
                        "the script worker died (most likely over its memory cap)",
                    ));
                }
            };
            match serde_json::from_str::<FromWorker>(&line) {
                Ok(FromWorker::Done { ok: Some(v), .. }) => return Ok(v),
                Ok(FromWorker::Done { err: Some(e), .. }) => return Err(e),
                Ok(FromWorker::Done { .. }) => return Ok(Value::Null),
                Ok(FromWorker::Log { level, message }) => log_line(label, &level, &message),
                Ok(FromWorker::Host { method, params }) => {
                    let reply = match host(&method, params) {
                        Ok(v) => ToWorker::Reply {
                            ok: Some(v),
                            err: None,
                        },
                        Err(e) => ToWorker::Reply {
                            ok: None,
                            err: Some(e),
                        },
                    };
                    self.send(&reply)?;
                }
                Err(e) => {
                    return Err(failure(
                        FailureKind::Runtime,
                        &format!("the script worker sent a malformed line: {e}"),
                    ));
                }
            }
        }
    }

    fn send(&mut self, message: &ToWorker) -> Result<(), ScriptFailure> {
        let mut line = serde_json::to_vec(message)
            .map_err(|e| failure(FailureKind::Runtime, &e.to_string()))?;
        line.push(b'\n');
        self.stdin
            .write_all(&line)
            .and_then(|()| self.stdin.flush())
            .map_err(|e| {
                failure(
                    FailureKind::Runtime,
                    &format!("the script worker is gone: {e}"),
                )
            })
    }

    /// Kills the process; a helper thread reaps it so the caller never waits.
    fn kill(self) {
        let mut child = self.child;
        let _ = child.kill();
        let _ = std::thread::Builder::new()
            .name("hearth-lua-reap".into())
            .spawn(move || child.wait());
    }
}

fn log_line(script: &str, level: &str, message: &str) {
    match level {
        "error" => tracing::error!(target: "script", script, "{message}"),
        "warn" => tracing::warn!(target: "script", script, "{message}"),
        "debug" => tracing::debug!(target: "script", script, "{message}"),
        _ => tracing::info!(target: "script", script, "{message}"),
    }
}

fn failure(kind: FailureKind, message: &str) -> ScriptFailure {
    ScriptFailure {
        kind,
        message: message.to_owned(),
        line: None,
    }
}
