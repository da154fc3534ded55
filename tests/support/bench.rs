//! What the benchmarks in `tests/benches` share: timing a closure over
//! warm-up and measured runs, reading percentiles off the samples, and the
//! channel inbound benches' two phases (back to back, then after idle).

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

/// The quiet before each after-idle message of a channel inbound bench,
/// as an owner's messages always arrive: long enough for the daemon's
/// threads to sleep and the CPUs to leave their busy state, so the message
/// pays the wake-ups a back-to-back one does not.
pub const IDLE_GAP: Duration = Duration::from_millis(50);

/// How many messages a channel inbound bench sends after `IDLE_GAP` each,
/// once its back-to-back ones are answered.
pub const AFTER_IDLE: usize = 200;

/// The median, p90, p99 and max of `samples` (sorted in place).
pub fn spread(samples: &mut [Duration]) -> [Duration; 4] {
    let (median, p90) = percentiles(samples);
    let n = samples.len();
    [
        median,
        p90,
        samples[(n * 99 / 100).min(n - 1)],
        samples[n - 1],
    ]
}

/// Prints a channel inbound bench's host overhead per message: the spread
/// and the figure of the first `back_to_back` of `overheads` (each message
/// sent as soon as the previous one was answered), then of the rest (each
/// sent after `IDLE_GAP` of quiet). The back-to-back figure is
/// `figure: <channel> inbound host overhead median`, the other
/// `figure: <channel> inbound host overhead after 50 ms idle median`.
pub fn print_inbound(channel: &str, overheads: &[Duration], back_to_back: usize) {
    let idle = format!("after {} ms idle", IDLE_GAP.as_millis());
    let (warm, cold) = overheads.split_at(back_to_back);
    let mut medians = [Duration::ZERO; 2];
    for (i, (phase, part)) in [("back to back", warm), (idle.as_str(), cold)]
        .into_iter()
        .enumerate()
    {
        let [median, p90, p99, max] = spread(&mut part.to_vec());
        println!(
            "host overhead per message, {phase} ({} messages): median {:.3} ms, p90 {:.3} ms, \
             p99 {:.3} ms, max {:.3} ms",
            part.len(),
            ms(median),
            ms(p90),
            ms(p99),
            ms(max)
        );
        medians[i] = median;
    }
    println!(
        "figure: {channel} inbound host overhead median: {:.3} ms (target <= 2)",
        ms(medians[0])
    );
    println!(
        "figure: {channel} inbound host overhead {idle} median: {:.3} ms (target <= 2)",
        ms(medians[1])
    );
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
