//! Long polling: `getUpdates` in a loop that never gives up.
//!
//! Liveness is judged by completed poll cycles, not by `getMe`: a bot can
//! answer `getMe` while its updates stall. Each `getUpdates` waits up to
//! `poll_timeout` on the server, so an answer that has not come within that
//! plus [`MARGIN`] means the connection is dead: it is dropped, the channel
//! reports itself down, and a fresh connection is tried after a backoff
//! (half a second, doubling to a minute, forever). The offset moves past an
//! update only after [`Shared::handle`] says it is stored, so a crash at any
//! point gets the update again, and the inbox's `update_id` key keeps it
//! from being processed twice.

use std::sync::Arc;
use std::time::Duration;

use hearth_sdk::protocol::ChannelState;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::api::ApiError;
use crate::channel::{CALL_DEADLINE, Shared, lock};

/// How much longer than the poll timeout an answer may take before the
/// connection counts as dead.
pub const MARGIN: Duration = Duration::from_secs(2);
/// The first wait after a failure.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Polls until `stop` turns true.
pub async fn run(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut offset: i64 = 0;
    let mut backoff = FIRST_BACKOFF;
    let mut webhook_cleared = false;
    // Nothing is reported while connecting: a channel down is an error in
    // the host's log, and starting is none. The first answer says which.
    while !*stop.borrow() {
        if !webhook_cleared {
            // A webhook left from another setup makes every getUpdates fail
            // with 409; clearing it keeps its pending updates.
            webhook_cleared = shared
                .api
                .call("deleteWebhook", &json!({}), CALL_DEADLINE)
                .await
                .is_ok();
            // Its answer proves the token and the address, at once; the
            // first long poll may take its whole timeout to answer.
            if webhook_cleared && !shared.has_reported() {
                shared.report(ChannelState::Up, "long polling");
            }
        }
        learn_username(&shared).await;
        let params = json!({
            "offset": offset,
            "timeout": shared.settings.poll_timeout.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        let deadline = shared.settings.poll_timeout + MARGIN;
        let answer = tokio::select! {
            answer = shared.api.call("getUpdates", &params, deadline) => answer,
            _ = stop.changed() => break,
        };
        let failure = match answer {
            Ok(Value::Array(updates)) => {
                shared.report(ChannelState::Up, "long polling");
                backoff = FIRST_BACKOFF;
                for update in updates {
                    let Some(id) = update["update_id"].as_i64() else {
                        continue;
                    };
                    if id < offset {
                        continue;
                    }
                    if shared.handle(&update).await.is_err() {
                        // The host is closing: leave the offset, so the
                        // update comes again after the restart.
                        return;
                    }
                    offset = id + 1;
                }
                continue;
            }
            Ok(other) => format!("getUpdates answered {other} instead of a list"),
            Err(ApiError::Refused {
                code: 429,
                retry_after,
                ..
            }) => {
                let wait = Duration::from_secs(retry_after.unwrap_or(5).max(1));
                shared.report(
                    ChannelState::Degraded,
                    format!("rate-limited by Telegram; waiting {} s", wait.as_secs()),
                );
                if pause(wait, &mut stop).await {
                    break;
                }
                continue;
            }
            Err(ApiError::Refused {
                code: 409,
                description,
                ..
            }) => {
                webhook_cleared = false;
                format!(
                    "Telegram refused long polling (409 {description}); is another copy of this bot running?"
                )
            }
            Err(ApiError::Refused {
                code: 401 | 404, ..
            }) => "Telegram refused the bot token (401/404); check [plugins.telegram] token"
                .to_owned(),
            Err(ApiError::Timeout(_)) => format!(
                "no answer to getUpdates within {} s; the connection is dead",
                deadline.as_secs()
            ),
            Err(e) => format!("getUpdates failed: {e}"),
        };
        shared.report(
            ChannelState::Down,
            format!("{failure}; reconnecting in {:.1} s", backoff.as_secs_f32()),
        );
        if pause(backoff, &mut stop).await {
            break;
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Sleeps for `wait` unless stopped first; returns whether it was stopped.
pub async fn pause(wait: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        () = tokio::time::sleep(wait) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}

/// Asks for the bot's `@username` (used to see mentions in groups) until it
/// is known. Only needed when a group is allowed; a failure is retried on
/// the next cycle and never counts against liveness.
async fn learn_username(shared: &Shared) {
    let wanted = {
        let gate = lock(&shared.gate);
        gate.username.is_none() && gate.allowed.iter().any(|id| *id < 0)
    };
    if !wanted {
        return;
    }
    if let Ok(me) = shared.api.call("getMe", &json!({}), CALL_DEADLINE).await
        && let Some(name) = me["username"].as_str()
    {
        lock(&shared.gate).username = Some(name.to_owned());
    }
}
