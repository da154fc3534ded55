//! The Telegram channel: the owner talks to the agent through a bot.
//!
//! Updates arrive by long polling (the default: it needs no public address)
//! or by webhook. Each admitted message is stored in the host's inbox, keyed
//! by its `update_id`, before Telegram is told it may forget it, so a crash
//! or restart never loses an update or processes one twice. Replies are
//! converted from markdown to Telegram's HTML, split to fit, paced and
//! retried through flood limits. Confirmations show as Approve/Deny
//! buttons. The channel never dies silently: a poll that fails or hangs is
//! torn down and tried again, forever, and its state shows in `/status`
//! and `hearth plugins`.
//!
//! - `config`: `[plugins.telegram]`;
//! - `api`: the Bot API client;
//! - `inbound`: the hard gate and what an update is;
//! - `channel`: shared state, and one update from gate to inbox;
//! - `poll` and `webhook`: the two transports;
//! - `outbound`: sending, pacing, 429s, split replies;
//! - `events`: confirmation cards and "typing…";
//! - `format`: markdown to Telegram HTML, split at 4096;
//! - `voice`: spoken replies as voice messages.
//!
//! Config (every key is in `config/hearth.example.toml`):
//!
//! ```toml
//! [plugins.telegram]
//! token_env = "TELEGRAM_BOT_TOKEN"
//! allowed_chat_ids = [123456789]
//! ```

pub mod api;
pub mod channel;
pub mod config;
pub mod events;
pub mod format;
pub mod inbound;
pub mod outbound;
pub mod pace;
pub mod poll;
pub mod voice;
pub mod webhook;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth_sdk::protocol::{ChannelEvent, ChannelSpec, Description, OutboundMessage, SendReceipt};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use channel::{CHANNEL, Shared, lock};
use config::Transport;

/// The plugin: inert until `[plugins.telegram]` is filled in.
pub struct Telegram {
    running: Option<Running>,
}

/// A configured channel.
struct Running {
    shared: Arc<Shared>,
    owners: Vec<String>,
    /// `None` when the host does not serve channels (a CLI command).
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    stop: watch::Sender<bool>,
    events: Mutex<Option<mpsc::UnboundedSender<ChannelEvent>>>,
}

impl Plugin for Telegram {
    const NAME: &'static str = "telegram";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        // A mistake in the table: the host points at its line and stops.
        let settings = config::parse(&config, |name| std::env::var(name).ok(), random_secret)
            .map_err(PluginError::InvalidArguments)?;
        let Some(settings) = settings else {
            tracing::debug!("telegram: not configured ([plugins.telegram] is empty)");
            return Ok(Telegram { running: None });
        };
        if settings.allowed_chat_ids.is_empty() {
            tracing::warn!(
                "telegram: allowed_chat_ids is empty, so every message is dropped; add your user id"
            );
        }
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        // rustls needs one process-wide provider; ring, as in the host. If
        // one is already installed this fails, which is fine: it is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let api = api::Api::new(&settings.api_url, &settings.token).map_err(PluginError::Failed)?;
        let files_dir = PathBuf::from(&info.home).join("attachments").join(CHANNEL);
        let owners = settings.owner_ids().iter().map(i64::to_string).collect();
        let shared = Arc::new(Shared::new(host, api, settings, files_dir));
        let (stop, stopped) = watch::channel(false);
        let mut running = Running {
            shared,
            owners,
            runtime: Mutex::new(None),
            stop,
            events: Mutex::new(None),
        };
        if info.serving {
            running.start(stopped)?;
        }
        Ok(Telegram {
            running: Some(running),
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: Vec::new(),
            channel: self.running.as_ref().map(|r| ChannelSpec {
                name: CHANNEL.into(),
                events: true,
                owners: r.owners.clone(),
                allowed: r
                    .shared
                    .settings
                    .allowed_chat_ids
                    .iter()
                    .map(i64::to_string)
                    .collect(),
                allowed_key: Some("plugins.telegram.allowed_chat_ids".into()),
                unknown_sender: r.shared.settings.unknown_sender,
                ..ChannelSpec::default()
            }),
        }
    }

