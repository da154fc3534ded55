//! How every program hearth runs is started: in a session of its own, under
//! a seccomp filter, and, unless the owner approved it, under the Landlock
//! floor ([`crate::floor`]).
//!
//! - **A session of its own** (`setsid`): the program has no controlling
//!   terminal of hearth's, so it cannot read from or write to the
//!   terminal the daemon was started from, and hearth's job control never
//!   reaches it.
//! - **seccomp**, for what Landlock does not cover. Every program, approved
//!   or not, is refused `TIOCSTI` and `TIOCLINUX`, the two ioctls that type
//!   into a terminal: with them a program can make the owner's interactive
//!   shell run anything. A confined program (one the owner did not
//!   approve) is also refused changing the limits (`prlimit64`), priority
//!   (`setpriority`), CPU affinity and scheduling (`sched_set*`) and I/O
//!   priority (`ioprio_set`) of any process but itself: a CPU limit of one
//!   second is a way to kill, and a priority change a way to starve,
//!   without sending a signal. seccomp compares numbers, not process
//!   trees, so "itself" means the calls that name no other process (pid
//!   0, its own process group): `renice -p` of its own child is refused
//!   too, which errs on the side of refusing.
//! - **Landlock**: the floor's descriptor, prepared in the parent.
//!
//! The filters are compiled once with `seccompiler` and kept; the child,
//! between `fork` and `exec`, only makes syscalls on memory the parent
//! prepared (async-signal-safe).

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use crate::floor::{Cache, FloorError, Prepared};
use crate::protocol::Floor;

/// Why a program could not be prepared for its sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This architecture has no seccomp filter here.
    #[error("no seccomp filter for the {0} architecture")]
    Architecture(&'static str),
    /// seccompiler refused the filter (a bug in the rules below).
    #[error("cannot compile the seccomp filter: {0}")]
    Compile(String),
    /// The kernel has Landlock but the floor could not be built.
    #[error("cannot build the Landlock floor: {0}")]
    Floor(String),
}

/// What a program may reach beyond its own Landlock domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The owner did not approve it: no other process's limits, priority,
    /// affinity or scheduling.
    Confined,
    /// The owner approved this exact call: everything but typing into
    /// terminals.
    Approved,
}

/// The compiled seccomp filter for `reach`, built on first use.
pub fn filter(reach: Reach) -> Result<Arc<BpfProgram>, SandboxError> {
    static CONFINED: OnceLock<Result<Arc<BpfProgram>, String>> = OnceLock::new();
    static APPROVED: OnceLock<Result<Arc<BpfProgram>, String>> = OnceLock::new();
    let cell = match reach {
        Reach::Confined => &CONFINED,
        Reach::Approved => &APPROVED,
    };
    cell.get_or_init(|| compile(reach).map(Arc::new).map_err(|e| e.to_string()))
        .clone()
        .map_err(SandboxError::Compile)
}

/// Makes `command`'s child start a session of its own, install the seccomp
/// filter for `reach`, and restrict itself with `landlock` when given (the
/// prepared floor must stay alive until the spawn has returned; the
/// command keeps a reference to it).
pub fn apply(
    command: &mut Command,
    reach: Reach,
    landlock: Option<Arc<Prepared>>,
) -> Result<(), SandboxError> {
    let program = filter(reach)?;
    // SAFETY: the closure makes plain syscalls on memory prepared before
    // the fork (the filter and the ruleset descriptor, both kept alive by
    // the `Arc`s it owns) and allocates nothing, so it is
    // async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            install(&program)?;
            if let Some(prepared) = &landlock {
                crate::landlock::restrict_self(prepared.fd())?;
            }
            Ok(())
        });
    }
    Ok(())
}

/// The sandbox of the helper programs a plugin or the host starts on its
/// own, outside any tool call (an MCP server, a media converter): a
/// session of its own, the confined seccomp filter, and a Landlock floor
/// that hides the credentials and restricts nothing else.
#[derive(Debug)]
pub struct Helpers {
    floor: Floor,
    cache: Cache,
}

