//! Benchmark: the soak's long form, one hour (`HEARTH_SOAK_SECS` changes
//! it) of the release daemon with every bundled plugin at 10 messages a
//! second (`HEARTH_SOAK_RATE`), with tool calls and canvas browsers coming
//! and going. Prints RSS and PSS after warm-up and at the end, the drift,
//! fds and threads at start, after warm-up and at the end, messages sent
//! and answered, reply latency, and the time series; exits 1 when a pass
//! criterion of `tests/soak.rs` is missed.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench soak`.

use hearth_tests::soak::{self, Options};

fn main() {
    let options = Options {
        live: true,
        ..Options::from_env(3600, 10.0)
    };
    println!("sample: time series (s, RSS MiB, PSS MiB, fds, threads, children, sent, answered)");
    let report = soak::run(&options);
    report.print();
    let failures = report.failures();
    if !failures.is_empty() {
        println!("soak FAILED:\n{}", failures.join("\n"));
        std::process::exit(1);
    }
    println!("soak passed");
}
