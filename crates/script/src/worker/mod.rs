//! The Lua worker process: `hearth __lua-worker`, one sandboxed Lua state,
//! driven over stdin/stdout by the host's pool.
//!
//! Why a process: an instruction hook stops Lua code, but not a long C call
//! (`string.find` with a pathological pattern) or a runaway allocation
//! outside Lua's allocator. A process can always be killed. The host kills a
//! worker that overruns its deadline and starts a fresh one; the hook inside
//! makes the common case (a loop in Lua) end cleanly and quickly.
//!
//! Architecture invariant: nothing but protocol lines is written to stdout.
//! `print` is replaced by a function that sends log lines.

mod api;
mod require;
mod sandbox;

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Stdin, Stdout, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use mlua::{Lua, LuaSerdeExt, Value as LuaValue};
use serde_json::Value;

use super::wire::{FailureKind, FromWorker, ScriptFailure, ToWorker};
use sandbox::Sandbox;

/// Runs the worker loop until stdin closes. `memory_mb` caps the Lua heap.
pub fn main(memory_mb: u64) -> ExitCode {
    harden(memory_mb);
    let io = Io {
        input: BufReader::new(std::io::stdin()),
        output: std::io::stdout(),
    };
    let sandbox = match Sandbox::new((memory_mb as usize) << 20, io) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hearth lua worker: cannot build the sandbox: {e}");
            return ExitCode::FAILURE;
        }
    };
    loop {
        // Off the critical path: the last answer is already sent.
        sandbox.prepare();
        let Some(line) = sandbox.read_line() else {
            return ExitCode::SUCCESS;
        };
        let request: ToWorker = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("hearth lua worker: malformed request: {e}");
                return ExitCode::FAILURE;
            }
        };
        let outcome = match request {
            ToWorker::Load {
                chunk,
                source,
                deadline_ms,
            } => sandbox.load(&chunk, &source, deadline(deadline_ms)),
            ToWorker::LoadLibrary {
                chunk,
                name,
                source,
                deadline_ms,
            } => sandbox.load_library(&chunk, &name, &source, deadline(deadline_ms)),
            ToWorker::Call {
                chunk,
                source,
                args,
                ctx,
                deadline_ms,
            } => sandbox.call(&chunk, &source, &args, &ctx, deadline(deadline_ms)),
            // A reply with no request outstanding: the host is confused.
            ToWorker::Reply { .. } => return ExitCode::FAILURE,
        };
        let done = match outcome {
            Ok(ok) => FromWorker::Done {
                ok: Some(ok),
                err: None,
            },
            Err(err) => FromWorker::Done {
                ok: None,
                err: Some(err),
            },
        };
        if sandbox.send(&done).is_err() {
            return ExitCode::FAILURE;
        }
    }
}

/// The worker's pipe to the host.
pub(crate) struct Io {
    input: BufReader<Stdin>,
    output: Stdout,
}

impl Io {
    fn read_line(&mut self) -> Option<String> {
        // The next request often follows at once: look for it briefly before
        // sleeping in `read`, which saves a wake-up per call.
        if self.input.buffer().is_empty() {
            crate::pool::spin_until_readable(0, crate::pool::SPIN);
        }
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    }

    fn send(&mut self, message: &FromWorker) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.output.write_all(&line)?;
        self.output.flush()
    }
}

/// Per-process state the Lua callbacks reach through `app_data`.
pub(crate) struct WorkerState {
    io: RefCell<Io>,
    deadline: std::cell::Cell<Instant>,
}

impl WorkerState {
    /// Sends a host request and waits for its reply.
    pub(crate) fn host_call(&self, method: &str, params: Value) -> Result<Value, String> {
        let mut io = self.io.borrow_mut();
        io.send(&FromWorker::Host {
            method: method.to_owned(),
            params,
        })
        .map_err(|e| format!("lost the host: {e}"))?;
        let line = io.read_line().ok_or("lost the host")?;
        match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::Reply { ok: Some(v), .. }) => Ok(v),
            Ok(ToWorker::Reply { err: Some(e), .. }) => Err(e),
            Ok(ToWorker::Reply { .. }) => Ok(Value::Null),
            _ => Err("the host answered out of turn".into()),
        }
    }

    /// Sends a log line; a lost host is noticed at the next request.
    pub(crate) fn log(&self, level: &str, message: String) {
        let _ = self.io.borrow_mut().send(&FromWorker::Log {
            level: level.to_owned(),
            message,
        });
    }

    /// When the current request must end.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline.get()
    }
}

fn deadline(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

/// Turns a Lua error into a failure with a kind, a message and a line.
pub(crate) fn failure(lua: &Lua, chunk: &str, error: &mlua::Error) -> ScriptFailure {
    let state = lua.app_data_ref::<WorkerState>();
    let past_deadline = state.is_some_and(|s| Instant::now() >= s.deadline());
    let kind = match error {
        _ if past_deadline => FailureKind::Deadline,
        mlua::Error::MemoryError(_) => FailureKind::Memory,
        mlua::Error::SyntaxError { .. } => FailureKind::Syntax,
        _ => FailureKind::Runtime,
    };
    let message = match kind {
        FailureKind::Deadline => "the script ran past its deadline and was stopped".to_owned(),
        FailureKind::Memory => "the script went over its memory limit and was stopped".to_owned(),
        _ => clean_message(error),
    };
    let line = line_of(&message, chunk);
    ScriptFailure {
        kind,
        message,
        line,
    }
}

/// The first line of Lua's message, without mlua's wrapping and traceback.
fn clean_message(error: &mlua::Error) -> String {
    let text = match error {
        mlua::Error::CallbackError { cause, .. } => return clean_message(cause),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        other => other.to_string(),
    };
    text.lines().next().unwrap_or_default().to_owned()
}

/// Finds `chunk:LINE:` in a Lua message.
fn line_of(message: &str, chunk: &str) -> Option<u32> {
    let at = message.find(&format!("{chunk}:"))? + chunk.len() + 1;
    let digits: String = message[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Converts a Lua value to JSON, with sorted keys for stable output.
pub(crate) fn to_json(lua: &Lua, value: LuaValue) -> mlua::Result<Value> {
    lua.from_value_with(
        value,
        mlua::serde::DeserializeOptions::new().sort_keys(true),
    )
}

/// Process-level limits: die with the host, and cap the address space as a
/// backstop to Lua's own allocator limit.
fn harden(memory_mb: u64) {
    // SAFETY: plain syscalls on this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        let cap = ((memory_mb + 512) << 20) as libc::rlim_t;
        let limit = libc::rlimit {
            rlim_cur: cap,
            rlim_max: cap,
        };
        libc::setrlimit(libc::RLIMIT_AS, &limit);
    }
}
