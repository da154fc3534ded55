//! The daemon's automatic memory capture task (`[memory.capture]`): it
//! sleeps until the next conversation with unread messages has been quiet
//! for `quiet_seconds`, has the cheap model read what is new in it, and
//! keeps the facts it proposes as memories marked captured
//! (`hearth_data::knowledge::capture` holds the store's side and judges
//! the proposals). Nothing polls: with nothing unread it wakes once per
//! quiet period, when anything said since could first be due.
//!
//! A bad answer from the model captures nothing, says so in the log and
//! moves the mark on; a model that fails (down, too slow, the budget
//! spent) leaves the mark and is tried again later, a few times, before
//! those messages are passed over.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

use hearth_base::config::{CaptureConfig, Config};
use hearth_base::secrets::Secrets;
use hearth_base::store::{self, now_ms};
use hearth_data::knowledge::capture::{self, Kept, Pending, prompt, proposals};
use hearth_data::knowledge::notes::Notes;
use hearth_model::llm::Usage;
use hearth_model::summary::{Question, Summaries, SummaryError};
use hearth_model::usage::Kind;

/// The shortest sleep between looks: a busy agent's conversation is
/// looked at again this soon.
const MIN_SLEEP: Duration = Duration::from_secs(1);
/// How often a failing model is tried on one conversation before its
/// messages are passed over.
const MAX_ATTEMPTS: u32 = 3;
/// The wait after a model failure, doubled each time.
const RETRY_AFTER_MS: i64 = 60_000;

/// The task's parts.
pub struct Capture {
    conn: Arc<Mutex<Connection>>,
    summaries: Arc<Summaries>,
    notes: Arc<Notes>,
    secrets: Arc<Secrets>,
    config: CaptureConfig,
    owner: String,
}

/// What one capture did, for the log and the figures.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// What was kept.
    pub kept: Kept,
    /// The model call's tokens; `None`: the model was not asked.
    pub usage: Option<Usage>,
}

