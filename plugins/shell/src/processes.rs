//! Background processes: `process_start`, `process_stop`, `process_status`
//! and `process_logs`.
//!
//! Each process gets a folder `$HEARTH_HOME/processes/proc-<n>/` with its
//! `stdout.log`, `stderr.log` and `meta.json`, so everything about it
//! survives a daemon restart: status is judged from the record and
//! `/proc`, not from memory. Processes start in their own session and are
//! never killed when the daemon stops. Those started in this daemon run are
//! waited for by the reaper, which records how they ended and, when one
//! fails on its own, tells the agent through `agent.notify`.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hearth_sdk::PluginError;
use hearth_sdk::protocol::{Floor, Notice};
use serde_json::{Value, json};

use crate::exec::Watching;
use crate::follow;
use crate::meta::{self, Meta, Status};
use crate::output::Stream;
use crate::reaper::Reaper;
use crate::spawn::{self, Launcher};
use crate::summary::Summarize;
use crate::tail;
use hearth_sdk::args::{Args, invalid};

/// How the plugin tells the agent something: `agent.notify` in the host,
/// anything in tests.
pub type Notify = Box<dyn Fn(&Notice) -> Result<(), String> + Send + Sync>;

/// How long `process_stop` waits after SIGTERM before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// `lines` of `process_logs` when the call does not set it.
pub const DEFAULT_LOG_LINES: u64 = 50;
/// The most `lines` of `process_logs`.
pub const MAX_LOG_LINES: u64 = 2000;
/// How many lines of stderr an exit notice quotes.
pub const NOTICE_LINES: usize = 20;
/// How many lines of stderr the cheap model summarizes for an exit notice.
pub const SUMMARY_LINES: usize = 100;
/// The most bytes of those.
const SUMMARY_BYTES: usize = 32 * 1024;

/// The background processes under one `$HEARTH_HOME`.
pub struct Processes {
    state: Arc<State>,
    reaper: Reaper,
}

impl Processes {
    /// Processes kept under `root` (`$HEARTH_HOME/processes`); failures are
    /// reported through `notify`.
    /// With `summarize`, a failure's notice carries a summary of its last
    /// stderr lines.
    pub fn new(
        root: PathBuf,
        notify: Notify,
        summarize: Option<Arc<Summarize>>,
    ) -> Result<Processes, PluginError> {
        let state = Arc::new(State {
            root,
            records: Mutex::new(()),
            ours: Mutex::new(HashMap::new()),
            notify,
            summarize,
            closing: AtomicBool::new(false),
        });
        let on_exit = Arc::clone(&state);
        let reaper = Reaper::start(Box::new(move |id: &str, status: ExitStatus| {
            on_exit.exited(id, status);
        }))
        .map_err(|e| PluginError::failed(format!("cannot start the process reaper: {e}")))?;
        Ok(Processes { state, reaper })
    }

