//! A server as a child process speaking MCP on its stdin and stdout.
//!
//! The process gets its own process group (so stopping it stops what it
//! started), a scrubbed environment (the daemon holds the model's API key;
//! a server sees only [`INHERITED_ENV`], then the names in `pass_env`,
//! then the literal `env`), and three pipes. One thread reads stdout and
//! dispatches answers to waiting calls by id, so calls run concurrently;
//! another forwards stderr to the log, bounded and rate-limited. Every read
//! is bounded: a line over [`MAX_MESSAGE`] ends the connection. Text on
//! stdout that is not JSON-RPC is logged and remembered, because "the
//! server printed a banner on stdout" is the most common reason a server
//! never answers, and the owner should be told exactly that.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hearth_sdk::Level;
use serde_json::Value;

use crate::config::StdioConfig;
use crate::context::Context;
use crate::jsonrpc::{self, Incoming, Pending, lock};
use crate::transport::{Events, Options, RequestError};

/// The largest message a server may send: one line of stdout.
pub const MAX_MESSAGE: usize = 16 << 20;
/// Variables passed from the daemon's environment to every server. Nothing
/// else is: the daemon's API keys reach a server only when `pass_env` or
/// `env` name them.
pub const INHERITED_ENV: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM",
];
/// `PATH` when the daemon has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// The most of one stderr line that reaches the log.
const STDERR_LINE: usize = 2048;
/// The most stderr lines logged per second; the rest are counted.
const STDERR_PER_SECOND: u32 = 50;
/// The most of a non-protocol stdout line or stderr line quoted in errors.
const QUOTED: usize = 160;
/// How long a server has to exit after its stdin closes, and again after
/// SIGTERM.
const GRACE: Duration = Duration::from_secs(2);

/// A running server process.
pub struct StdioLink {
    server: String,
    pid: u32,
    stdin: Mutex<Option<ChildStdin>>,
    child: Mutex<Option<Child>>,
    pending: Pending,
    /// Set when we stop it: its end is then no crash.
    stopping: AtomicBool,
    diag: Arc<Diagnostics>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    ctx: Arc<Context>,
}

/// What the process printed that helps explain a failure.
#[derive(Default)]
struct Diagnostics {
    /// The last non-empty stderr line, cut to [`QUOTED`].
    stderr: Mutex<Option<String>>,
    /// The last stdout line that was no JSON-RPC message, cut likewise.
    garbage: Mutex<Option<String>>,
    /// When a non-protocol line was last logged, and how many since.
    garbage_logged: Mutex<(Option<Instant>, u64)>,
    /// Set when stderr has been read to its end.
    stderr_done: AtomicBool,
}

