//! The pool of Lua worker processes, and the deadline that ends every
//! request.
//!
//! A request checks out an idle worker (or starts one, up to `workers`),
//! writes one line, and reads lines until `done`, answering the worker's
//! host requests on the way. If `done` has not come by the deadline plus a
//! small grace, the worker is killed and the caller gets a deadline error;
//! the next request starts a fresh worker. A worker that hit its deadline or
//! memory cap is never reused: its Lua state may be in any condition.
//!
//! A request made for a call in a turn is killed the same way when the
//! owner stops the turn: the call's scope holds a hook that kills the
//! worker, and the read then ends at once.
//!
//! A worker runs the owner's least trusted code, so it is started like any
//! program hearth runs unapproved (`hearth_sdk::sandbox`): an empty
//! environment, a session of its own, the seccomp filter, and a Landlock
//! floor under which it writes nothing but the null devices and cannot
//! read hearth's credentials.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use hearth_sdk::floor::{Cache, FloorError};
use hearth_sdk::protocol::Floor;
use hearth_sdk::sandbox::{self, Reach};
use serde_json::Value;

use super::wire::{FailureKind, FromWorker, ScriptFailure, ToWorker};
use hearth_base::scope;

/// How long after the deadline the host waits for the worker's own hook to
/// stop the script before it kills the process.
const GRACE: Duration = Duration::from_millis(40);

/// Worker processes, started on demand.
pub struct Pool {
    program: PathBuf,
    /// The confinement every worker starts under.
    floor: Floor,
    /// `floor`, prepared, kept while it holds.
    floors: Cache,
    memory_mb: u64,
    max: usize,
    state: Mutex<PoolState>,
    freed: Condvar,
}

/// Answers a worker's host request (`kv.get`, `tool`, ...).
pub type HostHandler<'a> = dyn FnMut(&str, Value) -> Result<Value, String> + 'a;

#[derive(Default)]
struct PoolState {
    /// Idle workers and when each was last used.
    idle: Vec<(Worker, Instant)>,
    live: usize,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: LineReader,
}

/// Reads lines from the worker with a deadline, on the caller's thread: a
/// reader thread would add a thread hand-off to every call.
struct LineReader {
    pipe: ChildStdout,
    buf: Vec<u8>,
}

/// Why no line came.
enum ReadError {
    /// The deadline passed.
    Timeout,
    /// The worker closed its stdout (it died).
    Closed,
}

