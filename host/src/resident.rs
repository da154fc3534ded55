//! Gives back the pages of the binary that one-off work ran: start-up,
//! and each day's housekeeping.
//!
//! The kernel maps a binary's code in 64 KiB windows around each page a
//! process faults in, so the code start-up runs once (the config, the
//! store, every plugin's set-up, the scripts) leaves some 15 MiB of the
//! binary resident that an idle daemon never runs again, and the first
//! housekeeping run, 30 s later, another 4 MiB. Once such work is done,
//! `MADV_DONTNEED` over the binary's clean mappings takes
//! those pages out of the process; they stay in the page cache, so what
//! the daemon runs later comes back in as it runs without reading the
//! disk, and a `hearth` command started next finds them there. This does
//! not depend on knowing which functions are cold, so it does not decay
//! as the code changes, unlike a hand-kept function order.
//! (`MADV_PAGEOUT` would evict them from the cache too, making the next
//! start read the binary from disk, and the kernel refuses it for a
//! binary file the daemon's user may not write.)
//!
//! Only mappings with no anonymous pages are touched: on a private
//! mapping, `MADV_DONTNEED` drops private copies too, and the relocated
//! read-only data (RELRO) is such a copy, which would be read back from
//! the file unrelocated. The heap's free pages that start-up left behind
//! go back too (`malloc_trim`).

use std::time::Duration;

/// How long after `ready` start-up's pages are given back: long enough
/// for the work that follows start-up (the scripts' first load, the services'
/// first rounds: some 10-20 ms) to be done with its code, short enough
/// to come before an idle daemon's quiet starts, which it would otherwise
/// break with a wake-up of its own (measured: 100 ms leaves as little
/// resident as 2 s).
pub const AFTER_READY: Duration = Duration::from_millis(250);

/// What one call gave back.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// Mappings of the binary the kernel was asked to drop.
    pub mappings: usize,
    /// Their resident KiB before the call.
    pub resident_kib: u64,
    /// Mappings the kernel refused.
    pub refused: usize,
}

/// Drops every clean mapping of the running executable from the process
/// (not from the page cache) and returns the heap's free pages. Best
/// effort: what cannot be read or is refused changes nothing.
pub fn give_back() -> Released {
    // SAFETY: malloc_trim takes a plain size and only gives free memory
    // back; every allocation stays where it is.
    unsafe {
        libc::malloc_trim(0);
    }
    let mut released = Released::default();
    let (Ok(exe), Ok(smaps)) = (
        std::fs::read_link("/proc/self/exe"),
        std::fs::read_to_string("/proc/self/smaps"),
    ) else {
        return released;
    };
    for mapping in clean_mappings(&smaps, &exe.to_string_lossy()) {
        // SAFETY: the range is one of this process's own mappings, file
        // backed, not writable and with no private copies (no anonymous
        // page, and none can appear in a mapping nobody may write), so
        // what a later fault reads back is byte for byte what is there.
        let code = unsafe {
            libc::madvise(
                mapping.start as *mut libc::c_void,
                mapping.end - mapping.start,
                libc::MADV_DONTNEED,
            )
        };
        released.mappings += 1;
        released.resident_kib += mapping.resident_kib;
        if code != 0 {
            released.refused += 1;
        }
    }
    released
}

/// One mapping of the binary in `/proc/self/smaps`.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    resident_kib: u64,
}

/// The mappings of `exe` that are not writable and hold no anonymous
/// (privately modified) pages.
fn clean_mappings(smaps: &str, exe: &str) -> Vec<Mapping> {
    let mut found = Vec::new();
    // (mapping, anonymous KiB) of the entry being read, when it is exe's.
    let mut current: Option<(Mapping, u64)> = None;
    let mut finish = |entry: Option<(Mapping, u64)>| {
        if let Some((mapping, 0)) = entry {
            found.push(mapping);
        }
    };
    for line in smaps.lines() {
        if let Some(mapping) = header(line, exe) {
            finish(current.take());
            current = mapping.map(|m| (m, 0));
            continue;
        }
        let Some((mapping, anonymous)) = current.as_mut() else {
            continue;
        };
        if let Some(kib) = field_kib(line, "Rss:") {
            mapping.resident_kib = kib;
        } else if let Some(kib) = field_kib(line, "Anonymous:") {
            *anonymous = kib;
        }
    }
    finish(current);
    found
}

/// `Some(Some(mapping))` for a header line of a read-only mapping of
/// `exe`, `Some(None)` for any other header, `None` for a field line.
fn header(line: &str, exe: &str) -> Option<Option<Mapping>> {
    let mut fields = line.split_whitespace();
    let range = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let (Ok(start), Ok(end)) = (
        usize::from_str_radix(start, 16),
        usize::from_str_radix(end, 16),
    ) else {
        return None;
    };
    let perms = fields.next().unwrap_or("");
    let path = fields.nth(3).unwrap_or("");
    let ours = path == exe && perms.as_bytes().get(1) == Some(&b'-');
    Some(ours.then_some(Mapping {
        start,
        end,
        resident_kib: 0,
    }))
}

/// The KiB of a `Key:   123 kB` line.
fn field_kib(line: &str, key: &str) -> Option<u64> {
    line.strip_prefix(key)?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
562cb572d000-562cb5f90000 r--p 00000000 fe:00 5309428                    /opt/hearth
Size:               8588 kB
Rss:                1452 kB
Anonymous:             0 kB
562cb5f90000-562cb751d000 r-xp 00862000 fe:00 5309428                    /opt/hearth
Rss:               13396 kB
Anonymous:             0 kB
562cb751d000-562cb7671000 r--p 01dee000 fe:00 5309428                    /opt/hearth
Rss:                1360 kB
Anonymous:          1360 kB
562cb7671000-562cb7679000 rw-p 01f41000 fe:00 5309428                    /opt/hearth
Rss:                  32 kB
Anonymous:             0 kB
7f0000000000-7f0000001000 r-xp 00000000 fe:00 42                         /usr/lib/libc.so.6
Rss:                   4 kB
Anonymous:             0 kB
";

    #[test]
    fn only_the_binarys_clean_read_only_mappings_are_given_back() {
        let found = clean_mappings(SMAPS, "/opt/hearth");
        assert_eq!(
            found,
            [
                Mapping {
                    start: 0x562cb572d000,
                    end: 0x562cb5f90000,
                    resident_kib: 1452
                },
                Mapping {
                    start: 0x562cb5f90000,
                    end: 0x562cb751d000,
                    resident_kib: 13396
                },
            ]
        );
    }

    /// The running test binary's own code: resident after running, and
    /// mostly gone after the call.
    #[test]
    fn the_running_binarys_code_stops_being_resident() {
        let resident = || {
            let exe = std::fs::read_link("/proc/self/exe").unwrap();
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            clean_mappings(&smaps, &exe.to_string_lossy())
                .iter()
                .map(|m| m.resident_kib)
                .sum::<u64>()
        };
        let before = resident();
        let released = give_back();
        let after = resident();
        assert!(
            released.mappings >= 1 && released.refused == 0,
            "{released:?}"
        );
        assert!(
            after * 2 < before,
            "resident KiB of the binary's clean mappings: {before} before, {after} after"
        );
    }
}
