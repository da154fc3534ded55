//! What the benchmarks in `tests/benches` share: timing a closure over
//! warm-up and measured runs, and reading percentiles off the samples.

use std::time::{Duration, Instant};

/// Runs `run` `warm_up` times untimed, then `runs` times, timing each.
pub fn measure(warm_up: usize, runs: usize, mut run: impl FnMut()) -> Vec<Duration> {
    for _ in 0..warm_up {
        run();
    }
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect()
}

/// The median and the 90th percentile of `samples` (sorted in place).
pub fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let n = samples.len();
    (samples[n / 2], samples[(n * 90 / 100).min(n - 1)])
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the daemon runs");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

/// The idle VmRSS of a daemon with a channel on and with it off, in KiB:
/// the medians of `pairs` alternating runs, each read `idle` after the
/// start. `start(extra)` starts one daemon with `extra` added to the
/// channel's table (`""` for on, `"enabled = false\n"` for off), waits
/// until the channel is up when it is on, and returns the daemon with
/// whatever must live as long as it (its fakes).
pub fn idle_rss_on_off<T>(
    pairs: usize,
    idle: Duration,
    mut start: impl FnMut(&str) -> (std::process::Child, T),
) -> (u64, u64) {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..pairs {
        for (extra, samples) in [("", &mut on), ("enabled = false\n", &mut off)] {
            let (mut daemon, keep) = start(extra);
            std::thread::sleep(idle);
            samples.push(rss_kib(daemon.id()));
            let _ = daemon.kill();
            let _ = daemon.wait();
            drop(keep);
        }
    }
    on.sort();
    off.sort();
    (on[pairs / 2], off[pairs / 2])
}