    fn call_tool(&self, tool: &str, _args: Value) -> Result<Value, PluginError> {
        Err(PluginError::Unsupported(format!("no tool {tool:?}")))
    }

    fn send(&self, message: OutboundMessage) -> Result<SendReceipt, PluginError> {
        let running = self.running.as_ref().ok_or_else(|| {
            PluginError::failed("telegram is not configured ([plugins.telegram])")
        })?;
        let handle = lock(&running.runtime)
            .as_ref()
            .map(|rt| rt.handle().clone())
            .ok_or_else(|| PluginError::failed("telegram is not running"))?;
        // The host calls from a thread of its blocking pool, outside any
        // async context, so the send is driven right here on the plugin's
        // runtime, with no task spawned and no channel back (the pooled
        // HTTP connection's own task still runs on the runtime's thread).
        // The host shuts the plugin down only once no call is running, so
        // the runtime outlives this.
        handle
            .block_on(running.shared.deliver(&message))
            .map_err(|e| match e {
                outbound::DeliverError::Refused(why) => PluginError::Refused(why),
                outbound::DeliverError::Failed(why) => PluginError::Failed(why),
            })
    }

    fn event(&self, event: ChannelEvent) -> Result<(), PluginError> {
        if let Some(events) = self.running.as_ref().and_then(|r| lock(&r.events).clone()) {
            let _ = events.send(event);
        }
        Ok(())
    }

    fn shutdown(&self) {
        let Some(running) = &self.running else {
            return;
        };
        let _ = running.stop.send(true);
        lock(&running.events).take();
        if let Some(runtime) = lock(&running.runtime).take() {
            runtime.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

impl Running {
    /// Starts the runtime, the transport and the event task.
    fn start(&mut self, stopped: watch::Receiver<bool>) -> Result<(), PluginError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("hearth-telegram")
            .enable_all()
            .build()
            .map_err(|e| PluginError::failed(format!("cannot start the telegram runtime: {e}")))?;
        let shared = Arc::clone(&self.shared);
        match shared.settings.transport.clone() {
            Transport::Poll => {
                runtime.spawn(poll::run(Arc::clone(&shared), stopped));
            }
            Transport::Webhook {
                listen,
                url,
                secret,
            } => {
                let listener = runtime
                    .block_on(tokio::net::TcpListener::bind(listen))
                    .map_err(|e| {
                        PluginError::failed(format!(
                            "[plugins.telegram] webhook_listen: cannot listen on {listen}: {e}"
                        ))
                    })?;
                let path = webhook_path(&url);
                runtime.spawn(webhook::serve(
                    Arc::clone(&shared),
                    listener,
                    path,
                    secret.clone(),
                    stopped.clone(),
                ));
                runtime.spawn(webhook::register(Arc::clone(&shared), url, secret, stopped));
            }
        }
        let (events, incoming) = mpsc::unbounded_channel();
        runtime.spawn(events::run(shared, incoming));
        *lock(&self.events) = Some(events);
        *lock(&self.runtime) = Some(runtime);
        Ok(())
    }
}

/// The path part of the webhook URL: where the server takes posts.
fn webhook_path(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    match rest.find('/') {
        Some(i) => rest[i..].split(['?', '#']).next().unwrap_or("/").to_owned(),
        None => "/".into(),
    }
}

/// A webhook secret when the config names none: 32 random URL-safe
/// characters, new at every start (Telegram gets it with `setWebhook`).
fn random_secret() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 24];
    // The system's random source does not fail on a booted Linux; were it
    // to, the start fails below rather than use a guessable secret.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        return String::new();
    }
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % 64] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::webhook_path;

    #[test]
    fn the_webhook_path_comes_from_its_url() {
        for (url, path) in [
            ("https://example.org/hearth/telegram", "/hearth/telegram"),
            ("https://example.org", "/"),
            ("https://example.org/tg?x=1", "/tg"),
        ] {
            assert_eq!(webhook_path(url), path);
        }
    }
}
