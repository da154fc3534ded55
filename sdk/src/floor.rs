//! The kernel floor: the Landlock ruleset a production-mode command that
//! the owner did not approve runs under ([`crate::protocol::Floor`]).
//!
//! Two promises, both enforced by the kernel whatever the command line
//! says: the protected paths stay read-only (readable and executable, but
//! not written, truncated, removed, renamed or replaced, and nothing new
//! appears inside them), and the command cannot signal a process outside
//! its own Landlock domain (ABI 6; older kernels keep the path promise
//! only). Everything else stays writable.
//!
//! Landlock only allows: a rule grants rights on a file or on a whole
//! hierarchy beneath a directory, and nothing can take a right back lower
//! down. So the ruleset grants full write rights to every entry *beside*
//! each protected path's ancestors (for `~/.ssh`: each entry of `/` but
//! `/home` and the protected system directories, each entry of `/home`
//! but the owner's, each entry of `~` but `.ssh`), and on the ancestors
//! themselves only what cannot reach a protected path beneath them:
//! - an ancestor holding a protected directory, or a protected path that
//!   does not exist yet, gets no right at all: the right to make a
//!   directory in `~` would also be the right to make one in `~/.ssh`, and
//!   the right to make a file there would let `~/.gnupg` or `~/.profile`
//!   appear;
//! - an ancestor whose protected paths are all existing files (like
//!   `$HEARTH_HOME` with `hearth.db`) may have entries made in it, but
//!   nothing in it removed or renamed, and nothing moved in from
//!   elsewhere (`REFER`), so a protected file can neither be replaced nor
//!   linked to a writable place.
//!
//! Consequences, all on the side of refusing: in such an ancestor a
//! command cannot remove or rename entries, a file or directory it makes
//! there cannot be written in the same command (the next command's ruleset
//! lists it as a sibling), and symbolic links met while listing are given
//! no rule (what they point to is judged where it lives).
//!
//! The ruleset is built in the parent and kept while nothing it was
//! planned from changes ([`Cache`]); the child only calls
//! [`crate::landlock::restrict_self`] on its descriptor between `fork` and
//! `exec`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{FileType, OpenOptions};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use landlock::{
    ABI, AccessFs, BitFlags, PathBeneath, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
    make_bitflags,
};

use crate::paths::{follow_links, lexical};
use crate::protocol::Floor;

/// The oldest Landlock ABI that scopes signals.
pub const SIGNAL_SCOPE_ABI: i32 = 6;

/// Why the floor cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// The kernel has no Landlock, so there is no floor to apply.
    #[error("the kernel has no Landlock: {0}")]
    Unavailable(String),
    /// A path of the floor is not absolute.
    #[error("floor path {0:?} is not absolute")]
    Relative(String),
    /// The kernel refused the ruleset or one of its rules.
    #[error("cannot build the Landlock floor ({path}): {message}")]
    Build {
        /// The path whose rule failed, or `/` for the ruleset itself.
        path: PathBuf,
        /// What the kernel or the Landlock library said.
        message: String,
    },
}

/// What a rule of the floor allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Every write beneath a directory that holds no protected path.
    Tree,
    /// Writing and truncating one file that is not protected.
    File,
    /// Making entries in an ancestor of protected files only (no removing,
    /// renaming or writing).
    Make,
    /// Reading the files beneath a directory, or one file, that is not
    /// hidden.
    Read,
}

/// One rule of the floor.
#[derive(Debug)]
pub struct Rule {
    /// The path, as listed.
    pub path: PathBuf,
    /// What it allows.
    pub grant: Grant,
    fd: OwnedFd,
}

/// A floor ready to apply: the ruleset's descriptor, and what it holds.
#[derive(Debug)]
pub struct Prepared {
    fd: OwnedFd,
    /// The kernel's Landlock ABI.
    pub abi: i32,
    /// How many path rules the ruleset holds.
    pub rules: usize,
}

impl Prepared {
    /// The ruleset's descriptor, for [`crate::landlock::restrict_self`] in
    /// the child. It must stay open until the child has started.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    /// Whether signals to processes outside the command's domain are
    /// refused (ABI 6 and later).
    pub fn scopes_signals(&self) -> bool {
        self.abi >= SIGNAL_SCOPE_ABI
    }
}