    /// `process_start`: starts `command` detached and returns its record.
    /// Runs under `floor` when the host sent one.
    pub fn start(
        &self,
        launcher: &Launcher,
        args: &Value,
        floor: Option<&Floor>,
    ) -> Result<Value, PluginError> {
        let args = Args::new(args, &["command", "cwd", "env", "name", "outside_roots"])?;
        let command = args.text("command")?;
        let name = args.opt_text("name")?;
        if name.is_some_and(|n| n.chars().count() > MAX_NAME) {
            return Err(invalid(
                "name",
                &format!("must be at most {MAX_NAME} characters"),
            ));
        }
        let env = args.string_map("env")?;
        spawn::check_env(&env)?;
        let cwd = launcher.resolve_cwd(args.opt_text("cwd")?)?;
        let floor = crate::floor::prepare(&launcher.floors, floor)?;
        let (id, dir) = self.state.new_folder()?;
        let stdout = dir.join("stdout.log");
        let stderr = dir.join("stderr.log");
        let open = |path: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| PluginError::failed(format!("cannot create {}: {e}", path.display())))
        };
        let child = launcher
            .command(command, &cwd, &env, floor.clone())?
            .stdout(open(&stdout)?)
            .stderr(open(&stderr)?)
            .spawn()
            .map_err(|e| {
                PluginError::failed(format!(
                    "cannot start {} in {}: {e}",
                    launcher.shell.display(),
                    cwd.display()
                ))
            })?;
        let pid = child.id() as i32;
        // Unreaped until the reaper has it, so its /proc entry is there.
        let start_ticks = match meta::proc_stat(pid) {
            Ok(stat) => stat.start_ticks,
            Err(e) => {
                abandon(child);
                return Err(PluginError::failed(format!(
                    "started pid {pid} but cannot read its start time: {e}"
                )));
            }
        };
        let record = Meta {
            id: id.clone(),
            name: name.map(str::to_owned),
            pid,
            command: command.to_owned(),
            cwd: cwd.display().to_string(),
            started_at_ms: now_ms(),
            start_ticks,
            boot_id: meta::boot_id(),
            status: Status::Running,
            exit_code: None,
            signal: None,
            ended_at_ms: None,
            ended_by: None,
            stdout: stdout.display().to_string(),
            stderr: stderr.display().to_string(),
            floor: floor.as_deref().map(crate::floor::describe),
        };
        {
            let _records = self.state.lock_records();
            if let Err(e) = meta::write(&dir, &record) {
                // Without its record nobody could find or stop it.
                abandon(child);
                return Err(PluginError::failed(format!(
                    "cannot write {}: {e}",
                    dir.join(meta::FILE).display()
                )));
            }
            self.state.ours().insert(id.clone(), Ours::default());
        }
        self.reaper.watch(id, child);
        Ok(shown(&record, true))
    }

    /// `process_stop`: SIGTERM to the process group, SIGKILL after
    /// [`STOP_GRACE`]; returns the final record.
    pub fn stop(&self, args: &Value) -> Result<Value, PluginError> {
        let args = Args::new(args, &["id"])?;
        let id = process_id(&args)?;
        let record = self.state.refreshed(id)?;
        if !record.is_alive() {
            return Err(PluginError::failed(format!(
                "{id} is not running ({}); nothing to stop",
                ended(&record)
            )));
        }
        if let Some(ours) = self.state.ours().get_mut(id) {
            ours.stop_requested = true;
        }
        let pid = record.pid;
        let mut ended_by = "terminated";
        send(pid, libc::SIGTERM)?;
        if !wait_until(STOP_GRACE, || group_gone(&record)) {
            ended_by = "killed";
            send(pid, libc::SIGKILL)?;
            if !wait_until(KILL_WAIT, || group_gone(&record)) {
                return Err(PluginError::failed(format!(
                    "{id} (pid {pid}) survived SIGKILL for {} s",
                    KILL_WAIT.as_secs()
                )));
            }
        }
        // Let the reaper record the exit status of a child of ours.
        let ours = self.state.ours().contains_key(id);
        if ours {
            wait_until(REAP_WAIT, || {
                self.state.ours().get(id).is_some_and(|o| o.reaped)
            });
        }
        let _records = self.state.lock_records();
        let dir = self.state.root.join(id);
        let mut record = meta::read(&dir).map_err(PluginError::Failed)?;
        record.status = Status::Stopped;
        record.ended_by = Some(ended_by.into());
        record.ended_at_ms.get_or_insert_with(now_ms);
        if !ours {
            // Not our child: how it ended is not ours to know, except that
            // SIGKILL is the last thing it got.
            record.signal = (ended_by == "killed").then(|| spawn::signal_name(libc::SIGKILL));
        }
        meta::write(&dir, &record)
            .map_err(|e| PluginError::failed(format!("cannot write {}: {e}", dir.display())))?;
        Ok(shown(&record, false))
    }

    /// `process_status`: one process's record, or all of them, each with
    /// `alive` judged from `/proc`.
    pub fn status(&self, args: &Value) -> Result<Value, PluginError> {
        let args = Args::new(args, &["id"])?;
        if args.opt_text("id")?.is_some() {
            let id = process_id(&args)?;
            let record = self.state.refreshed(id)?;
            let alive = record.is_alive();
            return Ok(shown(&record, alive));
        }
        let mut listed = Vec::new();
        for id in self.state.ids()? {
            listed.push(match self.state.refreshed(&id) {
                Ok(record) => {
                    let alive = record.is_alive();
                    shown(&record, alive)
                }
                Err(e) => json!({ "id": id, "error": e.to_string() }),
            });
        }
        Ok(json!({ "processes": listed }))
    }

    /// `process_logs`: the last lines of a process's stdout or stderr;
    /// with `follow_s`, after following the log that long (or until the
    /// process ends, or the call is stopped), its new bytes shown live.
    pub fn logs(&self, args: &Value, mut watching: Watching<'_>) -> Result<Value, PluginError> {
        let args = Args::new(args, &["id", "stream", "lines", "follow_s"])?;
        let id = process_id(&args)?;
        let stream = match args.opt_text("stream")? {
            None | Some("stdout") => "stdout",
            Some("stderr") => "stderr",
            Some(other) => {
                return Err(invalid(
                    "stream",
                    &format!("expected \"stdout\" or \"stderr\", got {other:?}"),
                ));
            }
        };
        let lines = args.u64_in("lines", 1, MAX_LOG_LINES, DEFAULT_LOG_LINES)?;
        let follow_s = args.u64_in("follow_s", 1, follow::MAX_FOLLOW_S, 0)?;
        let mut record = self.state.refreshed(id)?;
        let path = if stream == "stdout" {
            record.stdout.clone()
        } else {
            record.stderr.clone()
        };
        let mut followed = None;
        if follow_s > 0 && record.is_alive() {
            let kind = if stream == "stdout" {
                Stream::Stdout
            } else {
                Stream::Stderr
            };
            let until = Instant::now() + Duration::from_secs(follow_s);
            let alive = || self.state.refreshed(id).is_ok_and(|r| r.is_alive());
            let seen = follow::follow(
                Path::new(&path),
                kind,
                until,
                watching.stop,
                &mut watching.live,
                alive,
            );
            if let Some(live) = watching.live.take() {
                live.finish();
            }
            let seen =
                seen.map_err(|e| PluginError::failed(format!("cannot follow {path}: {e}")))?;
            followed = Some(json!({
                "ms": seen.duration.as_millis() as u64,
                "bytes": seen.bytes,
                "ended": seen.ended.as_str(),
            }));
            record = self.state.refreshed(id)?;
        }
        let tail = tail::tail(Path::new(&path), lines as usize, MAX_LOG_BYTES)
            .map_err(|e| PluginError::failed(format!("cannot read {path}: {e}")))?;
        let mut result = json!({
            "id": id,
            "stream": stream,
            "path": path,
            "text": tail.text,
            "lines": tail.lines,
            "earlier": tail.earlier,
            "size": tail.size,
            "status": record.status,
            "alive": record.is_alive(),
        });
        if let Some(followed) = followed {
            result["followed"] = followed;
        }
        Ok(result)
    }

    /// Stops the reaper; the processes keep running.
    pub fn shutdown(&self) {
        self.state.closing.store(true, Ordering::SeqCst);
        self.reaper.shutdown();
    }
}

