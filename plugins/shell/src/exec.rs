//! `shell_exec`: run one command line to completion, with a timeout.
//!
//! The command runs as `bash -c` in its own process group, stdin
//! `/dev/null`. Both pipes and the child's exit (a pidfd) are watched with
//! one `poll` on the calling thread, so neither pipe can fill and block the
//! command, and no thread is started per call. At the deadline the whole
//! group is killed. When the shell has exited but something it started in
//! the background still holds the pipes open, the call waits one more
//! second, then kills the group and says so: long-running work belongs in
//! `process_start`.
//!
//! The same `poll` watches the call's stop flag (the host's `tool.cancel`),
//! which kills the group as the deadline does, and lets the output out to
//! the owner as it comes ([`Live`]).

use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth_sdk::PluginError;
use hearth_sdk::calls::Stop;
use hearth_sdk::floor::Prepared;
use hearth_sdk::protocol::Floor;
use serde_json::{Map, Value};

use crate::Shell;
use crate::live::Live;
use crate::output::{Capture, Limits, Stream};
use crate::spawn::{self, Launcher};
use hearth_sdk::args::Args;

/// `timeout_s` when the call does not set it.
pub const DEFAULT_TIMEOUT_S: u64 = 30;
/// The largest `timeout_s`.
pub const MAX_TIMEOUT_S: u64 = 600;
/// How long background processes may hold the output open after the
/// shell has exited.
pub const LINGER: Duration = Duration::from_secs(1);

/// One command to run.
#[derive(Debug)]
pub struct Request<'a> {
    /// The command line.
    pub command: &'a str,
    /// Where it runs (resolved).
    pub cwd: &'a Path,
    /// The most time it may take.
    pub timeout: Duration,
    /// Variables added to the environment.
    pub env: &'a [(&'a str, &'a str)],
    /// The confinement it runs under; `None` when the owner approved it.
    pub floor: Option<Arc<Prepared>>,
}

/// What watches a command besides its deadline.
#[derive(Default)]
pub struct Watching<'a> {
    /// Set when the host asks to stop the call: the group is killed.
    pub stop: Option<&'a Stop>,
    /// Where its output is shown while it runs.
    pub live: Option<Live<'a>>,
}

/// The tool: checks the arguments and runs the command.
pub fn shell_exec(
    shell: &Shell,
    args: &Value,
    floor: Option<&Floor>,
    watching: Watching<'_>,
) -> Result<Value, PluginError> {
    let args = Args::new(
        args,
        &["command", "cwd", "timeout_s", "env", "outside_roots"],
    )?;
    let command = args.text("command")?;
    let timeout_s = args.u64_in("timeout_s", 1, MAX_TIMEOUT_S, DEFAULT_TIMEOUT_S)?;
    let env = args.string_map("env")?;
    spawn::check_env(&env)?;
    let cwd = shell.launcher.resolve_cwd(args.opt_text("cwd")?)?;
    let floor = crate::floor::prepare(&shell.launcher.floors, floor)?;
    let mut result = run(
        &shell.launcher,
        shell.limits,
        &shell.launcher.home.join("logs"),
        &Request {
            command,
            cwd: &cwd,
            timeout: Duration::from_secs(timeout_s),
            env: &env,
            floor,
        },
        watching,
    )?;
    // Over the cap, the whole output is in the log: the cheap model reads
    // it for the agent, within the host's deadline.
    if let (Some(summarize), Value::Object(fields)) = (&shell.summarize, &mut result) {
        crate::summary::add_to_result(summarize.as_ref(), command, fields);
    }
    Ok(result)
}

