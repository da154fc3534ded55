//! Webhook mode: Telegram posts each update to us.
//!
//! The server listens on `webhook_listen` (loopback by default; a reverse
//! proxy with TLS forwards the public `webhook_url` to it) and takes `POST`
//! on the URL's path. A request without the exact
//! `X-Telegram-Bot-Api-Secret-Token` gets 401 and is not read further.
//! The answer is 200 only after the update is stored; otherwise it is 503,
//! and Telegram delivers the update again later. `setWebhook` is retried
//! with backoff until it succeeds, and `getWebhookInfo` is checked every
//! minute, so delivery errors Telegram sees show in the channel's health.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hearth_sdk::protocol::ChannelState;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::channel::{CALL_DEADLINE, Shared};
use crate::poll::pause;

/// The header Telegram puts the secret in.
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";
/// The largest update body taken.
const MAX_BODY: usize = 1 << 20;

/// The webhook's state.
struct Hook {
    shared: Arc<Shared>,
    secret: String,
}

/// Serves the webhook on `listener` until `stop` turns true.
pub async fn serve(
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    path: String,
    secret: String,
    mut stop: watch::Receiver<bool>,
) {
    let hook = Arc::new(Hook {
        shared: Arc::clone(&shared),
        secret,
    });
    let app = axum::Router::new()
        .route(&path, axum::routing::post(receive))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(hook);
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stop.changed().await;
        })
        .await;
    if let Err(e) = served {
        shared.report(
            ChannelState::Down,
            format!("the webhook server stopped: {e}"),
        );
    }
}

/// Registers the webhook, then watches its health, until `stop`.
pub async fn register(
    shared: Arc<Shared>,
    url: String,
    secret: String,
    mut stop: watch::Receiver<bool>,
) {
    let params = json!({
        "url": url,
        "secret_token": secret,
        "allowed_updates": ["message", "callback_query"],
    });
    let mut backoff = Duration::from_millis(500);
    // Nothing is reported before `setWebhook` answers (at once): a
    // channel down is an error in the host's log, and starting is none.
    loop {
        match shared.api.call("setWebhook", &params, CALL_DEADLINE).await {
            Ok(_) => break,
            Err(e) => shared.report(
                ChannelState::Down,
                format!(
                    "setWebhook failed: {e}; retrying in {:.1} s",
                    backoff.as_secs_f32()
                ),
            ),
        }
        if pause(backoff, &mut stop).await {
            return;
        }
        backoff = (backoff * 2).min(Duration::from_secs(60));
    }
    shared.report(ChannelState::Up, format!("webhook at {url}"));
    while !pause(Duration::from_secs(60), &mut stop).await {
        match shared
            .api
            .call("getWebhookInfo", &json!({}), CALL_DEADLINE)
            .await
        {
            Ok(info) => {
                let recent_error = info["last_error_date"]
                    .as_i64()
                    .is_some_and(|at| now_s() - at < 120);
                if recent_error {
                    let why = info["last_error_message"].as_str().unwrap_or("unknown");
                    shared.report(
                        ChannelState::Degraded,
                        format!("Telegram cannot reach the webhook: {why}"),
                    );
                } else {
                    shared.report(ChannelState::Up, format!("webhook at {url}"));
                }
            }
            Err(e) => shared.report(
                ChannelState::Degraded,
                format!("getWebhookInfo failed: {e}"),
            ),
        }
    }
}

/// A request body as one update: JSON with a numeric `update_id` (its
/// idempotency key), or what it is instead. Public for the fuzz tests.
pub fn read_update(body: &[u8]) -> Result<Value, &'static str> {
    let update: Value =
        serde_json::from_slice(body).map_err(|_| "a request body that is not JSON")?;
    if update["update_id"].as_i64().is_none() {
        return Err("an update without update_id");
    }
    Ok(update)
}

async fn receive(State(hook): State<Arc<Hook>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let given = headers
        .get(SECRET_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !same(given, hook.secret.as_bytes()) {
        return StatusCode::UNAUTHORIZED;
    }
    let update = match read_update(&body) {
        Ok(update) => update,
        Err(why) => {
            tracing::warn!("telegram webhook: {why} was refused");
            return StatusCode::BAD_REQUEST;
        }
    };
    match hook.shared.handle(&update).await {
        Ok(()) => StatusCode::OK,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// Compares in time independent of where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
