//! Development-mode confinement: a spawned command may write only beneath
//! the directories the host names (`confine_to`), enforced by Landlock.
//!
//! The ruleset is built once, in the parent, with the `landlock` crate
//! (best effort: the strongest rules the running kernel supports). After
//! `fork` the child only calls two syscalls on the prepared descriptor,
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`, through
//! `libc` directly: the crate's `restrict_self` consumes a `RulesetCreated`
//! that would have to be moved into the child closure (once per spawn, so
//! it would have to be cloned there), and in the child of a multi-threaded
//! process only async-signal-safe work is allowed, which a plain syscall on
//! a borrowed descriptor is.
//!
//! Only writes are handled (creating, removing, writing, truncating files,
//! making directories, links, devices, renames across directories): reading
//! and executing stay allowed everywhere. Rights added by later Landlock
//! ABIs that are not writes to files (`IoctlDev`, `ResolveUnix`) are left
//! unhandled, so confined commands can still talk to terminals and local
//! sockets. `/dev/null`, `/dev/zero`, `/dev/full` and `/dev/tty` stay
//! writable, since so much writes to them.
//!
//! [`landlock_status`] reports what the running kernel offers, from the
//! SDK's probe, which `hearth check` uses too.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use landlock::{ABI, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr};

/// What `confined` says in results when Landlock is in force.
pub const LANDLOCK: &str = "landlock";

/// The confinement of every command this plugin spawns.
#[derive(Debug)]
pub struct Confinement {
    roots: Vec<PathBuf>,
    enforcement: Enforcement,
}

impl Confinement {
    /// Confinement to `roots` (canonicalized; missing ones are skipped with
    /// a warning, since nothing could be written there anyway), or `None`
    /// when `roots` is empty (production mode).
    pub fn new(roots: &[String]) -> Option<Confinement> {
        if roots.is_empty() {
            return None;
        }
        let roots: Vec<PathBuf> = roots
            .iter()
            .filter_map(|root| match std::fs::canonicalize(root) {
                Ok(path) => Some(path),
                Err(e) => {
                    tracing::warn!("confinement root {root} is skipped: {e}");
                    None
                }
            })
            .collect();
        let enforcement = match build_ruleset(&roots) {
            Ok(fd) => Enforcement::Landlock(fd),
            Err(why) => {
                tracing::warn!(
                    "development mode asks for confinement, but commands will run unconfined: {why}"
                );
                Enforcement::Unavailable(why)
            }
        };
        Some(Confinement { roots, enforcement })
    }

    /// The directories commands may write beneath.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// `landlock`, or `unavailable: <why>`: the `confined` field of results.
    pub fn describe(&self) -> String {
        match &self.enforcement {
            Enforcement::Landlock(_) => LANDLOCK.into(),
            Enforcement::Unavailable(why) => format!("unavailable: {why}"),
        }
    }

    /// Whether the canonical `dir` lies beneath one of the roots.
    pub fn allows(&self, dir: &Path) -> bool {
        self.roots.iter().any(|root| dir.starts_with(root))
    }

    /// The roots as one readable list, for error messages.
    pub fn roots_list(&self) -> String {
        let shown: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        shown.join(", ")
    }

    /// The ruleset descriptor a child restricts itself with, if enforced.
    pub fn ruleset_fd(&self) -> Option<RawFd> {
        match &self.enforcement {
            Enforcement::Landlock(fd) => Some(fd.as_raw_fd()),
            Enforcement::Unavailable(_) => None,
        }
    }
}

/// Whether the running kernel supports Landlock, in words: `landlock ABI
/// <n>` or `unavailable: <why>`.
pub fn landlock_status() -> String {
    match landlock_abi() {
        Ok(abi) => format!("{LANDLOCK} ABI {abi}"),
        Err(why) => format!("unavailable: {why}"),
    }
}

/// The kernel's Landlock ABI version, or why there is none (the SDK's
/// probe, which `hearth check` reports too).
pub fn landlock_abi() -> Result<i32, String> {
    hearth_sdk::landlock::abi_version()
}

/// Restricts the calling process with the ruleset `fd` (the SDK's
/// [`hearth_sdk::landlock::restrict_self`]). Meant for the child between
/// `fork` and `exec`.
///
/// # Safety
///
/// `fd` must be an open Landlock ruleset descriptor. This function only
/// makes two syscalls, so it is async-signal-safe.
pub unsafe fn restrict_self(fd: RawFd) -> io::Result<()> {
    // SAFETY: the caller's promise, passed on.
    unsafe { hearth_sdk::landlock::restrict_self(fd) }
}

/// How confinement is enforced.
#[derive(Debug)]
enum Enforcement {
    /// A prepared ruleset, applied in each child.
    Landlock(OwnedFd),
    /// The kernel cannot enforce it; why.
    Unavailable(String),
}

/// Device files every program may write to.
const WRITABLE_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// A ruleset that handles writes and allows them beneath `roots` and to the
/// usual device files.
fn build_ruleset(roots: &[PathBuf]) -> Result<OwnedFd, String> {
    let abi = landlock_abi()?;
    // ABI 4's write rights are every right that writes to the file system;
    // later ABIs add IoctlDev and ResolveUnix, which are not writes and are
    // left unhandled (allowed) on purpose.
    let writes = AccessFs::from_write(ABI::V4);
    let file_writes = writes & AccessFs::from_file(ABI::V4);
    let fail = |e: &dyn std::fmt::Display| format!("cannot build the Landlock ruleset: {e}");
    let mut ruleset = Ruleset::default()
        .handle_access(writes)
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?;
    for root in roots {
        let dir = PathFd::new(root).map_err(|e| fail(&e))?;
        ruleset = ruleset
            .add_rule(PathBeneath::new(dir, writes))
            .map_err(|e| fail(&e))?;
    }
    for device in WRITABLE_DEVICES {
        // A device missing in a minimal container is simply not allowed.
        if let Ok(file) = PathFd::new(device) {
            ruleset = ruleset
                .add_rule(PathBeneath::new(file, file_writes))
                .map_err(|e| fail(&e))?;
        }
    }
    let fd: Option<OwnedFd> = ruleset.into();
    fd.ok_or_else(|| format!("the kernel reports Landlock ABI {abi} but refused a ruleset"))
}
