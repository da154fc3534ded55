//! The Signal channel: the owner chats with the agent from the Signal app.
//!
//! hearth does not speak Signal's protocol itself: a `signal-cli` daemon
//! (`signal-cli -a +NUMBER daemon --http 127.0.0.1:8080`) holds the
//! account, and this plugin talks to it over HTTP: JSON-RPC calls to send,
//! a server-sent event stream to receive. `docs/signal.md` is the guide.
//!
//! - `config`: `[plugins.signal]`, read strictly;
//! - `events`: the event stream, its liveness and reconnection;
//! - `sse`: the server-sent events parser;
//! - `inbound`: the gate, confirmation answers, messages to the host;
//! - `attachments`: received files, saved for the agent;
//! - `rpc`: the JSON-RPC client;
//! - `outbound`: replies, split and sent once per part;
//! - `styles`: markdown to text and Signal style ranges;
//! - `split`: long replies as several messages;
//! - `confirm`: confirmation cards and `yes CODE` answers;
//! - `typing`: the typing indicator while the agent works.

pub mod attachments;
pub mod config;
pub mod confirm;
pub mod events;
pub mod inbound;
pub mod outbound;
pub mod rpc;
pub mod split;
pub mod sse;
pub mod styles;
pub mod typing;

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use hearth_sdk::protocol::{
    ChannelEvent, ChannelSpec, ConfirmationRequest, ConfirmationState, Description,
    OutboundMessage, SendReceipt,
};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::{Value, json};

use config::Settings;
use rpc::Rpc;
use styles::Style;

/// The channel's name.
pub const CHANNEL: &str = "signal";

/// Group chats are named `group:<groupId>`; a chat without it is a number.
pub const GROUP_PREFIX: &str = "group:";

/// The plugin: inert when `[plugins.signal]` is empty.
pub struct Signal {
    running: Option<Running>,
}

/// What the plugin's threads and the host's calls share.
pub struct Core {
    /// The host's callbacks.
    pub host: Host,
    /// `[plugins.signal]`.
    pub settings: Settings,
    /// The JSON-RPC client.
    pub rpc: Rpc,
    /// Set once at shutdown.
    pub stop: Stop,
    /// Where received files are saved.
    pub attachment_dir: PathBuf,
    /// The confirmation requests shown, by code.
    pub confirmations: confirm::Confirmations,
    /// The log limit for dropped senders.
    pub strangers: inbound::Strangers,
    /// The parts of unfinished replies already sent.
    pub outbound: outbound::Outbound,
    /// The typing indicator's state.
    pub typing: typing::Typing,
    last_chat: Mutex<Option<String>>,
}

impl Core {
    /// The chat of the owner's last stored message.
    pub fn last_chat(&self) -> Option<String> {
        self.last_chat
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records the chat of the owner's latest stored message.
    pub fn set_last_chat(&self, chat: String) {
        *self.last_chat.lock().unwrap_or_else(|p| p.into_inner()) = Some(chat);
    }

    /// Sends one message to every allowed number (confirmation cards and
    /// their outcomes go to the owner wherever they read).
    fn tell_owner(&self, text: &str, styles: &[Style]) -> Result<(), PluginError> {
        if self.settings.allowed_numbers.is_empty() {
            return Ok(());
        }
        let mut params = json!({ "recipient": self.settings.allowed_numbers });
        outbound::add_text(&mut params, text, styles);
        self.rpc
            .call("send", params)
            .map(drop)
            .map_err(|e| PluginError::failed(e.to_string()))
    }
}

/// A stop flag threads can sleep on.
#[derive(Default)]
pub struct Stop {
    stopped: Mutex<bool>,
    changed: Condvar,
}

impl Stop {
    /// Sets the flag and wakes every sleeper.
    pub fn stop(&self) {
        *self.lock() = true;
        self.changed.notify_all();
    }

    /// Whether the flag is set.
    pub fn is_stopped(&self) -> bool {
        *self.lock()
    }

    /// Sleeps for `duration` or until stopped; returns whether stopped.
    pub fn sleep(&self, duration: Duration) -> bool {
        let stopped = self.lock();
        let (stopped, _) = self
            .changed
            .wait_timeout_while(stopped, duration, |stopped| !*stopped)
            .unwrap_or_else(|p| p.into_inner());
        *stopped
    }

