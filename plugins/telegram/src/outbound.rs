//! Sending: replies split to fit, paced, with the flood limit honoured.
//!
//! Telegram allows about one message a second per chat and about thirty a
//! second overall; going faster earns 429 answers with `retry_after`. The
//! pacer spaces sends to stay under both, and a 429 pauses every send for
//! the time Telegram asks. A reply split into several messages remembers
//! how many parts went out, so when a later part fails and the host's
//! outbox retries the reply, the parts already delivered are not sent
//! again. A send is reported as done only when Telegram confirmed every
//! part. A file flagged as voice goes as a voice message (`voice`).

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use hearth_sdk::protocol::{Attachment, ChannelState, OutboundMessage, SendReceipt};
use serde_json::{Value, json};

use crate::api::ApiError;
use crate::api::Upload;
use crate::channel::{CALL_DEADLINE, Shared, lock};
use crate::format;

/// The longest a send keeps riding out 429s before it gives the reply back
/// to the host's outbox (which retries it later).
const MAX_FLOOD_WAIT: Duration = Duration::from_secs(300);
/// Photos up to this size go as photos; larger images go as documents.
const MAX_PHOTO_BYTES: u64 = 10 << 20;

/// Why a reply was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    /// Telegram refused it for good ([`ApiError::is_for_good`]), or the
    /// chat is not a Telegram chat id: sending it again cannot help.
    #[error("{0}")]
    Refused(String),
    /// It may go through later (the network, a 429 that outlasted the
    /// wait, Telegram's own trouble).
    #[error("{0}")]
    Failed(String),
}

impl Shared {
    /// Sends one reply: its text as one or more messages, then its files.
    pub async fn deliver(&self, message: &OutboundMessage) -> Result<SendReceipt, DeliverError> {
        let chat: i64 = message.chat.parse().map_err(|_| {
            DeliverError::Refused(format!("{:?} is not a Telegram chat id", message.chat))
        })?;
        // A short reply with one voice file is that voice message's caption.
        let caption = crate::voice::caption(message);
        let mut parts: Vec<Part> = match caption {
            Some(_) => Vec::new(),
            None => format::messages(&message.text)
                .into_iter()
                .map(Part::Text)
                .collect(),
        };
        parts.extend(message.attachments.iter().map(Part::File));
        let key = message.key.clone().unwrap_or_default();
        let done = lock(&self.outbound.progress)
            .get(&key)
            .copied()
            .unwrap_or(0);
        let mut last_id = None;
        for (n, part) in parts.iter().enumerate().skip(done) {
            let sent = match part {
                Part::Text(html) => self.send_html(chat, html, None).await,
                Part::File(file) if file.voice => {
                    self.send_voice(chat, file, caption.as_deref()).await
                }
                Part::File(file) => self.send_file(chat, file).await,
            };
            match sent {
                Ok(id) => {
                    last_id = id;
                    if !key.is_empty() {
                        lock(&self.outbound.progress).insert(key.clone(), n + 1);
                    }
                }
                Err(e) => {
                    let why = format!("part {} of {}: {e}", n + 1, parts.len());
                    return Err(if e.is_for_good() {
                        DeliverError::Refused(why)
                    } else {
                        DeliverError::Failed(why)
                    });
                }
            }
        }
        lock(&self.outbound.progress).remove(&key);
        Ok(SendReceipt {
            message_id: last_id.map(|id| id.to_string()),
        })
    }

    /// Sends one HTML message (with buttons, when `markup` is given); falls
    /// back to plain text if Telegram cannot parse the HTML. Returns its
    /// message id.
    pub async fn send_html(
        &self,
        chat: i64,
        html: &str,
        markup: Option<&Value>,
    ) -> Result<Option<i64>, ApiError> {
        let mut params = json!({
            "chat_id": chat,
            "text": html,
            "parse_mode": "HTML",
            "link_preview_options": { "is_disabled": true },
        });
        if let Some(markup) = markup {
            params["reply_markup"] = markup.clone();
        }
        match self.paced(chat, "sendMessage", &params).await {
            Err(e) if e.is_parse_error() => {
                // Our HTML is built to be valid; if Telegram still disagrees,
                // the owner gets the words without the styling rather than
                // nothing.
                tracing::warn!(
                    "telegram could not parse a reply's HTML, sending it as plain text: {e}"
                );
                params["text"] = json!(plain(html));
                if let Some(map) = params.as_object_mut() {
                    map.remove("parse_mode");
                }
                self.paced(chat, "sendMessage", &params).await
            }
            other => other,
        }
        .map(|r| r["message_id"].as_i64())
    }