/// The longest `name`.
const MAX_NAME: usize = 100;
/// The most bytes `process_logs` returns.
const MAX_LOG_BYTES: usize = 256 * 1024;
/// The most bytes of stderr an exit notice quotes.
const NOTICE_BYTES: usize = 8 * 1024;
/// The longest command line an exit notice quotes whole.
const NOTICE_COMMAND: usize = 2048;
/// How long a group may take to vanish after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long to wait for the reaper to record an exit it has seen.
const REAP_WAIT: Duration = Duration::from_secs(1);
/// How many times a notice is offered to a busy host.
const NOTICE_ATTEMPTS: u32 = 10;
/// The pause between those attempts.
const NOTICE_PAUSE: Duration = Duration::from_millis(300);

/// What this daemon run knows about a process it started.
#[derive(Default)]
struct Ours {
    stop_requested: bool,
    reaped: bool,
}

/// What the tools and the reaper share.
struct State {
    root: PathBuf,
    /// Held for every read-modify-write of a record.
    records: Mutex<()>,
    ours: Mutex<HashMap<String, Ours>>,
    notify: Notify,
    summarize: Option<Arc<Summarize>>,
    /// Set at shutdown: a notice the host cannot take is not retried, so
    /// the reaper (and the daemon's stop) is not held up.
    closing: AtomicBool,
}

