//! Replies: the agent's markdown sent with signal-cli's `send`.
//!
//! The markdown becomes text and style ranges ([`crate::styles`]), split
//! into messages signal-cli sends whole ([`crate::split`]). The host's
//! outbox retries a failed send with the same `key`, so the parts already
//! sent are remembered per key and a retry after a partial failure starts
//! at the first part that failed: the owner never reads the beginning of
//! a reply twice. (The record lives in memory: after a crash, the outbox's
//! one documented duplicate applies.) A reply only goes to an allowed
//! number or group, whatever chat the host names: fail closed.
//!
//! Files the agent attached follow the text, one message each, as data
//! URIs (`data:<mime>;filename=<name>;base64,<data>`, which signal-cli's
//! `send` accepts besides paths): signal-cli may run as another user that
//! cannot read hearth's files. They count as parts too.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use base64::Engine;
use hearth_sdk::protocol::{Attachment, OutboundMessage, SendReceipt};
use serde_json::{Value, json};

use crate::rpc::RpcError;
use crate::split::{MAX_BODY_BYTES, split};
use crate::styles::{Style, convert};
use crate::{Core, GROUP_PREFIX, typing};

/// The parts of each unfinished reply already sent.
#[derive(Default)]
pub struct Outbound {
    progress: Mutex<HashMap<String, Progress>>,
}

/// Why a reply was not (completely) sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The chat is neither an allowed number nor an allowed group.
    #[error("refusing to send to {0:?}: not in allowed_numbers or groups")]
    NotAllowed(String),
    /// A file the agent attached cannot be read.
    #[error("cannot read the attached file {path}: {error}")]
    File {
        /// Its path.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// signal-cli refused or failed one part; the parts before it went out.
    #[error("part {part} of {parts} not sent: {source}")]
    Part {
        /// The failed part, from 1.
        part: usize,
        /// How many parts the reply has.
        parts: usize,
        /// What signal-cli said.
        source: RpcError,
    },
}

/// Sends `message`; the receipt's id is the timestamp of its first part,
/// Signal's id for a message.
pub fn send(core: &Core, message: &OutboundMessage) -> Result<SendReceipt, SendError> {
    let chat = message.chat.as_str();
    let allowed = match chat.strip_prefix(GROUP_PREFIX) {
        Some(group) => core.settings.groups.iter().any(|g| g == group),
        None => core.settings.allowed_numbers.iter().any(|n| n == chat),
    };
    if !allowed {
        return Err(SendError::NotAllowed(chat.to_owned()));
    }
    let (text, styles) = convert(&message.text);
    let texts = split(&text, &styles, MAX_BODY_BYTES);
    let parts: Vec<Value> = texts
        .iter()
        .map(|part| params(chat, &part.text, &part.styles))
        .map(Ok)
        .chain(
            message
                .attachments
                .iter()
                .map(|file| file_params(chat, file)),
        )
        .collect::<Result<_, _>>()?;
    if parts.is_empty() {
        tracing::warn!(
            chat,
            key = ?message.key,
            "empty reply not sent (Signal refuses empty messages)"
        );
        return Ok(SendReceipt { message_id: None });
    }
    let outbound = &core.outbound;
    let (done, mut first) = message
        .key
        .as_ref()
        .and_then(|key| {
            outbound
                .lock()
                .get(key)
                .map(|p| (p.sent, p.first_timestamp.clone()))
        })
        .unwrap_or((0, None));
    for (index, part) in parts.iter().enumerate().skip(done) {
        let result = core
            .rpc
            .call("send", part.clone())
            .map_err(|source| SendError::Part {
                part: index + 1,
                parts: parts.len(),
                source,
            })?;
        let timestamp = match &result["timestamp"] {
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        if first.is_none() {
            first = timestamp;
        }
        if let Some(key) = &message.key {
            outbound.record(key, index + 1, first.clone());
        }
    }
    if let Some(key) = &message.key {
        outbound.lock().remove(key);
    }
    Ok(SendReceipt { message_id: first })
}

/// The `send` params for one message to `chat`.
pub fn params(chat: &str, text: &str, styles: &[Style]) -> Value {
    let mut params = typing::target(chat);
    add_text(&mut params, text, styles);
    params
}

/// The `send` params for one attached file to `chat`.
pub fn file_params(chat: &str, file: &Attachment) -> Result<Value, SendError> {
    let bytes = std::fs::read(&file.path).map_err(|error| SendError::File {
        path: file.path.clone(),
        error,
    })?;
    let mut params = typing::target(chat);
    params["attachments"] = json!([format!(
        "data:{};filename={};base64,{}",
        file.mime,
        percent_encode(&file.name),
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )]);
    Ok(params)
}

/// Adds `message` and, when there are styles, `textStyle` to `send` params.
pub fn add_text(params: &mut Value, text: &str, styles: &[Style]) {
    params["message"] = Value::String(text.to_owned());
    if !styles.is_empty() {
        params["textStyle"] = styles.iter().map(|s| Value::String(s.wire())).collect();
    }
}

/// The most unfinished replies remembered; a reply the outbox gave up on
/// would otherwise stay forever.
const MAX_TRACKED: usize = 256;

struct Progress {
    sent: usize,
    first_timestamp: Option<String>,
    touched: Instant,
}

/// Escapes all but unreserved URL characters: signal-cli URL-decodes data
/// URI parameters, and a `;` or `,` in a name would end the parameter.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Outbound {
    fn record(&self, key: &str, sent: usize, first_timestamp: Option<String>) {
        let mut progress = self.lock();
        if progress.len() >= MAX_TRACKED && !progress.contains_key(key) {
            let oldest = progress
                .iter()
                .min_by_key(|(_, p)| p.touched)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                progress.remove(&oldest);
            }
        }
        progress.insert(
            key.to_owned(),
            Progress {
                sent,
                first_timestamp,
                touched: Instant::now(),
            },
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Progress>> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_escaped_for_data_uris() {
        assert_eq!(percent_encode("report.pdf"), "report.pdf");
        assert_eq!(percent_encode("a;b,c é.txt"), "a%3Bb%2Cc%20%C3%A9.txt");
    }
}
