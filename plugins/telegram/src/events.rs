//! Channel events from the host: confirmation cards and "typing…".
//!
//! Events are handled one at a time, in the order the host sent them, by
//! one task: a card must be on screen (and its message id known) before the
//! decision that edits it is handled. A card goes to every allowed private
//! chat, with Approve and Deny buttons whose callback data names the
//! request; only the owner's presses count (see `inbound`). When the
//! request is decided, from here or from any other channel, each card is
//! edited to show the outcome and loses its buttons.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hearth_sdk::protocol::{ChannelEvent, ConfirmationRequest, ConfirmationState, DECIDED_BY_STOP};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::channel::{CALL_DEADLINE, Shared, lock};
use crate::format::escape;
use crate::inbound::CALLBACK_PREFIX;

/// How often "typing…" is renewed; Telegram shows it for about 5 s.
const TYPING_EVERY: Duration = Duration::from_secs(4);
/// The longest command shown on a card; the card says when it is cut.
const MAX_SHOWN: usize = 3000;

/// Handles events until the sending side closes.
pub async fn run(shared: Arc<Shared>, mut events: mpsc::UnboundedReceiver<ChannelEvent>) {
    let mut cards: HashMap<String, Vec<Card>> = HashMap::new();
    let mut typing: Option<JoinHandle<()>> = None;
    while let Some(event) = events.recv().await {
        match event {
            ChannelEvent::Confirmation(request) => {
                let shown = show(&shared, &request).await;
                cards.insert(request.id.clone(), shown);
            }
            ChannelEvent::ConfirmationDecided {
                id,
                state,
                decided_by,
            } => {
                for card in cards.remove(&id).unwrap_or_default() {
                    settle(&shared, &card, state, &decided_by).await;
                }
            }
            ChannelEvent::Status { busy, .. } => {
                if let Some(ticker) = typing.take() {
                    ticker.abort();
                }
                let chat = *lock(&shared.last_chat);
                if let (true, Some(chat)) = (busy, chat) {
                    typing = Some(tokio::spawn(type_in(Arc::clone(&shared), chat)));
                }
            }
            // The final reply comes through `send`; Telegram shows no
            // streamed text, and the schedule only when asked (/schedule).
            // Tool output is not asked for (the channel does not set
            // `tool_output`): "typing…" stays up while the tool runs.
            ChannelEvent::Delta { .. }
            | ChannelEvent::DeltaReset { .. }
            | ChannelEvent::Schedule { .. }
            | ChannelEvent::ToolOutput { .. }
            | ChannelEvent::Group(_)
            | ChannelEvent::View { .. } => {}
        }
    }
    if let Some(ticker) = typing {
        ticker.abort();
    }
}

/// A card on screen.
struct Card {
    chat: i64,
    message_id: i64,
    html: String,
}

async fn show(shared: &Shared, request: &ConfirmationRequest) -> Vec<Card> {
    let html = card_html(request);
    let buttons = json!({ "inline_keyboard": [[
        { "text": "Approve", "callback_data": format!("{CALLBACK_PREFIX}{}:y", request.id) },
        { "text": "Deny", "callback_data": format!("{CALLBACK_PREFIX}{}:n", request.id) },
    ]]});
    let mut shown = Vec::new();
    for chat in shared.settings.owner_ids() {
        match shared.send_html(chat, &html, Some(&buttons)).await {
            Ok(Some(message_id)) => shown.push(Card {
                chat,
                message_id,
                html: html.clone(),
            }),
            Ok(None) => {}
            // Unanswered, the request is denied at its timeout: failing
            // closed.
            Err(e) => tracing::error!(chat, "cannot show a confirmation card: {e}"),
        }
    }
    shown
}

async fn settle(shared: &Shared, card: &Card, state: ConfirmationState, by: &str) {
    let Some(outcome) = outcome_html(state, by) else {
        return;
    };
    let params = json!({
        "chat_id": card.chat,
        "message_id": card.message_id,
        "text": format!("{}\n\n{outcome}", card.html),
        "parse_mode": "HTML",
        "reply_markup": { "inline_keyboard": [] },
    });
    if let Err(e) = shared.paced(card.chat, "editMessageText", &params).await {
        tracing::warn!(
            chat = card.chat,
            "cannot mark a confirmation card decided: {e}"
        );
    }
}

/// The line a decided card ends with; `None` while pending.
pub fn outcome_html(state: ConfirmationState, by: &str) -> Option<String> {
    if state.withdrawn(by) {
        let why = if by == DECIDED_BY_STOP {
            "the turn was stopped"
        } else {
            "the request was taken back"
        };
        return Some(format!("🚫 <b>Withdrawn</b> (not run): {why}"));
    }
    let outcome = match state {
        ConfirmationState::Approved => "✅ <b>Approved</b>",
        ConfirmationState::Denied => "❌ <b>Denied</b>",
        ConfirmationState::Expired => "⌛ <b>Expired</b> (not run)",
        ConfirmationState::Pending => return None,
    };
    Some(format!("{outcome} by {}", escape(by)))
}

/// The card: what runs, where, why, until when.
pub fn card_html(request: &ConfirmationRequest) -> String {
    let mut html = format!(
        "🔐 <b>Approval needed</b>\nTool: <code>{}</code>\n",
        escape(&request.tool)
    );
    let shown = match &request.command {
        Some(command) => command.clone(),
        None => serde_json::to_string_pretty(&request.args).unwrap_or_default(),
    };
    let cut: String = shown.chars().take(MAX_SHOWN).collect();
    html.push_str(&format!("<pre>{}</pre>\n", escape(&cut)));
    if cut.len() < shown.len() {
        html.push_str(&format!(
            "(shown: the first {MAX_SHOWN} of {} characters; the approval covers the whole call)\n",
            shown.chars().count()
        ));
    }
    if let Some(cwd) = &request.cwd {
        html.push_str(&format!("In: <code>{}</code>\n", escape(cwd)));
    }
    if let Some(mode) = &request.mode {
        html.push_str(&format!("Mode: {}\n", escape(mode)));
    }
    html.push_str(&format!("Why: {}\n", escape(&request.reason)));
    let minutes = ((request.expires_at_ms - request.at_ms) / 60_000).max(1);
    html.push_str(&format!(
        "Denied unless answered within {minutes} min. Fingerprint <code>{}</code>",
        escape(
            request
                .fingerprint
                .get(..12)
                .unwrap_or(&request.fingerprint)
        )
    ));
    html
}

async fn type_in(shared: Arc<Shared>, chat: i64) {
    loop {
        let params: Value = json!({ "chat_id": chat, "action": "typing" });
        if let Err(e) = shared
            .api
            .call("sendChatAction", &params, CALL_DEADLINE)
            .await
        {
            tracing::debug!("sendChatAction failed: {e}");
        }
        tokio::time::sleep(TYPING_EVERY).await;
    }
}
