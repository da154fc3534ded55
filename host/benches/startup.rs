//! Benchmark: how fast `hearth run` answers and becomes ready with the
//! bundled config, and how much it holds once idle, beside NullClaw (a Zig
//! peer) measured in the same loop when `HEARTH_BENCH_NULLCLAW` names its
//! binary (`scripts/build-nullclaw` builds one).
//!
//! Each run starts the release binary with `config/hearth.toml` (its canvas
//! moved to a free port) in a fresh `$HEARTH_HOME`, with `NOTIFY_SOCKET`
//! pointing at a socket of ours, and times the spawn until `READY=1`
//! arrives and until a `GET /` on the canvas's port has a status line back,
//! then starts it again on the same home, as a daemon restarts (no schema
//! to create).
//! NullClaw's runs alternate with hearth's: its gateway and web channel,
//! timed to the gateway's answer to `GET /health` (it sends no `READY=1`).
//! Memory runs then let each daemon idle and read `VmRSS`, `Pss` and
//! `Threads` from `/proc`, the daemon's own and with every process it
//! started (hearth's Lua workers), at 10 s, and, with `HEARTH_BENCH_LONG=1`,
//! again at 5 minutes, to show it does not grow. Medians over the runs are
//! printed, and the headline figures as `figure:` lines for
//! `scripts/bench-all`; NullClaw's as `(peer: ...)` lines with the ratio.
//!
//! Last, what the MCP plugin costs an idle daemon with no server
//! configured, and the browser plugin one that never used it: runs with
//! each as shipped and with `[plugins.NAME] enabled = false` alternate,
//! and the medians' difference is the figure (its code is in the binary
//! either way; this is what loading it adds).
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth --bench startup`
//! (add `HEARTH_BENCH_LONG=1` for the 5-minute sample,
//! `HEARTH_BENCH_BIN=target/dist/hearth` to measure the `dist` build, and
//! `HEARTH_BENCH_NULLCLAW=target/nullclaw/bin/nullclaw` for the peer).

#[path = "common/peer.rs"]
mod peer;

use peer::{Idle, NullClaw, first_http_answer, stripped_size};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs timed to the first HTTP answer and to ready (each daemon's).
const READY_RUNS: usize = 21;
/// Runs left to idle for the memory figures (each daemon's).
const MEMORY_RUNS: usize = 3;
/// Pairs of idle runs with and without the MCP (or the browser) plugin.
const MCP_PAIRS: usize = 3;
const SHORT_IDLE: Duration = Duration::from_secs(10);
const LONG_IDLE: Duration = Duration::from_secs(300);

fn main() {
    let target = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(PathBuf::from))
        .expect("bench binary lives in <profile>/deps");
    // HEARTH_BENCH_BIN measures another build (the `dist` profile's, or a
    // copy kept still inside target/) with this one bench binary.
    let bin = peer::env_path("HEARTH_BENCH_BIN").unwrap_or_else(|| target.join("hearth"));
    assert!(
        bin.is_file(),
        "build first: cargo build --release --workspace"
    );
    let long = std::env::var_os("HEARTH_BENCH_LONG").is_some();
    let nullclaw = NullClaw::from_env();

    let (mut http, mut ready, mut peer_http) = (Vec::new(), Vec::new(), Vec::new());
    let (mut http_again, mut ready_again) = (Vec::new(), Vec::new());
    for _ in 0..READY_RUNS {
        let daemon = Daemon::start(&bin, "");
        http.push(ms(daemon.first_http));
        ready.push(ms(daemon.ready));
        // The same home again, as a daemon restarts: no schema to create.
        let daemon = Daemon::start_in(&bin, "", daemon.stop());
        http_again.push(ms(daemon.first_http));
        ready_again.push(ms(daemon.ready));
        daemon.stop();
        if let Some(nullclaw) = &nullclaw {
            let peer = nullclaw.start();
            peer_http.push(ms(peer.first_http));
            peer.stop();
        }
    }

    let (mut at_10s, mut at_5min) = (Vec::new(), Vec::new());
    let (mut peer_10s, mut peer_5min) = (Vec::new(), Vec::new());
    let mut plugins = 0;
    for run in 0..MEMORY_RUNS {
        let daemon = Daemon::start(&bin, "");
        idle(
            daemon.child.id(),
            long && run == 0,
            &mut at_10s,
            &mut at_5min,
        );
        plugins = count_plugin_files(daemon.child.id());
        daemon.stop();
        if let Some(nullclaw) = &nullclaw {
            let peer = nullclaw.start();
            idle(peer.pid(), long && run == 0, &mut peer_10s, &mut peer_5min);
            peer.stop();
        }
    }

    println!("startup: `hearth run --config config/hearth.toml`, {plugins} plugin files mapped");
    match &nullclaw {
        Some(n) => println!(
            "  beside NullClaw `gateway` with its web channel ({}), runs alternating",
            n.bin.display()
        ),
        None => println!("  NullClaw not measured: {}", NullClaw::HOW),
    }
    let peer = |samples: &mut Vec<f64>| (!samples.is_empty()).then(|| median(samples));
    let http = (median(&mut http), peer(&mut peer_http));
    figure("start to first HTTP answer median", "ms", http, 6.0, 2);
    println!(
        "  spawn to READY=1 over {READY_RUNS} runs: median {:.2} ms, min {:.2} ms, max {:.2} ms",
        median(&mut ready),
        ready[0],
        ready[READY_RUNS - 1]
    );
    figure(
        "start to ready median",
        "ms",
        (median(&mut ready), None),
        15.0,
        2,
    );
    let again = (median(&mut http_again), None);
    figure("restart to first HTTP answer median", "ms", again, 6.0, 2);
    let again = (median(&mut ready_again), None);
    figure("restart to ready median", "ms", again, 15.0, 2);
    idle_figures("at 10 s", &at_10s, &peer_10s);
    let size = |bin: &Path| stripped_size(bin) as f64 / 1e6;
    let sizes = (size(&bin), nullclaw.as_ref().map(|n| size(&n.bin)));
    // The target is the size issue 37 was filed with.
    figure("stripped binary size", "MB", sizes, 20.2, 2);
    for (plugin, what) in [
        ("mcp", "the MCP plugin with no server"),
        ("browser", "the browser plugin, never used"),
    ] {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        let off = format!("\n[plugins.{plugin}]\nenabled = false\n");
        for _ in 0..MCP_PAIRS {
            for (extra, samples) in [("", &mut with), (off.as_str(), &mut without)] {
                let daemon = Daemon::start(&bin, extra);
                std::thread::sleep(SHORT_IDLE);
                samples.push(Idle::of(daemon.child.id()));
                daemon.stop();
            }
        }
        let (with, without) = (Idle::median(&with), Idle::median(&without));
        let added_kib = with.rss.saturating_sub(without.rss);
        println!(
            "  {what} (medians of {MCP_PAIRS} alternating runs): VmRSS {:.2} MiB loaded, \
             {:.2} MiB switched off",
            mib(with.rss),
            mib(without.rss)
        );
        println!(
            "figure: idle VmRSS added by {what}: {:.3} MB (target <= 0.5)",
            added_kib as f64 * 1024.0 / 1e6
        );
    }
    if !at_5min.is_empty() {
        idle_figures("at 5 min", &at_5min, &peer_5min);
    }
}

/// Idles the daemon `pid`: a sample at 10 s and, when `long`, at 5 min.
fn idle(pid: u32, long: bool, at_10s: &mut Vec<Idle>, at_5min: &mut Vec<Idle>) {
    std::thread::sleep(SHORT_IDLE);
    at_10s.push(Idle::of(pid));
    if long {
        std::thread::sleep(LONG_IDLE - SHORT_IDLE);
        at_5min.push(Idle::of(pid));
    }
}

/// The idle figures of one sampling time (`when`), medians of the samples.
fn idle_figures(when: &str, ours: &[Idle], theirs: &[Idle]) {
    let (us, them) = (
        Idle::median(ours),
        (!theirs.is_empty()).then(|| Idle::median(theirs)),
    );
    println!(
        "  idle {when} (median of {}): VmRSS {:.2} MiB, PSS {:.2} MiB; with its {} descendant \
         processes VmRSS {:.2} MiB, PSS {:.2} MiB; {} threads",
        ours.len(),
        mib(us.rss),
        mib(us.pss),
        us.descendants,
        mib(us.tree_rss),
        mib(us.tree_pss),
        us.threads
    );
    let both = |key: fn(&Idle) -> u64, scale: f64| {
        (
            key(&us) as f64 / scale,
            them.map(|t| key(&t) as f64 / scale),
        )
    };
    // The daemon alone, under the names these figures have always had.
    figure(
        &format!("idle VmRSS {when}"),
        "MiB",
        both(|m| m.rss, 1024.0),
        15.0,
        2,
    );
    if when == "at 10 s" {
        figure(
            &format!("idle PSS {when}"),
            "MiB",
            both(|m| m.pss, 1024.0),
            15.0,
            2,
        );
    }
    let tree_rss = both(|m| m.tree_rss, 1024.0);
    figure(
        &format!("idle VmRSS {when} with descendants"),
        "MiB",
        tree_rss,
        6.0,
        2,
    );
    let tree_pss = both(|m| m.tree_pss, 1024.0);
    figure(
        &format!("idle PSS {when} with descendants"),
        "MiB",
        tree_pss,
        6.0,
        2,
    );
    let descendants = both(|m| m.descendants, 1.0);
    figure(
        &format!("idle descendant processes {when}"),
        "processes",
        descendants,
        0.0,
        0,
    );
    figure(
        &format!("idle threads {when}"),
        "threads",
        both(|m| m.threads, 1.0),
        12.0,
        0,
    );
}

/// Prints hearth's figure `name` against its target and, when NullClaw was
/// measured, NullClaw's on the next line with hearth's ratio to it.
fn figure(
    name: &str,
    unit: &str,
    (ours, theirs): (f64, Option<f64>),
    target: f64,
    decimals: usize,
) {
    println!("figure: {name}: {ours:.decimals$} {unit} (target <= {target})");
    if let Some(theirs) = theirs {
        let ratio = if theirs > 0.0 {
            format!("{:.2}x", ours / theirs)
        } else {
            "-".to_owned()
        };
        println!(
            "figure: NullClaw {name}: {theirs:.decimals$} {unit} (peer: hearth/NullClaw {ratio})"
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Sorts `samples` and returns the middle one.
fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// A daemon started for one run, in its own `$HEARTH_HOME`.
struct Daemon {
    child: Child,
    ready: Duration,
    first_http: Duration,
    home: tempfile::TempDir,
}

impl Daemon {
    /// Starts with the bundled config and `extra` appended to it, in a
    /// fresh home; returns once `READY=1` has come and the canvas has
    /// answered a `GET /`.
    fn start(bin: &Path, extra: &str) -> Daemon {
        Daemon::start_in(bin, extra, tempfile::tempdir().expect("temp dir"))
    }

    /// Like [`Daemon::start`], in `home` (a stopped daemon's, for a restart).
    fn start_in(bin: &Path, extra: &str, home: tempfile::TempDir) -> Daemon {
        let sock_path = home.path().join("notify.sock");
        let _ = std::fs::remove_file(&sock_path);
        let sock = UnixDatagram::bind(&sock_path).expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let config = home.path().join("hearth.toml");
        let (text, port) = bundled_config();
        std::fs::write(&config, text + extra).expect("config");
        let start = Instant::now();
        let mut child = Command::new(bin)
            .arg("--config")
            .arg(&config)
            .arg("run")
            .env("HEARTH_HOME", home.path())
            .env("NOTIFY_SOCKET", &sock_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn hearth");
        // READY=1 is timed by a thread of its own while this one polls HTTP.
        let ready = std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            let n = sock.recv(&mut buf).expect("READY=1");
            assert!(buf[..n].starts_with(b"READY=1"));
            start.elapsed()
        });
        let first_http = first_http_answer(&mut child, port, "/", start);
        Daemon {
            child,
            ready: ready.join().expect("READY=1"),
            first_http,
            home,
        }
    }

    /// Stops the daemon and hands back its home.
    fn stop(mut self) -> tempfile::TempDir {
        // SAFETY: kill(2) on the child we spawned.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "hearth exited with {status}");
        self.home
    }
}

/// `config/hearth.toml` as shipped, with its relative paths made absolute
/// and its canvas on a free port (returned), so runs never collide with a
/// daemon that is already serving on 8080.
fn bundled_config() -> (String, u16) {
    let config_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    let text = std::fs::read_to_string(config_dir.join("hearth.toml")).expect("bundled config");
    let [port] = peer::free_ports();
    let text = text
        .replace(
            "\"../scripts\"",
            &format!("{:?}", config_dir.join("../scripts")),
        )
        .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
    (text, port)
}

fn count_plugin_files(pid: u32) -> usize {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut libs: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("libhearth_plugin_"))
        .collect();
    libs.sort();
    libs.dedup();
    libs.len()
}
