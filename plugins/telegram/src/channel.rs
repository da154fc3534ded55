//! The channel's shared state, and what happens to one update: the gate,
//! the file downloads, and the hand-off to the host.
//!
//! Both transports (long polling and the webhook) call [`Shared::handle`]
//! and treat an update as done only when it returns `Ok`: by then the host
//! has stored the message in its inbox (keyed by `update_id`, so a second
//! delivery of the same update is a no-op), or the update needed nothing
//! stored. Only then does the poller move its offset past it, or the webhook
//! answer 200.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hearth_sdk::Host;
use hearth_sdk::SubmitError;
use hearth_sdk::files::safe_file_name;
use hearth_sdk::protocol::{
    Attachment, ChannelState, ChannelStatus, ConfirmationAnswer, InboundMessage, Submission,
};
use serde_json::{Value, json};

use crate::api::{Api, ApiError};
use crate::config::Settings;
use crate::inbound::{Action, FileRef, Gate, Incoming};
use crate::pace::Outbound;

/// The channel's name.
pub const CHANNEL: &str = "telegram";
/// The longest wait between two tries of a submission the host did not
/// take.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);

/// What to do with an update the host did not take.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Try again later, keeping the update unacknowledged upstream: the
    /// host is busy or failed for now (a full disk, a fault).
    Retry,
    /// The host is closing: leave the update for the next start.
    Stop,
    /// The update is poison (its shape is wrong for good): acknowledge it
    /// and go on, or it would stall the channel forever.
    Skip,
}

/// Only a refusal of the update's shape lets it go; any other failure is
/// the host's, and passes.
fn after_refusal(refused: &SubmitError) -> Next {
    match refused {
        SubmitError::Invalid => Next::Skip,
        SubmitError::Closed => Next::Stop,
        SubmitError::Busy | SubmitError::Unavailable(_) => Next::Retry,
    }
}
/// How often a stranger's drop is logged, per sender.
const STRANGER_LOG_EVERY: Duration = Duration::from_secs(3600);
/// The deadline of an ordinary Bot API call.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// Everything the transports and the sender share.
pub struct Shared {
    /// The host's callbacks.
    pub host: Host,
    /// The Bot API.
    pub api: Api,
    /// `[plugins.telegram]`.
    pub settings: Settings,
    /// Who gets in.
    pub gate: Mutex<Gate>,
    /// Where downloaded files go.
    pub files_dir: PathBuf,
    /// Sending, paced.
    pub outbound: Outbound,
    /// The chat of the owner's last message: where "typing…" shows.
    pub last_chat: Mutex<Option<i64>>,
    status: Mutex<Option<(ChannelState, String)>>,
    strangers: Mutex<HashMap<i64, Instant>>,
}

/// The host is shutting down: stop taking updates (the unfinished one is
/// delivered again after the restart).
#[derive(Debug)]
pub struct Closed;

impl Shared {
    /// Shared state for `settings`.
    pub fn new(host: Host, api: Api, settings: Settings, files_dir: PathBuf) -> Shared {
        let bot_id = settings
            .token
            .split(':')
            .next()
            .and_then(|id| id.parse().ok())
            .unwrap_or(0);
        Shared {
            host,
            api,
            gate: Mutex::new(Gate {
                allowed: settings.allowed_chat_ids.clone(),
                username: None,
                bot_id,
            }),
            outbound: Outbound::new(settings.pace_chat, settings.pace_global_per_s),
            settings,
            files_dir,
            last_chat: Mutex::new(None),
            status: Mutex::new(None),
            strangers: Mutex::new(HashMap::new()),
        }
    }

    /// Acts on one update. `Ok` once it needs nothing more: stored, or
    /// dropped on purpose.
    pub async fn handle(&self, update: &Value) -> Result<(), Closed> {
        let action = lock(&self.gate).classify(update);
        match action {
            Action::Message(incoming) => {
                // Set first: the turn this message starts may announce
                // itself before `submit` returns.
                *lock(&self.last_chat) = Some(incoming.chat);
                let message = self.message(incoming).await;
                self.submit(Submission::Message(message)).await
            }
            Action::Answer {
                query_id,
                id,
                approve,
                from,
            } => {
                let ack = json!({
                    "callback_query_id": query_id,
                    "text": if approve { "Approving…" } else { "Denying…" },
                });
                if let Err(e) = self
                    .api
                    .call("answerCallbackQuery", &ack, CALL_DEADLINE)
                    .await
                {
                    tracing::debug!("answerCallbackQuery failed: {e}");
                }
                self.submit(Submission::Confirmation(ConfirmationAnswer {
                    id,
                    sender: from.to_string(),
                    approve,
                    always: false,
                    reason: None,
                }))
                .await
            }
            Action::Stranger { sender, chat } => {
                self.log_stranger(sender, chat);
                Ok(())
            }
            Action::Ignore => Ok(()),
        }
    }

    /// Whether the channel has reported its health since it started.
    pub fn has_reported(&self) -> bool {
        lock(&self.status).is_some()
    }

