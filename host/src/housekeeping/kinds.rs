//! The kinds of file housekeeping looks after, where each lives in the
//! home, and the listing of one kind's files with their sizes and ages.
//!
//! Listing never follows a symbolic link (a link in `media/` to the
//! owner's photos must not make housekeeping walk, or remove, the photos)
//! and skips what it cannot read, so one odd file never stops a run.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use hearth_base::config::{HousekeepingConfig, Retention};

/// One kind of file in the home.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `logs/` other than the exec logs.
    Logs,
    /// `logs/exec-*.log`, the shell plugin's full command output.
    ExecLogs,
    /// `media/`: images and PDFs prepared for the model.
    Media,
    /// `attachments/`: what people sent on the channels.
    Attachments,
    /// `voice/`: voice notes the agent spoke.
    Voice,
    /// `workers/`: `spawn_agent` workers' full results.
    Workers,
    /// `processes/proc-*/`: ended background processes' records.
    Processes,
}

/// Every kind, in the order reports list them.
pub const ALL: [Kind; 7] = [
    Kind::Logs,
    Kind::ExecLogs,
    Kind::Media,
    Kind::Attachments,
    Kind::Voice,
    Kind::Workers,
    Kind::Processes,
];

/// One thing housekeeping may remove: a file, or a process's folder.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its path.
    pub path: PathBuf,
    /// Its size in bytes (a folder's: the files in it).
    pub bytes: u64,
    /// When it last changed, or when its process ended (ms since the
    /// epoch); `None`: it is kept whatever its age (a process still
    /// running, or a record that does not read).
    pub age_from_ms: Option<i64>,
}

impl Kind {
    /// Its key in `[housekeeping]` and in reports.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Logs => "logs",
            Kind::ExecLogs => "exec_logs",
            Kind::Media => "media",
            Kind::Attachments => "attachments",
            Kind::Voice => "voice",
            Kind::Workers => "workers",
            Kind::Processes => "processes",
        }
    }

    /// How long `config` keeps it.
    pub fn retention(self, config: &HousekeepingConfig) -> Retention {
        match self {
            Kind::Logs => config.logs,
            Kind::ExecLogs => config.exec_logs,
            Kind::Media => config.media,
            Kind::Attachments => config.attachments,
            Kind::Voice => config.voice,
            Kind::Workers => config.workers,
            Kind::Processes => config.processes,
        }
    }

    /// The folder it lives in, under `home`.
    pub fn dir(self, home: &Path) -> PathBuf {
        home.join(match self {
            Kind::Logs | Kind::ExecLogs => "logs",
            Kind::Media => "media",
            Kind::Attachments => "attachments",
            Kind::Voice => "voice",
            Kind::Workers => "workers",
            Kind::Processes => "processes",
        })
    }

    /// Whether conversations may name its files, so a file is checked
    /// against them before it goes (a process's record is named by its id
    /// only, which `process_status` answers for as unknown once it is
    /// gone).
    pub fn referenced(self) -> bool {
        self != Kind::Processes
    }

    /// Its files (for processes, the folders of ended ones).
    pub fn entries(self, home: &Path) -> Vec<Entry> {
        let dir = self.dir(home);
        match self {
            Kind::Processes => processes(&dir),
            Kind::ExecLogs => top_files(&dir)
                .into_iter()
                .filter(|e| is_exec_log(&e.path))
                .collect(),
            Kind::Logs => {
                let mut all = Vec::new();
                walk(&dir, &mut all);
                all.retain(|e| !(e.path.parent() == Some(dir.as_path()) && is_exec_log(&e.path)));
                all
            }
            _ => {
                let mut all = Vec::new();
                walk(&dir, &mut all);
                all
            }
        }
    }
}

/// The total size of the files under `path` (not following links), and
/// their count.
pub fn size_of(path: &Path) -> (u64, u64) {
    let mut all = Vec::new();
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => return (meta.len(), 1),
        Ok(meta) if meta.is_dir() => walk(path, &mut all),
        _ => {}
    }
    (all.iter().map(|e| e.bytes).sum(), all.len() as u64)
}

/// `exec-*.log`: what the shell plugin names a command's full output.
fn is_exec_log(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("exec-") && n.ends_with(".log"))
}

/// Every regular file under `dir`, depth first.
fn walk(dir: &Path, out: &mut Vec<Entry>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            walk(&entry.path(), out);
        } else if meta.is_file() {
            out.push(Entry {
                path: entry.path(),
                bytes: meta.len(),
                age_from_ms: modified_ms(&meta),
            });
        }
    }
}

/// The regular files directly in `dir`.
fn top_files(dir: &Path) -> Vec<Entry> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.flatten()
        .filter_map(|entry| {
            let meta = entry.path().symlink_metadata().ok()?;
            meta.is_file().then(|| Entry {
                path: entry.path(),
                bytes: meta.len(),
                age_from_ms: modified_ms(&meta),
            })
        })
        .collect()
}

/// The `proc-*` folders in `dir`, aged from when their process ended.
/// A record that says it runs, or does not read, is kept: the shell
/// plugin marks a dead one `gone` when it next looks, and it ages from
/// then. The highest-numbered record is kept too: the shell plugin numbers
/// a new process after the highest on disk, and an id the conversations
/// once used must never name another process.
fn processes(dir: &Path) -> Vec<Entry> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let number = |path: &Path| {
        path.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("proc-"))
            .and_then(|n| n.parse::<u64>().ok())
    };
    let mut entries: Vec<Entry> = read
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("proc-"))
        .filter(|e| e.path().symlink_metadata().is_ok_and(|m| m.is_dir()))
        .map(|e| {
            let path = e.path();
            let ended = std::fs::read(path.join("meta.json"))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .filter(|meta| {
                    matches!(meta["status"].as_str(), Some("exited" | "stopped" | "gone"))
                })
                .map(|meta| {
                    meta["ended_at_ms"]
                        .as_i64()
                        .or_else(|| modified_ms_of(&path.join("meta.json")))
                        .unwrap_or(0)
                });
            let (bytes, _) = size_of(&path);
            Entry {
                path,
                bytes,
                age_from_ms: ended,
            }
        })
        .collect();
    let highest = entries.iter().filter_map(|e| number(&e.path)).max();
    for entry in &mut entries {
        if highest.is_some() && number(&entry.path) == highest {
            entry.age_from_ms = None;
        }
    }
    entries
}

fn modified_ms(meta: &std::fs::Metadata) -> Option<i64> {
    let since = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some(since.as_millis() as i64)
}

fn modified_ms_of(path: &Path) -> Option<i64> {
    modified_ms(&std::fs::symlink_metadata(path).ok()?)
}
