//! `hearth setup`'s Signal step: connects to the signal-cli daemon that
//! holds the account (docs/signal.md) and waits for the owner's first
//! message to it, whose sender becomes the owner and the one number
//! allowed, so nobody types a number twice.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

/// Waits up to `wait` on signal-cli's event stream at `url` for a message
/// to `account`; the sender's number.
pub fn learn_owner(url: &str, account: &str, wait: Duration) -> anyhow::Result<String> {
    let runtime = super::client::runtime()?;
    runtime.block_on(async {
        hearth_base::tls::install_crypto_provider();
        let http = reqwest::Client::builder().tls_backend_rustls().build()?;
        // The account is a phone number: `+` is its only character a
        // query must escape.
        let events = format!(
            "{}/api/v1/events?account={}",
            url.trim_end_matches('/'),
            account.replace('+', "%2B")
        );
        let mut response = http.get(&events).send().await.with_context(|| {
            format!("cannot reach signal-cli at {url}: is its daemon running (docs/signal.md)?")
        })?;
        if !response.status().is_success() {
            bail!(
                "signal-cli at {url} answered {} for {account}: is that the account it holds?",
                response.status()
            );
        }
        eprintln!("setup: now send any message to {account} from your own Signal…");
        let read = async {
            let mut pending = String::new();
            while let Some(chunk) = response.chunk().await? {
                pending.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = pending.find("\n\n") {
                    let event: String = pending.drain(..end + 2).collect();
                    if let Some(number) = sender(&event) {
                        return Ok(number);
                    }
                }
            }
            bail!("signal-cli closed its event stream before a message came")
        };
        match tokio::time::timeout(wait, read).await {
            Ok(found) => found,
            Err(_) => bail!(
                "no message reached {account} within {} s: send one and run `hearth setup` again",
                wait.as_secs()
            ),
        }
    })
}

/// The sender of a data message in one server-sent event, if it is one.
fn sender(event: &str) -> Option<String> {
    let data: String = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .collect();
    let value: Value = serde_json::from_str(data.trim()).ok()?;
    let envelope = &value["envelope"];
    if envelope["dataMessage"].is_null() {
        return None;
    }
    envelope["sourceNumber"]
        .as_str()
        .or(envelope["source"].as_str())
        .map(str::to_owned)
}