/// Runs `request` and returns the tool's result: `exit_code`, `signal`,
/// `stdout`, `stderr`, `duration_ms`, `timed_out`, `truncated` (then
/// `total` and `log`), `floor` when it ran confined (with `confinement`
/// when it failed for lack of access), `cancelled` when the host stopped
/// it, and `note` when background processes were killed.
pub fn run(
    launcher: &Launcher,
    limits: Limits,
    log_dir: &Path,
    request: &Request,
    mut watching: Watching<'_>,
) -> Result<Value, PluginError> {
    let started = Instant::now();
    let mut child = launcher
        .command(
            request.command,
            request.cwd,
            request.env,
            request.floor.clone(),
        )?
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            PluginError::failed(format!(
                "cannot start {} in {}: {e}",
                launcher.shell.display(),
                request.cwd.display()
            ))
        })?;
    let mut capture = Capture::new(limits, log_dir);
    let deadline = started + request.timeout;
    let watched = watch(&mut child, &mut capture, deadline, &mut watching);
    if let Some(live) = watching.live.take() {
        live.finish();
    }
    let ending = match watched {
        Ok(ending) => ending,
        Err(e) => {
            // Nothing is left running, or behind as a zombie.
            kill_group(child.id() as i32);
            let _ = child.wait();
            return Err(e);
        }
    };
    let status = match ending.status {
        Some(status) => status,
        // Killed or never seen to exit: it is dead or dying, so this
        // returns promptly.
        None => child
            .wait()
            .map_err(|e| PluginError::failed(format!("cannot wait for the command: {e}")))?,
    };
    let (exit_code, signal) = spawn::exit_fields(status);
    let captured = capture.finish();
    let mut result = Map::new();
    result.insert("exit_code".into(), exit_code.into());
    result.insert("signal".into(), signal.into());
    for (key, value) in captured.fields() {
        result.insert(key.into(), value);
    }
    result.insert(
        "duration_ms".into(),
        (started.elapsed().as_millis() as u64).into(),
    );
    result.insert("timed_out".into(), ending.timed_out.into());
    if ending.cancelled {
        result.insert("cancelled".into(), true.into());
    }
    if let Some(floor) = &request.floor {
        result.insert("floor".into(), crate::floor::describe(floor).into());
        if exit_code.is_some_and(|code| code != 0)
            && let Some(note) = crate::floor::refusal_note(&captured.stderr)
        {
            result.insert("confinement".into(), note.into());
        }
    }
    if ending.lingered {
        result.insert(
            "note".into(),
            format!(
                "the command ended, but processes it started kept its output open for {} s more \
                 and were killed; run long-lived work with process_start",
                LINGER.as_secs()
            )
            .into(),
        );
    }
    Ok(Value::Object(result))
}

/// How watching the command ended.
struct Ending {
    /// The shell's status, when it was seen to exit.
    status: Option<ExitStatus>,
    /// The deadline passed and the group was killed.
    timed_out: bool,
    /// The host stopped the call and the group was killed.
    cancelled: bool,
    /// Background processes held the pipes after the shell exited and were
    /// killed.
    lingered: bool,
}

