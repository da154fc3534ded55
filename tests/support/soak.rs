//! The soak: the real daemon with every bundled plugin (canvas, shell, fs,
//! web, MCP, Telegram and Signal against their fakes, the echo and hello-c
//! examples) and the fake model, driven at a steady rate for a long time
//! while canvas browsers come and go, and watched through `/proc` for the
//! growth that only shows after hours: memory, file descriptors, threads.
//!
//! The short form is `tests/soak.rs` (in the default `cargo test`), the
//! long one `tests/benches/soak.rs`; both run [`run`] and judge its
//! [`Report`] by the same criteria ([`Report::failures`]).
//!
//! Messages go round the four ways in (Telegram, the canvas, the control
//! socket, Signal), each saying `soak-N`. The fake model answers each
//! from its number: every eighth plain, the others with a tool first
//! (a Lua tool, `shell_exec`, `read_file`, the two example plugins, `web_fetch`,
//! an MCP tool, `canvas_show`), then `done soak-N.`, which the driver
//! reads back on the channel the message came from.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Hearth;
use crate::canvas::{Canvas, Frame, Ws};
use crate::fake_llm::{FakeLlm, Reply, anthropic_text, anthropic_tool_uses};
use crate::fake_signal::FakeSignal;
use crate::fake_telegram::FakeTelegram;

/// How long and how hard to soak.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long messages are sent.
    pub duration: Duration,
    /// Messages per second, over all channels.
    pub rate: f64,
    /// Print each sample as it is taken (for the long form, so a run cut
    /// short still shows what it saw).
    pub live: bool,
}

/// What `/proc` said about the daemon at one moment.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Since the load started.
    pub at: Duration,
    /// `VmRSS`, KiB.
    pub rss_kib: u64,
    /// `Pss` from `smaps_rollup`, KiB, where the kernel has it.
    pub pss_kib: Option<u64>,
    /// Entries of `/proc/PID/fd`.
    pub fds: u64,
    /// `Threads`.
    pub threads: u64,
    /// Live child processes (Lua workers, the MCP server, shell commands).
    pub children: u64,
    /// Messages sent so far.
    pub sent: usize,
    /// Messages answered so far.
    pub answered: usize,
}

/// Everything a soak saw.
pub struct Report {
    /// What was asked for.
    pub options: Options,
    /// The samples taken while messages were being sent.
    pub samples: Vec<Sample>,
    /// One sample once every message was answered and the load had
    /// stopped (shown, not judged).
    pub idle: Sample,
    /// Messages sent.
    pub sent: usize,
    /// Messages answered (once each).
    pub answered: usize,
    /// Answers beyond the first to one message.
    pub duplicates: usize,
    /// Send to answer, sorted.
    pub latencies: Vec<Duration>,
    /// Tool calls the model asked for, by tool.
    pub tool_calls: BTreeMap<String, usize>,
    /// Tool results that came back as errors (the first few, in full).
    pub tool_errors: Vec<String>,
    /// Canvas browsers that connected and left.
    pub canvas_visits: usize,
    /// Warnings and errors in the daemon's log, and what went wrong in
    /// the driver (the first few).
    pub problems: Vec<String>,
    /// How many problems there were in all.
    pub problem_count: usize,
    /// Warnings logged before the load started (shown, not judged).
    pub start_warnings: Vec<String>,
    /// The daemon's exit after SIGTERM.
    pub exit: String,
}

/// The most the RSS may grow from after warm-up to the end, in percent.
pub const RSS_DRIFT_MAX: f64 = 10.0;
/// The most open file descriptors may grow past the after-warm-up count:
/// a sample can catch a few connections in flight (a model request, a
/// `web_fetch`, a browser connecting, a Lua worker's pipes being made).
pub const FD_SLACK: u64 = 16;
/// The most threads may grow past the after-warm-up count: tokio's
/// blocking pool starts threads for tool calls and lets them go after
/// 10 s idle, so a sample sees a few more or fewer.
pub const THREAD_SLACK: u64 = 8;
/// How long to wait for the last answers once sending stops.
const DRAIN: Duration = Duration::from_secs(120);

