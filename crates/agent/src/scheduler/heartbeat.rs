//! The heartbeat: one job of kind `heartbeat` that `[heartbeat]` in the
//! config keeps in the `jobs` table, so the scheduler fires it like any
//! task (its timer, DST rules, missed-run policy, exactly-once firing,
//! failure count) and `/schedule` lists it.
//!
//! The config owns it: each start makes the table match `[heartbeat]`
//! (created, changed, or removed when off), and tools and commands may
//! not change it ([`super::JobError::Heartbeat`]), only fire it now. Its
//! `text` is the checklist's path; the checklist itself is read when it
//! fires, so an edit to `HEARTBEAT.md` counts from the next run without a
//! restart. Its answer goes where a task's does (or to `[heartbeat]
//! channel`/`chat`), and `[silent]` drops it.

use rusqlite::{OptionalExtension, params};

use super::jobs::{COLUMNS, Job, JobError, Jobs, Kind, When, next_run, row, schedule_of};
use hearth_base::config::HeartbeatConfig;
use hearth_base::store::MAIN_AGENT;

/// The most bytes of the checklist put in the prompt.
pub const MAX_CHECKLIST_BYTES: usize = 16 * 1024;

/// Makes the heartbeat job match `config` (its checklist under `home` by
/// default); returns it, or `None` when the heartbeat is off.
///
/// An unchanged heartbeat keeps its next run, so a run missed while the
/// daemon was down still fires by its missed policy.
pub fn sync(
    jobs: &Jobs,
    config: &HeartbeatConfig,
    home: &std::path::Path,
) -> Result<Option<Job>, JobError> {
    let now = jobs.clock().now_ms();
    let current = jobs.with_conn(|conn| {
        conn.query_row(
            &format!(
                "{COLUMNS} FROM jobs WHERE kind = 'heartbeat' AND removed_at_ms IS NULL \
                 ORDER BY id LIMIT 1"
            ),
            [],
            row,
        )
        .optional()
    })?;
    if !config.enabled {
        if let Some(job) = current {
            jobs.with_conn(|conn| {
                conn.execute(
                    "UPDATE jobs SET removed_at_ms = ?1, enabled = 0, updated_at_ms = ?1 \
                     WHERE kind = 'heartbeat' AND removed_at_ms IS NULL",
                    [now],
                )
            })?;
            tracing::info!(
                job = job.id,
                "the heartbeat is off ([heartbeat] enabled = false)"
            );
            jobs.changed.notify_one();
        }
        return Ok(None);
    }
    let (expr, zone) = (config.schedule.clone(), jobs.owner_zone().to_owned());
    let when = When::Cron {
        expr: expr.clone(),
        zone: zone.clone(),
    };
    let checklist = config.checklist_in(home).to_string_lossy().into_owned();
    let (channel, chat) = match &config.to {
        Some((channel, chat)) => (Some(channel.clone()), Some(chat.clone())),
        None => (None, None),
    };
    let same = current.as_ref().is_some_and(|job| {
        job.when() == when
            && job.text == checklist
            && job.channel == channel
            && job.chat == chat
            && job.enabled
            && job.next_run_ms.is_some()
    });
    if let (true, Some(job)) = (same, &current) {
        return Ok(Some(job.clone()));
    }
    let next = next_run(&schedule_of(&when)?, now);
    let id = jobs.with_conn(|conn| match &current {
        Some(job) => conn
            .execute(
                "UPDATE jobs SET cron = ?1, zone = ?2, text = ?3, channel = ?4, chat = ?5, \
                 enabled = 1, failures = 0, next_run_ms = ?6, updated_at_ms = ?7 WHERE id = ?8",
                params![expr, zone, checklist, channel, chat, next, now, job.id],
            )
            .map(|_| job.id),
        // The owner's, outside the per-agent and per-hour limits: there
        // is one at most, and the config made it.
        None => conn
            .execute(
                "INSERT INTO jobs (kind, cron, zone, text, agent_id, channel, chat, missed, \
                 next_run_ms, created_by, created_at_ms, updated_at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'once', ?8, NULL, ?9, ?9)",
                params![
                    super::jobs::kind_name(Kind::Heartbeat),
                    expr,
                    zone,
                    checklist,
                    MAIN_AGENT,
                    channel,
                    chat,
                    next,
                    now
                ],
            )
            .map(|_| conn.last_insert_rowid()),
    })?;
    tracing::info!(job = id, schedule = %expr, zone = %zone, "the heartbeat is set");
    jobs.changed.notify_one();
    jobs.get(id).map(Some)
}

/// The checklist part of what the agent reads when the heartbeat fires
/// (`fire` puts what the heartbeat is and how to answer before it): the
/// checklist's text, or a note saying why there is none.
pub fn checklist_section(job: &Job) -> String {
    let path = std::path::Path::new(&job.text);
    match read_checklist(path) {
        Ok(text) if text.trim().is_empty() => format!(
            "[hearth: the checklist {} is empty. Check only what you already know needs the \
             owner (what you were asked to watch, commitments due today).]",
            job.text
        ),
        Ok(text) => format!("The checklist ({}):\n\n{text}", job.text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!(
            "[hearth: there is no checklist: {} does not exist. The owner writes one to say \
             what the heartbeat checks (docs/operations.md, \"Heartbeat\"). Until then, check \
             only what you already know needs them.]",
            job.text
        ),
        Err(e) => format!(
            "[hearth: the checklist {} cannot be read: {e}. Tell the owner, so they can fix \
             it.]",
            job.text
        ),
    }
}

/// The checklist's text, at most [`MAX_CHECKLIST_BYTES`] of it (cut at a
/// line, with a note), bytes that are not UTF-8 replaced.
fn read_checklist(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CHECKLIST_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() <= MAX_CHECKLIST_BYTES {
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    bytes.truncate(MAX_CHECKLIST_BYTES);
    let text = String::from_utf8_lossy(&bytes);
    let cut = text.rfind('\n').unwrap_or(text.len());
    Ok(format!(
        "{}\n\n[hearth: the checklist is longer than {} KiB; the rest is left out.]",
        &text[..cut],
        MAX_CHECKLIST_BYTES / 1024
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_checklist_is_cut_at_a_line_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("HEARTBEAT.md");
        let line = "- check something that matters today\n";
        std::fs::write(&path, line.repeat(MAX_CHECKLIST_BYTES / line.len() + 10)).unwrap();
        let text = read_checklist(&path).unwrap();
        assert!(text.len() < MAX_CHECKLIST_BYTES + 200, "{}", text.len());
        let (kept, note) = text.split_once("\n\n[hearth:").unwrap();
        assert!(kept.ends_with("matters today"), "{kept:?}");
        assert!(note.contains("longer than 16 KiB"), "{note}");
        // A short one is read whole.
        std::fs::write(&path, line).unwrap();
        assert_eq!(read_checklist(&path).unwrap(), line);
    }
}
