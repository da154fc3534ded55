//! The `jobs` table: creating, changing, listing and removing reminders
//! and scheduled tasks, within the limits of `[scheduler]`.
//!
//! Every write computes `next_run_ms` from the schedule and the clock, and
//! wakes the scheduler, which then sleeps until the new earliest job.

use hearth_sdk::protocol::UpcomingJob;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::Notify;

use super::clock::Clock;
use hearth_base::config::SchedulerConfig;
use hearth_base::schedule::{Schedule, ScheduleError};
use hearth_base::store::Cold;
use hearth_base::time_text::timestamp;

/// What kind of job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Wakes the conversation it was set in with its message.
    Reminder,
    /// Runs its prompt in a fresh session; the answer goes to the owner.
    Task,
    /// The heartbeat (`[heartbeat]`): a task whose prompt is the owner's
    /// checklist, read when it fires. Set by the config, not by tools
    /// (`scheduler::heartbeat`).
    Heartbeat,
}

/// What to do with runs missed while the daemon was down (or the clock
/// jumped past them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// Fire once, saying how late.
    Once,
    /// Fire none; log them.
    Skip,
    /// Fire each, at most [`MAX_CATCH_UP`].
    All,
}

/// The most missed runs `missed = "all"` fires.
pub const MAX_CATCH_UP: usize = 10;

/// One job, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// Its id.
    pub id: i64,
    /// Reminder or task.
    pub kind: Kind,
    /// The cron expression; `None` for a one-shot.
    pub cron: Option<String>,
    /// The zone the expression is read in.
    pub zone: String,
    /// A one-shot's instant (ms).
    pub at_ms: Option<i64>,
    /// The reminder's message or the task's prompt.
    pub text: String,
    /// The agent that takes it.
    pub agent_id: i64,
    /// A reminder's conversation.
    pub channel: Option<String>,
    /// A reminder's chat.
    pub chat: Option<String>,
    /// A task's model.
    pub model: Option<String>,
    /// A task's token budget.
    pub token_budget: Option<i64>,
    /// Its missed-run policy.
    pub missed: Missed,
    /// Whether it fires.
    pub enabled: bool,
    /// When it fires next (ms); `None` when it never will.
    pub next_run_ms: Option<i64>,
    /// When it last fired (its due instant, ms).
    pub last_run_ms: Option<i64>,
    /// How its last run went.
    pub last_outcome: Option<String>,
    /// Failed runs in a row.
    pub failures: i64,
    /// The agent that created it; `None` for the owner.
    pub created_by: Option<i64>,
}

/// A job to create.
#[derive(Clone, Debug)]
pub struct NewJob {
    /// Reminder or task.
    pub kind: Kind,
    /// When: a cron expression and zone, or an instant.
    pub when: When,
    /// The message or prompt.
    pub text: String,
    /// The agent that takes it.
    pub agent_id: i64,
    /// A reminder's conversation: `(channel, chat)`.
    pub conversation: Option<(String, String)>,
    /// A task's model.
    pub model: Option<String>,
    /// A task's token budget.
    pub token_budget: Option<i64>,
    /// The missed-run policy.
    pub missed: Missed,
    /// The agent creating it; `None` for the owner.
    pub created_by: Option<i64>,
}

/// When a job fires, as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum When {
    /// A cron expression in a zone.
    Cron {
        /// The expression.
        expr: String,
        /// The IANA zone.
        zone: String,
    },
    /// One instant (ms).
    Once(i64),
}

/// Changes to a job; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct JobChanges {
    /// A new schedule.
    pub when: Option<When>,
    /// A new message or prompt.
    pub text: Option<String>,
    /// A new model (`Some(None)` clears it).
    pub model: Option<Option<String>>,
    /// A new token budget (`Some(None)` clears it).
    pub token_budget: Option<Option<i64>>,
    /// A new missed-run policy.
    pub missed: Option<Missed>,
}

