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
//!
//! This file holds what the two forms use and the sending loop; the rest
//! is split by concern: `rig` starts and stops the daemon and its fakes,
//! `model` is the fake model's script, `clients` the threads that talk
//! to the daemon, `watch` what is counted and read from `/proc` and the
//! log, and `report` the judging and the printed lines.

mod clients;
mod model;
mod report;
mod rig;
mod watch;

pub use report::{FD_SLACK, Figures, RSS_DRIFT_MAX, Report, THREAD_SLACK};

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::canvas::Canvas;
use clients::{Browser, Control, Replies, Visitors, spawn};
use model::{ASKS, step};
use report::row;
use rig::{CHATS, CONTROL_CHATS, FIRST_CHAT, Rig, SIGNAL_OWNER};
use watch::{Tracker, sample};

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

impl Options {
    /// `HEARTH_SOAK_SECS` seconds (else `default_secs`) at
    /// `HEARTH_SOAK_RATE` messages per second (else `default_rate`).
    pub fn from_env(default_secs: u64, default_rate: f64) -> Options {
        let number = |name: &str| {
            std::env::var(name).ok().map(|v| {
                v.trim()
                    .parse::<f64>()
                    .unwrap_or_else(|e| panic!("{name}={v:?} is not a number: {e}"))
            })
        };
        let secs = number("HEARTH_SOAK_SECS").unwrap_or(default_secs as f64);
        let rate = number("HEARTH_SOAK_RATE").unwrap_or(default_rate);
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

/// How long to wait for the last answers once sending stops.
const DRAIN: Duration = Duration::from_secs(120);

/// Locks `mutex`, taking over a poisoned lock: a worker thread that panicked
/// must not hide the figures of the others.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