    /// Calls a send method with pacing, riding out 429s for up to
    /// [`MAX_FLOOD_WAIT`].
    pub async fn paced(&self, chat: i64, method: &str, params: &Value) -> Result<Value, ApiError> {
        let started = Instant::now();
        loop {
            self.outbound.turn(chat).await;
            match self.api.call(method, params, CALL_DEADLINE).await {
                Err(ApiError::Refused {
                    code: 429,
                    retry_after,
                    description,
                }) => {
                    let wait = Duration::from_secs(retry_after.unwrap_or(1).max(1));
                    if started.elapsed() + wait > MAX_FLOOD_WAIT {
                        return Err(ApiError::Refused {
                            code: 429,
                            description,
                            retry_after,
                        });
                    }
                    self.report(
                        ChannelState::Degraded,
                        format!("rate-limited by Telegram; waiting {} s", wait.as_secs()),
                    );
                    self.outbound.pause(wait).await;
                }
                other => return other,
            }
        }
    }

    async fn send_file(&self, chat: i64, file: &Attachment) -> Result<Option<i64>, ApiError> {
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| ApiError::Transport(format!("cannot read {}: {e}", file.path)))?;
        let photo = is_photo(&file.mime) && (bytes.len() as u64) <= MAX_PHOTO_BYTES;
        let (method, field) = if photo {
            ("sendPhoto", "photo")
        } else {
            ("sendDocument", "document")
        };
        let name = if file.name.is_empty() {
            Path::new(&file.path)
                .file_name()
                .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned())
        } else {
            file.name.clone()
        };
        let upload = Upload {
            bytes: &bytes,
            name: &name,
            mime: &file.mime,
        };
        self.upload(chat, method, field, &upload, &[]).await
    }

    /// Uploads a file with `method` as form field `field`, with the text
    /// `fields` beside it, paced and riding out 429s; its message id.
    pub async fn upload(
        &self,
        chat: i64,
        method: &str,
        field: &str,
        file: &Upload<'_>,
        fields: &[(&str, String)],
    ) -> Result<Option<i64>, ApiError> {
        let started = Instant::now();
        loop {
            self.outbound.turn(chat).await;
            let part = reqwest::multipart::Part::bytes(file.bytes.to_vec())
                .file_name(file.name.to_owned())
                .mime_str(file.mime)
                .or_else(|_| {
                    reqwest::multipart::Part::bytes(file.bytes.to_vec())
                        .file_name(file.name.to_owned())
                        .mime_str("application/octet-stream")
                })
                .map_err(|e| ApiError::Transport(e.to_string()))?;
            let mut form = reqwest::multipart::Form::new().text("chat_id", chat.to_string());
            for (key, value) in fields {
                form = form.text(key.to_string(), value.clone());
            }
            let form = form.part(field.to_owned(), part);
            match self
                .api
                .upload(method, form, Duration::from_secs(120))
                .await
            {
                Err(ApiError::Refused {
                    code: 429,
                    retry_after,
                    ..
                }) if started.elapsed() < MAX_FLOOD_WAIT => {
                    let wait = Duration::from_secs(retry_after.unwrap_or(1).max(1));
                    self.outbound.pause(wait).await;
                }
                other => return other.map(|r| r["message_id"].as_i64()),
            }
        }
    }
}

/// One message of a reply.
enum Part<'a> {
    Text(String),
    File(&'a Attachment),
}

/// The visible text of our HTML: tags dropped, entities decoded.
fn plain(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn is_photo(mime: &str) -> bool {
    matches!(mime, "image/jpeg" | "image/png" | "image/webp")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_what_the_html_shows() {
        assert_eq!(
            plain("<b>a &lt;b&gt;</b> &amp;amp; <a href=\"x\">l</a>"),
            "a <b> &amp; l"
        );
    }
}