/// Why one conversation was not captured this time.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The store failed.
    #[error("database error: {0}")]
    Store(#[from] rusqlite::Error),
    /// The cheap model failed; tried again later.
    #[error(transparent)]
    Model(#[from] SummaryError),
    /// A blocking step did not finish (the daemon is stopping).
    #[error("stopped: {0}")]
    Stopped(String),
}

impl Capture {
    /// The task for `config`, if capture runs there (a cheap model is
    /// configured and capture is not turned off); logs which.
    pub fn new(
        config: &Config,
        db: &Path,
        summaries: &Arc<Summaries>,
        notes: &Arc<Notes>,
        secrets: &Arc<Secrets>,
    ) -> Option<Capture> {
        let capture = &config.memory.capture;
        let status = capture.status(summaries.configured());
        if capture.runs(summaries.configured()).is_err() {
            tracing::info!("memory capture is {status}");
            return None;
        }
        let conn = match store::open_connection(db) {
            Ok(conn) => conn,
            Err(e) => {
                tracing::error!("memory capture is off: {e}");
                return None;
            }
        };
        tracing::info!("memory capture is {status}");
        Some(Capture {
            conn: Arc::new(Mutex::new(conn)),
            summaries: Arc::clone(summaries),
            notes: Arc::clone(notes),
            secrets: Arc::clone(secrets),
            config: capture.clone(),
            owner: config
                .owner
                .name
                .clone()
                .unwrap_or_else(|| "the owner".into()),
        })
    }

    /// Captures for as long as the daemon runs.
    pub async fn run(self) {
        let quiet_ms = (self.config.quiet_seconds * 1000) as i64;
        let mut failures: HashMap<i64, (u32, i64)> = HashMap::new();
        loop {
            let now = now_ms();
            let pending = self.db(move |c| capture::pending(c, now)).await;
            let pending = match pending {
                Ok(pending) => pending,
                Err(e) => {
                    tracing::error!("memory capture cannot read the conversations: {e}");
                    Vec::new()
                }
            };
            let mut waiting = Vec::new();
            for p in pending {
                let retry_at = failures.get(&p.session).map_or(0, |f| f.1);
                let due = p.last_at_ms + quiet_ms <= now && retry_at <= now;
                let agent = p.agent;
                if !due
                    || self
                        .db(move |c| capture::busy(c, agent))
                        .await
                        .unwrap_or(true)
                {
                    waiting.push(Pending {
                        last_at_ms: p.last_at_ms.max(retry_at - quiet_ms),
                        ..p
                    });
                    continue;
                }
                match self.once(p).await {
                    Ok(_) => {
                        failures.remove(&p.session);
                    }
                    Err(e) => self.failed(&mut failures, p, e).await,
                }
            }
            let next = capture::next_due(&waiting, quiet_ms).unwrap_or(now + quiet_ms);
            let sleep = Duration::from_millis((next - now_ms()).max(0) as u64);
            tokio::time::sleep(sleep.clamp(MIN_SLEEP, Duration::from_millis(quiet_ms as u64)))
                .await;
        }
    }

    /// Notes a failed capture of `p`: tried again later, or, after
    /// [`MAX_ATTEMPTS`], its messages passed over.
    async fn failed(&self, failures: &mut HashMap<i64, (u32, i64)>, p: Pending, e: CaptureError) {
        let attempts = failures.get(&p.session).map_or(0, |f| f.0) + 1;
        if attempts < MAX_ATTEMPTS {
            let retry_at = now_ms() + RETRY_AFTER_MS * (1 << attempts);
            failures.insert(p.session, (attempts, retry_at));
            tracing::warn!(
                session = p.session,
                "memory capture failed (tried again later): {e}"
            );
            return;
        }
        failures.remove(&p.session);
        tracing::warn!(
            session = p.session,
            "memory capture failed {attempts} times, these messages are passed over: {e}"
        );
        let chars = self.summaries.input_chars();
        let passed = self
            .db(move |c| {
                let t = capture::read(c, &p, chars)?;
                capture::advance(c, p.session, t.up_to)
            })
            .await;
        if let Err(e) = passed {
            tracing::error!("memory capture cannot move its mark: {e}");
        }
    }

    /// Captures from what is new in `p`'s conversation.
    pub async fn once(&self, p: Pending) -> Result<Outcome, CaptureError> {
        let chars = self.summaries.input_chars();
        let (transcript, known) = self
            .db(move |c| Ok((capture::read(c, &p, chars)?, capture::known(c, p.agent)?)))
            .await?;
        let up_to = transcript.up_to;
        let contact = transcript.contact_lines > 0 && !self.config.contacts;
        let anyone = transcript.owner_lines + transcript.contact_lines > 0;
        if contact || !anyone {
            if contact {
                tracing::debug!(
                    session = p.session,
                    "memory capture passes a contact's conversation over"
                );
            }
            self.db(move |c| capture::advance(c, p.session, up_to))
                .await?;
            return Ok(Outcome::default());
        }
        let question = Question {
            system: prompt::SYSTEM,
            text: prompt::question(
                &self.owner,
                &known,
                &transcript,
                self.config.max_per_conversation,
            ),
            kind: Kind::Capture,
            agent: p.agent,
            session: Some(p.session),
        };
        let answer = self.summaries.ask(question).await?;
        let facts = match proposals::parse(&answer.text) {
            Ok(facts) => facts,
            Err(e) => {
                tracing::warn!(
                    session = p.session,
                    "memory capture: the cheap model's answer was not a list of facts, nothing \
                     captured: {e}"
                );
                Vec::new()
            }
        };
        let cap = self.config.max_per_conversation;
        let secrets = Arc::clone(&self.secrets);
        let kept = self
            .db(move |c| {
                let secret = |fact: &str| secrets.redact_text(fact) != fact;
                capture::keep(c, &p, up_to, &facts, cap, &secret)
            })
            .await?;
        if !kept.added.is_empty() {
            self.notes.added_elsewhere();
        }
        tracing::info!(
            session = p.session,
            added = kept.added.len(),
            known = kept.known,
            refused = kept.refused,
            over = kept.over,
            input_tokens = answer.usage.input_tokens
                + answer.usage.cache_read_tokens
                + answer.usage.cache_write_tokens,
            output_tokens = answer.usage.output_tokens,
            "memory capture"
        );
        Ok(Outcome {
            kept,
            usage: Some(answer.usage),
        })
    }

    /// Runs `f` on the task's connection on a blocking thread.
    async fn db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, CaptureError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&conn)
        })
        .await
        .map_err(|e| CaptureError::Stopped(e.to_string()))?
        .map_err(CaptureError::Store)
    }
}
