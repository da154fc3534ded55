//! Benchmark: how fast `hearth run` becomes ready, and how much memory it
//! holds once idle, with the bundled plugins.
//!
//! Each run starts the release binary in a fresh `$HEARTH_HOME` with
//! `NOTIFY_SOCKET` pointing at a socket of ours, times the spawn until
//! `READY=1` arrives, lets it idle, reads `VmRSS` from `/proc` (the daemon's
//! own, and with its Lua worker processes added), and stops it with
//! SIGTERM. Medians over the runs are printed.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth --bench startup`.

use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 21;
const IDLE: Duration = Duration::from_millis(1500);

fn main() {
    let target = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(PathBuf::from))
        .expect("bench binary lives in <profile>/deps");
    let bin = target.join("hearth");
    assert!(
        bin.is_file(),
        "build first: cargo build --release --workspace"
    );
    let mut ready = Vec::new();
    let mut rss = Vec::new();
    let mut total = Vec::new();
    let mut plugins = 0;
    for _ in 0..RUNS {
        let home = tempfile::tempdir().expect("temp dir");
        let sock_path = home.path().join("notify.sock");
        let sock = UnixDatagram::bind(&sock_path).expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        std::fs::write(home.path().join("hearth.toml"), "").expect("config");
        let start = Instant::now();
        let mut child = Command::new(&bin)
            .args(["--config"])
            .arg(home.path().join("hearth.toml"))
            .arg("run")
            .env("HEARTH_HOME", home.path())
            .env("NOTIFY_SOCKET", &sock_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn hearth");
        let mut buf = [0u8; 64];
        let n = sock.recv(&mut buf).expect("READY=1");
        ready.push(start.elapsed());
        assert!(buf[..n].starts_with(b"READY=1"));
        std::thread::sleep(IDLE);
        let own = vm_rss_kib(child.id());
        rss.push(own);
        total.push(
            own + children(child.id())
                .into_iter()
                .map(vm_rss_kib)
                .sum::<u64>(),
        );
        plugins = count_plugins(child.id());
        // SAFETY: kill(2) on the child we spawned.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().expect("wait");
        assert!(status.success(), "hearth exited with {status}");
    }
    ready.sort();
    rss.sort();
    total.sort();
    println!("startup: {RUNS} runs of `hearth run`, {plugins} plugin libraries mapped");
    println!(
        "  spawn to READY=1   median {:>7.2} ms   min {:>7.2} ms   max {:>7.2} ms",
        ready[RUNS / 2].as_secs_f64() * 1e3,
        ready[0].as_secs_f64() * 1e3,
        ready[RUNS - 1].as_secs_f64() * 1e3
    );
    println!(
        "  idle RSS           median {:>7.2} MiB min {:>7.2} MiB max {:>7.2} MiB",
        rss[RUNS / 2] as f64 / 1024.0,
        rss[0] as f64 / 1024.0,
        rss[RUNS - 1] as f64 / 1024.0
    );
    println!(
        "  with Lua workers   median {:>7.2} MiB min {:>7.2} MiB max {:>7.2} MiB",
        total[RUNS / 2] as f64 / 1024.0,
        total[0] as f64 / 1024.0,
        total[RUNS - 1] as f64 / 1024.0
    );
}

/// The daemon's child processes (its Lua workers).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

fn count_plugins(pid: u32) -> usize {
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