/// Why a job could not be created or changed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// No job has that id (or the caller may not see it).
    #[error("no job {0}; `list` shows them")]
    Unknown(i64),
    /// A field is malformed.
    #[error("field `{field}`: {why}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The agent has as many jobs as `[scheduler] max_jobs_per_agent` allows.
    #[error(
        "refused: {agent} already has {count} jobs, the most [scheduler] max_jobs_per_agent allows; \
         remove some first"
    )]
    TooMany {
        /// The agent's name.
        agent: String,
        /// Its jobs.
        count: i64,
    },
    /// The creator has created `[scheduler] max_creations_per_hour` jobs
    /// in the last hour.
    #[error(
        "refused: {count} jobs were created in the last hour, the most [scheduler] \
         max_creations_per_hour allows; try again later"
    )]
    TooFast {
        /// Jobs created in the last hour.
        count: i64,
    },
    /// The job is the heartbeat, which only `[heartbeat]` in the config
    /// changes.
    #[error(
        "job {0} is the heartbeat, set by [heartbeat] in hearth.toml; the owner changes or turns \
         it off there (run_now still fires it)"
    )]
    Heartbeat(i64),
    /// SQLite failed.
    #[error("the jobs store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl JobError {
    fn invalid(field: &'static str, why: impl ToString) -> JobError {
        JobError::Invalid {
            field,
            why: why.to_string(),
        }
    }
}

/// The jobs table, on the shared cold connection.
pub struct Jobs {
    cold: Cold,
    clock: Clock,
    limits: SchedulerConfig,
    owner_zone: String,
    /// Notified on every change: the scheduler recomputes its next wake-up.
    pub changed: Notify,
}

impl Jobs {
    /// The jobs on `cold`, timed by `clock`; `owner_zone` is the default
    /// zone of new cron jobs and of local times.
    pub fn new(cold: Cold, clock: Clock, limits: SchedulerConfig, owner_zone: String) -> Jobs {
        Jobs {
            cold,
            clock,
            limits,
            owner_zone,
            changed: Notify::new(),
        }
    }

    /// The clock every job time is read from.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The owner's zone.
    pub fn owner_zone(&self) -> &str {
        &self.owner_zone
    }

    /// The limits.
    pub fn limits(&self) -> &SchedulerConfig {
        &self.limits
    }

