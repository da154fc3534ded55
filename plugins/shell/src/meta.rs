//! A background process's record on disk (`meta.json`), and whether the
//! process it names is still alive.
//!
//! Liveness is judged by the pid *and* the start time the kernel gives it
//! (`/proc/<pid>/stat`, field 22, in clock ticks since boot) and the boot
//! id: a pid the kernel has since given to another process has another
//! start time, and after a reboot the ticks start over. So the answer holds
//! after a daemon restart, when the process is no longer this daemon's
//! child. A zombie counts as dead.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file name of the record in a process's folder.
pub const FILE: &str = "meta.json";

/// Where a background process stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Started and not known to have ended.
    Running,
    /// Ended by itself; `exit_code` or `signal` says how.
    Exited,
    /// Ended by `process_stop`.
    Stopped,
    /// Found dead after the daemon that started it went away; how it ended
    /// is unknown.
    Gone,
}

/// The record of one background process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// `proc-<n>`.
    pub id: String,
    /// The label the caller gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its pid, also its process group and session id.
    pub pid: i32,
    /// The command line.
    pub command: String,
    /// Where it runs.
    pub cwd: String,
    /// When it started, in ms since the epoch.
    pub started_at_ms: i64,
    /// Its start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub start_ticks: u64,
    /// The boot it started in (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
    /// Where it stands.
    pub status: Status,
    /// Its exit code, when it exited and that is known.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did and that is known.
    #[serde(default)]
    pub signal: Option<String>,
    /// When it was seen to end, in ms since the epoch.
    #[serde(default)]
    pub ended_at_ms: Option<i64>,
    /// How `process_stop` ended it: `terminated` (SIGTERM sufficed) or
    /// `killed` (SIGKILL after the grace period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// Its standard output's file.
    pub stdout: String,
    /// Its standard error's file.
    pub stderr: String,
    /// The confinement it runs under, when the owner did not approve it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<String>,
}

impl Meta {
    /// Whether the process this record names is alive now.
    pub fn is_alive(&self) -> bool {
        self.boot_id == boot_id() && is_alive(self.pid, self.start_ticks)
    }
}

/// Reads the record in `dir`.
pub fn read(dir: &Path) -> Result<Meta, String> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is malformed: {e}", path.display()))
}

/// Writes the record in `dir`, atomically: a reader sees the old or the new
/// record, never half of one.
pub fn write(dir: &Path, meta: &Meta) -> io::Result<()> {
    let text = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    let tmp = dir.join(format!("{FILE}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, dir.join(FILE))
}

/// What `/proc/<pid>/stat` says about a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// The state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Its process group.
    pub pgrp: i32,
    /// Start time in clock ticks since boot.
    pub start_ticks: u64,
}

/// Reads `/proc/<pid>/stat`.
pub fn proc_stat(pid: i32) -> io::Result<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("/proc/{pid}/stat is not in the expected format"),
        )
    })
}

/// Whether `pid` is a live (not zombie) process that started at
/// `start_ticks`.
pub fn is_alive(pid: i32, start_ticks: u64) -> bool {
    match proc_stat(pid) {
        Ok(stat) => stat.start_ticks == start_ticks && !matches!(stat.state, 'Z' | 'X' | 'x'),
        Err(_) => false,
    }
}

/// Whether any live (not zombie) process is in the process group `pgid`.
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the group exists.
    if unsafe { libc::kill(-pgid, 0) } != 0 {
        return false;
    }
    // The group exists, but perhaps only as zombies nobody has reaped yet
    // (which signals cannot end): look at each member.
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| proc_stat(pid).ok())
        .any(|stat| stat.pgrp == pgid && !matches!(stat.state, 'Z' | 'X' | 'x'))
}

/// This boot's id; empty if the kernel does not say.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Parses the state (field 3), group (field 5) and start time (field 22)
/// of a stat line.
/// The command name (field 2) is in parentheses and may itself hold
/// spaces and parentheses, so fields are counted after the last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 was the state; field 5 the group, field 22 17 further on.
    let pgrp = fields.nth(1)?.parse().ok()?;
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(ProcStat {
        state,
        pgrp,
        start_ticks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_found_after_a_command_name_with_spaces_and_parentheses() {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 ...";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                state: 'S',
                pgrp: 4242,
                start_ticks: 987654
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) R 1 2"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let pid = std::process::id() as i32;
        let stat = proc_stat(pid).unwrap();
        assert!(is_alive(pid, stat.start_ticks));
        assert!(!is_alive(pid, stat.start_ticks + 1));
        assert!(!is_alive(i32::MAX, stat.start_ticks));
        assert!(!boot_id().is_empty());
    }

    #[test]
    fn a_zombie_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let start = proc_stat(pid).unwrap().start_ticks;
        // Unreaped, it stays a zombie with its /proc entry.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while proc_stat(pid).unwrap().state != 'Z' {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!is_alive(pid, start));
        child.wait().unwrap();
    }
}