impl State {
    fn lock_records(&self) -> MutexGuard<'_, ()> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ours(&self) -> MutexGuard<'_, HashMap<String, Ours>> {
        self.ours.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The process ids on disk, in order.
    fn ids(&self) -> Result<Vec<String>, PluginError> {
        let mut numbers = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(PluginError::failed(format!(
                    "cannot list {}: {e}",
                    self.root.display()
                )));
            }
        };
        for entry in entries.flatten() {
            if let Some(n) = entry.file_name().to_str().and_then(number_of) {
                numbers.push(n);
            }
        }
        numbers.sort_unstable();
        Ok(numbers.into_iter().map(|n| format!("proc-{n}")).collect())
    }

    /// Creates the next `proc-<n>` folder, after every one on disk.
    fn new_folder(&self) -> Result<(String, PathBuf), PluginError> {
        std::fs::create_dir_all(&self.root).map_err(|e| {
            PluginError::failed(format!("cannot create {}: {e}", self.root.display()))
        })?;
        let last = self.ids()?.last().and_then(|id| number_of(id)).unwrap_or(0);
        // Another hearth process may take a number between the listing and
        // the creation: `create_dir` fails then, and the next one is tried.
        for n in last + 1..last + 1000 {
            let id = format!("proc-{n}");
            let dir = self.root.join(&id);
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok((id, dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(PluginError::failed(format!(
                        "cannot create {}: {e}",
                        dir.display()
                    )));
                }
            }
        }
        Err(PluginError::failed(format!(
            "cannot find a free process number in {}",
            self.root.display()
        )))
    }

    /// The record of `id`, brought up to date: a process recorded as
    /// running that is dead becomes `gone` if another daemon run started it
    /// (how it ended is unknown); for one of ours, the reaper's record is
    /// awaited briefly.
    fn refreshed(&self, id: &str) -> Result<Meta, PluginError> {
        let dir = self.root.join(id);
        if !dir.join(meta::FILE).exists() {
            return Err(invalid(
                "id",
                &format!("there is no process {id}; process_status lists them"),
            ));
        }
        let read = || meta::read(&dir).map_err(PluginError::Failed);
        let record = read()?;
        if record.status != Status::Running || record.is_alive() {
            return Ok(record);
        }
        if self.ours().contains_key(id) {
            wait_until(REAP_WAIT, || self.ours().get(id).is_some_and(|o| o.reaped));
            return read();
        }
        let _records = self.lock_records();
        let mut record = read()?;
        if record.status == Status::Running {
            record.status = Status::Gone;
            record.ended_at_ms = Some(now_ms());
            meta::write(&dir, &record)
                .map_err(|e| PluginError::failed(format!("cannot write {}: {e}", dir.display())))?;
        }
        Ok(record)
    }

    /// The reaper saw `id` exit: record it, and tell the agent when it
    /// failed on its own.
    fn exited(self: &Arc<Self>, id: &str, status: ExitStatus) {
        let (exit_code, signal) = spawn::exit_fields(status);
        let dir = self.root.join(id);
        let (record, stopped) = {
            let _records = self.lock_records();
            let stopped = self.ours().get(id).is_some_and(|o| o.stop_requested);
            let mut record = match meta::read(&dir) {
                Ok(record) => record,
                Err(e) => {
                    tracing::warn!("background process {id} ended, but its record is lost: {e}");
                    return;
                }
            };
            record.exit_code = exit_code;
            record.signal = signal;
            record.ended_at_ms = Some(now_ms());
            record.status = if stopped {
                Status::Stopped
            } else {
                Status::Exited
            };
            if let Err(e) = meta::write(&dir, &record) {
                tracing::warn!("cannot record the end of background process {id}: {e}");
            }
            if let Some(ours) = self.ours().get_mut(id) {
                ours.reaped = true;
            }
            (record, stopped)
        };
        if stopped || status.success() {
            return;
        }
        let notice = Notice {
            key: format!("{id}-exit-{}", record.started_at_ms),
            text: notice_text(&record),
        };
        let Some(summarize) = self.summarize.clone() else {
            return self.tell(id, &notice);
        };
        // The summary waits for a model: on a thread of its own, so the
        // reaper goes on recording other exits meanwhile.
        let (state, id) = (Arc::clone(self), id.to_owned());
        let told = std::thread::Builder::new()
            .name("hearth-shell-notice".into())
            .spawn(move || {
                let mut notice = notice;
                notice.text.push_str(&stderr_summary(&record, &*summarize));
                state.tell(&id, &notice);
            });
        if let Err(e) = told {
            tracing::warn!("cannot tell the agent that a background process failed: {e}");
        }
    }

    /// Offers `notice` to the host until it takes it (or the plugin closes).
    fn tell(&self, id: &str, notice: &Notice) {
        for attempt in 1..=NOTICE_ATTEMPTS {
            match (self.notify)(notice) {
                Ok(()) => return,
                Err(e) if attempt == NOTICE_ATTEMPTS || self.closing.load(Ordering::SeqCst) => {
                    tracing::warn!("cannot tell the agent that {id} failed: {e}");
                    return;
                }
                Err(_) => std::thread::sleep(NOTICE_PAUSE),
            }
        }
    }
}

