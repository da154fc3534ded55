//! Whether this kernel has Landlock, for `hearth check`.
//!
//! The confinement itself is applied by the plugin that spawns programs
//! (the shell plugin, from `HostInfo::confine_to`); the host only reports
//! whether the kernel can enforce it, so the owner knows if development
//! mode's confinement is a kernel boundary or only the policy's checks.
//! Both use the SDK's probe.

/// One line for `hearth check`.
pub fn report() -> String {
    match hearth_sdk::landlock::abi_version() {
        Ok(v) => format!("available (ABI {v}): development mode confines spawned programs' writes"),
        Err(why) => {
            format!("unavailable: {why}; development mode then confines by checking paths only")
        }
    }
}