impl StdioLink {
    /// Starts the server `server` as `config` says, from the spawning
    /// thread. Fails with a sentence for the owner when the program cannot
    /// be started (not found, not executable, a bad `cwd`).
    pub fn start(
        server: &str,
        config: &StdioConfig,
        ctx: &Arc<Context>,
        events: Arc<dyn Events>,
    ) -> Result<Arc<StdioLink>, String> {
        let cwd = resolve_cwd(config.cwd.as_deref(), &ctx.home)?;
        let env = environment(config, std::env::vars_os());
        let mut command = Command::new(&config.command);
        command
            .args(&config.args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(&cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        ctx.helpers
            .apply(&mut command)
            .map_err(|e| format!("it cannot be confined, so it was not started: {e}"))?;
        let mut child = ctx.spawner.spawn(command).map_err(|e| {
            let path = env
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .unwrap_or_default();
            spawn_error(&config.command, &path, &e)
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Cannot happen: all three were asked piped. Clean up anyway.
            let _ = child.kill();
            let _ = child.wait();
            return Err("its pipes could not be set up".into());
        };
        let link = Arc::new(StdioLink {
            server: server.to_owned(),
            pid,
            stdin: Mutex::new(Some(stdin)),
            child: Mutex::new(Some(child)),
            pending: Pending::default(),
            stopping: AtomicBool::new(false),
            diag: Arc::default(),
            threads: Mutex::new(Vec::new()),
            ctx: Arc::clone(ctx),
        });
        let reader = {
            let link = Arc::clone(&link);
            std::thread::Builder::new()
                .name(format!("mcp-{server}-out"))
                .spawn(move || link.read_stdout(stdout, events))
        };
        let logger = {
            let (diag, ctx) = (Arc::clone(&link.diag), Arc::clone(ctx));
            let target = format!("mcp::{server}");
            std::thread::Builder::new()
                .name(format!("mcp-{server}-err"))
                .spawn(move || forward_stderr(stderr, &diag, &ctx, &target))
        };
        match (reader, logger) {
            (Ok(r), Ok(l)) => {
                lock(&link.threads).extend([r, l]);
                Ok(link)
            }
            (r, l) => {
                link.stop();
                for handle in [r, l].into_iter().flatten() {
                    let _ = handle.join();
                }
                Err("no thread could be started to read it".into())
            }
        }
    }

    /// Its process id (also its process group's).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends a request and waits for the answer; on a timeout or a stop,
    /// tells the server to cancel it.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        options: &Options<'_>,
    ) -> Result<Value, RequestError> {
        let (id, slot) = self.pending.open().map_err(RequestError::NotSent)?;
        if let Err(why) = self.send(&jsonrpc::request(id, method, params)) {
            self.pending.forget(id);
            return Err(RequestError::NotSent(why));
        }
        match slot.wait(options.deadline, options.stop) {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(RequestError::Rpc(error)),
            Ok(Err(why)) => Err(RequestError::Closed(why)),
            Err(interrupted) => {
                self.pending.forget(id);
                let (error, reason) = match interrupted {
                    jsonrpc::Interrupted::TimedOut => (RequestError::TimedOut, "timed out"),
                    jsonrpc::Interrupted::Stopped => {
                        (RequestError::Stopped, "stopped by the owner")
                    }
                };
                // `initialize` must not be cancelled; a failed handshake
                // stops the process instead.
                if method != "initialize" {
                    let _ = self.send(&jsonrpc::cancelled(id, reason));
                }
                Err(error)
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        self.send(&jsonrpc::notification(method, params))
    }

    /// Sends a request whose answer nobody waits for; returns its id.
    pub fn send_unanswered(&self, method: &str, params: Value) -> Result<u64, String> {
        let id = self.pending.id();
        self.send(&jsonrpc::request(id, method, params))?;
        Ok(id)
    }

    /// What the server printed that may explain a failure, as clauses to
    /// append to a message: ` (last stderr line: "...")` and `; it printed
    /// non-protocol text on stdout ("..."); MCP servers must log to stderr`.
    pub fn clues(&self) -> String {
        let mut clues = String::new();
        if let Some(line) = lock(&self.diag.stderr).as_deref() {
            clues.push_str(&format!(" (last stderr line: {line:?})"));
        }
        if let Some(line) = lock(&self.diag.garbage).as_deref() {
            clues.push_str(&format!(
                "; it printed non-protocol text on stdout ({line:?}); MCP servers must log to \
                 stderr"
            ));
        }
        clues
    }

    /// Stops the process: closes its stdin, waits [`GRACE`], sends its
    /// group SIGTERM, waits again, sends SIGKILL, reaps it and joins the
    /// threads reading it.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        drop(lock(&self.stdin).take());
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            end_process(&mut child, self.pid, GRACE);
        }
        self.pending.close("was stopped");
        let threads: Vec<JoinHandle<()>> = lock(&self.threads).drain(..).collect();
        // The readers end at end of file, once every process holding the
        // pipes is gone. One that escaped the group (a `setsid` daemon)
        // may hold them open: give up on those readers after a while
        // rather than hang; they hold no host handle that outlives the
        // shutdown gate.
        let until = Instant::now() + GRACE;
        for handle in threads {
            while !handle.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }

    fn send(&self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = lock(&self.stdin);
        let Some(pipe) = stdin.as_mut() else {
            return Err(self
                .pending
                .closed()
                .unwrap_or_else(|| "is no longer running".into()));
        };
        pipe.write_all(line.as_bytes())
            .and_then(|()| pipe.flush())
            .map_err(|e| format!("could not be written to ({e})"))
    }

    /// The stdout reader: dispatches each line until the pipe ends, then
    /// says why the connection ended.
    fn read_stdout(self: Arc<Self>, stdout: impl Read, events: Arc<dyn Events>) {
        let mut reader = BufReader::with_capacity(64 << 10, stdout);
        let mut line = Vec::new();
        let broken = loop {
            line.clear();
            match read_line(&mut reader, &mut line, MAX_MESSAGE) {
                Ok(Line::Eof) => break None,
                Ok(Line::Complete) => self.dispatch(&line, &*events),
                Ok(Line::TooLong) => {
                    break Some(format!(
                        "sent a message over {} MiB on stdout, which breaks the protocol",
                        MAX_MESSAGE >> 20
                    ));
                }
                Err(e) => break Some(format!("could not be read ({e})")),
            }
        };
        if self.stopping.load(Ordering::SeqCst) {
            self.pending.close("was stopped");
            return;
        }
        // Unasked: it exited, closed stdout, or broke the protocol. Make
        // sure it is gone, and say why.
        drop(lock(&self.stdin).take());
        let child = lock(&self.child).take();
        let status =
            child.map(|mut child| end_process(&mut child, self.pid, Duration::from_secs(1)));
        // Its last words on stderr may still be on their way through the
        // other pipe: give them a moment, they are the best clue.
        let until = Instant::now() + Duration::from_millis(500);
        while !self.diag.stderr_done.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut why = match (broken, status) {
            (Some(broken), _) => broken,
            (None, Some(Some(status))) => describe_exit(status),
            (None, _) => "closed its stdout".to_owned(),
        };
        why.push_str(&self.clues());
        self.pending.close(&why);
        events.closed(&why);
    }

    fn dispatch(&self, line: &[u8], events: &dyn Events) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let messages = match serde_json::from_str::<Value>(text) {
            // A batch: 2025-03-26 servers may send several at once.
            Ok(Value::Array(list)) => list,
            Ok(one) => vec![one],
            Err(_) => {
                self.not_protocol(text);
                return;
            }
        };
        for message in messages {
            match jsonrpc::classify(message) {
                Incoming::Response {
                    id: Some(id),
                    outcome,
                } => {
                    // No one waiting: a call that timed out or was stopped
                    // and answered anyway. Nothing to do.
                    self.pending.complete(id, outcome);
                }
                Incoming::Response { id: None, outcome } => {
                    tracing::warn!(
                        server = %self.server,
                        "answer without an id: {:?}",
                        outcome.err().map(|e| e.to_string())
                    );
                }
                Incoming::Request { id, method } => {
                    let _ = self.send(&jsonrpc::answer_server_request(id, &method));
                }
                Incoming::Notification { method, params } => events.notification(&method, &params),
                Incoming::Invalid => self.not_protocol(text),
            }
        }
    }

    /// Remembers (and logs, at most every ten seconds) a stdout line that
    /// is no JSON-RPC message.
    fn not_protocol(&self, text: &str) {
        *lock(&self.diag.garbage) = Some(crate::text::cut(text, QUOTED));
        let mut logged = lock(&self.diag.garbage_logged);
        let now = Instant::now();
        if logged
            .0
            .is_none_or(|at| now.duration_since(at) >= Duration::from_secs(10))
        {
            let skipped = std::mem::take(&mut logged.1);
            *logged = (Some(now), 0);
            let more = if skipped > 0 {
                format!(" ({skipped} more such lines since the last warning)")
            } else {
                String::new()
            };
            self.ctx.log(
                Level::Warn,
                &format!("mcp::{}", self.server),
                &format!(
                    "server {:?} printed non-protocol text on stdout: {:?}{more}; MCP servers \
                     must log to stderr",
                    self.server,
                    crate::text::cut(text, STDERR_LINE)
                ),
            );
        } else {
            logged.1 += 1;
        }
    }
}

/// The environment a server starts with: [`INHERITED_ENV`] from the
/// daemon's (`daemon`), then the `pass_env` names the daemon has, then the
/// literal `env` values, each overriding the one before.
pub fn environment(
    config: &StdioConfig,
    daemon: impl Iterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let daemon: Vec<(OsString, OsString)> = daemon.collect();
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |name: OsString, value: OsString| {
        env.retain(|(k, _)| *k != name);
        env.push((name, value));
    };
    for (name, value) in &daemon {
        if INHERITED_ENV.iter().any(|n| name == n) {
            set(name.clone(), value.clone());
        }
    }
    for wanted in &config.pass_env {
        if let Some((name, value)) = daemon.iter().find(|(k, _)| k == wanted.as_str()) {
            set(name.clone(), value.clone());
        }
    }
    for (name, value) in &config.env {
        set(name.into(), value.into());
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    env
}

/// `exited with status 1`, `was killed by signal 9 (SIGKILL)`.
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(signal) => {
            let name = match signal {
                libc::SIGHUP => " (SIGHUP)",
                libc::SIGINT => " (SIGINT)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGPIPE => " (SIGPIPE)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGBUS => " (SIGBUS)",
                _ => "",
            };
            format!("was killed by signal {signal}{name}")
        }
        None => "ended".to_owned(),
    }
}

/// The directory a server runs in: `cwd` (absolute, `~/...`, or relative
/// to `$HEARTH_HOME`), or `$HEARTH_HOME`; it must exist.
fn resolve_cwd(cwd: Option<&str>, home: &Path) -> Result<PathBuf, String> {
    let path = match cwd {
        None => {
            // A home that does not exist yet (a fresh install) must not
            // keep servers from starting.
            return Ok(if home.is_dir() {
                home.to_owned()
            } else {
                PathBuf::from("/")
            });
        }
        Some(raw) if raw == "~" || raw.starts_with("~/") => {
            let user_home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(user_home).join(raw.trim_start_matches('~').trim_start_matches('/'))
        }
        Some(raw) => home.join(raw),
    };
    if path.is_dir() {
        Ok(path)
    } else {
        Err(format!("its cwd {} is not a directory", path.display()))
    }
}

fn spawn_error(command: &str, path: &str, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound if !command.contains('/') => {
            format!("cannot start {command:?}: no such program on its PATH ({path})")
        }
        io::ErrorKind::NotFound => format!("cannot start {command:?}: no such file"),
        io::ErrorKind::PermissionDenied => {
            format!("cannot start {command:?}: permission denied (is it executable?)")
        }
        _ => format!("cannot start {command:?}: {e}"),
    }
}