/// Reads both pipes into `capture` (and the live view) until they close
/// and the shell exits, killing the process group at `deadline` or when
/// the call is stopped.
fn watch(
    child: &mut Child,
    capture: &mut Capture,
    deadline: Instant,
    watching: &mut Watching<'_>,
) -> Result<Ending, PluginError> {
    let pgid = child.id() as i32;
    let mut stdout: Option<ChildStdout> = child.stdout.take();
    let mut stderr: Option<ChildStderr> = child.stderr.take();
    let exit_fd: Option<OwnedFd> = spawn::pidfd(child.id());
    let mut ending = Ending {
        status: None,
        timed_out: false,
        cancelled: false,
        lingered: false,
    };
    // After the kill at the deadline or the stop, or once the shell has
    // exited: how long the pipes may stay open.
    let mut grace_until: Option<Instant> = None;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        if ending.status.is_none() && exit_fd.is_none() {
            ending.status = child.try_wait().map_err(wait_error)?;
        }
        let pipes_open = stdout.is_some() || stderr.is_some();
        if !pipes_open && ending.status.is_some() {
            return Ok(ending);
        }
        let now = Instant::now();
        if !ending.cancelled && grace_until.is_none() && watching.stop.is_some_and(Stop::is_set) {
            kill_group(pgid);
            ending.cancelled = true;
            grace_until = Some(now + LINGER);
        }
        if ending.status.is_some() && grace_until.is_none() {
            grace_until = Some(now + LINGER);
        }
        if let Some(until) = grace_until {
            if now >= until {
                let ours_to_end = !ending.timed_out && !ending.cancelled;
                if ending.status.is_some() && ours_to_end && pipes_open {
                    ending.lingered = true;
                    kill_group(pgid);
                }
                return Ok(ending);
            }
        } else if now >= deadline {
            kill_group(pgid);
            ending.timed_out = true;
            grace_until = Some(now + LINGER);
            continue;
        }
        let mut wake = grace_until.unwrap_or(deadline);
        if let Some(due) = watching.live.as_ref().and_then(Live::next_due) {
            wake = wake.min(due);
        }
        let mut wait_ms = wake.saturating_duration_since(now).as_millis().min(60_000) as i32 + 1;
        let stop_fd = match watching.stop {
            Some(stop) if !ending.cancelled => {
                if stop.fd().is_none() {
                    // No eventfd: look at the flag now and then.
                    wait_ms = wait_ms.min(TICK_MS);
                }
                stop.fd()
            }
            _ => None,
        };
        if ending.status.is_none() && exit_fd.is_none() {
            // No pidfd (old kernel): look at the child now and then.
            wait_ms = wait_ms.min(TICK_MS);
        }
        let mut fds = Vec::with_capacity(4);
        if let Some(out) = &stdout {
            fds.push(pollfd(out.as_raw_fd()));
        }
        if let Some(err) = &stderr {
            fds.push(pollfd(err.as_raw_fd()));
        }
        let exit_watched = match (&exit_fd, ending.status) {
            (Some(fd), None) => {
                fds.push(pollfd(fd.as_raw_fd()));
                true
            }
            _ => false,
        };
        if let Some(fd) = stop_fd {
            fds.push(pollfd(fd));
        }
        // SAFETY: `fds` is a valid array of pollfd for its length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait_ms) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(PluginError::failed(format!(
                "cannot watch the command's output: {error}"
            )));
        }
        let mut slot = 0;
        let live = &mut watching.live;
        let mut output = Reading {
            capture: &mut *capture,
            buffer: &mut buffer,
        };
        if stdout.is_some() {
            if fds[slot].revents != 0 && !output.pump(&mut stdout, Stream::Stdout, live) {
                stdout = None;
            }
            slot += 1;
        }
        if stderr.is_some() {
            if fds[slot].revents != 0 && !output.pump(&mut stderr, Stream::Stderr, live) {
                stderr = None;
            }
            slot += 1;
        }
        // A stop is seen at the top of the loop; its fd only wakes the poll.
        if exit_watched && fds[slot].revents != 0 {
            ending.status = child.try_wait().map_err(wait_error)?;
        }
        if let Some(live) = live {
            live.flush();
        }
    }
}

/// Where what a pipe gives goes.
struct Reading<'a> {
    capture: &'a mut Capture,
    buffer: &'a mut [u8],
}

impl Reading<'_> {
    /// Reads once from a ready pipe into the capture and the live view;
    /// false at its end (or on an error, which ends it too).
    fn pump<R: Read>(
        &mut self,
        pipe: &mut Option<R>,
        stream: Stream,
        live: &mut Option<Live<'_>>,
    ) -> bool {
        let Some(reader) = pipe else { return false };
        loop {
            return match reader.read(self.buffer) {
                Ok(0) => false,
                Ok(n) => {
                    self.capture.push(stream, &self.buffer[..n]);
                    if let Some(live) = live {
                        live.push(stream, &self.buffer[..n]);
                    }
                    true
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => false,
            };
        }
    }
}

/// How often a child without a pidfd is looked at.
const TICK_MS: i32 = 20;

fn pollfd(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

fn kill_group(pgid: i32) {
    if let Err(e) = spawn::signal_group(pgid, libc::SIGKILL) {
        tracing::warn!("cannot kill process group {pgid}: {e}");
    }
}

fn wait_error(e: io::Error) -> PluginError {
    PluginError::failed(format!("cannot wait for the command: {e}"))
}
