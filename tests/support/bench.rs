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