/// How one read of a line ended.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line (without its `\n`) is in the buffer; the last line of a
    /// stream may lack its newline.
    Complete,
    /// The stream ended, nothing read.
    Eof,
    /// The line passed the bound; the buffer holds its start.
    TooLong,
}

/// Reads one line into `line`, holding at most `max` bytes of it.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(if line.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (buf.len(), false),
        };
        if line.len() + chunk > max {
            let room = max - line.len();
            line.extend_from_slice(&buf[..room]);
            reader.consume(room);
            return Ok(Line::TooLong);
        }
        line.extend_from_slice(&buf[..chunk]);
        reader.consume(chunk + usize::from(done));
        if done {
            return Ok(Line::Complete);
        }
    }
}

/// The stderr forwarder: each line to the log under `target`, at most
/// [`STDERR_PER_SECOND`] a second (the others counted and reported), cut to
/// [`STDERR_LINE`]; the last non-empty line kept for error messages.
fn forward_stderr(stderr: impl Read, diag: &Diagnostics, ctx: &Context, target: &str) {
    let mut reader = BufReader::with_capacity(16 << 10, stderr);
    let mut line = Vec::new();
    let mut window = Instant::now();
    let (mut shown, mut skipped) = (0u32, 0u64);
    loop {
        line.clear();
        match read_line(&mut reader, &mut line, STDERR_LINE) {
            Ok(Line::Eof) | Err(_) => break,
            Ok(Line::TooLong) => {
                // Drop the rest of the long line.
                let mut rest = Vec::new();
                loop {
                    rest.clear();
                    match read_line(&mut reader, &mut rest, STDERR_LINE) {
                        Ok(Line::TooLong) => continue,
                        _ => break,
                    }
                }
            }
            Ok(Line::Complete) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        if text.trim().is_empty() {
            continue;
        }
        *lock(&diag.stderr) = Some(crate::text::cut(text.trim(), QUOTED));
        if window.elapsed() >= Duration::from_secs(1) {
            if skipped > 0 {
                ctx.log(
                    Level::Info,
                    target,
                    &format!("({skipped} lines of stderr skipped)"),
                );
            }
            window = Instant::now();
            (shown, skipped) = (0, 0);
        }
        if shown < STDERR_PER_SECOND {
            shown += 1;
            ctx.log(Level::Info, target, text);
        } else {
            skipped += 1;
        }
    }
    if skipped > 0 {
        ctx.log(
            Level::Info,
            target,
            &format!("({skipped} lines of stderr skipped)"),
        );
    }
    diag.stderr_done.store(true, Ordering::SeqCst);
}

/// Ends `child` (the leader of process group `pgid`): waits `grace` for it
/// to exit, sends the group SIGTERM and waits `grace` again, then sends the
/// group SIGKILL (which also ends what it left behind) and reaps it. The
/// leader is reaped only at the end, so its pid keeps naming the group
/// until then and no signal can reach a stranger.
fn end_process(child: &mut Child, pgid: u32, grace: Duration) -> Option<ExitStatus> {
    let pgid = i32::try_from(pgid).unwrap_or(0);
    if pgid > 0 && !exits_within(pgid, grace) {
        signal_group(pgid, libc::SIGTERM);
        exits_within(pgid, grace);
    }
    if pgid > 0 {
        signal_group(pgid, libc::SIGKILL);
    }
    child.wait().ok()
}

fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) with a negative pid signals our child's own process
    // group, which exists until its leader is reaped (we have not).
    unsafe { libc::kill(-pgid, signal) };
}

