//! Whether this kernel has Landlock, for `hearth check`.
//!
//! The confinement itself is applied by the plugin that spawns programs
//! (the shell plugin, from `HostInfo::confine_to`); the host only reports
//! whether the kernel can enforce it, so the owner knows if development
//! mode's confinement is a kernel boundary or only the policy's checks.

/// `landlock_create_ruleset`'s flag that asks for the ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The Landlock ABI version the kernel offers, or why there is none.
pub fn abi_version() -> Result<i64, String> {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag,
    // the syscall reads and writes no memory; it only returns a number.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if version >= 1 {
        return Ok(version);
    }
    Err(match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOSYS) => "the kernel was built without Landlock".into(),
        Some(libc::EOPNOTSUPP) => {
            "Landlock is turned off (add it to the lsm= boot parameter)".into()
        }
        other => format!("the Landlock probe failed (errno {other:?})"),
    })
}

/// One line for `hearth check`.
pub fn report() -> String {
    match abi_version() {
        Ok(v) => format!("available (ABI {v}): development mode confines spawned programs' writes"),
        Err(why) => {
            format!("unavailable: {why}; development mode then confines by checking paths only")
        }
    }
}
