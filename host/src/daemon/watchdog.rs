//! systemd's watchdog: `WATCHDOG=1` from the daemon's main loop.
//!
//! With `WatchdogSec=` in the unit, systemd kills (and, through
//! `Restart=on-failure`, restarts) a daemon that stops pinging. The pings
//! come from a task on the daemon's one async thread, the thread every
//! agent runner, the outbox, the control socket and the signal handling
//! share: when that thread hangs, the pings stop, which is exactly what
//! the watchdog is for. A thread of its own would keep pinging a wedged
//! daemon.

use std::time::Duration;

use tokio::task::JoinHandle;

use super::notify;

/// Starts pinging at half the interval systemd asked for; `None` when
/// systemd asked for no watchdog. Abort the task to stop.
pub fn start() -> Option<JoinHandle<()>> {
    let interval = notify::watchdog_interval()?;
    let every = interval / 2;
    tracing::info!(
        interval_ms = interval.as_millis() as u64,
        "systemd watchdog on: pinging every {} ms",
        every.as_millis()
    );
    Some(tokio::spawn(ping(every)))
}

async fn ping(every: Duration) {
    let mut ticks = tokio::time::interval(every);
    // After a stall, one ping, not a burst of the ones missed.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        notify::watchdog();
    }
}