/// Whether process `pid` (our child) exits within `grace`, without reaping
/// it.
fn exits_within(pid: i32, grace: Duration) -> bool {
    let until = Instant::now() + grace;
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; waitid
        // writes at most that struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) on our own child, with WNOWAIT: it leaves the
        // child waitable.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is set by a successful waitid (0 when nothing
        // has exited yet).
        if rc != 0 || unsafe { info.si_pid() } != 0 {
            // Exited, or no longer ours to wait for (reaped elsewhere).
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(pass_env: &[&str], env: &[(&str, &str)]) -> StdioConfig {
        StdioConfig {
            command: "x".into(),
            args: Vec::new(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            pass_env: pass_env.iter().map(|s| (*s).to_owned()).collect(),
            cwd: None,
        }
    }

    fn daemon() -> impl Iterator<Item = (OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/home/sam"),
            ("ANTHROPIC_API_KEY", "sk-secret"),
            ("GITHUB_TOKEN", "ghp"),
            ("LC_ALL", "C.UTF-8"),
            ("LC_NUMERIC", "de_DE"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        let mut n: Vec<String> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn only_the_allow_list_pass_env_and_env_reach_a_server() {
        let env = environment(&config(&[], &[]), daemon());
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
        let env = environment(
            &config(
                &["GITHUB_TOKEN", "NOT_SET"],
                &[("DEBUG", "1"), ("HOME", "/srv")],
            ),
            daemon(),
        );
        assert_eq!(
            names(&env),
            ["DEBUG", "GITHUB_TOKEN", "HOME", "LC_ALL", "PATH"]
        );
        let home = env.iter().find(|(k, _)| k == "HOME").unwrap();
        assert_eq!(home.1, "/srv", "env overrides the daemon's value");
        // No PATH at all: a default one, so commands are still found.
        let env = environment(&config(&[], &[]), std::iter::empty());
        assert_eq!(env, [("PATH".into(), DEFAULT_PATH.into())]);
    }

    #[test]
    fn lines_are_read_bounded() {
        let input: &[u8] = b"one\r\ntwo\nthree-is-too-long\nlast";
        let mut reader = BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut got = Vec::new();
        loop {
            line.clear();
            let r = read_line(&mut reader, &mut line, 8).unwrap();
            got.push((r, String::from_utf8_lossy(&line).into_owned()));
            if got.last().unwrap().0 == Line::Eof || got.len() > 10 {
                break;
            }
        }
        assert_eq!(got[0], (Line::Complete, "one\r".into()));
        assert_eq!(got[1], (Line::Complete, "two".into()));
        assert_eq!(got[2], (Line::TooLong, "three-is".into()));
    }

    #[test]
    fn exits_are_described() {
        assert_eq!(
            describe_exit(ExitStatus::from_raw(1 << 8)),
            "exited with status 1"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
    }

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        assert_eq!(crate::text::cut("short", 10), "short");
        assert_eq!(crate::text::cut("ééé", 3), "é…");
    }
}
