//! What comes in on the event stream: the gate, answers, and messages.
//!
//! Each `receive` event carries one envelope. Only data messages matter;
//! typing notices, receipts and sync messages (what the account sent from
//! another device) are skipped. The gate comes first and fails closed:
//! only a `sourceNumber` in `allowed_numbers` passes (a sender hiding their
//! number is nobody), and a group message also needs its group in
//! `groups`. Everyone else is dropped before anything reaches the host,
//! logged at most once an hour per sender. Then an exact `yes CODE` /
//! `no CODE` for a pending confirmation becomes an answer; anything else
//! becomes a message, keyed `<number>:<timestamp>` so a redelivery is
//! stored once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hearth_sdk::SubmitError;
use hearth_sdk::protocol::{ConfirmationAnswer, InboundMessage, Submission};
use serde_json::Value;

use crate::{CHANNEL, Core, GROUP_PREFIX, attachments};

/// When each dropped sender was last logged.
#[derive(Default)]
pub struct Strangers {
    logged: Mutex<HashMap<String, Instant>>,
}

impl Strangers {
    /// Logs a dropped message from `who`, at most once an hour each.
    fn drop_from(&self, who: &str, why: &str) {
        let mut logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        if logged.get(who).is_some_and(|at| at.elapsed() < LOG_EVERY) {
            return;
        }
        if logged.len() >= MAX_STRANGERS {
            logged.retain(|_, at| at.elapsed() < LOG_EVERY);
            if logged.len() >= MAX_STRANGERS {
                // All recent: stop logging new ones rather than grow.
                return;
            }
        }
        logged.insert(who.to_owned(), Instant::now());
        tracing::warn!(
            sender = who,
            "signal message dropped: {why} (logged once an hour per sender)"
        );
    }
}

/// Handles the data of one `receive` event.
pub fn receive(core: &Core, data: &str) {
    let event: Value = match serde_json::from_str(data) {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!("signal-cli sent an event that is not JSON: {e}");
            return;
        }
    };
    // The HTTP stream carries `{"envelope", "account"}`; the same object
    // as a JSON-RPC notification's params (the socket and stdin modes) or
    // a subscription's result is accepted too.
    let payload = match event.get("params") {
        Some(params) => params.get("result").unwrap_or(params),
        None => &event,
    };
    if let Some(exception) = payload.get("exception") {
        tracing::debug!("signal-cli reports a receive error: {exception}");
    }
    if let Some(envelope) = payload.get("envelope") {
        envelope_in(core, envelope);
    }
}

/// How often a dropped stranger is logged.
const LOG_EVERY: Duration = Duration::from_secs(3600);

/// The most strangers remembered for the log limit.
const MAX_STRANGERS: usize = 10_000;

/// The longest quoted text repeated in front of a reply.
const MAX_QUOTE: usize = 200;

fn envelope_in(core: &Core, envelope: &Value) {
    let Some(message) = envelope.get("dataMessage").filter(|m| m.is_object()) else {
        return;
    };
    let number = envelope["sourceNumber"]
        .as_str()
        .or_else(|| envelope["source"].as_str().filter(|s| s.starts_with('+')));
    let Some(number) = number else {
        let who = envelope["sourceUuid"].as_str().unwrap_or("(unknown)");
        core.strangers
            .drop_from(who, "the sender's number is hidden");
        return;
    };
    let settings = &core.settings;
    if !settings.allowed_numbers.iter().any(|n| n == number) {
        core.strangers.drop_from(number, "not in allowed_numbers");
        return;
    }
    let group = message["groupInfo"]["groupId"].as_str();
    if let Some(group) = group {
        if !settings.groups.iter().any(|g| g == group) {
            core.strangers.drop_from(
                &format!("{GROUP_PREFIX}{group}"),
                "the group is not in groups",
            );
            return;
        }
        if message["groupInfo"]["type"].as_str() == Some("UPDATE") {
            return;
        }
    }
    let Some(timestamp) = envelope["timestamp"]
        .as_i64()
        .or_else(|| message["timestamp"].as_i64())
    else {
        tracing::warn!(
            sender = number,
            "signal message without a timestamp dropped"
        );
        return;
    };
    let body = message["message"].as_str().unwrap_or_default();
    if let Some(answer) = core.confirmations.answer(body) {
        let answer = Submission::Confirmation(ConfirmationAnswer {
            id: answer.id,
            sender: number.to_owned(),
            approve: answer.approve,
            always: false,
            reason: None,
        });
        submit(core, &answer, &format!("{number}:{timestamp}"));
        return;
    }
    let list = message["attachments"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let saved = attachments::save_all(core, list, number, group, timestamp);
    let mut text = quote(&message["quote"]);
    text.push_str(body);
    for note in &saved.notes {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(note);
    }
    if text.trim().is_empty() && saved.files.is_empty() {
        // A reaction, a deletion, a sticker: nothing the agent can answer.
        tracing::debug!(
            sender = number,
            timestamp,
            "signal message without text skipped"
        );
        return;
    }
    let chat = match group {
        Some(group) => format!("{GROUP_PREFIX}{group}"),
        None => number.to_owned(),
    };
    let key = format!("{number}:{timestamp}");
    let message = Submission::Message(InboundMessage {
        channel: CHANNEL.into(),
        idempotency_key: key.clone(),
        sender: number.to_owned(),
        chat: Some(chat.clone()),
        text,
        attachments: saved.files,
        // signal-cli's envelope carries the sender's profile name.
        sender_name: envelope["sourceName"]
            .as_str()
            .filter(|n| !n.trim().is_empty())
            .map(|n| n.chars().take(80).collect()),
    });
    // First: the turn this message starts may show "typing…" (in the
    // last chat) before `submit` returns.
    core.set_last_chat(chat);
    submit(core, &message, &key);
}

/// `> quoted text` and a line break, when the message quotes another.
fn quote(quote: &Value) -> String {
    let Some(quoted) = quote["text"].as_str().filter(|t| !t.trim().is_empty()) else {
        return String::new();
    };
    let line = quoted.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = match line.char_indices().nth(MAX_QUOTE) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    };
    format!("> {line}\n")
}

/// Submits until the host has it. `Busy` is retried (the host's queue
/// drains); while the plugin stops, or when the host refuses it, the loss
/// is logged with the key, never silent. Returns whether it was stored.
fn submit(core: &Core, submission: &Submission, key: &str) -> bool {
    let mut wait = Duration::from_millis(20);
    loop {
        match core.host.submit(submission) {
            Ok(()) => return true,
            Err(SubmitError::Busy) if !core.stop.is_stopped() => {
                if core.stop.sleep(wait) {
                    tracing::warn!(key, "signal message not stored: hearth is stopping");
                    return false;
                }
                wait = (wait * 2).min(Duration::from_secs(1));
            }
            Err(e) => {
                tracing::error!(key, "signal message not stored: {e}");
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_are_one_short_line() {
        assert_eq!(quote(&json!({"text": "hello\nthere"})), "> hello there\n");
        assert_eq!(quote(&json!(null)), "");
        assert_eq!(quote(&json!({"text": "  "})), "");
        let long = "word ".repeat(100);
        let quoted = quote(&json!({ "text": long }));
        assert!(quoted.ends_with("…\n") && quoted.chars().count() == MAX_QUOTE + 4);
    }
}
