//! Housekeeping: the daily removal of what the home gathers (logs, media,
//! attachments, voice notes, workers' results, exec logs, ended background
//! processes' records) once older than `[housekeeping]` keeps it, without
//! taking a file from a conversation that still needs it
//! (`references` states the rule), and the record of what it removed for
//! `hearth doctor`.
//!
//! - `kinds`: the kinds, where each lives, and listing their files;
//! - `references`: what the stored rows say about them, and the notes left;
//! - `sizes`: the home's size by kind, for the doctor;
//! - `daily`: the daemon's task (once shortly after start, then daily);
//! - `checks`: its lines in `hearth doctor`.
//!
//! A run is cheap: one walk of the kinds' folders, and, only when some file
//! is past its retention, one read of the rows that mention the home. It
//! runs on a blocking thread, beside the daemon's own writes (SQLite in
//! WAL mode; the notes go in one short transaction).

pub mod checks;
pub mod daily;
pub mod kinds;
pub mod references;
pub mod sizes;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use hearth_base::config::Config;
use hearth_base::store;
use kinds::{ALL, Kind};

/// The `kv` namespace and key the last run's report is kept under.
const KV_NAMESPACE: &str = "housekeeping";
const KV_LAST: &str = "last_run";

/// What one run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// When it ran (ms since the epoch).
    pub at_ms: i64,
    /// Files (and process folders) removed.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Per kind that lost any: `(files, bytes)`.
    pub by_kind: BTreeMap<String, (u64, u64)>,
    /// Past their retention but kept, as a live conversation or an
    /// unanswered message or undelivered reply still needs them.
    pub kept_in_use: u64,
    /// Stored rows given a "removed by housekeeping" note.
    pub annotated: u64,
    /// What could not be removed, with why (at most a few).
    pub failures: Vec<String>,
}

/// Why housekeeping could not run.
#[derive(Debug, thiserror::Error)]
pub enum HousekeepingError {
    /// The store would not open.
    #[error("cannot open the store: {0}")]
    Store(#[from] store::StoreError),
    /// A query or the notes' transaction failed.
    #[error("the store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The report would not serialize (a bug).
    #[error("cannot record the report: {0}")]
    Json(#[from] serde_json::Error),
}

/// The most failures a report lists.
const MAX_FAILURES: usize = 10;

/// Runs housekeeping on `config`'s home now (its clock: `now_ms`); records
/// and returns what it did.
pub fn run(config: &Config, now_ms: i64) -> Result<Report, HousekeepingError> {
    let home = &config.home;
    let conn = store::open_connection(&home.join(store::FILE_NAME))?;
    let mut report = Report {
        at_ms: now_ms,
        ..Report::default()
    };
    // Everything past its retention, by kind.
    let mut due: Vec<(Kind, kinds::Entry, i64)> = Vec::new();
    for kind in ALL {
        let Some(max_age) = kind.retention(&config.housekeeping).max_age_ms() else {
            continue;
        };
        let cutoff = now_ms - max_age;
        for entry in kind.entries(home) {
            if entry.age_from_ms.is_some_and(|at| at < cutoff) {
                due.push((kind, entry, cutoff));
            }
        }
    }
    let candidates: HashSet<String> = due
        .iter()
        .filter(|(kind, _, _)| kind.referenced())
        .map(|(_, e, _)| e.path.to_string_lossy().into_owned())
        .collect();
    let scan = references::scan(&conn, &home.to_string_lossy(), &candidates)?;
    let mut removed = HashSet::new();
    for (kind, entry, cutoff) in due {
        let shown = entry.path.to_string_lossy().into_owned();
        if kind.referenced()
            && scan
                .needed_until
                .get(&shown)
                .is_some_and(|until| *until >= cutoff)
        {
            report.kept_in_use += 1;
            continue;
        }
        let gone = match kind {
            Kind::Processes => std::fs::remove_dir_all(&entry.path),
            _ => std::fs::remove_file(&entry.path),
        };
        match gone {
            Ok(()) => {
                report.files += 1;
                report.bytes += entry.bytes;
                let counted = report.by_kind.entry(kind.key().to_owned()).or_default();
                counted.0 += 1;
                counted.1 += entry.bytes;
                removed.insert(shown);
            }
            // Gone already: someone else tidied it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                if report.failures.len() < MAX_FAILURES {
                    report.failures.push(format!("{shown}: {e}"));
                }
            }
        }
    }
    if !removed.is_empty() {
        let zone = hearth_base::schedule::owner_zone(config.owner.timezone.as_deref());
        let when = hearth_base::time_text::local_time(now_ms, &zone);
        let date = when.get(..10).unwrap_or(&when);
        report.annotated = references::annotate(&conn, &scan.rows, &removed, date)? as u64;
    }
    record(&conn, &report)?;
    Ok(report)
}

/// The last run's report, from `hearth.db` under `home` (read-only);
/// `None` before the first run.
pub fn last(home: &Path) -> Result<Option<Report>, HousekeepingError> {
    let path = home.join(store::FILE_NAME);
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(
        &path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM kv WHERE namespace = ?1 AND key = ?2",
            params![KV_NAMESPACE, KV_LAST],
            |r| r.get(0),
        )
        .optional()?;
    Ok(value.map(|v| serde_json::from_str(&v)).transpose()?)
}

/// Keeps `report` as the last run's.
fn record(conn: &Connection, report: &Report) -> Result<(), HousekeepingError> {
    conn.execute(
        "INSERT INTO kv (namespace, key, value, updated_at_ms) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, \
         updated_at_ms = excluded.updated_at_ms",
        params![
            KV_NAMESPACE,
            KV_LAST,
            serde_json::to_string(report)?,
            report.at_ms
        ],
    )?;
    Ok(())
}

impl Report {
    /// One line for people: what went, and what stayed in use.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "removed {} file(s), {}",
            self.files,
            sizes::human_bytes(self.bytes)
        );
        if !self.by_kind.is_empty() {
            let kinds: Vec<String> = self
                .by_kind
                .iter()
                .map(|(kind, (n, b))| format!("{kind} {n} ({})", sizes::human_bytes(*b)))
                .collect();
            line.push_str(&format!(": {}", kinds.join(", ")));
        }
        if self.kept_in_use > 0 {
            line.push_str(&format!(
                "; kept {} past retention that a conversation still needs",
                self.kept_in_use
            ));
        }
        if self.annotated > 0 {
            line.push_str(&format!("; noted in {} stored message(s)", self.annotated));
        }
        if !self.failures.is_empty() {
            line.push_str(&format!("; could not remove: {}", self.failures.join("; ")));
        }
        line
    }
}
