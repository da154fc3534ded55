//! The outbox: replies are stored first, then delivered, with retries.
//!
//! A reply goes to the channel it answers: the local control socket, or the
//! channel plugin that serves that channel (`channel.send`). A failed send
//! stays pending and is retried with backoff (1 s doubling to 5 min); after
//! 20 failures it is marked failed and logged. A send that succeeded is
//! marked delivered; a crash between the two sends it once more, which is
//! the one duplicate a channel without idempotent sends can see. A send
//! the plugin refused for good (`HEARTH_REFUSED`: a mail server's 5xx for
//! the recipient) is marked failed at once, since retrying cannot help.
//! When the
//! store refuses the mark (a full disk), the outcome is held in memory and
//! recorded again each second; the reply is not sent again meanwhile.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hearth_sdk::protocol::{Attachment, OutboundMessage, method};
use rusqlite::{Connection, params};
use serde_json::json;
use tokio::sync::Notify;

use super::local::LocalHub;
use hearth_base::channels::LOCAL_CHANNEL;
use hearth_base::channels::{CallError, Channel};
use hearth_base::store::{Cold, now_ms};

/// Failures after which a reply is given up.
const MAX_ATTEMPTS: i64 = 20;
/// How long an outcome the store refused waits before it is recorded
/// again.
const RECORD_AGAIN_AFTER: Duration = Duration::from_secs(1);
/// How long the outbox waits to read the store again after it could not.
const STORE_AGAIN_AFTER: Duration = Duration::from_secs(60);

/// Delivers stored replies.
pub struct Outbox {
    /// The shared cold connection: a few statements a reply.
    conn: Cold,
    channels: HashMap<String, Arc<dyn Channel>>,
    local: Arc<LocalHub>,
}

/// Stores a message that answers no inbound message (a pairing code, or
/// one the agent sends first) for delivery, with `files` sent after its
/// text; returns its row id. The caller wakes the outbox.
pub fn enqueue(
    conn: &Connection,
    channel: &str,
    chat: &str,
    text: &str,
    files: &[Attachment],
) -> rusqlite::Result<i64> {
    let now = now_ms();
    let files = (!files.is_empty()).then(|| serde_json::to_string(files).unwrap_or_default());
    conn.prepare_cached(
        "INSERT INTO outbox (channel, chat, text, next_attempt_at_ms, created_at_ms, attachments) \
         VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
    )?
    .execute(params![channel, chat, text, now, files])?;
    Ok(conn.last_insert_rowid())
}

struct Due {
    id: i64,
    channel: String,
    chat: String,
    text: String,
    attempts: i64,
    key: Option<String>,
    at_ms: i64,
    files: Vec<Attachment>,
}

