//! Firing: due jobs become inbox messages, and their next run is computed,
//! in one transaction.
//!
//! Architecture invariant: a firing is stored exactly once. The inbox row
//! and the job's advanced `next_run_ms` commit together, so a crash before
//! the commit leaves the job due (it fires after the restart) and a crash
//! after it leaves the message stored and the job advanced. The inbox key
//! `job:<id>:<due ms>` makes a second insert of the same firing a no-op
//! even if that ever failed.

use rusqlite::{Connection, params};

use super::jobs::{Job, Kind, MAX_CATCH_UP, Missed};
use hearth_base::schedule::Parsed;
use hearth_base::store::now_ms;
use hearth_base::time_text::{human, local_time, timestamp};

/// The pseudo-channel of scheduled tasks: each firing is a fresh session
/// on it, and its answer goes to the owner.
pub const SCHEDULER_CHANNEL: &str = "scheduler";

/// The sender of every message the scheduler stores.
pub const SCHEDULER_SENDER: &str = "scheduler";

/// A run this much past its due time is on time; later, the job's missed
/// policy applies.
pub const GRACE_MS: i64 = 60_000;

/// The most missed runs counted for one job (a job every minute, down for
/// a month, would otherwise be counted one by one).
const MAX_COUNTED: usize = 10_000;

/// What one pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Messages stored.
    pub fired: usize,
    /// Agents with new messages, to wake.
    pub agents: Vec<i64>,
    /// The earliest next run of any enabled job (ms), to sleep until.
    pub next_due_ms: Option<i64>,
}