impl Options {
    /// `HEARTH_SOAK_SECS` seconds (else `default_secs`) at
    /// `HEARTH_SOAK_RATE` messages per second (else 10).
    pub fn from_env(default_secs: u64) -> Options {
        let number = |name: &str| {
            std::env::var(name).ok().map(|v| {
                v.trim()
                    .parse::<f64>()
                    .unwrap_or_else(|e| panic!("{name}={v:?} is not a number: {e}"))
            })
        };
        let secs = number("HEARTH_SOAK_SECS").unwrap_or(default_secs as f64);
        let rate = number("HEARTH_SOAK_RATE").unwrap_or(10.0);
        assert!(secs >= 10.0, "HEARTH_SOAK_SECS must be at least 10");
        assert!(rate > 0.0, "HEARTH_SOAK_RATE must be above 0");
        Options {
            duration: Duration::from_secs_f64(secs),
            rate,
            live: false,
        }
    }

    /// The first fifth of the run: what fills up once and then stays
    /// (SQLite's page caches, the allocator's per-thread arenas, tokio's
    /// blocking pool at its working size, the Lua worker pool, every
    /// conversation's first compaction) settles in it, and growth after
    /// it is what would keep growing.
    pub fn warm_up(&self) -> Duration {
        self.duration / 5
    }

    /// How often `/proc` is read: about 120 samples, 2 to 10 s apart.
    pub fn sample_every(&self) -> Duration {
        (self.duration / 120).clamp(Duration::from_secs(2), Duration::from_secs(10))
    }
}

/// Runs the soak and reports what it saw.
pub fn run(options: &Options) -> Report {
    let rig = Rig::start();
    let stop = Arc::new(AtomicBool::new(false));
    let tracker = Arc::new(Tracker::default());
    let problems = Arc::clone(&rig.problems);

    let canvas = Canvas::of(rig.home.home());
    let visits = Arc::new(AtomicUsize::new(0));
    let (to_canvas, outbox) = channel();
    let browser = spawn(
        "soak-browser",
        Browser {
            canvas: Canvas::of(rig.home.home()),
            socket: None,
            outbox,
            tracker: Arc::clone(&tracker),
            problems: Arc::clone(&problems),
        },
        &stop,
    );
    let visitors = spawn(
        "soak-visitors",
        Visitors {
            canvas,
            problems: Arc::clone(&problems),
            visits: Arc::clone(&visits),
            open: VecDeque::new(),
            cookies: Vec::new(),
            next: Instant::now(),
        },
        &stop,
    );
    let mut control = Control::connect(rig.home.home(), &tracker, &problems);
    let replies = spawn(
        "soak-replies",
        Replies {
            telegram: Arc::clone(&rig.telegram),
            signal: Arc::clone(&rig.signal),
            tracker: Arc::clone(&tracker),
            seen: (0, 0),
        },
        &stop,
    );

    let pid = rig.pid();
    problems.loading.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let (samples, tracker, stop) = (
            Arc::clone(&samples),
            Arc::clone(&tracker),
            Arc::clone(&stop),
        );
        let every = options.sample_every();
        let live = options.live;
        thread::Builder::new()
            .name("soak-sampler".into())
            .spawn(move || {
                let mut next = started;
                while !stop.load(Ordering::SeqCst) {
                    if Instant::now() >= next {
                        let sample = sample(pid, started, &tracker);
                        if live {
                            println!("sample: {}", row(&sample));
                        }
                        lock(&samples).push(sample);
                        next += every;
                    }
                    thread::sleep(Duration::from_millis(50));
                }
            })
            .expect("spawn the sampler")
    };

    let mut n = 0usize;
    while started.elapsed() < options.duration {
        let due = started + Duration::from_secs_f64(n as f64 / options.rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        let text = format!("soak-{n}: {}", ASKS[step(n)]);
        tracker.sent(n);
        match n % 4 {
            0 => {
                let chat = FIRST_CHAT + (n / 4 % CHATS as usize) as i64;
                rig.telegram.push_message(chat, chat, &text);
            }
            1 => {
                let frame = json!({"type": "send", "id": format!("soak-{n}"), "text": text});
                // The browser thread ends only at `stop`.
                let _ = to_canvas.send(frame.to_string());
            }
            2 => control.chat(&format!("ctl-{}", n / 4 % CONTROL_CHATS), &text),
            _ => {
                rig.signal.push_message(SIGNAL_OWNER, &text);
            }
        }
        n += 1;
    }
    let sent = n;
    // The judged samples end with the load.
    let judged = lock(&samples).len();
    let drained = Instant::now();
    while tracker.answered() < sent && drained.elapsed() < DRAIN {
        thread::sleep(Duration::from_millis(100));
    }
    // A moment for an answer sent twice to show.
    thread::sleep(Duration::from_secs(2));
    let idle = sample(pid, started, &tracker);
    stop.store(true, Ordering::SeqCst);
    for worker in [browser, visitors, replies, sampler] {
        if worker.join().is_err() {
            problems.note("a driver thread panicked".into());
        }
    }
    drop(control);
    let (tool_calls, tool_errors) = rig.model.summary();
    let exit = rig.stop();
    let (answered, duplicates, latencies) = tracker.summary();
    let samples = lock(&samples)[..judged].to_vec();
    let seen = problems.summary();
    Report {
        options: options.clone(),
        samples,
        idle,
        sent,
        answered,
        duplicates,
        latencies,
        tool_calls,
        tool_errors,
        canvas_visits: visits.load(Ordering::SeqCst),
        problems: seen.kept,
        problem_count: seen.count,
        start_warnings: seen.at_start,
        exit,
    }
}