/// Builds the ruleset for `floor` on this kernel.
pub fn prepare(floor: &Floor) -> Result<Prepared, FloorError> {
    let abi = crate::landlock::abi_version().map_err(FloorError::Unavailable)?;
    let (rules, _) = plan_with_dirs(floor)?;
    build(floor, abi, rules)
}

/// The confinement of a helper program a plugin starts on its own (a
/// server, a converter): the credentials `hidden`, nothing else restricted
/// but signals to processes outside its domain.
pub fn helper(hidden: &[String]) -> Floor {
    Floor {
        protect: Vec::new(),
        writable: Vec::new(),
        hidden: hidden.to_vec(),
    }
}

/// Whether `floor` lets a plugin's own code create, change or remove
/// `path` (already resolved the way the plugin will open it): inside a
/// writable place, outside every protected path within it, and not a
/// hidden file or a link to one, nor a folder holding a protected or
/// hidden path.
pub fn allows_write(floor: &Floor, path: &Path) -> bool {
    let Ok(marks) = Marks::writes(floor) else {
        return false;
    };
    let path = lexical(path);
    // A folder holding a protected path cannot be removed or replaced
    // whole either.
    marks.state(&path) == Mark::Writable
        && marks.beneath(&path).all(|(_, mark)| mark == Mark::Writable)
        && !is_hidden(floor, &path)
}

/// Whether the file at `path` (links followed) is, or is a hard link to,
/// one of `floor`'s hidden paths: for a plugin's own reads and writes,
/// which no kernel rule covers. A path that cannot be read is not hidden
/// by this check (opening it then fails on its own).
pub fn is_hidden(floor: &Floor, path: &Path) -> bool {
    hidden_identities(floor).matches(path)
}

/// The identities (device and inode) of a floor's hidden files, taken
/// once for many checks ([`is_hidden`] for one).
pub fn hidden_identities(floor: &Floor) -> Hidden {
    let mut hidden = Hidden::default();
    for text in &floor.hidden {
        let path = lexical(Path::new(text));
        if let Ok(meta) = std::fs::metadata(&path) {
            hidden.ids.push((meta.dev(), meta.ino()));
        }
        hidden.paths.push(follow_links(&path));
        hidden.paths.push(path);
    }
    hidden
}

/// The hidden files of a floor, by path and by identity.
#[derive(Debug, Default, Clone)]
pub struct Hidden {
    paths: Vec<PathBuf>,
    ids: Vec<(u64, u64)>,
}

impl Hidden {
    /// Whether `path` leads to a hidden file or into a hidden directory:
    /// by its resolved path, or by the identity of the file it leads to
    /// (so a hard link or a link elsewhere is caught too).
    pub fn matches(&self, path: &Path) -> bool {
        let resolved = follow_links(&lexical(path));
        if self.paths.iter().any(|h| resolved.starts_with(h)) {
            return true;
        }
        std::fs::metadata(path).is_ok_and(|m| self.ids.contains(&(m.dev(), m.ino())))
    }

    /// Whether there is nothing hidden.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// The rules `floor` needs on this file system, without touching the
/// kernel's Landlock: for tests and for reports.
pub fn plan(floor: &Floor) -> Result<Vec<Rule>, FloorError> {
    plan_with_dirs(floor).map(|(rules, _)| rules)
}

/// Floors prepared before, kept while nothing they were planned from has
/// changed, so that a command runs without listing `/` and `~` again.
///
/// The last floor is kept with the identity and times (`mtime`, `ctime`)
/// of every directory its plan depends on: the ancestors of each path, as
/// given and as resolved. Making, removing, renaming or replacing an entry
/// in one of them changes its times, so the next call plans afresh. File
/// times are coarse (a clock tick), so a floor planned while one of those
/// directories had changed within [`RECENT`] is used once and not kept:
/// a change in the same tick could otherwise go unseen.
#[derive(Default)]
pub struct Cache {
    last: Mutex<Option<Cached>>,
}

/// How recent a change to a directory a floor depends on must be for the
/// floor not to be kept.
pub const RECENT: Duration = Duration::from_millis(50);

struct Cached {
    floor: Floor,
    stamps: Vec<(PathBuf, Stamp)>,
    prepared: Arc<Prepared>,
}

/// What identifies a directory and the last change of its entries.
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Whether it changed at or after `since`.
    fn changed_since(&self, since: SystemTime) -> bool {
        let since = since
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let at = |(s, ns): (i64, i64)| {
            Duration::new(
                u64::try_from(s).unwrap_or(0),
                u32::try_from(ns).unwrap_or(0),
            )
        };
        at(self.mtime) >= since || at(self.ctime) >= since
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.last.lock().map(|last| last.is_some()).unwrap_or(false);
        f.debug_struct("Cache").field("kept", &kept).finish()
    }
}

