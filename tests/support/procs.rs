//! Looking at processes through `/proc`: finding what a daemon started
//! (its shell commands, its Lua workers) and whether a process group is
//! gone, for the tests and benchmarks of `/stop`.

use std::time::{Duration, Instant};

/// A process found under `/proc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its id.
    pub pid: i32,
    /// Its process group.
    pub pgid: i32,
}

/// A live descendant of `root` whose command line is exactly `argv`.
pub fn descendant(root: i32, argv: &[&str]) -> Option<Found> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")).ok() else {
            continue;
        };
        let words: Vec<&[u8]> = cmdline
            .split(|&b| b == 0)
            .filter(|w| !w.is_empty())
            .collect();
        let wanted: Vec<&[u8]> = argv.iter().map(|w| w.as_bytes()).collect();
        if words != wanted || !descends_from(pid, root) {
            continue;
        }
        if let Some((_, pgid, state)) = stat(pid)
            && state != 'Z'
        {
            return Some(Found { pid, pgid });
        }
    }
    None
}

/// Waits up to `limit` for [`descendant`]; panics naming `argv` if none
/// comes.
pub fn wait_for_descendant(root: i32, argv: &[&str], limit: Duration) -> Found {
    let start = Instant::now();
    loop {
        if let Some(found) = descendant(root, argv) {
            return found;
        }
        assert!(
            start.elapsed() < limit,
            "no process {argv:?} under {root} within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether the process group `pgid` is gone: `kill(-pgid, 0)` says ESRCH.
pub fn group_gone(pgid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; it only asks whether the group exists.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

fn descends_from(mut pid: i32, root: i32) -> bool {
    for _ in 0..64 {
        if pid == root {
            return true;
        }
        match stat(pid) {
            Some((ppid, _, _)) if ppid > 1 => pid = ppid,
            _ => return false,
        }
    }
    false
}

/// `(ppid, pgid, state)` of `pid`.
fn stat(pid: i32) -> Option<(i32, i32, char)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((ppid, pgid, state))
}