    /// Reports the channel's health to the host when it changed.
    pub fn report(&self, state: ChannelState, detail: impl Into<String>) {
        let detail = detail.into();
        {
            let mut last = lock(&self.status);
            if last.as_ref() == Some(&(state, detail.clone())) {
                return;
            }
            *last = Some((state, detail.clone()));
        }
        match state {
            ChannelState::Up => tracing::info!("telegram: {detail}"),
            _ => tracing::warn!("telegram: {detail}"),
        }
        let _ = self
            .host
            .submit(&Submission::ChannelStatus(ChannelStatus { state, detail }));
    }

    /// Submits until the host has it, waiting out `BUSY`.
    async fn submit(&self, submission: Submission) -> Result<(), Closed> {
        let mut wait = Duration::from_millis(20);
        loop {
            // On this thread, not the blocking pool's: the update reaches
            // the host without waking another thread first. The runtime
            // waits meanwhile, for the host's commit (well under a
            // millisecond; at most the host's bounded wait when its queue
            // is full, when nothing else could go on either).
            let refused = match self.host.submit(&submission) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            match after_refusal(&refused) {
                Next::Retry => {
                    if !matches!(refused, SubmitError::Busy) {
                        tracing::warn!(
                            "the host failed to take an update ({refused}); trying again"
                        );
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_RETRY_WAIT);
                }
                Next::Stop => return Err(Closed),
                Next::Skip => {
                    // The host refused its shape: sending it again cannot
                    // help, and holding the offset would stall the channel.
                    tracing::error!("the host refused an update: {refused}");
                    return Ok(());
                }
            }
        }
    }

    /// The message the host stores, with the files downloaded (or a note
    /// in the text saying why one was not).
    async fn message(&self, incoming: Incoming) -> InboundMessage {
        let mut text = incoming.text;
        let mut attachments = Vec::new();
        for (n, file) in incoming.files.iter().enumerate() {
            match self.download(incoming.update_id, n, file).await {
                Ok(attachment) => attachments.push(attachment),
                Err(why) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&format!("[{} was not downloaded: {why}]", file.name));
                }
            }
        }
        InboundMessage {
            channel: CHANNEL.into(),
            idempotency_key: incoming.update_id.to_string(),
            sender: incoming.from.to_string(),
            chat: Some(incoming.chat.to_string()),
            text,
            attachments,
            sender_name: incoming.from_name,
        }
    }

    async fn download(
        &self,
        update_id: i64,
        n: usize,
        file: &FileRef,
    ) -> Result<Attachment, String> {
        let cap = self.settings.max_file_bytes;
        if let Some(size) = file.size.filter(|s| *s > cap) {
            return Err(ApiError::TooLarge { size, cap }.to_string());
        }
        let info = self
            .api
            .call(
                "getFile",
                &json!({ "file_id": file.file_id }),
                CALL_DEADLINE,
            )
            .await
            .map_err(|e| e.to_string())?;
        let path = info["file_path"]
            .as_str()
            .ok_or("Telegram gave no file_path (the file may be over 20 MB)")?;
        let bytes = self
            .api
            .download(path, cap, Duration::from_secs(120))
            .await
            .map_err(|e| e.to_string())?;
        let local = self
            .files_dir
            .join(format!("{update_id}-{n}-{}", safe_file_name(&file.name)));
        let written = async {
            tokio::fs::create_dir_all(&self.files_dir).await?;
            tokio::fs::write(&local, &bytes).await
        };
        written
            .await
            .map_err(|e| format!("cannot save it to {}: {e}", local.display()))?;
        Ok(Attachment {
            id: file.file_id.clone(),
            name: file.name.clone(),
            mime: file.mime.clone(),
            size: bytes.len() as u64,
            path: local.display().to_string(),
            url: None,
            transcript: None,
            voice: file.voice,
        })
    }

    fn log_stranger(&self, sender: i64, chat: i64) {
        let mut seen = lock(&self.strangers);
        if seen
            .get(&sender)
            .is_some_and(|at| at.elapsed() < STRANGER_LOG_EVERY)
        {
            return;
        }
        // Strangers must not grow the map without bound.
        if seen.len() >= 10_000 {
            seen.retain(|_, at| at.elapsed() < STRANGER_LOG_EVERY);
        }
        seen.insert(sender, Instant::now());
        tracing::warn!(
            sender,
            chat,
            "telegram: message from a chat or sender not in allowed_chat_ids dropped (logged once an hour per sender)"
        );
    }
}

/// Locks, taking over a lock poisoned by a panicked holder.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_malformed_update_is_acknowledged_without_being_stored() {
        for (refused, next) in [
            (SubmitError::Invalid, Next::Skip),
            (SubmitError::Busy, Next::Retry),
            // A fault in the host (status ERROR) is not the update's.
            (
                SubmitError::Unavailable(hearth_sdk::abi::status::ERROR),
                Next::Retry,
            ),
            (SubmitError::Closed, Next::Stop),
        ] {
            assert_eq!(after_refusal(&refused), next, "{refused}");
        }
    }
}