impl Helpers {
    /// Helpers that may not touch `hidden`.
    pub fn new(hidden: &[String]) -> Helpers {
        Helpers {
            floor: crate::floor::helper(hidden),
            cache: Cache::default(),
        }
    }

    /// Makes `command` start sandboxed. Fails closed: when the kernel has
    /// Landlock but the floor cannot be built, the helper must not start.
    pub fn apply(&self, command: &mut Command) -> Result<(), SandboxError> {
        let landlock = if self.floor.hidden.is_empty() {
            None
        } else {
            match self.cache.prepare(&self.floor) {
                Ok(prepared) => Some(prepared),
                Err(FloorError::Unavailable(_)) => None,
                Err(e) => return Err(SandboxError::Floor(e.to_string())),
            }
        };
        apply(command, Reach::Confined, landlock)
    }
}

/// The ioctls that put bytes into a terminal's input queue.
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// `setpriority`'s and `ioprio_set`'s "every process of a user".
const PRIO_USER: u64 = 2;
const IOPRIO_WHO_USER: u64 = 3;

/// x86_64's x32 ABI numbers its system calls with this bit set; a filter
/// that names only the plain numbers would let a program reach the same
/// kernel code through them on kernels that enable x32.
#[cfg(target_arch = "x86_64")]
const X32: i64 = 0x4000_0000;

fn compile(reach: Reach) -> Result<BpfProgram, SandboxError> {
    let fail = |e: seccompiler::BackendError| SandboxError::Compile(e.to_string());
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(fail)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(fail);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut deny = |syscall: i64, matching: Vec<SeccompRule>| {
        #[cfg(target_arch = "x86_64")]
        rules.insert(syscall | X32, matching.clone());
        rules.insert(syscall, matching);
    };
    // The request is an `unsigned int` in the kernel: compare the low 32
    // bits only, so high bits set by the caller change nothing.
    deny(
        libc::SYS_ioctl,
        vec![
            rule(vec![cond(1, SeccompCmpOp::Eq, TIOCSTI)?])?,
            rule(vec![cond(1, SeccompCmpOp::Eq, TIOCLINUX)?])?,
        ],
    );
    if reach == Reach::Confined {
        // prlimit64(pid, resource, new, old): changing (new not NULL) the
        // limits of a process named by a pid other than 0 (itself).
        deny(
            libc::SYS_prlimit64,
            vec![rule(vec![
                cond(0, SeccompCmpOp::Ne, 0)?,
                SeccompCondition::new(2, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)
                    .map_err(fail)?,
            ])?],
        );
        // setpriority(which, who, prio): any `who` but itself or its own
        // group, and every process of a user.
        deny(
            libc::SYS_setpriority,
            vec![
                rule(vec![cond(0, SeccompCmpOp::Eq, PRIO_USER)?])?,
                rule(vec![cond(1, SeccompCmpOp::Ne, 0)?])?,
            ],
        );
        deny(
            libc::SYS_ioprio_set,
            vec![
                rule(vec![cond(0, SeccompCmpOp::Eq, IOPRIO_WHO_USER)?])?,
                rule(vec![cond(1, SeccompCmpOp::Ne, 0)?])?,
            ],
        );
        for syscall in [
            libc::SYS_sched_setaffinity,
            libc::SYS_sched_setscheduler,
            libc::SYS_sched_setparam,
            libc::SYS_sched_setattr,
        ] {
            deny(syscall, vec![rule(vec![cond(0, SeccompCmpOp::Ne, 0)?])?]);
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(fail)?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail(e))
}

fn arch() -> Result<seccompiler::TargetArch, SandboxError> {
    std::env::consts::ARCH
        .try_into()
        .map_err(|_| SandboxError::Architecture(std::env::consts::ARCH))
}

/// Installs `program` on the calling thread: no new privileges, then the
/// filter (seccompiler makes the two syscalls and allocates nothing).
fn install(program: &BpfProgram) -> io::Result<()> {
    match seccompiler::apply_filter(program) {
        Ok(()) => Ok(()),
        Err(seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e)) => Err(e),
        Err(_) => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
}