    /// Runs `f` on the connection (the scheduler's firing, and readers).
    pub fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        f(&self.cold.lock())
    }

    /// Creates a job, within the limits; returns it.
    pub fn add(&self, new: &NewJob) -> Result<Job, JobError> {
        let now = self.clock.now_ms();
        let schedule = schedule_of(&new.when)?;
        check_text(&new.text)?;
        check_budget(new.token_budget)?;
        let next = next_run(&schedule, now);
        if next.is_none() {
            return Err(JobError::invalid("at", "that instant is in the past"));
        }
        if new.kind == Kind::Reminder && new.conversation.is_none() {
            return Err(JobError::invalid(
                "kind",
                "a reminder wakes the conversation it was set in, and this call has none; \
                 use kind \"task\", whose answer goes to the owner",
            ));
        }
        let conn = self.cold.lock();
        let tx = conn.unchecked_transaction()?;
        let count: i64 = tx.query_row(
            &format!("SELECT count(*) FROM jobs WHERE agent_id = ?1 AND {LIVE}"),
            [new.agent_id],
            |r| r.get(0),
        )?;
        if count >= i64::from(self.limits.max_jobs_per_agent) {
            let agent: String = tx
                .query_row(
                    "SELECT name FROM agents WHERE id = ?1",
                    [new.agent_id],
                    |r| r.get(0),
                )
                .unwrap_or_else(|_| format!("agent {}", new.agent_id));
            return Err(JobError::TooMany { agent, count });
        }
        let recent: i64 = tx.query_row(
            "SELECT count(*) FROM jobs WHERE created_by IS ?1 AND created_at_ms > ?2",
            params![new.created_by, now - 3_600_000],
            |r| r.get(0),
        )?;
        if recent >= i64::from(self.limits.max_creations_per_hour) {
            return Err(JobError::TooFast { count: recent });
        }
        let (cron, zone, at) = match &new.when {
            When::Cron { expr, zone } => (Some(expr.trim()), zone.trim(), None),
            When::Once(at) => (None, self.owner_zone.as_str(), Some(*at)),
        };
        let (channel, chat) = match &new.conversation {
            Some((channel, chat)) => (Some(channel.as_str()), Some(chat.as_str())),
            None => (None, None),
        };
        tx.execute(
            "INSERT INTO jobs (kind, cron, zone, at_ms, text, agent_id, channel, chat, model, \
             token_budget, missed, next_run_ms, created_by, created_at_ms, updated_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)",
            params![
                kind_name(new.kind),
                cron,
                zone,
                at,
                new.text.trim(),
                new.agent_id,
                channel,
                chat,
                new.model,
                new.token_budget,
                missed_name(new.missed),
                next,
                new.created_by,
                now,
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        drop(conn);
        self.changed.notify_one();
        self.get(id)
    }

    /// Changes a job; a new schedule recomputes its next run.
    pub fn update(&self, id: i64, changes: &JobChanges) -> Result<Job, JobError> {
        let job = self.changeable(id)?;
        let now = self.clock.now_ms();
        if let Some(text) = &changes.text {
            check_text(text)?;
        }
        if let Some(budget) = changes.token_budget {
            check_budget(budget)?;
        }
        let when = changes.when.clone().unwrap_or_else(|| job.when());
        let schedule = schedule_of(&when)?;
        let next = if changes.when.is_some() {
            let next = next_run(&schedule, now);
            if next.is_none() {
                return Err(JobError::invalid("at", "that instant is in the past"));
            }
            next
        } else {
            job.next_run_ms
        };
        let (cron, zone, at) = match &when {
            When::Cron { expr, zone } => {
                (Some(expr.trim().to_owned()), zone.trim().to_owned(), None)
            }
            When::Once(at) => (None, job.zone.clone(), Some(*at)),
        };
        self.cold.lock().execute(
            "UPDATE jobs SET cron = ?1, zone = ?2, at_ms = ?3, text = ?4, model = ?5, \
             token_budget = ?6, missed = ?7, next_run_ms = ?8, updated_at_ms = ?9 WHERE id = ?10",
            params![
                cron,
                zone,
                at,
                changes.text.as_deref().map_or(job.text.as_str(), str::trim),
                changes.model.clone().unwrap_or(job.model),
                changes.token_budget.unwrap_or(job.token_budget),
                missed_name(changes.missed.unwrap_or(job.missed)),
                next,
                now,
                id,
            ],
        )?;
        self.changed.notify_one();
        self.get(id)
    }

    /// Enables or disables a job. Enabling recomputes its next run from
    /// now: runs missed while it was off are not made up.
    pub fn set_enabled(&self, id: i64, enabled: bool) -> Result<Job, JobError> {
        let job = self.changeable(id)?;
        let now = self.clock.now_ms();
        let next = if enabled {
            let next = next_run(&schedule_of(&job.when())?, now);
            if next.is_none() {
                return Err(JobError::invalid(
                    "id",
                    "this one-shot job's time has passed; add a new one",
                ));
            }
            next
        } else {
            job.next_run_ms
        };
        self.cold.lock().execute(
            "UPDATE jobs SET enabled = ?1, next_run_ms = ?2, failures = CASE WHEN ?1 THEN 0 ELSE failures END, \
             updated_at_ms = ?3 WHERE id = ?4",
            params![enabled, next, now, id],
        )?;
        self.changed.notify_one();
        self.get(id)
    }

    /// Removes a job (kept as removed, so the creation limit still counts
    /// it).
    pub fn remove(&self, id: i64) -> Result<(), JobError> {
        self.changeable(id)?;
        let now = self.clock.now_ms();
        self.cold.lock().execute(
            "UPDATE jobs SET removed_at_ms = ?1, enabled = 0, updated_at_ms = ?1 WHERE id = ?2",
            params![now, id],
        )?;
        self.changed.notify_one();
        Ok(())
    }

    /// Job `id`, if tools and commands may change it: any but the
    /// heartbeat, which the config owns (a change here would be undone
    /// by the next start, so it is refused instead).
    fn changeable(&self, id: i64) -> Result<Job, JobError> {
        let job = self.get(id)?;
        if job.kind == Kind::Heartbeat {
            return Err(JobError::Heartbeat(id));
        }
        Ok(job)
    }

    /// One job that is not removed.
    pub fn get(&self, id: i64) -> Result<Job, JobError> {
        self.cold
            .lock()
            .prepare_cached(&format!(
                "{COLUMNS} FROM jobs WHERE id = ?1 AND removed_at_ms IS NULL"
            ))?
            .query_row([id], row)
            .optional()?
            .ok_or(JobError::Unknown(id))
    }

    /// Jobs not removed, soonest first (then finished one-shots); only
    /// agent `agent`'s when given.
    pub fn list(&self, agent: Option<i64>) -> Result<Vec<Job>, JobError> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "{COLUMNS} FROM jobs WHERE removed_at_ms IS NULL AND (?1 IS NULL OR agent_id = ?1) \
             ORDER BY next_run_ms IS NULL, next_run_ms, id"
        ))?;
        let jobs = stmt
            .query_map([agent], row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(jobs)
    }

    /// The next `n` jobs to fire, soonest first, for the channels.
    pub fn upcoming(&self, n: usize) -> Result<Vec<UpcomingJob>, JobError> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(&format!(
            "{COLUMNS} FROM jobs WHERE enabled = 1 AND removed_at_ms IS NULL \
             AND next_run_ms IS NOT NULL ORDER BY next_run_ms, id LIMIT ?1"
        ))?;
        let jobs = stmt
            .query_map([n as i64], row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(jobs
            .into_iter()
            .map(|j| UpcomingJob {
                id: j.id,
                kind: kind_name(j.kind).to_owned(),
                schedule: match &j.cron {
                    Some(cron) => format!("{cron} ({})", j.zone),
                    None => "once".to_owned(),
                },
                next_run_ms: j.next_run_ms.unwrap_or_default(),
                next_run: hearth_base::time_text::local_time(
                    j.next_run_ms.unwrap_or_default(),
                    &self.owner_zone,
                ),
                text: j.text,
            })
            .collect())
    }

    /// Records how a run of job `id` went. A failure that makes
    /// `[scheduler] max_failures` in a row disables the job; the answer is
    /// then the notice for the owner.
    pub fn record_outcome(
        &self,
        id: i64,
        outcome: Result<(), String>,
    ) -> Result<Option<String>, JobError> {
        let now = self.clock.now_ms();
        let conn = self.cold.lock();
        match outcome {
            Ok(()) => {
                conn.execute(
                    "UPDATE jobs SET failures = 0, last_outcome = 'ok', updated_at_ms = ?1 WHERE id = ?2",
                    params![now, id],
                )?;
                Ok(None)
            }
            Err(why) => {
                let failures: i64 = conn.query_row(
                    "UPDATE jobs SET failures = failures + 1, last_outcome = ?1, updated_at_ms = ?2 \
                     WHERE id = ?3 RETURNING failures",
                    params![format!("failed: {why}"), now, id],
                    |r| r.get(0),
                )?;
                if failures < i64::from(self.limits.max_failures) {
                    return Ok(None);
                }
                conn.execute("UPDATE jobs SET enabled = 0 WHERE id = ?1", [id])?;
                drop(conn);
                self.changed.notify_one();
                Ok(Some(format!(
                    "Scheduled job {id} failed {failures} times in a row and is now disabled. \
                     The last failure: {why}. Fix it and enable it again with /schedule or \
                     `hearth schedule enable {id}`."
                )))
            }
        }
    }
}