/// Fires every job due at `now` (ms), in one transaction.
pub fn fire_due(conn: &Connection, now: i64) -> rusqlite::Result<Pass> {
    let tx = conn.unchecked_transaction()?;
    let due: Vec<(Job, bool)> = {
        let mut stmt = tx.prepare_cached(&format!(
            "{}, (SELECT enabled FROM agents WHERE agents.id = jobs.agent_id) AS agent_on \
             FROM jobs WHERE enabled = 1 AND removed_at_ms IS NULL AND next_run_ms <= ?1 \
             ORDER BY next_run_ms, id",
            super::jobs::COLUMNS
        ))?;
        stmt.query_map([now], |r| {
            Ok((
                super::jobs::row(r)?,
                r.get::<_, Option<bool>>(18)?.unwrap_or(false),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?
    };
    let mut pass = Pass::default();
    let mut parsed = Parsed::default();
    for (job, agent_on) in due {
        let fired = if agent_on {
            fire_job(&tx, &job, now, &mut parsed)?
        } else {
            finish_job(
                &tx,
                &job,
                None,
                now,
                "disabled: its agent was deleted",
                false,
            )?;
            0
        };
        if fired > 0 {
            pass.fired += fired;
            if !pass.agents.contains(&job.agent_id) {
                pass.agents.push(job.agent_id);
            }
        }
    }
    pass.next_due_ms = tx.query_row(
        "SELECT min(next_run_ms) FROM jobs WHERE enabled = 1 AND removed_at_ms IS NULL",
        [],
        |r| r.get(0),
    )?;
    tx.commit()?;
    Ok(pass)
}

/// Fires job `job` now, outside its schedule (`run-now`); its next run is
/// unchanged.
pub fn fire_now(conn: &Connection, job: &Job, now: i64) -> rusqlite::Result<()> {
    let key = format!("job:{}:now:{now}", job.id);
    store(conn, job, now, &key, &job_text(job, now, None))?;
    conn.execute(
        "UPDATE jobs SET last_run_ms = ?1, updated_at_ms = ?1 WHERE id = ?2",
        params![now, job.id],
    )?;
    Ok(())
}

/// Fires one due job by its missed policy; returns how many messages it
/// stored.
fn fire_job(
    conn: &Connection,
    job: &Job,
    now: i64,
    parsed: &mut Parsed,
) -> rusqlite::Result<usize> {
    let mut next_after = |at: i64| {
        parsed
            .next_after(job.cron.as_deref(), &job.zone, job.at_ms, timestamp(at))
            .map(|next| next.map(|t| t.as_millisecond()))
    };
    let first = job.next_run_ms.unwrap_or(now);
    // Every run due by now, from the first missed one.
    let mut runs = vec![first];
    while runs.len() < MAX_COUNTED {
        match next_after(runs[runs.len() - 1]) {
            Ok(Some(next)) if next <= now => runs.push(next),
            Ok(_) => break,
            Err(e) => {
                let why = format!("disabled: its schedule no longer reads: {e}");
                tracing::warn!(job = job.id, "{why}");
                finish_job(conn, job, None, now, &why, false)?;
                return Ok(0);
            }
        }
    }
    let late = runs.len() > 1 || now - first > GRACE_MS;
    let fire: Vec<i64> = match (late, job.missed) {
        (false, _) => vec![first],
        (true, Missed::Once) => vec![first],
        (true, Missed::Skip) => Vec::new(),
        (true, Missed::All) => runs[runs.len().saturating_sub(MAX_CATCH_UP)..].to_vec(),
    };
    for due in &fire {
        let lateness = late.then(|| Late {
            by_ms: now - due,
            missed: runs.len(),
        });
        let key = format!("job:{}:{due}", job.id);
        store(
            conn,
            job,
            *due,
            &key,
            &job_text(job, *due, lateness.as_ref()),
        )?;
    }
    let outcome = if fire.is_empty() {
        tracing::info!(
            job = job.id,
            missed = runs.len(),
            "missed runs skipped (missed = \"skip\")"
        );
        format!("skipped {} missed run(s)", runs.len())
    } else if late {
        format!("fired {} of {} missed run(s) late", fire.len(), runs.len())
    } else {
        "fired".to_owned()
    };
    let next = next_after(now).unwrap_or(None);
    finish_job(conn, job, next, now, &outcome, !fire.is_empty())?;
    Ok(fire.len())
}

/// How late a firing is.
struct Late {
    by_ms: i64,
    missed: usize,
}

/// Advances a job past this pass.
fn finish_job(
    conn: &Connection,
    job: &Job,
    next: Option<i64>,
    now: i64,
    outcome: &str,
    fired: bool,
) -> rusqlite::Result<()> {
    let disable = outcome.starts_with("disabled");
    conn.prepare_cached(
        "UPDATE jobs SET next_run_ms = ?1, last_run_ms = CASE WHEN ?2 THEN ?3 ELSE last_run_ms END, \
         last_outcome = ?4, enabled = CASE WHEN ?5 THEN 0 ELSE enabled END, updated_at_ms = ?3 \
         WHERE id = ?6",
    )?
    .execute(params![next, fired, now, outcome, disable, job.id])?;
    Ok(())
}

/// Stores one firing in the inbox of the job's agent.
fn store(conn: &Connection, job: &Job, due: i64, key: &str, text: &str) -> rusqlite::Result<()> {
    let (channel, chat) = match (job.kind, &job.channel, &job.chat) {
        (Kind::Reminder, Some(channel), Some(chat)) => (channel.clone(), chat.clone()),
        // A task (or a reminder without its conversation) is a fresh
        // session per firing.
        _ => (
            SCHEDULER_CHANNEL.to_owned(),
            format!("job-{}-{due}", job.id),
        ),
    };
    conn.prepare_cached(
        "INSERT OR IGNORE INTO inbox (channel, idempotency_key, sender, chat, text, received_at_ms, \
         agent_id, source, job_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'scheduler', ?8)",
    )?
    .execute(params![
        channel,
        key,
        SCHEDULER_SENDER,
        chat,
        text,
        now_ms(),
        job.agent_id,
        job.id
    ])?;
    Ok(())
}

/// What the agent reads when a job fires.
fn job_text(job: &Job, due: i64, late: Option<&Late>) -> String {
    let when = local_time(due, &job.zone);
    let mut text = match job.kind {
        Kind::Reminder => format!(
            "Reminder (job {}, due {when}): {}\n\nTell the owner now, in this conversation.",
            job.id, job.text
        ),
        Kind::Task => format!(
            "Scheduled task (job {}, due {when}): {}\n\nYour final answer is delivered to the \
             owner. If there is nothing worth telling them, answer exactly {SILENT}.",
            job.id, job.text
        ),
        Kind::Heartbeat => format!(
            "Heartbeat (job {}, due {when}): this is your regular heartbeat, not a message from \
             the owner. Go through the checklist below, using your tools where it asks you to \
             look something up. Your final answer is delivered to the owner only when something \
             needs them: if nothing does, answer exactly {SILENT} and nothing else.\n\n{}",
            job.id,
            super::heartbeat::checklist_section(job)
        ),
    };
    if let Some(late) = late {
        text.push_str(&format!(
            "\n\n[hearth: this run is {} late: hearth was not running, or the clock jumped, \
             when it was due.",
            human(late.by_ms)
        ));
        if late.missed > 1 {
            text.push_str(&format!(" {} runs were missed in all.", late.missed));
        }
        text.push(']');
    }
    text
}

/// A task's answer that asks for nothing to be delivered.
pub const SILENT: &str = "[silent]";
