//! What this kernel's Landlock gives hearth, in words: for `hearth check`,
//! `/status`, the doctor and the daemon's start-up warning.
//!
//! The confinement itself is applied by the plugin that spawns programs,
//! from the floor each call the owner did not approve carries; the host
//! only reports whether the kernel can enforce it, so the owner knows
//! which promises are the kernel's. Both sides use the SDK's probe.

use hearth_sdk::floor::SIGNAL_SCOPE_ABI;

use hearth_base::config::Mode;

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
    floor_status_of(hearth_sdk::landlock::abi_version(), mode)
}

/// [`floor_status`] for a kernel whose Landlock probe answered `probe`:
/// apart so every kind of kernel is tested, not only the one the tests
/// run on.
fn floor_status_of(probe: Result<i32, String>, mode: Mode) -> (String, bool) {
    match probe {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_on_partial_or_missing_by_the_kernel_s_abi() {
        let cases = [
            (
                Ok(SIGNAL_SCOPE_ABI + 1),
                Mode::Production,
                "on (Landlock ABI",
                false,
            ),
            (
                Ok(SIGNAL_SCOPE_ABI),
                Mode::Development,
                "on (Landlock ABI",
                false,
            ),
            (
                Ok(SIGNAL_SCOPE_ABI - 1),
                Mode::Production,
                "partial (Landlock ABI",
                true,
            ),
            (Ok(1), Mode::Development, "partial (Landlock ABI 1)", true),
            (
                Err("ENOSYS".to_owned()),
                Mode::Development,
                "MISSING (ENOSYS): commands run unconfined, so every command asks",
                true,
            ),
            (
                Err("disabled".to_owned()),
                Mode::Production,
                "MISSING (disabled): commands the guard lets through",
                true,
            ),
        ];
        for (probe, mode, starts, short) in cases {
            let (line, falls_short) = floor_status_of(probe.clone(), mode);
            assert!(line.starts_with(starts), "{probe:?} {mode:?}: {line}");
            assert_eq!(falls_short, short, "{probe:?} {mode:?}: {line}");
        }
    }
}