/// RSS, PSS, fds and threads taken together: the median of a few samples.
#[derive(Clone, Copy, Debug)]
pub struct Figures {
    /// `VmRSS`, KiB.
    pub rss_kib: u64,
    /// `Pss`, KiB, when known.
    pub pss_kib: Option<u64>,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
}

impl Report {
    /// The first sample, taken as the load started.
    pub fn at_start(&self) -> Option<Figures> {
        self.samples
            .first()
            .map(|s| figures(std::slice::from_ref(s)))
    }

    /// The median of the first three samples taken after warm-up: one
    /// sample could land on a burst (a compaction, a Lua worker starting).
    pub fn after_warm_up(&self) -> Option<Figures> {
        let warm_up = self.options.warm_up();
        let after: Vec<Sample> = self
            .samples
            .iter()
            .filter(|s| s.at >= warm_up)
            .take(3)
            .copied()
            .collect();
        (!after.is_empty()).then(|| figures(&after))
    }

    /// The median of the last three samples under load.
    pub fn at_end(&self) -> Option<Figures> {
        let from = self.samples.len().saturating_sub(3);
        (from < self.samples.len()).then(|| figures(&self.samples[from..]))
    }

    /// How far the RSS moved from after warm-up to the end, in percent.
    pub fn rss_drift(&self) -> Option<f64> {
        let (base, end) = (self.after_warm_up()?, self.at_end()?);
        Some((end.rss_kib as f64 - base.rss_kib as f64) * 100.0 / base.rss_kib as f64)
    }

    /// The latency at quantile `q` (0 to 1), if any message was answered.
    pub fn latency(&self, q: f64) -> Option<Duration> {
        let last = self.latencies.len().checked_sub(1)?;
        Some(self.latencies[(last as f64 * q).round() as usize])
    }

    /// Every pass criterion the run missed, said plainly; empty when it
    /// passed.
    pub fn failures(&self) -> Vec<String> {
        let mut failed = Vec::new();
        let (Some(base), Some(end)) = (self.after_warm_up(), self.at_end()) else {
            return vec![format!(
                "too few samples after warm-up ({} in all)",
                self.samples.len()
            )];
        };
        if let Some(drift) = self.rss_drift()
            && drift > RSS_DRIFT_MAX
        {
            failed.push(format!(
                "RSS grew {drift:.1}% after warm-up ({} -> {} KiB; at most {RSS_DRIFT_MAX}%)",
                base.rss_kib, end.rss_kib
            ));
        }
        if end.fds > base.fds + FD_SLACK {
            failed.push(format!(
                "open fds grew from {} to {} (slack {FD_SLACK})",
                base.fds, end.fds
            ));
        }
        if end.threads > base.threads + THREAD_SLACK {
            failed.push(format!(
                "threads grew from {} to {} (slack {THREAD_SLACK})",
                base.threads, end.threads
            ));
        }
        if self.answered != self.sent {
            failed.push(format!(
                "{} of {} messages unanswered",
                self.sent - self.answered,
                self.sent
            ));
        }
        if self.duplicates > 0 {
            failed.push(format!("{} messages answered twice", self.duplicates));
        }
        if !self.tool_errors.is_empty() {
            failed.push(format!("tool calls failed: {:?}", self.tool_errors));
        }
        if self.problem_count > 0 {
            failed.push(format!(
                "{} warnings or errors in the log or the driver",
                self.problem_count
            ));
        }
        if self.exit != "0" {
            failed.push(format!("the daemon's exit on SIGTERM: {}", self.exit));
        }
        failed
    }

