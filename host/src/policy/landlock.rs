//! What this kernel's Landlock gives hearth, in words: for `hearth check`,
//! `/status` and the daemon's start-up warning.
//!
//! The confinement itself is applied by the plugin that spawns programs:
//! development mode's (from `HostInfo::confine_to`) and production mode's
//! kernel floor (from each call's `floor`). The host only reports whether
//! the kernel can enforce them, so the owner knows which promises are the
//! kernel's and which are only the policy's checks. Both sides use the
//! SDK's probe.

use hearth_sdk::floor::SIGNAL_SCOPE_ABI;

use crate::config::Mode;

/// `hearth check`'s `landlock:` line.
pub fn report() -> String {
    match hearth_sdk::landlock::abi_version() {
        Ok(v) => format!("available (ABI {v}): development mode confines spawned programs' writes"),
        Err(why) => {
            format!("unavailable: {why}; development mode then confines by checking paths only")
        }
    }
}

/// The kernel floor under production mode's unapproved commands, in one
/// line (`hearth check`'s `floor:`, `/status`'s `floor:`), and whether it
/// falls short of the whole promise (no Landlock, or signals not scoped).
pub fn floor_status(mode: Mode) -> (String, bool) {
    if mode == Mode::Development {
        return (
            "not used in development mode, which confines every spawned program's writes".into(),
            false,
        );
    }
    match hearth_sdk::landlock::abi_version() {
        Ok(v) if v >= SIGNAL_SCOPE_ABI => (
            format!(
                "on (Landlock ABI {v}): a command the owner did not approve cannot write the \
                 protected paths or signal processes it did not start"
            ),
            false,
        ),
        Ok(v) => (
            format!(
                "partial (Landlock ABI {v}): a command the owner did not approve cannot write the \
                 protected paths, but may signal other processes (scoping needs ABI \
                 {SIGNAL_SCOPE_ABI}, Linux 6.12)"
            ),
            true,
        ),
        Err(why) => (
            format!(
                "MISSING ({why}): commands the guard lets through run unconfined, with nothing \
                 beneath the guard"
            ),
            true,
        ),
    }
}