impl Pool {
    /// A pool that runs `program __lua-worker`.
    pub fn new(program: PathBuf, memory_mb: u64, max: usize, floor: Floor) -> Pool {
        Pool {
            program,
            floor,
            floors: Cache::default(),
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
        let turn = scope::current();
        let pid = worker.child.id() as libc::pid_t;
        // The worker is not reaped before the hook is gone (the guard drops
        // first, and waits for a hook that runs): the pid is still ours.
        let hook = turn.as_ref().and_then(|turn| {
            turn.on_cancel(Box::new(move || {
                // SAFETY: kill(2) on our own unreaped child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }))
        });
        let outcome = worker.exchange(label, request, ends + GRACE, host);
        drop(hook);
        let cancelled = turn.as_ref().is_some_and(|turn| turn.is_cancelled());
        let reusable = !cancelled
            && match &outcome {
                Ok(_) => true,
                Err(f) => !matches!(f.kind, FailureKind::Deadline | FailureKind::Memory),
            };
        self.checkin(worker, reusable);
        outcome.map_err(|mut f| {
            if cancelled {
                f.kind = FailureKind::Cancelled;
                f.message = "the script was stopped: the owner stopped the turn (/stop)".into();
            } else if f.kind == FailureKind::Deadline {
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
            if let Some((worker, _)) = state.idle.pop() {
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
            state.idle.push((worker, Instant::now()));
        } else {
            state.live -= 1;
            worker.kill();
        }
        self.freed.notify_one();
    }

    /// Worker processes alive now, busy or idle.
    pub fn live(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).live
    }

    /// Stops idle workers unused for `older_than`: an idle daemon holds no
    /// worker processes, and the next call starts one.
    pub fn retire_idle(&self, older_than: Duration) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (keep, retire): (Vec<_>, Vec<_>) = state
            .idle
            .drain(..)
            .partition(|(_, used)| used.elapsed() < older_than);
        state.live -= retire.len();
        state.idle = keep;
        drop(state);
        for (worker, _) in retire {
            worker.kill();
        }
    }

    fn spawn(&self) -> Result<Worker, ScriptFailure> {
        let mut command = Command::new(&self.program);
        command
            .arg("__lua-worker")
            .arg("--memory-mb")
            .arg(self.memory_mb.to_string())
            // Scripts must never see the daemon's environment (API keys).
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let refused = |why: String| {
            failure(
                FailureKind::Runtime,
                &format!("cannot confine a script worker, so none was started: {why}"),
            )
        };
        let prepared = match self.floors.prepare(&self.floor) {
            Ok(prepared) => Some(prepared),
            // No Landlock at all: the daemon said so loudly at start.
            Err(FloorError::Unavailable(_)) => None,
            Err(e) => return Err(refused(e.to_string())),
        };
        sandbox::apply(&mut command, Reach::Confined, prepared)
            .map_err(|e| refused(e.to_string()))?;
        let mut child = spawn_from_lasting_thread(command).map_err(|e| {
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
        Ok(Worker {
            child,
            stdin,
            stdout: LineReader {
                pipe: stdout,
                buf: Vec::with_capacity(4096),
            },
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for (worker, _) in state.idle.drain(..) {
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
            let line = match self.stdout.read_line(until) {
                Ok(line) => line,
                Err(ReadError::Timeout) => {
                    return Err(failure(FailureKind::Deadline, "deadline"));
                }
                Err(ReadError::Closed) => {
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
            .name("hearth-lua-kill".into())
            .spawn(move || child.wait());
    }
}

impl LineReader {
    /// The next line, waiting until `until` at most.
    fn read_line(&mut self, until: Instant) -> Result<String, ReadError> {
        let mut scanned = 0;
        loop {
            if let Some(at) = self.buf[scanned..].iter().position(|&b| b == b'\n') {
                let end = scanned + at;
                let line = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                self.buf.drain(..=end);
                return Ok(line);
            }
            scanned = self.buf.len();
            // Most answers come within microseconds: look for them briefly
            // before sleeping, which saves a scheduler wake-up per call.
            let ready = match spin_until_readable(self.pipe.as_raw_fd(), SPIN) {
                true => 1,
                false => poll_readable(self.pipe.as_raw_fd(), until),
            };
            if ready == 0 {
                return Err(ReadError::Timeout);
            }
            if ready < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(ReadError::Closed);
            }
            let mut chunk = [0u8; 8192];
            match self.pipe.read(&mut chunk) {
                Ok(0) | Err(_) => return Err(ReadError::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// Starts `command` from one thread that lives as long as the process.
///
/// The worker asks the kernel to kill it when its parent goes away
/// (`PR_SET_PDEATHSIG`), but "parent" there means the *thread* that forked
/// it: a worker started from a short-lived thread (a blocking-pool thread,
/// a test's thread) would be killed when that thread ends.
fn spawn_from_lasting_thread(command: Command) -> std::io::Result<Child> {
    type Job = (Command, crossbeam_channel::Sender<std::io::Result<Child>>);
    static SPAWNER: std::sync::OnceLock<Option<crossbeam_channel::Sender<Job>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        std::thread::Builder::new()
            .name("hearth-lua-spawn".into())
            .spawn(move || {
                for (mut command, reply) in queue {
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| jobs)
    });
    let spawner = spawner
        .as_ref()
        .ok_or_else(|| std::io::Error::other("the worker spawner thread did not start"))?;
    let (reply, answer) = crossbeam_channel::bounded(1);
    spawner
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the worker spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the worker spawner thread is gone"))?
}

/// How long a reader spins before it sleeps in `poll`.
pub(crate) const SPIN: Duration = Duration::from_micros(150);

/// Polls `fd` without sleeping until it is readable or `spin` has passed.
pub(crate) fn spin_until_readable(fd: i32, spin: Duration) -> bool {
    let start = Instant::now();
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        if unsafe { libc::poll(&mut p, 1, 0) } != 0 {
            return true;
        }
        if start.elapsed() >= spin {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Sleeps until `fd` is readable or `until`; poll(2)'s return value.
fn poll_readable(fd: i32, until: Instant) -> i32 {
    let wait = until.saturating_duration_since(Instant::now());
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // Round up, so a wait of 0.5 ms does not become a busy 0 ms poll.
    let timeout = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, timeout) }
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
