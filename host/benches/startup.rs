//! Benchmark: how fast `hearth run` becomes ready with the bundled config,
//! and how much memory it holds once idle.
//!
//! Each run starts the release binary with `config/hearth.toml` (its canvas
//! moved to a free port) in a fresh `$HEARTH_HOME`, with `NOTIFY_SOCKET`
//! pointing at a socket of ours, and times the spawn until `READY=1`
//! arrives. Memory runs then let the daemon idle and read `VmRSS` and
//! `Pss` from `/proc` (the daemon's own, and with its Lua worker processes
//! added) at 10 s, and, with `HEARTH_BENCH_LONG=1`, again at 5 minutes, to
//! show it does not grow. Medians over the runs are printed, and the
//! headline figures as `figure:` lines for `scripts/bench-all`.
//!
//! Last, what the MCP plugin costs an idle daemon with no server
//! configured, and the browser plugin one that never used it: runs with
//! each as shipped and with `[plugins.NAME] enabled = false` alternate,
//! and the medians' difference is the figure (its code is in the binary
//! either way; this is what loading it adds).
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth --bench startup`
//! (add `HEARTH_BENCH_LONG=1` for the 5-minute sample, and
//! `HEARTH_BENCH_BIN=target/dist/hearth` to measure the `dist` build).

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs timed to ready.
const READY_RUNS: usize = 21;
/// Runs left to idle for the memory figures.
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
    // HEARTH_BENCH_BIN measures another build (the `dist` profile's) with
    // this one bench binary.
    let bin =
        std::env::var_os("HEARTH_BENCH_BIN").map_or_else(|| target.join("hearth"), PathBuf::from);
    assert!(
        bin.is_file(),
        "build first: cargo build --release --workspace"
    );
    let long = std::env::var_os("HEARTH_BENCH_LONG").is_some();

    let mut ready = Vec::new();
    for _ in 0..READY_RUNS {
        let daemon = Daemon::start(&bin, "");
        ready.push(daemon.ready.as_secs_f64() * 1e3);
        daemon.stop();
    }

    let mut at_10s = Vec::new();
    let mut at_5min = Vec::new();
    let mut plugins = 0;
    for run in 0..MEMORY_RUNS {
        let daemon = Daemon::start(&bin, "");
        std::thread::sleep(SHORT_IDLE);
        at_10s.push(daemon.memory());
        plugins = count_plugin_files(daemon.child.id());
        if long && run == 0 {
            std::thread::sleep(LONG_IDLE - SHORT_IDLE);
            at_5min.push(daemon.memory());
        }
        daemon.stop();
    }

    ready.sort_by(f64::total_cmp);
    println!("startup: `hearth run --config config/hearth.toml`, {plugins} plugin files mapped");
    println!(
        "  spawn to READY=1 over {READY_RUNS} runs: median {:.2} ms, min {:.2} ms, max {:.2} ms",
        ready[READY_RUNS / 2],
        ready[0],
        ready[READY_RUNS - 1]
    );
    let at_10s = Memory::median(at_10s);
    at_10s.print("idle at 10 s", MEMORY_RUNS);
    println!(
        "figure: start to ready median: {:.2} ms (target <= 15)",
        ready[READY_RUNS / 2]
    );
    println!(
        "figure: idle VmRSS at 10 s: {:.2} MiB (target <= 15)",
        mib(at_10s.rss)
    );
    println!(
        "figure: idle PSS at 10 s: {:.2} MiB (target <= 15)",
        mib(at_10s.pss)
    );
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
                samples.push(daemon.memory());
                daemon.stop();
            }
        }
        let (with, without) = (Memory::median(with), Memory::median(without));
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
    if let Some(later) = at_5min.pop() {
        later.print("idle at 5 min (first run)", 1);
        println!(
            "figure: idle VmRSS at 5 min: {:.2} MiB (target <= 15)",
            mib(later.rss)
        );
    }
}

/// A daemon started for one run, in its own `$HEARTH_HOME`.
struct Daemon {
    child: Child,
    ready: Duration,
    _home: tempfile::TempDir,
}

impl Daemon {
    /// Starts with the bundled config and `extra` appended to it.
    fn start(bin: &Path, extra: &str) -> Daemon {
        let home = tempfile::tempdir().expect("temp dir");
        let sock_path = home.path().join("notify.sock");
        let sock = UnixDatagram::bind(&sock_path).expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let config = home.path().join("hearth.toml");
        std::fs::write(&config, bundled_config() + extra).expect("config");
        let start = Instant::now();
        let child = Command::new(bin)
            .arg("--config")
            .arg(&config)
            .arg("run")
            .env("HEARTH_HOME", home.path())
            .env("NOTIFY_SOCKET", &sock_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn hearth");
        let mut buf = [0u8; 64];
        let n = sock.recv(&mut buf).expect("READY=1");
        let ready = start.elapsed();
        assert!(buf[..n].starts_with(b"READY=1"));
        Daemon {
            child,
            ready,
            _home: home,
        }
    }

    /// The daemon's memory, and with its Lua workers added.
    fn memory(&self) -> Memory {
        let pid = self.child.id();
        let own = Memory::of(pid);
        let workers: u64 = children(pid).into_iter().map(|c| Memory::of(c).rss).sum();
        Memory {
            total_rss: own.rss + workers,
            ..own
        }
    }

    fn stop(mut self) {
        // SAFETY: kill(2) on the child we spawned.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "hearth exited with {status}");
    }
}

/// KiB figures of one sample.
#[derive(Clone, Copy)]
struct Memory {
    rss: u64,
    pss: u64,
    total_rss: u64,
}

impl Memory {
    fn of(pid: u32) -> Memory {
        let rss = proc_kib(&format!("/proc/{pid}/status"), "VmRSS:");
        Memory {
            rss,
            pss: proc_kib(&format!("/proc/{pid}/smaps_rollup"), "Pss:"),
            total_rss: rss,
        }
    }

    fn median(mut samples: Vec<Memory>) -> Memory {
        let mid = samples.len() / 2;
        let mut pick = |key: fn(&Memory) -> u64| {
            samples.sort_by_key(key);
            key(&samples[mid])
        };
        Memory {
            rss: pick(|m| m.rss),
            pss: pick(|m| m.pss),
            total_rss: pick(|m| m.total_rss),
        }
    }

    fn print(&self, when: &str, runs: usize) {
        println!(
            "  {when} (median of {runs}): VmRSS {:.2} MiB, PSS {:.2} MiB, VmRSS with Lua workers {:.2} MiB",
            mib(self.rss),
            mib(self.pss),
            mib(self.total_rss)
        );
    }
}

/// `config/hearth.toml` as shipped, with its relative paths made absolute
/// and its canvas on a free port, so runs never collide with a daemon that
/// is already serving on 8080.
fn bundled_config() -> String {
    let config_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    let text = std::fs::read_to_string(config_dir.join("hearth.toml")).expect("bundled config");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    text.replace(
        "\"../scripts\"",
        &format!("{:?}", config_dir.join("../scripts")),
    )
    .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The daemon's child processes (its Lua workers).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn proc_kib(file: &str, key: &str) -> u64 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{file} has no {key}"))
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