    /// Prints the figures, the problems and a compact time series.
    pub fn print(&self) {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let pss = |f: Option<u64>| f.map_or("-".into(), |k| format!("{:.1}", mib(k)));
        let o = &self.options;
        println!(
            "soak: {:.0} s at {} msg/s, warm-up {:.0} s, a sample every {:.1} s",
            o.duration.as_secs_f64(),
            o.rate,
            o.warm_up().as_secs_f64(),
            o.sample_every().as_secs_f64()
        );
        println!(
            "messages: {} sent, {} answered, {} answered twice; canvas visits: {}",
            self.sent, self.answered, self.duplicates, self.canvas_visits
        );
        let ms = |q| self.latency(q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        println!(
            "reply latency: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            ms(0.5),
            ms(0.99),
            ms(1.0)
        );
        println!("tool calls: {:?}", self.tool_calls);
        for (name, f) in [
            ("at start", self.at_start()),
            ("after warm-up", self.after_warm_up()),
            ("at end", self.at_end()),
        ] {
            if let Some(f) = f {
                println!(
                    "{name:>14}: RSS {:.1} MiB, PSS {} MiB, {} fds, {} threads",
                    mib(f.rss_kib),
                    pss(f.pss_kib),
                    f.fds,
                    f.threads
                );
            }
        }
        println!(
            "{:>14}: RSS {:.1} MiB, PSS {} MiB, {} fds, {} threads",
            "idle after",
            mib(self.idle.rss_kib),
            pss(self.idle.pss_kib),
            self.idle.fds,
            self.idle.threads
        );
        if let Some(drift) = self.rss_drift() {
            println!("RSS drift after warm-up: {drift:+.1}% (at most {RSS_DRIFT_MAX}%)");
            println!(
                "figure: soak RSS drift after warm-up: {drift:.1} % (target <= {RSS_DRIFT_MAX})"
            );
        }
        println!("exit on SIGTERM: {}", self.exit);
        println!("time series (s, RSS MiB, PSS MiB, fds, threads, children, sent, answered):");
        let stride = self.samples.len().div_ceil(60).max(1);
        for s in self.samples.iter().step_by(stride) {
            println!("  {}", row(s));
        }
        for w in &self.start_warnings {
            println!("warned before the load (not judged): {w}");
        }
        if self.problem_count > 0 {
            println!("problems ({} in all, the first shown):", self.problem_count);
            for p in &self.problems {
                println!("  {p}");
            }
        }
    }
}

/// What the model is asked, by [`step`].
const ASKS: [&str; 8] = [
    "just say hi",
    "convert some units",
    "run a harmless command",
    "read the notes file",
    "call the example plugins",
    "fetch a page",
    "call the MCP tool",
    "draw a note",
];

/// Which of [`ASKS`] message `n` makes; every channel sees each.
fn step(n: usize) -> usize {
    n / 4 % ASKS.len()
}

/// Telegram chats the messages rotate over, all the owner's.
const CHATS: i64 = 8;
const FIRST_CHAT: i64 = 1001;
/// Control-socket conversations the messages rotate over.
const CONTROL_CHATS: usize = 4;
const TELEGRAM_TOKEN: &str = "4242:soak-token";
const SIGNAL_ACCOUNT: &str = "+15550000001";
const SIGNAL_OWNER: &str = "+15550000002";
/// How many problems are kept in full (the rest are counted).
const PROBLEMS_KEPT: usize = 30;

/// The daemon, its home and the fakes it talks to.
struct Rig {
    home: Hearth,
    child: Child,
    telegram: Arc<FakeTelegram>,
    signal: Arc<FakeSignal>,
    model: Model,
    problems: Arc<Problems>,
    log: Option<JoinHandle<()>>,
}

impl Rig {
    fn start() -> Rig {
        let telegram = Arc::new(FakeTelegram::start(TELEGRAM_TOKEN));
        let signal = Arc::new(FakeSignal::start(SIGNAL_ACCOUNT));
        let llm = FakeLlm::start();
        let canvas_port = free_port();
        let notes = tempfile::NamedTempFile::new().expect("a notes file");
        std::fs::write(notes.path(), "soak notes\n".repeat(50)).expect("write the notes");
        let model = Model::new(llm, notes, canvas_port);
        let chats: Vec<String> = (FIRST_CHAT..FIRST_CHAT + CHATS)
            .map(|c| c.to_string())
            .collect();
        let config = format!(
            "[plugins.canvas]\nlisten = \"127.0.0.1:{canvas_port}\"\n\
             [plugins.web]\nallow_hosts = [\"127.0.0.1:{canvas_port}\"]\n\
             [plugins.telegram]\ntoken = {TELEGRAM_TOKEN:?}\napi_url = {tg:?}\n\
             allowed_chat_ids = [{chats}]\npoll_timeout_s = 10\npace_chat_ms = 0\npace_global_per_s = 1000\n\
             [plugins.signal]\nurl = {sig:?}\naccount = {SIGNAL_ACCOUNT:?}\nallowed_numbers = [{SIGNAL_OWNER:?}]\n\
             [plugins.mcp.servers.soak]\ncommand = \"node\"\nargs = [{mcp:?}]\nrisk = \"read\"\nstart = \"eager\"\n\
             [scripts]\nbundled_dir = {scripts:?}\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = {llm:?}\n\
             api_key_env = \"HEARTH_SOAK_KEY\"\n",
            tg = telegram.url(),
            chats = chats.join(", "),
            sig = signal.url(),
            mcp = mcp_server().display().to_string(),
            scripts = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scripts")
                .display()
                .to_string(),
            llm = model.url(),
        );
        let home = Hearth::new(&config);
        let mut child = home
            .command(&["--log-format", "json", "--log-level", "info", "run"])
            .env("HEARTH_SOAK_KEY", "soak-key")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start hearth run");
        let problems = Arc::new(Problems::default());
        let (ready_tx, ready) = channel();
        let stderr = child.stderr.take().expect("piped stderr");
        let log = {
            let problems = Arc::clone(&problems);
            thread::Builder::new()
                .name("soak-log".into())
                .spawn(move || read_log(stderr, &ready_tx, &problems))
                .expect("spawn the log reader")
        };
        if ready.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = child.kill();
            panic!(
                "the daemon did not get ready; its warnings: {:?}",
                problems.summary().at_start
            );
        }
        let rig = Rig {
            home,
            child,
            telegram,
            signal,
            model,
            problems,
            log: Some(log),
        };
        rig.wait_for_tools();
        assert!(
            rig.signal.wait_for_streams(1, Duration::from_secs(30)),
            "the Signal plugin opened no event stream"
        );
        rig
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until every tool the model will ask for is offered (the MCP
    /// server's come once it has started).
    fn wait_for_tools(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let run = self.home.cmd(&["tools", "--json"]);
            let listed = if run.status.success() {
                run.stdout.as_str()
            } else {
                ""
            };
            let missing: Vec<&str> = TOOLS
                .iter()
                .copied()
                .filter(|t| !listed.contains(&format!("\"{t}\"")))
                .collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "tools never offered: {missing:?}\n{}{}",
                run.stdout,
                run.stderr
            );
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM, then the exit status (or why there was none).
    fn stop(mut self) -> String {
        // SAFETY: kill(2) on the child we spawned and have not reaped.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        let exit = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    break status
                        .code()
                        .map_or_else(|| format!("{status}"), |c| c.to_string());
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break "still running 30 s after SIGTERM".into();
                }
                Err(e) => break format!("cannot wait: {e}"),
            }
        };
        if let Some(log) = self.log.take() {
            let _ = log.join();
        }
        exit
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The tools the model asks for, by their names on the wire.
const TOOLS: [&str; 8] = [
    "convert_units",
    "shell_exec",
    "read_file",
    "echo",
    "hello",
    "web_fetch",
    "mcp.soak.echo",
    "canvas_show",
];

/// The fake model and what it counted.
struct Model {
    llm: FakeLlm,
    counts: Arc<Mutex<Counts>>,
    _notes: tempfile::NamedTempFile,
}

#[derive(Default)]
struct Counts {
    calls: BTreeMap<String, usize>,
    errors: Vec<String>,
}

impl Model {
    fn new(llm: FakeLlm, notes: tempfile::NamedTempFile, canvas_port: u16) -> Model {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let seen = Arc::clone(&counts);
        let notes_path = notes.path().display().to_string();
        llm.respond_with(move |request| answer(&request.body, &seen, &notes_path, canvas_port));
        Model {
            llm,
            counts,
            _notes: notes,
        }
    }