impl Job {
    /// Its schedule as given.
    pub fn when(&self) -> When {
        match (&self.cron, self.at_ms) {
            (Some(expr), _) => When::Cron {
                expr: expr.clone(),
                zone: self.zone.clone(),
            },
            (None, at) => When::Once(at.unwrap_or_default()),
        }
    }

    /// Its schedule, parsed.
    pub fn schedule(&self) -> Result<Schedule, ScheduleError> {
        match self.when() {
            When::Cron { expr, zone } => Schedule::cron(&expr, &zone),
            When::Once(at) => Ok(Schedule::Once(timestamp(at))),
        }
    }

    /// Whether it fires again.
    pub fn state(&self) -> &'static str {
        match (self.enabled, self.next_run_ms) {
            (true, Some(_)) => "scheduled",
            (false, Some(_)) => "disabled",
            (_, None) if self.cron.is_none() => "done",
            (_, None) => "disabled",
        }
    }
}

/// The name of `kind` in the table and the tools.
pub fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Reminder => "reminder",
        Kind::Task => "task",
        Kind::Heartbeat => "heartbeat",
    }
}

/// `kind` from its name.
pub fn parse_kind(name: &str) -> Option<Kind> {
    match name {
        "reminder" => Some(Kind::Reminder),
        "task" => Some(Kind::Task),
        "heartbeat" => Some(Kind::Heartbeat),
        _ => None,
    }
}

