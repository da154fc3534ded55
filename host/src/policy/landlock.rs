//! What this kernel's Landlock gives hearth, in words: for `hearth check`,
//! `/status`, the doctor and the daemon's start-up warning.
//!
//! The confinement itself is applied by the plugin that spawns programs,
//! from the floor each call the owner did not approve carries; the host
//! only reports whether the kernel can enforce it, so the owner knows
//! which promises are the kernel's. Both sides use the SDK's probe.

use hearth_sdk::floor::SIGNAL_SCOPE_ABI;

use crate::config::Mode;

/// `hearth check`'s `landlock:` line.
pub fn report() -> String {
    match hearth_sdk::landlock::abi_version() {
        Ok(v) => format!(
            "available (ABI {v}): programs the owner did not approve are confined by the kernel"
        ),
        Err(why) => format!(
            "UNAVAILABLE: {why}; nothing beneath the guard confines commands, so development \
             mode asks before every command"
        ),
    }
}

/// The confinement under every program and tool the owner did not
/// approve, in one line (`hearth check`'s `floor:`, `/status`'s `floor:`),
/// and whether it falls short of the whole promise (no Landlock, or
/// signals not scoped).
pub fn floor_status(mode: Mode) -> (String, bool) {
    match hearth_sdk::landlock::abi_version() {
        Ok(v) if v >= SIGNAL_SCOPE_ABI => (
            format!(
                "on (Landlock ABI {v}): a program the owner did not approve writes only in the \
                 writable roots, cannot read hearth's credentials, and cannot signal processes \
                 it did not start"
            ),
            false,
        ),
        Ok(v) => (
            format!(
                "partial (Landlock ABI {v}): a program the owner did not approve writes only in \
                 the writable roots and cannot read hearth's credentials, but may signal other \
                 processes (scoping needs ABI {SIGNAL_SCOPE_ABI}, Linux 6.12)"
            ),
            true,
        ),
        Err(why) => (
            match mode {
                Mode::Development => format!(
                    "MISSING ({why}): commands run unconfined, so every command asks the owner \
                     first"
                ),
                Mode::Production => format!(
                    "MISSING ({why}): commands the guard lets through run unconfined, with \
                     nothing beneath the guard"
                ),
            },
            true,
        ),
    }
}
