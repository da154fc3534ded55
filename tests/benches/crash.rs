//! The crash suite's long form: 1,000 Telegram updates while the daemon is
//! killed with SIGKILL 200 times at random moments and restarted, then the
//! figures: acknowledged updates lost, integrity failures, duplicates (all
//! inside the outbox's send window), kills and updates. The driver is
//! `support/crash.rs`, shared with the short form in `tests/crash.rs`.
//!
//! Run with `cargo build --release --workspace && cargo bench -p
//! hearth-tests --bench crash`; `HEARTH_CRASH_SEED` replays a run,
//! `HEARTH_CRASH_UPDATES` and `HEARTH_CRASH_KILLS` change its size.

use hearth_tests::crash::{Plan, run};

fn main() {
    let updates = count("HEARTH_CRASH_UPDATES", 1000);
    let kills = count("HEARTH_CRASH_KILLS", updates / 5);
    let figures = run(&Plan::new(updates, kills));
    println!("{}", figures.report());
    figures.assert_sound();
}

/// A count from the environment, or `default`.
fn count(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{var}={text:?} is not a count")),
        Err(_) => default,
    }
}