    fn url(&self) -> String {
        self.llm.url()
    }

    fn summary(&self) -> (BTreeMap<String, usize>, Vec<String>) {
        let counts = lock(&self.counts);
        (counts.calls.clone(), counts.errors.clone())
    }
}

/// The model's answer to one request: a summary when it offers no tools
/// (a compaction), `done soak-N.` after tool results, else message N's
/// tool calls or, for a plain one, the answer at once.
fn answer(body: &Value, counts: &Mutex<Counts>, notes: &str, canvas_port: u16) -> Reply {
    if body["tools"].as_array().is_none_or(Vec::is_empty) {
        return anthropic_text("The owner sent numbered test messages and got answers.");
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(n) = messages.iter().rev().find_map(soak_number) else {
        return anthropic_text("I see no numbered message.");
    };
    let results: Vec<&Value> = messages
        .last()
        .and_then(|m| m["content"].as_array())
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .collect()
        })
        .unwrap_or_default();
    if !results.is_empty() {
        let mut counts = lock(counts);
        for failed in results.iter().filter(|r| r["is_error"] == true) {
            if counts.errors.len() < 5 {
                counts.errors.push(failed["content"].to_string());
            }
        }
        return anthropic_text(&format!("done soak-{n}."));
    }
    let calls: Vec<(&str, Value)> = match step(n) {
        1 => vec![(
            "convert_units",
            json!({"value": n, "from": "km", "to": "m"}),
        )],
        2 => vec![("shell_exec", json!({"command": "echo soak"}))],
        3 => vec![("read_file", json!({"path": notes}))],
        4 => vec![
            ("echo", json!({"text": format!("soak {n}")})),
            ("hello", json!({"name": "soak"})),
        ],
        5 => vec![(
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{canvas_port}/login")}),
        )],
        6 => vec![("mcp__soak__echo", json!({"text": format!("soak {n}")}))],
        7 => vec![(
            "canvas_show",
            json!({"type": "markdown", "id": "soak-note", "data": {"markdown": format!("note **{n}**")}}),
        )],
        _ => return anthropic_text(&format!("done soak-{n}.")),
    };
    let mut counts = lock(counts);
    let ids: Vec<String> = (0..calls.len())
        .map(|i| format!("toolu_soak_{n}_{i}"))
        .collect();
    let uses: Vec<(&str, &str, Value)> = calls
        .iter()
        .zip(&ids)
        .map(|((name, input), id)| {
            *counts.calls.entry((*name).to_owned()).or_default() += 1;
            (id.as_str(), *name, input.clone())
        })
        .collect();
    anthropic_tool_uses(&uses)
}

