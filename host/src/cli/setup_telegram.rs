//! `hearth setup`'s Telegram step: checks the bot token with `getMe`,
//! then waits for the owner's first message to the bot and takes its
//! sender as the owner and its chat as the one allowed, so nobody types
//! an id. The token goes to the secret store; the config names it
//! (`token_secret`).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

/// The secret the bot token is kept in.
pub const TOKEN_SECRET: &str = "TELEGRAM_BOT_TOKEN";

/// What the owner's first message told.
pub struct Learned {
    /// The bot's `@username`.
    pub bot: String,
    /// The owner's user id.
    pub owner: i64,
    /// The chat the message came from (the private chat: the same id).
    pub chat: i64,
}

/// Checks `token` at `api` and waits up to `wait` for a message to the
/// bot. Messages already waiting are skipped: only one sent now counts.
pub fn learn_owner(api: &str, token: &str, wait: Duration) -> anyhow::Result<Learned> {
    let runtime = super::client::runtime()?;
    runtime.block_on(async {
        hearth_base::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .tls_backend_rustls()
            .timeout(Duration::from_secs(40))
            .build()?;
        let base = format!("{}/bot{token}", api.trim_end_matches('/'));
        let me = call(&http, &base, "getMe", &[]).await.map_err(|e| {
            anyhow::anyhow!("Telegram refused the bot token ({e}): copy it again from @BotFather")
        })?;
        let bot = me["username"].as_str().unwrap_or("your bot").to_owned();
        // Skip what was sent before: the next update id after the last.
        let old = call(
            &http,
            &base,
            "getUpdates",
            &[("timeout", "0"), ("offset", "-1")],
        )
        .await?;
        let mut offset = old
            .as_array()
            .and_then(|u| u.last())
            .and_then(|u| u["update_id"].as_i64())
            .map_or(0, |id| id + 1);
        eprintln!("setup: now send any message to @{bot} from your Telegram account…");
        let until = Instant::now() + wait;
        while Instant::now() < until {
            let left = until
                .saturating_duration_since(Instant::now())
                .as_secs()
                .clamp(1, 20);
            let updates = call(
                &http,
                &base,
                "getUpdates",
                &[
                    ("timeout", &left.to_string()),
                    ("offset", &offset.to_string()),
                ],
            )
            .await?;
            for update in updates.as_array().into_iter().flatten() {
                offset = offset.max(update["update_id"].as_i64().unwrap_or(0) + 1);
                let message = &update["message"];
                if let (Some(owner), Some(chat)) = (
                    message["from"]["id"].as_i64(),
                    message["chat"]["id"].as_i64(),
                ) {
                    // Mark it read, so the daemon does not take it again.
                    call(
                        &http,
                        &base,
                        "getUpdates",
                        &[("timeout", "0"), ("offset", &offset.to_string())],
                    )
                    .await?;
                    return Ok(Learned { bot, owner, chat });
                }
            }
        }
        bail!(
            "no message reached @{bot} within {} s: send one and run `hearth setup` again",
            wait.as_secs()
        )
    })
}

/// One Bot API call; its `result`, or its `description` as the error.
async fn call(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    query: &[(&str, &str)],
) -> anyhow::Result<Value> {
    // The parameters are numbers: nothing to escape.
    let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let response = http
        .get(format!("{base}/{method}?{}", query.join("&")))
        .send()
        .await
        .with_context(|| format!("cannot reach Telegram ({method})"))?;
    let body: Value = response
        .json()
        .await
        .with_context(|| format!("Telegram's answer to {method} is not JSON"))?;
    if body["ok"] == true {
        return Ok(body["result"].clone());
    }
    bail!(
        "{} {}",
        body["error_code"],
        body["description"].as_str().unwrap_or("refused")
    )
}