/// The text of the notice for a process that failed.
fn notice_text(record: &Meta) -> String {
    let label = match &record.name {
        Some(name) => format!("{} ({name:?})", record.id),
        None => record.id.clone(),
    };
    let command = if record.command.len() > NOTICE_COMMAND {
        let mut end = NOTICE_COMMAND;
        while !record.command.is_char_boundary(end) {
            end -= 1;
        }
        format!("{} …", &record.command[..end])
    } else {
        record.command.clone()
    };
    let stderr = match tail::tail(Path::new(&record.stderr), NOTICE_LINES, NOTICE_BYTES) {
        Ok(t) if t.text.trim().is_empty() => "(stderr is empty)".to_owned(),
        Ok(t) => t.text,
        Err(e) => format!("(cannot read {}: {e})", record.stderr),
    };
    format!(
        "Background process {label} {}.\nCommand: {command}\nDirectory: {}\n\
         Last lines of its stderr ({}):\n{}",
        ended(record),
        record.cwd,
        record.stderr,
        stderr.trim_end()
    )
}

/// The summary part of a failure's notice: the cheap model's reading of
/// the last [`SUMMARY_LINES`] lines of stderr, or why there is none.
fn stderr_summary(record: &Meta, summarize: &Summarize) -> String {
    let stderr = match tail::tail(Path::new(&record.stderr), SUMMARY_LINES, SUMMARY_BYTES) {
        Ok(t) if t.text.trim().is_empty() => return String::new(),
        Ok(t) => t.text,
        Err(_) => return String::new(),
    };
    let about = format!(
        "the last {SUMMARY_LINES} lines of stderr of the background process `{}`, which {}",
        record
            .command
            .chars()
            .take(NOTICE_COMMAND)
            .collect::<String>(),
        ended(record)
    );
    match summarize(&about, &stderr) {
        Ok(summary) => format!(
            "\nSummary of its last {SUMMARY_LINES} stderr lines (by the cheap model):\n{summary}"
        ),
        Err(why) => {
            tracing::info!("no summary of a failed process's stderr: {why}");
            String::new()
        }
    }
}

/// How a record says the process ended, in words.
fn ended(record: &Meta) -> String {
    match (record.status, record.exit_code, &record.signal) {
        (Status::Running, ..) => "is running".into(),
        (Status::Gone, ..) => "is gone (it ended while no daemon was watching)".into(),
        (_, Some(code), _) => format!("exited with code {code}"),
        (_, None, Some(signal)) => format!("was killed by {signal}"),
        (_, None, None) => "ended".into(),
    }
}

/// A record as the tools return it: its fields plus `alive`.
fn shown(record: &Meta, alive: bool) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut value {
        map.insert("alive".into(), alive.into());
    }
    value
}

/// The `id` argument, checked to be `proc-<n>` (it names a folder).
fn process_id<'a>(args: &Args<'a>) -> Result<&'a str, PluginError> {
    let id = args.text("id")?;
    if number_of(id).is_none() {
        return Err(invalid(
            "id",
            &format!("expected an id like proc-3, as process_start returns, got {id:?}"),
        ));
    }
    Ok(id)
}

/// `n` of `proc-<n>`.
fn number_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("proc-")?;
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Kills a process just started that cannot be kept, and reaps it.
fn abandon(mut child: Child) {
    let _ = spawn::signal_group(child.id() as i32, libc::SIGKILL);
    let _ = child.wait();
}

/// Whether the process and every other member of its group are gone.
fn group_gone(record: &Meta) -> bool {
    !record.is_alive() && !meta::group_alive(record.pid)
}

fn send(pgid: i32, signal: i32) -> Result<(), PluginError> {
    spawn::signal_group(pgid, signal).map(|_| ()).map_err(|e| {
        PluginError::failed(format!(
            "cannot send {} to process group {pgid}: {e}",
            spawn::signal_name(signal)
        ))
    })
}

/// Polls `done` every 20 ms for at most `limit`; whether it came true.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