/// The N of the first `soak-N` in a user message's text.
fn soak_number(message: &Value) -> Option<usize> {
    if message["role"] != "user" {
        return None;
    }
    let text = match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    number_in(&text)
}

/// The N of the first `soak-N` in `text`.
fn number_in(text: &str) -> Option<usize> {
    let rest = &text[text.find("soak-")? + 5..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// When each message was sent and answered.
#[derive(Default)]
struct Tracker {
    entries: Mutex<Vec<Entry>>,
}

#[derive(Clone, Copy)]
struct Entry {
    sent: Instant,
    answered: Option<Instant>,
    repeats: usize,
}

impl Tracker {
    fn sent(&self, n: usize) {
        let mut entries = lock(&self.entries);
        debug_assert_eq!(entries.len(), n);
        entries.push(Entry {
            sent: Instant::now(),
            answered: None,
            repeats: 0,
        });
    }

    /// Notes the answer to the message whose text held `text`'s number.
    fn answer_in(&self, text: &str) {
        let Some(n) = number_in(text) else { return };
        let now = Instant::now();
        let mut entries = lock(&self.entries);
        if let Some(entry) = entries.get_mut(n) {
            match entry.answered {
                None => entry.answered = Some(now),
                Some(_) => entry.repeats += 1,
            }
        }
    }

    fn answered(&self) -> usize {
        lock(&self.entries)
            .iter()
            .filter(|e| e.answered.is_some())
            .count()
    }

    /// Answered, answered again, and the sorted latencies.
    fn summary(&self) -> (usize, usize, Vec<Duration>) {
        let entries = lock(&self.entries);
        let mut latencies: Vec<Duration> = entries
            .iter()
            .filter_map(|e| e.answered.map(|a| a - e.sent))
            .collect();
        latencies.sort();
        let repeats = entries.iter().map(|e| e.repeats).sum();
        (latencies.len(), repeats, latencies)
    }
}

/// Warnings and errors, from the log and the driver. Until the load
/// starts, warnings are kept apart: a channel says it is still connecting
/// at every start.
#[derive(Default)]
struct Problems {
    loading: AtomicBool,
    seen: Mutex<Seen>,
}

#[derive(Clone, Default)]
struct Seen {
    kept: Vec<String>,
    count: usize,
    at_start: Vec<String>,
}

impl Problems {
    fn note(&self, problem: String) {
        let mut seen = lock(&self.seen);
        if seen.kept.len() < PROBLEMS_KEPT {
            seen.kept.push(problem);
        }
        seen.count += 1;
    }

    /// A log line at WARN (`error` false) or ERROR.
    fn log(&self, line: String, error: bool) {
        if error || self.loading.load(Ordering::SeqCst) {
            self.note(line);
        } else {
            lock(&self.seen).at_start.push(line);
        }
    }

    fn summary(&self) -> Seen {
        lock(&self.seen).clone()
    }
}

/// Reads the daemon's JSON log: says when it is ready, keeps what is
/// WARN or ERROR.
fn read_log(stderr: impl Read, ready: &Sender<()>, problems: &Problems) {
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        let Ok(entry) = serde_json::from_str::<Value>(&line) else {
            problems.note(format!("not a JSON log line: {line}"));
            continue;
        };
        if entry["fields"]["message"] == "ready" {
            let _ = ready.send(());
        }
        match entry["level"].as_str() {
            Some("WARN") => problems.log(line, false),
            Some("ERROR") => problems.log(line, true),
            _ => {}
        }
    }
}

/// A driver thread: `step` called until the soak stops.
trait Worker: Send + 'static {
    fn step(&mut self);
}