impl Cache {
    /// `floor` prepared, reused from the last call when nothing it depends
    /// on has changed since.
    pub fn prepare(&self, floor: &Floor) -> Result<Arc<Prepared>, FloorError> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = last.as_ref()
            && cached.floor == *floor
            && cached
                .stamps
                .iter()
                .all(|(dir, stamp)| Stamp::of(dir).as_ref() == Some(stamp))
        {
            return Ok(Arc::clone(&cached.prepared));
        }
        let abi = crate::landlock::abi_version().map_err(FloorError::Unavailable)?;
        let started = SystemTime::now();
        let (rules, dirs) = plan_with_dirs(floor)?;
        let prepared = Arc::new(build(floor, abi, rules)?);
        // Stamped after planning: a change made while planning is younger
        // than `started`, so the floor is then not kept.
        let stamps: Vec<(PathBuf, Stamp)> = dirs
            .into_iter()
            .filter_map(|dir| Stamp::of(&dir).map(|stamp| (dir, stamp)))
            .collect();
        let settled = stamps
            .iter()
            .all(|(_, stamp)| !stamp.changed_since(started - RECENT));
        *last = settled.then(|| Cached {
            floor: floor.clone(),
            stamps,
            prepared: Arc::clone(&prepared),
        });
        Ok(prepared)
    }
}

fn plan_with_dirs(floor: &Floor) -> Result<(Vec<Rule>, BTreeSet<PathBuf>), FloorError> {
    let writes = Marks::writes(floor)?;
    let reads = Marks::new(&floor.hidden, &[])?;
    let mut rules = Vec::new();
    let root = PathBuf::from("/");
    for (marks, kind) in [(&writes, Kind::Write), (&reads, Kind::Read)] {
        if marks.0.is_empty() {
            continue;
        }
        if let Some(fd) = open_entry(&root) {
            marks.visit(&root, fd, marks.state(&root), kind, &mut rules);
        }
    }
    let mut dirs = writes.dirs(floor);
    dirs.extend(reads.dirs(floor));
    Ok((rules, dirs))
}

/// Which rights a plan grants: the write rights, or the right to read
/// files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Write,
    Read,
}

/// The ruleset: the floor's rights handled, signals scoped, `rules` added.
fn build(floor: &Floor, abi: i32, rules: Vec<Rule>) -> Result<Prepared, FloorError> {
    let fail = |path: &Path, e: &dyn std::fmt::Display| FloorError::Build {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let root = Path::new("/");
    let mut ruleset = Ruleset::default();
    if !floor.protect.is_empty() || !floor.hidden.is_empty() {
        ruleset = ruleset
            .handle_access(writes())
            .map_err(|e| fail(root, &e))?;
    }
    if !floor.hidden.is_empty() {
        ruleset = ruleset.handle_access(reads()).map_err(|e| fail(root, &e))?;
    }
    if floor.protect.is_empty() && floor.hidden.is_empty() && abi < SIGNAL_SCOPE_ABI {
        return Err(FloorError::Build {
            path: root.to_owned(),
            message: format!(
                "nothing to enforce: no protected path, and Landlock ABI {abi} cannot scope signals"
            ),
        });
    }
    let mut created = ruleset
        .scope(Scope::Signal)
        .map_err(|e| fail(root, &e))?
        .create()
        .map_err(|e| fail(root, &e))?;
    let count = rules.len();
    for rule in rules {
        let access = match rule.grant {
            Grant::Tree => writes(),
            Grant::File => file_writes(),
            Grant::Make => makes(),
            Grant::Read => reads(),
        };
        created = created
            .add_rule(PathBeneath::new(rule.fd, access))
            .map_err(|e| fail(&rule.path, &e))?;
    }
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or_else(|| FloorError::Build {
        path: root.to_owned(),
        message: format!("the kernel reports Landlock ABI {abi} but made no ruleset"),
    })?;
    Ok(Prepared {
        fd,
        abi,
        rules: count,
    })
}

/// Every right that writes, as handled by the floor. `IoctlDev` and
/// `ResolveUnix` are left unhandled on purpose: they are not writes, and
/// programs need terminals and local sockets.
fn writes() -> BitFlags<AccessFs> {
    AccessFs::from_write(ABI::V4)
}

/// Reading files: the one read right the floor handles, so that the
/// hidden paths cannot be read. Listing directories (`ReadDir`) and
/// executing stay unhandled: names are not secrets, and a hidden file
/// cannot be read by running it (the interpreter must open it).
fn reads() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{ReadFile})
}