/// The name of `missed` in the table and the tools.
pub fn missed_name(missed: Missed) -> &'static str {
    match missed {
        Missed::Once => "once",
        Missed::Skip => "skip",
        Missed::All => "all",
    }
}

/// `missed` from its name.
pub fn parse_missed(name: &str) -> Option<Missed> {
    match name {
        "once" => Some(Missed::Once),
        "skip" => Some(Missed::Skip),
        "all" => Some(Missed::All),
        _ => None,
    }
}

/// A job that counts toward the per-agent cap: not removed, and not a
/// one-shot that has fired.
const LIVE: &str = "removed_at_ms IS NULL AND NOT (cron IS NULL AND next_run_ms IS NULL)";

/// The longest message or prompt.
const MAX_TEXT: usize = 20_000;

pub(super) const COLUMNS: &str = "SELECT id, kind, cron, zone, at_ms, text, agent_id, channel, chat, model, \
                      token_budget, missed, enabled, next_run_ms, last_run_ms, last_outcome, failures, \
                      created_by";

pub(super) fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Job> {
    let kind: String = r.get(1)?;
    let missed: String = r.get(11)?;
    Ok(Job {
        id: r.get(0)?,
        kind: parse_kind(&kind).unwrap_or(Kind::Task),
        cron: r.get(2)?,
        zone: r.get(3)?,
        at_ms: r.get(4)?,
        text: r.get(5)?,
        agent_id: r.get(6)?,
        channel: r.get(7)?,
        chat: r.get(8)?,
        model: r.get(9)?,
        token_budget: r.get(10)?,
        missed: parse_missed(&missed).unwrap_or(Missed::Once),
        enabled: r.get(12)?,
        next_run_ms: r.get(13)?,
        last_run_ms: r.get(14)?,
        last_outcome: r.get(15)?,
        failures: r.get(16)?,
        created_by: r.get(17)?,
    })
}

pub(super) fn schedule_of(when: &When) -> Result<Schedule, JobError> {
    match when {
        When::Cron { expr, zone } => Schedule::checked_cron(expr, zone).map_err(|e| match e {
            ScheduleError::Zone { .. } => JobError::invalid("zone", e),
            _ => JobError::invalid("cron", e),
        }),
        When::Once(at) => Ok(Schedule::Once(timestamp(*at))),
    }
}

/// The first run after `now` (ms), if any.
pub(super) fn next_run(schedule: &Schedule, now: i64) -> Option<i64> {
    schedule
        .next_after(timestamp(now))
        .map(|t| t.as_millisecond())
}

fn check_text(text: &str) -> Result<(), JobError> {
    if text.trim().is_empty() {
        return Err(JobError::invalid("text", "required, a non-empty string"));
    }
    if text.len() > MAX_TEXT {
        return Err(JobError::invalid(
            "text",
            format!("{} bytes, more than the {MAX_TEXT} allowed", text.len()),
        ));
    }
    Ok(())
}

fn check_budget(budget: Option<i64>) -> Result<(), JobError> {
    match budget {
        Some(b) if b < 1_000 => Err(JobError::invalid(
            "token_budget",
            "must be at least 1000 tokens",
        )),
        _ => Ok(()),
    }
}