fn spawn(name: &str, mut worker: impl Worker, stop: &Arc<AtomicBool>) -> JoinHandle<()> {
    let stop = Arc::clone(stop);
    thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                worker.step();
            }
        })
        .expect("spawn a driver thread")
}

/// The browser that stays: sends the canvas's share of messages and reads
/// the answers.
struct Browser {
    canvas: Canvas,
    socket: Option<Ws>,
    outbox: Receiver<String>,
    tracker: Arc<Tracker>,
    problems: Arc<Problems>,
}

impl Worker for Browser {
    fn step(&mut self) {
        let ws = self.socket.get_or_insert_with(|| self.canvas.connect().0);
        while let Ok(frame) = self.outbox.try_recv() {
            ws.send(&frame);
        }
        match ws.try_next(Duration::from_millis(20)) {
            Some(Frame::Json(f)) if f["type"] == "message" && f["message"]["role"] == "agent" => {
                self.tracker
                    .answer_in(f["message"]["id"].as_str().unwrap_or_default());
            }
            Some(Frame::Json(f)) if f["type"] == "error" => {
                self.problems.note(format!("canvas error frame: {f}"));
            }
            Some(Frame::Closed(code, reason)) => {
                self.problems
                    .note(format!("the canvas closed the browser: {code} {reason}"));
                self.socket = None;
            }
            Some(Frame::Gone(why)) => {
                self.problems
                    .note(format!("the browser's socket broke: {why}"));
                self.socket = None;
            }
            _ => {}
        }
    }
}

/// Browsers that come and go: one arrives about every 1.5 s and stays for
/// three arrivals; every other one leaves with a close frame, the rest by
/// dropping the connection. They keep one of four cookies, as a browser
/// keeps its session, and log in afresh every tenth visit.
struct Visitors {
    canvas: Canvas,
    problems: Arc<Problems>,
    visits: Arc<AtomicUsize>,
    open: VecDeque<Ws>,
    cookies: Vec<String>,
    next: Instant,
}

impl Worker for Visitors {
    fn step(&mut self) {
        if Instant::now() >= self.next {
            self.next = Instant::now() + Duration::from_millis(1500);
            self.visit();
        }
        let mut broken = Vec::new();
        for (i, ws) in self.open.iter_mut().enumerate() {
            while let Some(frame) = ws.try_next(Duration::from_millis(1)) {
                if let Frame::Closed(..) | Frame::Gone(_) = frame {
                    self.problems
                        .note(format!("a visiting browser was cut off: {frame:?}"));
                    broken.push(i);
                    break;
                }
            }
        }
        for i in broken.into_iter().rev() {
            self.open.remove(i);
        }
        thread::sleep(Duration::from_millis(50));
    }
}

impl Visitors {
    fn visit(&mut self) {
        let visit = self.visits.fetch_add(1, Ordering::SeqCst);
        let slot = visit % 4;
        if self.cookies.len() <= slot {
            self.cookies.push(self.canvas.login());
        } else if visit % 10 == 0 {
            self.cookies[slot] = self.canvas.login();
        }
        match self.canvas.ws_with(Some(&self.cookies[slot]), None) {
            Ok(ws) => self.open.push_back(ws),
            Err(status) => self
                .problems
                .note(format!("a visiting browser was refused: {status}")),
        }
        if self.open.len() > 3
            && let Some(leaving) = self.open.pop_front()
        {
            if visit % 2 == 0 {
                leaving.close();
            } else {
                drop(leaving);
            }
        }
    }
}

/// Reads Telegram's and Signal's sent messages as they come.
struct Replies {
    telegram: Arc<FakeTelegram>,
    signal: Arc<FakeSignal>,
    tracker: Arc<Tracker>,
    /// How many of each were read.
    seen: (usize, usize),
}

