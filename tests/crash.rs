//! The crash suite's short form: 100 Telegram updates while the daemon is
//! killed with SIGKILL 20 times at random moments (inside inbound storage,
//! turns, tool calls, outbox sends, compactions and scheduled firings) and
//! restarted. Nothing acknowledged is lost, everything is answered, the
//! store passes `PRAGMA integrity_check` after every restart, and a reply
//! is sent twice only in the outbox's send window. The driver is
//! `support/crash.rs`; the long form is `benches/crash.rs`. A failure
//! prints its seed: `HEARTH_CRASH_SEED=<seed> cargo test -p hearth-tests
//! --test crash` replays it.

use hearth_tests::crash::{Plan, run};

#[test]
fn killed_at_random_points_nothing_acknowledged_is_lost_and_everything_is_answered() {
    let figures = run(&Plan::new(100, 20));
    println!("{}", figures.report());
    figures.assert_sound();
}
