//! Whether the running kernel has Landlock, for plugins that confine the
//! programs they spawn and for the host's `hearth check`.
//!
//! One probe for both, so the report the owner reads and the confinement a
//! plugin applies can never disagree about what the kernel offers; and the
//! one call a child makes to restrict itself, shared by development mode's
//! confinement and production mode's floor ([`crate::floor`]).

/// `landlock_create_ruleset`'s flag that asks for the ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The kernel's Landlock ABI version, or why there is none.
pub fn abi_version() -> Result<i32, String> {
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
    if version > 0 {
        return Ok(version as i32);
    }
    let error = std::io::Error::last_os_error();
    Err(match error.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel was built without Landlock (Linux 5.13 or later with \
                               CONFIG_SECURITY_LANDLOCK has it)"
            .into(),
        Some(libc::EOPNOTSUPP) => "Landlock is built into the kernel but not enabled (add \
                                   landlock to the lsm= boot parameter)"
            .into(),
        _ => format!("the Landlock probe failed: {error}"),
    })
}

/// Restricts the calling process with the Landlock ruleset `fd`: no new
/// privileges, then the ruleset. Meant for a child between `fork` and
/// `exec`, where only async-signal-safe work is allowed.
///
/// # Safety
///
/// `fd` must be an open Landlock ruleset descriptor. This function makes
/// two syscalls and allocates nothing, so it is async-signal-safe.
pub unsafe fn restrict_self(fd: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: plain syscalls with integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// For confinement tests: whether this kernel has Landlock ABI `min` or
/// later. A kernel without it fails the test (this panics), unless
/// `HEARTH_TEST_NO_LANDLOCK=1` says the machine is known to lack it, when
/// the test is skipped with a message. CI never sets it: a confinement the
/// kernel cannot enforce must never pass for one that holds.
pub fn required_for_tests(min: i32) -> bool {
    if std::env::var_os("HEARTH_TEST_NO_LANDLOCK").is_some_and(|v| v == "1") {
        eprintln!("skipped: HEARTH_TEST_NO_LANDLOCK=1 says this machine has no Landlock");
        return false;
    }
    match abi_version() {
        Ok(abi) if abi >= min => true,
        Ok(abi) => panic!(
            "the kernel has Landlock ABI {abi} and this test needs {min}; set \
             HEARTH_TEST_NO_LANDLOCK=1 only on a machine known to lack it"
        ),
        Err(why) => panic!(
            "{why}: this test needs Landlock ABI {min}; set HEARTH_TEST_NO_LANDLOCK=1 only on a \
             machine known to lack it"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_confinement_tests_run_unless_the_machine_is_said_to_lack_landlock() {
        let said = std::env::var_os("HEARTH_TEST_NO_LANDLOCK").is_some_and(|v| v == "1");
        assert_eq!(required_for_tests(1), !said);
        // A kernel below the ABI asked for fails the test, never skips it.
        if !said {
            let newest = abi_version().unwrap();
            let too_new = std::panic::catch_unwind(|| required_for_tests(newest + 1));
            assert!(too_new.is_err());
        }
    }
}