impl Worker for Replies {
    fn step(&mut self) {
        let telegram = self.telegram.sent();
        for sent in &telegram[self.seen.0..] {
            self.tracker.answer_in(&sent.text);
        }
        let signal = self.signal.sent();
        for sent in &signal[self.seen.1..] {
            self.tracker.answer_in(&sent.message);
        }
        self.seen = (telegram.len(), signal.len());
        thread::sleep(Duration::from_millis(200));
    }
}

/// A control-socket client: sends the terminal's share of messages; a
/// thread reads the replies.
struct Control {
    stream: UnixStream,
    subscribed: Vec<String>,
}

impl Control {
    fn connect(home: &Path, tracker: &Arc<Tracker>, problems: &Arc<Problems>) -> Control {
        let stream =
            UnixStream::connect(home.join("hearth.sock")).expect("connect to the control socket");
        let reader = BufReader::new(stream.try_clone().expect("clone the socket"));
        let (tracker, problems) = (Arc::clone(tracker), Arc::clone(problems));
        thread::Builder::new()
            .name("soak-control".into())
            .spawn(move || {
                for line in reader.lines().map_while(Result::ok) {
                    let Ok(v) = serde_json::from_str::<Value>(&line) else {
                        problems.note(format!("control: not JSON: {line}"));
                        continue;
                    };
                    match v["op"].as_str() {
                        Some("reply") => tracker.answer_in(v["text"].as_str().unwrap_or_default()),
                        Some("error") => problems.note(format!("control: {line}")),
                        _ => {}
                    }
                }
            })
            .expect("spawn the control reader");
        Control {
            stream,
            subscribed: Vec::new(),
        }
    }

    fn chat(&mut self, chat: &str, text: &str) {
        if !self.subscribed.iter().any(|c| c == chat) {
            self.send(&json!({"op": "subscribe", "chat": chat}));
            self.subscribed.push(chat.to_owned());
        }
        self.send(&json!({"op": "chat", "chat": chat, "text": text}));
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stream, "{message}").expect("write to the control socket");
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// One line of the time series.
fn row(s: &Sample) -> String {
    let mib = |kib: u64| kib as f64 / 1024.0;
    let pss = s.pss_kib.map_or("-".into(), |k| format!("{:.1}", mib(k)));
    format!(
        "{:>6.0} {:>7.1} {:>7} {:>4} {:>4} {:>3} {:>7} {:>7}",
        s.at.as_secs_f64(),
        mib(s.rss_kib),
        pss,
        s.fds,
        s.threads,
        s.children,
        s.sent,
        s.answered
    )
}

/// Reads `/proc/PID` now.
fn sample(pid: i32, started: Instant, tracker: &Tracker) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |text: &str, name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    let (sent, answered) = {
        let entries = lock(&tracker.entries);
        (
            entries.len(),
            entries.iter().filter(|e| e.answered.is_some()).count(),
        )
    };
    Sample {
        at: started.elapsed(),
        rss_kib: field(&status, "VmRSS:").unwrap_or(0),
        pss_kib: field(&rollup, "Pss:"),
        fds,
        threads: field(&status, "Threads:").unwrap_or(0),
        children: children(pid),
        sent,
        answered,
    }
}

/// Live processes whose parent is `pid`.
fn children(pid: i32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                // The name is in parentheses and may hold spaces.
                stat.rfind(')').is_some_and(|close| {
                    let mut fields = stat[close + 2..].split(' ');
                    let state = fields.next();
                    let ppid = fields.next().and_then(|f| f.parse::<i32>().ok());
                    ppid == Some(pid) && state != Some("Z")
                })
            })
        })
        .count() as u64
}

/// The per-field median of `samples`.
fn figures(samples: &[Sample]) -> Figures {
    fn median(mut values: Vec<u64>) -> u64 {
        values.sort_unstable();
        values[values.len() / 2]
    }
    let pss: Vec<u64> = samples.iter().filter_map(|s| s.pss_kib).collect();
    Figures {
        rss_kib: median(samples.iter().map(|s| s.rss_kib).collect()),
        pss_kib: (!pss.is_empty()).then(|| median(pss)),
        fds: median(samples.iter().map(|s| s.fds).collect()),
        threads: median(samples.iter().map(|s| s.threads).collect()),
    }
}

/// The MCP plugin's scriptable test server.
fn mcp_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/mcp/tests/fixtures/script_server.mjs")
}

/// A port nobody listens on now, for the canvas (the web plugin's allow
/// list must name it before the daemon starts).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
