//! `test_wedge`: blocks the daemon's async thread, for the test that shows
//! systemd's watchdog stops being fed when the main loop hangs.
//!
//! Test only. A daemon serves it only when it was started with
//! `HEARTH_TEST_WEDGE=1` in its environment, which no unit, config or
//! command sets; any other daemon refuses it. The environment of a running
//! process cannot be changed from outside, so a normal daemon can never be
//! wedged through its socket.

use std::time::Duration;

use serde_json::{Value, json};

use super::protocol::{Code, error};

/// The variable that opts a daemon in.
pub const OPT_IN: &str = "HEARTH_TEST_WEDGE";
/// The longest wedge, so a forgotten test daemon comes back by itself.
const MAX_SECONDS: u64 = 600;

/// Blocks the calling thread (the daemon's one async thread) for
/// `seconds`, then answers; refused without the opt-in.
pub fn wedge(request: &Value) -> Value {
    if std::env::var_os(OPT_IN).is_none_or(|v| v != "1") {
        return error(
            Code::BadRequest,
            &format!("`test_wedge` is for tests only: this daemon was not started with {OPT_IN}=1"),
        );
    }
    let Some(seconds) = request["seconds"]
        .as_u64()
        .filter(|s| (1..=MAX_SECONDS).contains(s))
    else {
        return error(
            Code::BadRequest,
            &format!("`seconds` must be a whole number from 1 to {MAX_SECONDS}"),
        );
    };
    tracing::warn!(seconds, "test_wedge: blocking the daemon's async thread");
    // Blocking here is the point: every task of the runtime, the watchdog's
    // pings among them, stands still until this returns.
    std::thread::sleep(Duration::from_secs(seconds));
    json!({ "op": "test_wedge", "seconds": seconds })
}
