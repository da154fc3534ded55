//! systemd readiness notifications (`sd_notify`), a no-op without systemd.

use sd_notify::NotifyState;

/// The daemon is ready to serve.
pub fn ready() {
    send(&[NotifyState::Ready]);
}

/// The daemon is re-reading its config.
pub fn reloading() {
    send(&[NotifyState::Reloading, monotonic_now()]);
}

/// The reload is over (applied or refused).
pub fn reloaded() {
    send(&[NotifyState::Ready]);
}

/// The daemon is stopping.
pub fn stopping() {
    send(&[NotifyState::Stopping]);
}

/// How often systemd wants `WATCHDOG=1`: `WATCHDOG_USEC`, when it is set
/// (not zero) and `WATCHDOG_PID` is absent or this process.
pub fn watchdog_interval() -> Option<std::time::Duration> {
    sd_notify::watchdog_enabled().filter(|d| !d.is_zero())
}

/// The daemon's main loop is alive.
pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// `Type=notify-reload` wants `MONOTONIC_USEC` with `RELOADING=1`.
fn monotonic_now() -> NotifyState<'static> {
    NotifyState::monotonic_usec_now().unwrap_or(NotifyState::Status("reloading"))
}

fn send(states: &[NotifyState<'_>]) {
    // Keep NOTIFY_SOCKET in the environment: a reload sends again later.
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!("cannot notify the service manager: {e}");
    }
}