impl Outbox {
    /// An outbox over `conn`, delivering through `plugins` and `local`.
    pub fn new<C: Channel + 'static>(
        conn: Cold,
        plugins: &[Arc<C>],
        local: Arc<LocalHub>,
    ) -> Outbox {
        let channels = plugins
            .iter()
            .filter_map(|p| {
                let name = p.spec()?.name.clone();
                Some((name, Arc::clone(p) as Arc<dyn Channel>))
            })
            .collect();
        Outbox {
            conn,
            channels,
            local,
        }
    }

    /// Delivers due replies until the task is aborted; `wake` says there is
    /// something new (a reply, or a client that connected).
    pub async fn run(self: Arc<Self>, wake: Arc<Notify>) {
        // Sends whose outcome the store refused (a full disk): kept here and
        // recorded again until it takes them, and never sent meanwhile,
        // since the row still reads as due.
        let mut unrecorded: Vec<(Due, Result<(), CallError>)> = Vec::new();
        loop {
            unrecorded.retain(|(reply, outcome)| self.record(reply, outcome.clone()).is_err());
            let due = self.due().unwrap_or_else(|e| {
                tracing::error!("cannot read the outbox: {e}");
                Vec::new()
            });
            for reply in due {
                if unrecorded.iter().any(|(held, _)| held.id == reply.id) {
                    continue;
                }
                let outcome = self.send(&reply).await;
                if let Err(e) = self.record(&reply, outcome.clone()) {
                    tracing::error!(
                        outbox = reply.id,
                        "cannot record a send's outcome in the outbox, will try again (the reply waits meanwhile): {e}"
                    );
                    unrecorded.push((reply, outcome));
                }
            }
            // Nothing pending: sleep until woken. Every path that stores a
            // reply wakes the outbox (`Router::outbox_wake`), so an idle
            // daemon does not sweep its outbox once a minute for nothing.
            let next = if unrecorded.is_empty() {
                self.next_due_in().unwrap_or_else(|e| {
                    tracing::error!("cannot read the outbox: {e}");
                    Some(STORE_AGAIN_AFTER)
                })
            } else {
                Some(RECORD_AGAIN_AFTER)
            };
            match next {
                Some(next) => tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep(next) => {}
                },
                None => wake.notified().await,
            }
        }
    }

    async fn send(&self, reply: &Due) -> Result<(), CallError> {
        if reply.channel == LOCAL_CHANNEL {
            // The terminal shows files as their paths, after the text.
            let mut text = reply.text.clone();
            for file in &reply.files {
                text.push_str(&format!("\n[attached: {}]", file.path));
            }
            let message = json!({ "op": "reply", "chat": reply.chat, "text": text, "in_reply_to": reply.key });
            return if self.local.deliver(&reply.chat, &message) {
                Ok(())
            } else {
                Err(CallError::Failed("no local client is connected".into()))
            };
        }
        let plugin = self.channels.get(&reply.channel).cloned().ok_or_else(|| {
            CallError::Failed(format!("no plugin serves the channel {:?}", reply.channel))
        })?;
        let payload = serde_json::to_vec(&OutboundMessage {
            chat: reply.chat.clone(),
            text: reply.text.clone(),
            key: Some(format!("out-{}", reply.id)),
            in_reply_to: reply.key.clone(),
            at_ms: reply.at_ms,
            attachments: reply.files.clone(),
        })
        .map_err(|e| CallError::Failed(e.to_string()))?;
        tokio::task::spawn_blocking(move || plugin.call(method::CHANNEL_SEND, &payload))
            .await
            .map_err(|e| CallError::Failed(e.to_string()))?
            .map(|_| ())
    }

    fn record(&self, reply: &Due, outcome: Result<(), CallError>) -> rusqlite::Result<()> {
        let conn = self.conn.lock();
        match outcome {
            Ok(()) => {
                conn.prepare_cached(
                    "UPDATE outbox SET status = 'delivered', delivered_at_ms = ?1, attempts = attempts + 1 WHERE id = ?2",
                )?
                .execute(params![now_ms(), reply.id])?;
            }
            Err(e) => {
                let attempts = reply.attempts + 1;
                let refused = matches!(e, CallError::Refused(_));
                let status = if refused || attempts >= MAX_ATTEMPTS {
                    "failed"
                } else {
                    "pending"
                };
                let backoff = 1_000i64.saturating_mul(1 << attempts.min(9)).min(300_000);
                if refused {
                    tracing::error!(outbox = reply.id, channel = %reply.channel, "a reply was refused for good, not retrying: {e}");
                } else if status == "failed" {
                    tracing::error!(outbox = reply.id, channel = %reply.channel, "giving up on a reply after {attempts} attempts: {e}");
                } else if reply.channel != LOCAL_CHANNEL {
                    tracing::warn!(outbox = reply.id, channel = %reply.channel, attempts, "reply not delivered, will retry: {e}");
                }
                conn.execute(
                    "UPDATE outbox SET status = ?1, attempts = ?2, next_attempt_at_ms = ?3, last_error = ?4 WHERE id = ?5",
                    params![status, attempts, now_ms() + backoff, e.to_string(), reply.id],
                )?;
            }
        }
        Ok(())
    }

    fn due(&self) -> rusqlite::Result<Vec<Due>> {
        let conn = self.conn.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT o.id, o.channel, o.chat, o.text, o.attempts, i.idempotency_key, o.created_at_ms, o.attachments \
             FROM outbox o LEFT JOIN inbox i ON i.id = o.inbox_id \
             WHERE o.status = 'pending' AND o.next_attempt_at_ms <= ?1 ORDER BY o.id LIMIT 64",
        )?;
        let rows = stmt.query_map([now_ms()], |r| {
            Ok(Due {
                id: r.get(0)?,
                channel: r.get(1)?,
                chat: r.get(2)?,
                text: r.get(3)?,
                attempts: r.get(4)?,
                key: r.get(5)?,
                at_ms: r.get(6)?,
                // Written by `finish` from valid attachments; a row that does
                // not parse is sent without its files rather than never.
                files: r
                    .get::<_, Option<String>>(7)?
                    .and_then(|json| serde_json::from_str(&json).ok())
                    .unwrap_or_default(),
            })
        })?;
        rows.collect()
    }

    /// A local client just connected: retry its chat's pending replies now.
    pub fn retry_local_now(&self, chat: &str) {
        let conn = self.conn.lock();
        if let Err(e) = conn.execute(
            "UPDATE outbox SET next_attempt_at_ms = 0 WHERE status = 'pending' AND channel = ?1 AND chat = ?2",
            params![LOCAL_CHANNEL, chat],
        ) {
            tracing::warn!("cannot reschedule local replies: {e}");
        }
    }

    /// How long until the next pending reply is due; `None` when none is
    /// pending.
    fn next_due_in(&self) -> rusqlite::Result<Option<Duration>> {
        let conn = self.conn.lock();
        let next: Option<i64> = conn.query_row(
            "SELECT MIN(next_attempt_at_ms) FROM outbox WHERE status = 'pending'",
            [],
            |r| r.get(0),
        )?;
        Ok(next.map(|at| Duration::from_millis((at - now_ms()).clamp(0, 300_000) as u64)))
    }
}