fn file_writes() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{WriteFile | Truncate})
}

fn makes() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{MakeChar | MakeDir | MakeReg | MakeSock | MakeFifo | MakeBlock | MakeSym})
}

/// What a path is: protected, or a writable place inside a protected one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Protected,
    Writable,
}

/// The floor's paths, resolved, each with its mark. A path's state is the
/// mark of its nearest marked ancestor (itself included); unmarked paths
/// are writable.
struct Marks(BTreeMap<PathBuf, Mark>, BTreeSet<(u64, u64)>);

impl Marks {
    /// The marks of `floor`'s write plan: hidden paths are never written
    /// either.
    fn writes(floor: &Floor) -> Result<Marks, FloorError> {
        let protect: Vec<String> = floor.protect.iter().chain(&floor.hidden).cloned().collect();
        Marks::new(&protect, &floor.writable)
    }

    fn new(protect: &[String], writable: &[String]) -> Result<Marks, FloorError> {
        let mut marks = BTreeMap::new();
        for text in protect {
            let path = absolute(text)?;
            let entry = resolve_parent(&path);
            marks.insert(entry.clone(), Mark::Protected);
            // A protected link protects what it leads to as well: writes
            // through it land there.
            if is_symlink(&entry) {
                marks.insert(follow_links(&path), Mark::Protected);
            }
        }
        // Writable places win over a protected path they are equal to or
        // inside (the owner's home inside a protected `/root`). A link is
        // skipped: what it leads to is judged where it lives.
        for text in writable {
            let entry = resolve_parent(&absolute(text)?);
            if !is_symlink(&entry) {
                marks.insert(entry, Mark::Writable);
            }
        }
        // The identities of the protected files: Landlock's rules belong to
        // inodes, so a rule on a hard link elsewhere would be a rule on the
        // protected file itself.
        let ids = marks
            .iter()
            .filter(|(_, mark)| **mark == Mark::Protected)
            .filter_map(|(path, _)| std::fs::symlink_metadata(path).ok())
            .filter(|meta| !meta.is_dir())
            .map(|meta| (meta.dev(), meta.ino()))
            .collect();
        Ok(Marks(marks, ids))
    }

    fn state(&self, path: &Path) -> Mark {
        path.ancestors()
            .find_map(|a| self.0.get(a).copied())
            .unwrap_or(Mark::Writable)
    }

    /// Marked paths strictly beneath `dir`.
    fn beneath<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = (&'a PathBuf, Mark)> + 'a {
        self.0
            .range(dir.to_owned()..)
            .take_while(move |(p, _)| p.starts_with(dir))
            .filter(move |(p, _)| p.as_path() != dir)
            .map(|(p, m)| (p, *m))
    }

    /// What a writable ancestor of protected paths may be granted: for
    /// writes, making entries when every protected path beneath it is an
    /// existing file; for reads, nothing (its files get rules of their
    /// own).
    fn ancestor_grant(&self, dir: &Path, kind: Kind) -> Option<Grant> {
        if kind == Kind::Read {
            return None;
        }
        let only_files = self
            .beneath(dir)
            .filter(|(_, m)| *m == Mark::Protected)
            .all(|(p, _)| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_dir()));
        only_files.then_some(Grant::Make)
    }

