//! What the driver watches: which messages were sent and answered, the
//! warnings and errors in the daemon's log and the driver's own, and the
//! daemon's memory, fds, threads and children in `/proc`, which is where
//! slow growth shows.

use std::io::{BufRead, BufReader, Read};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::model::number_in;
use super::{Sample, lock};

/// When each message was sent and answered.
#[derive(Default)]
pub(super) struct Tracker {
    entries: Mutex<Vec<Entry>>,
}

impl Tracker {
    pub(super) fn sent(&self, n: usize) {
        let mut entries = lock(&self.entries);
        debug_assert_eq!(entries.len(), n);
        entries.push(Entry {
            sent: Instant::now(),
            answered: None,
            repeats: 0,
        });
    }

    /// Notes the answer to the message whose text held `text`'s number.
    pub(super) fn answer_in(&self, text: &str) {
        let Some(n) = number_in(text) else { return };
        let now = Instant::now();
        let mut entries = lock(&self.entries);
        if let Some(entry) = entries.get_mut(n) {
            match entry.answered {
                None => entry.answered = Some(now),
                Some(_) => entry.repeats += 1,
            }
        }
    }

    pub(super) fn answered(&self) -> usize {
        lock(&self.entries)
            .iter()
            .filter(|e| e.answered.is_some())
            .count()
    }

    /// Answered, answered again, and the sorted latencies.
    pub(super) fn summary(&self) -> (usize, usize, Vec<Duration>) {
        let entries = lock(&self.entries);
        let mut latencies: Vec<Duration> = entries
            .iter()
            .filter_map(|e| e.answered.map(|a| a - e.sent))
            .collect();
        latencies.sort();
        let repeats = entries.iter().map(|e| e.repeats).sum();
        (latencies.len(), repeats, latencies)
    }
}

#[derive(Clone, Copy)]
struct Entry {
    sent: Instant,
    answered: Option<Instant>,
    repeats: usize,
}

/// Warnings and errors, from the log and the driver. Until the load
/// starts, warnings are kept apart: a channel says it is still connecting
/// at every start.
#[derive(Default)]
pub(super) struct Problems {
    pub(super) loading: AtomicBool,
    seen: Mutex<Seen>,
}

#[derive(Clone, Default)]
pub(super) struct Seen {
    pub(super) kept: Vec<String>,
    pub(super) count: usize,
    pub(super) at_start: Vec<String>,
}

/// How many problems are kept in full (the rest are counted).
const PROBLEMS_KEPT: usize = 30;

impl Problems {
    pub(super) fn note(&self, problem: String) {
        let mut seen = lock(&self.seen);
        if seen.kept.len() < PROBLEMS_KEPT {
            seen.kept.push(problem);
        }
        seen.count += 1;
    }

    /// A log line at WARN (`error` false) or ERROR.
    fn log(&self, line: String, error: bool) {
        if error || self.loading.load(Ordering::SeqCst) {
            self.note(line);
        } else {
            lock(&self.seen).at_start.push(line);
        }
    }

    pub(super) fn summary(&self) -> Seen {
        lock(&self.seen).clone()
    }
}

/// Reads the daemon's JSON log: says when it is ready, keeps what is
/// WARN or ERROR.
pub(super) fn read_log(stderr: impl Read, ready: &Sender<()>, problems: &Problems) {
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        let Ok(entry) = serde_json::from_str::<Value>(&line) else {
            problems.note(format!("not a JSON log line: {line}"));
            continue;
        };
        if entry["fields"]["message"] == "ready" {
            let _ = ready.send(());
        }
        match entry["level"].as_str() {
            Some("WARN") => problems.log(line, false),
            Some("ERROR") => problems.log(line, true),
            _ => {}
        }
    }
}

/// Reads `/proc/PID` now.
pub(super) fn sample(pid: i32, started: Instant, tracker: &Tracker) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |text: &str, name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    let (sent, answered) = {
        let entries = lock(&tracker.entries);
        (
            entries.len(),
            entries.iter().filter(|e| e.answered.is_some()).count(),
        )
    };
    Sample {
        at: started.elapsed(),
        rss_kib: field(&status, "VmRSS:").unwrap_or(0),
        pss_kib: field(&rollup, "Pss:"),
        fds,
        threads: field(&status, "Threads:").unwrap_or(0),
        children: children(pid),
        sent,
        answered,
    }
}

/// Live processes whose parent is `pid`.
fn children(pid: i32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                // The name is in parentheses and may hold spaces.
                stat.rfind(')').is_some_and(|close| {
                    let mut fields = stat[close + 2..].split(' ');
                    let state = fields.next();
                    let ppid = fields.next().and_then(|f| f.parse::<i32>().ok());
                    ppid == Some(pid) && state != Some("Z")
                })
            })
        })
        .count() as u64
}