    fn lock(&self) -> MutexGuard<'_, bool> {
        self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A configured channel.
struct Running {
    core: Arc<Core>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Plugin for Signal {
    const NAME: &'static str = "signal";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        // A mistake in the table: the host points at its line and stops.
        let settings =
            config::parse(&config).map_err(|e| PluginError::InvalidArguments(e.to_string()))?;
        let Some(settings) = settings else {
            tracing::info!("signal channel not configured ([plugins.signal] is empty): off");
            return Ok(Signal { running: None });
        };
        if settings.allowed_numbers.is_empty() {
            tracing::warn!("[plugins.signal] allowed_numbers is empty: every message is dropped");
        }
        if settings.keepalive_timeout < Duration::from_secs(20) {
            tracing::warn!(
                "[plugins.signal] keepalive_timeout_s is under 20: signal-cli sends a keep-alive \
                 only every 15 s, so a healthy stream may be taken for dead"
            );
        }
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        let home = PathBuf::from(&info.home);
        let attachment_dir = match &settings.attachment_dir {
            Some(dir) => home.join(dir),
            None => home.join("attachments").join("signal"),
        };
        // rustls needs one process-wide provider, even to build a client
        // that will only speak plain HTTP; ring, as in the host. If one is
        // installed already this fails, which is fine: it is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rpc = Rpc::new(&settings.url, &settings.account, settings.request_timeout)
            .map_err(|e| PluginError::failed(e.to_string()))?;
        let core = Arc::new(Core {
            host,
            settings,
            rpc,
            stop: Stop::default(),
            attachment_dir,
            confirmations: Default::default(),
            strangers: Default::default(),
            outbound: Default::default(),
            typing: Default::default(),
            last_chat: Mutex::new(None),
        });
        let mut threads = Vec::new();
        if info.serving {
            threads.push(spawn("hearth-signal-events", &core, events::run)?);
            threads.push(spawn("hearth-signal-typing", &core, typing::run)?);
            tracing::info!(url = %core.settings.url, "signal channel started");
        } else {
            tracing::debug!("signal channel loaded by a one-shot command: no stream");
        }
        Ok(Signal {
            running: Some(Running {
                core,
                threads: Mutex::new(threads),
            }),
        })
    }

    fn describe(&self) -> Description {
        let Some(running) = &self.running else {
            return Description::default();
        };
        Description {
            tools: Vec::new(),
            channel: Some(ChannelSpec {
                name: CHANNEL.into(),
                events: true,
                owners: running.core.settings.allowed_numbers.clone(),
                allowed: running.core.settings.allowed_numbers.clone(),
                allowed_key: Some("plugins.signal.allowed_numbers".into()),
                unknown_sender: running.core.settings.unknown_sender,
                ..ChannelSpec::default()
            }),
        }
    }

    fn call_tool(&self, tool: &str, _args: Value) -> Result<Value, PluginError> {
        Err(PluginError::Unsupported(format!("no tool {tool:?}")))
    }

    fn send(&self, message: OutboundMessage) -> Result<SendReceipt, PluginError> {
        let core = self.core()?;
        outbound::send(core, &message).map_err(|e| PluginError::failed(e.to_string()))
    }

    fn event(&self, event: ChannelEvent) -> Result<(), PluginError> {
        let core = self.core()?;
        match event {
            ChannelEvent::Status { busy, .. } => core.typing.set_busy(busy),
            ChannelEvent::Confirmation(request) => show(core, &request)?,
            ChannelEvent::ConfirmationDecided {
                id,
                state,
                decided_by,
            } => decided(core, &id, state, &decided_by)?,
            // The final reply comes through `send`; Signal cannot edit a
            // message as it grows. Tool output is not asked for (no
            // `tool_output`): "typing…" stays up while a tool runs.
            ChannelEvent::Delta { .. }
            | ChannelEvent::DeltaReset { .. }
            | ChannelEvent::Schedule { .. }
            | ChannelEvent::ToolOutput { .. }
            | ChannelEvent::Group(_)
            | ChannelEvent::View { .. } => {}
        }
        Ok(())
    }

    fn shutdown(&self) {
        let Some(running) = &self.running else {
            return;
        };
        running.core.stop.stop();
        running.core.typing.stop();
        let threads =
            std::mem::take(&mut *running.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for thread in threads {
            if thread.join().is_err() {
                tracing::error!("a signal thread panicked");
            }
        }
    }
}

impl Signal {
    fn core(&self) -> Result<&Core, PluginError> {
        self.running
            .as_ref()
            .map(|r| r.core.as_ref())
            .ok_or_else(|| PluginError::Unsupported("the signal channel is not configured".into()))
    }
}

/// Shows a confirmation request to the owner.
fn show(core: &Core, request: &ConfirmationRequest) -> Result<(), PluginError> {
    let code = core.confirmations.register(request);
    let (text, styles) = confirm::card(request, &code);
    core.tell_owner(&text, &styles)
}

/// Tells the owner how a request shown here ended.
fn decided(core: &Core, id: &str, state: ConfirmationState, by: &str) -> Result<(), PluginError> {
    match core.confirmations.decided(id) {
        Some((code, tool)) => core.tell_owner(&confirm::outcome(state, by, &tool, &code), &[]),
        None => Ok(()),
    }
}

fn spawn(
    name: &str,
    core: &Arc<Core>,
    body: fn(&Arc<Core>),
) -> Result<JoinHandle<()>, PluginError> {
    let core = Arc::clone(core);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || body(&core))
        .map_err(|e| PluginError::failed(format!("cannot start the {name} thread: {e}")))
}