    /// Adds the rules for `dir` (an existing directory with marked paths
    /// beneath it, in `state`) and for what lies in it.
    fn visit(&self, dir: &Path, dir_fd: OwnedFd, state: Mark, plan: Kind, rules: &mut Vec<Rule>) {
        // Each entry with its type as listed (a link is a link), or `None`
        // when it must be looked up.
        let children: Vec<(PathBuf, Option<FileType>)> = match state {
            Mark::Writable => {
                if let Some(grant) = self.ancestor_grant(dir, plan) {
                    rules.push(Rule {
                        path: dir.to_owned(),
                        grant,
                        fd: dir_fd,
                    });
                }
                match std::fs::read_dir(dir) {
                    Ok(entries) => entries
                        .filter_map(|e| e.ok().map(|e| (e.path(), e.file_type().ok())))
                        .collect(),
                    Err(e) => {
                        // Its entries get no rule: they stay read-only,
                        // which errs on the side of refusing.
                        tracing::debug!("the floor cannot list {}: {e}", dir.display());
                        Vec::new()
                    }
                }
            }
            // Inside a protected directory only the marked paths matter.
            Mark::Protected => {
                let mut next: Vec<PathBuf> = self
                    .beneath(dir)
                    .filter_map(|(p, _)| {
                        p.strip_prefix(dir)
                            .ok()?
                            .components()
                            .next()
                            .map(|c| dir.join(c))
                    })
                    .collect();
                next.dedup();
                next.into_iter().map(|p| (p, None)).collect()
            }
        };
        for (path, listed) in children {
            let Some(kind) =
                listed.or_else(|| std::fs::symlink_metadata(&path).ok().map(|m| m.file_type()))
            else {
                continue;
            };
            if kind.is_symlink() {
                continue;
            }
            let own = self.0.get(&path).copied().unwrap_or(state);
            let spine = kind.is_dir() && self.beneath(&path).next().is_some();
            if !spine && own == Mark::Protected {
                continue;
            }
            // Opened without following a link, so an entry swapped for a
            // link since it was listed gets a rule on the link, not on
            // what it leads to.
            let Some(fd) = open_entry(&path) else {
                continue;
            };
            if !kind.is_dir() && self.is_protected_file(&fd) {
                // A hard link to a protected file gets no rule of its own.
                continue;
            }
            if spine {
                self.visit(&path, fd, own, plan, rules);
            } else {
                let grant = match (plan, kind.is_dir()) {
                    (Kind::Read, _) => Grant::Read,
                    (Kind::Write, true) => Grant::Tree,
                    (Kind::Write, false) => Grant::File,
                };
                rules.push(Rule { path, grant, fd });
            }
        }
    }

    /// Whether the open entry `fd` is one of the protected files (by
    /// device and inode).
    fn is_protected_file(&self, fd: &OwnedFd) -> bool {
        use std::os::fd::AsRawFd;
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes one `stat` into the buffer it is given.
        let rc = unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) };
        if rc != 0 {
            // Unknown: no rule, which errs on the side of refusing.
            return true;
        }
        // SAFETY: fstat succeeded, so the buffer is initialised.
        let stat = unsafe { stat.assume_init() };
        self.1.contains(&(stat.st_dev, stat.st_ino))
    }

    /// Every directory whose entries the plan depends on: the ancestors of
    /// each path as given and as resolved (links among them included).
    fn dirs(&self, floor: &Floor) -> BTreeSet<PathBuf> {
        let given = floor
            .protect
            .iter()
            .chain(&floor.writable)
            .chain(&floor.hidden)
            .map(PathBuf::from);
        let resolved = self.0.keys().cloned();
        given
            .chain(resolved)
            .flat_map(|p| {
                p.ancestors()
                    .skip(1)
                    .map(Path::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// Opens `path` itself, not what a link there leads to, for a rule.
fn open_entry(path: &Path) -> Option<OwnedFd> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()
        .map(OwnedFd::from)
}

fn absolute(text: &str) -> Result<PathBuf, FloorError> {
    let path = Path::new(text);
    if !path.is_absolute() {
        return Err(FloorError::Relative(text.to_owned()));
    }
    Ok(lexical(path))
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// `path` with its parent resolved (links followed) and its last part
/// kept as written.
fn resolve_parent(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => follow_links(parent).join(name),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_with_nothing_to_protect_needs_signal_scoping() {
        if !crate::landlock::required_for_tests(SIGNAL_SCOPE_ABI) {
            return;
        }
        let empty = Floor::default();
        let old = build(&empty, SIGNAL_SCOPE_ABI - 1, Vec::new()).unwrap_err();
        assert!(old.to_string().contains("nothing to enforce"), "{old}");
        let scoped = build(&empty, SIGNAL_SCOPE_ABI, Vec::new()).unwrap();
        assert!(scoped.scopes_signals());
        assert_eq!(scoped.rules, 0);
        let older = Prepared {
            abi: SIGNAL_SCOPE_ABI - 1,
            ..scoped
        };
        assert!(!older.scopes_signals());
    }
}
