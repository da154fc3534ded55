//! The Discord channel: a bot on the Gateway WebSocket and the REST API,
//! built like Telegram's: durable, honest about its health, behind the
//! same gates: messages and files in, replies out, "typing…" while a turn
//! runs, approval cards with buttons, and nothing lost or doubled across a
//! dropped connection or a restart.
//!
//! - `config`: `[plugins.discord]`;
//! - `gateway`: the Gateway session as a state machine (identify or
//!   resume, heartbeats and zombie connections, reconnects, the close
//!   codes that stop it);
//! - `connection`: the thread that runs it over a WebSocket;
//! - `rest`: sending, with Discord's per-route and global rate limits;
//! - `gate`: which messages reach the host: direct messages from allowed
//!   users, mentions in allowed channels;
//! - `split`: replies cut to 2,000 characters on sensible boundaries;
//! - `outbound`: a reply as messages: its pieces, then the files the agent
//!   attached, ten a message, or named in the text when they cannot go;
//! - `cards`: approval cards and their buttons.
//!
//! Architecture invariant: a message counts as seen (its sequence number
//! is what a resume starts after) only once the host has stored it.

pub mod cards;
pub mod config;
pub mod connection;
pub mod gate;
pub mod gateway;
pub mod outbound;
pub mod rest;
pub mod split;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hearth_sdk::files::safe_file_name;
use hearth_sdk::protocol::{
    Attachment, ChannelEvent, ChannelSpec, ChannelState, ChannelStatus, ConfirmationAnswer,
    ConfirmationRequest, Description, InboundMessage, OutboundMessage, SendReceipt, Submission,
    service,
};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::Value;

use config::Settings;
use connection::{Handler, Health};
use rest::Rest;

/// The channel's name.
pub const CHANNEL: &str = "discord";
/// The least time between two saves of the channels' cursors: a save is a
/// store write, and a cursor behind by a second costs only a re-read of
/// messages the inbox already holds (their ids make them no-ops).
const SAVE_EVERY: Duration = Duration::from_secs(1);

/// The plugin: inert when `[plugins.discord]` is empty.
pub struct Discord {
    running: Option<Running>,
}

struct Running {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// One card shown for a confirmation.
struct Card {
    channel: String,
    message: String,
    text: String,
}

/// What the connection thread and the host's calls share.
struct Shared {
    host: Host,
    rest: Rest,
    settings: Settings,
    /// The bot's user id, once `READY` said it.
    bot: Mutex<Option<String>>,
    stop: Arc<AtomicBool>,
    /// The cards shown for each pending confirmation, by its id.
    cards: Mutex<HashMap<String, Vec<Card>>>,
    /// Each owner's direct-message channel, once asked for.
    dms: Mutex<HashMap<String, String>>,
    /// Where the last message that got in came from: "typing…" goes there.
    last_chat: Mutex<Option<String>>,
    /// Where attachments are saved: `$HEARTH_HOME/attachments/discord`.
    files_dir: PathBuf,
    /// The newest stored message of each channel that ever got one in,
    /// kept in the host's store (`kv`): after a restart, what came
    /// meanwhile is read from there on.
    cursors: Mutex<BTreeMap<String, String>>,
    /// When the cursors were last saved, and whether they changed since.
    saved: Mutex<(Option<Instant>, bool)>,
}

impl Plugin for Discord {
    const NAME: &'static str = "discord";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let Some(settings) = config::parse(config).map_err(|why| {
            PluginError::InvalidArguments(why.trim_start_matches("invalid arguments: ").to_owned())
        })?
        else {
            tracing::debug!("discord: not configured ([plugins.discord] is empty)");
            return Ok(Discord { running: None });
        };
        if settings.gate.users.is_empty() && settings.gate.channels.is_empty() {
            tracing::warn!(
                "discord: allowed_user_ids and allowed_channel_ids are empty, so every message \
                 is dropped; add your user id"
            );
        }
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        // rustls needs one process-wide provider; ring, as in the host.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rest = Rest::new(&settings.api_url, &settings.token).map_err(PluginError::Failed)?;
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            host,
            rest,
            settings,
            bot: Mutex::new(None),
            stop: Arc::clone(&stop),
            cards: Mutex::default(),
            dms: Mutex::default(),
            last_chat: Mutex::new(None),
            files_dir: PathBuf::from(&info.home).join("attachments").join(CHANNEL),
            cursors: Mutex::new(load_cursors(&host)),
            saved: Mutex::new((None, false)),
        });
        let running = Running {
            shared: Arc::clone(&shared),
            stop: Arc::clone(&stop),
            thread: Mutex::new(None),
        };
        if info.serving {
            let thread = std::thread::Builder::new()
                .name("hearth-discord".into())
                .spawn(move || {
                    let token = shared.settings.token.clone();
                    let gateway = {
                        let shared = Arc::clone(&shared);
                        move || match &shared.settings.gateway_url {
                            Some(url) => Ok(url.clone()),
                            None => shared.rest.gateway_url().map_err(|e| e.to_string()),
                        }
                    };
                    connection::run(&token, gateway, shared, stop);
                })
                .map_err(|e| PluginError::failed(format!("cannot start its thread: {e}")))?;
            *lock(&running.thread) = Some(thread);
        }
        Ok(Discord {
            running: Some(running),
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: Vec::new(),
            channel: self.running.as_ref().map(|r| {
                let gate = &r.shared.settings.gate;
                ChannelSpec {
                    name: CHANNEL.into(),
                    events: true,
                    owners: gate.users.clone(),
                    allowed: gate.users.iter().chain(&gate.channels).cloned().collect(),
                    allowed_key: Some("plugins.discord.allowed_user_ids".into()),
                    unknown_sender: r.shared.settings.unknown_sender,
                    ..ChannelSpec::default()
                }
            }),
        }
    }

    fn call_tool(&self, tool: &str, _args: Value) -> Result<Value, PluginError> {
        Err(PluginError::Unsupported(format!("no tool {tool:?}")))
    }

    fn send(&self, message: OutboundMessage) -> Result<SendReceipt, PluginError> {
        let running = self
            .running
            .as_ref()
            .ok_or_else(|| PluginError::failed("discord is not configured ([plugins.discord])"))?;
        let (files, notes) = outbound::read(
            &message.attachments,
            running.shared.settings.max_upload_bytes,
        );
        let mut last = None;
        for (n, planned) in outbound::plan(&message.text, files, &notes)
            .into_iter()
            .enumerate()
        {
            // The outbox may send a reply again (after a crash between the
            // send and its record): the nonce makes Discord show it once.
            let nonce = message.key.as_ref().map(|key| format!("{key}.{n}"));
            let id = running
                .shared
                .send_planned(&message.chat, planned, nonce.as_deref())?;
            last = Some(id);
        }
        Ok(SendReceipt { message_id: last })
    }

    fn event(&self, event: ChannelEvent) -> Result<(), PluginError> {
        let Some(running) = &self.running else {
            return Ok(());
        };
        let shared = &running.shared;
        match event {
            ChannelEvent::Confirmation(request) => shared.show_card(&request),
            ChannelEvent::ConfirmationDecided {
                id,
                state,
                decided_by,
            } => {
                let shown = lock(&shared.cards).remove(&id).unwrap_or_default();
                if let Some(outcome) = cards::outcome(state, &decided_by) {
                    for card in shown {
                        let edited = format!("{}\n{outcome}", card.text);
                        if let Err(e) =
                            shared
                                .rest
                                .edit_message(&card.channel, &card.message, &edited)
                        {
                            tracing::warn!("discord: cannot mark a card decided: {e}");
                        }
                    }
                }
            }
            ChannelEvent::Status { busy: true, .. } => {
                if let Some(chat) = lock(&shared.last_chat).clone()
                    && let Err(e) = shared.rest.typing(&chat)
                {
                    tracing::debug!("discord: no typing indicator: {e}");
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn shutdown(&self) {
        if let Some(running) = &self.running {
            running.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = lock(&running.thread).take() {
                let _ = thread.join();
            }
            running.shared.save_cursors();
        }
    }
}

impl Handler for Shared {
    fn event(&self, name: &str, data: &Value) -> bool {
        match name {
            "READY" => {
                let id = data["user"]["id"].as_str().map(str::to_owned);
                let user = data["user"]["username"].as_str().unwrap_or("the bot");
                tracing::info!("discord: connected as {user}");
                *lock(&self.bot) = id;
                // A new session replays nothing: what came while there was
                // none is read from each channel's history.
                self.catch_up()
            }
            "INTERACTION_CREATE" => {
                self.pressed(data);
                true
            }
            "MESSAGE_CREATE" => self.take_message(data),
            _ => true,
        }
    }

    fn health(&self, health: Health) {
        let (state, detail) = match health {
            Health::Up => (ChannelState::Up, "connected to the gateway".to_owned()),
            Health::Reconnecting(why) => (ChannelState::Degraded, why),
            Health::Stopped(why) => (ChannelState::Down, why),
        };
        if let Err(e) = self
            .host
            .submit(&Submission::ChannelStatus(ChannelStatus { state, detail }))
        {
            tracing::debug!("discord: the channel's status was not taken: {e}");
        }
    }
}

impl Shared {
    /// A `MESSAGE_CREATE` (live, replayed, or read back after a restart):
    /// through the gate to the host's inbox. `true` once stored (or
    /// dropped by the gate, or refused as malformed); the channel's cursor
    /// then moves past it.
    fn take_message(&self, data: &Value) -> bool {
        let bot = lock(&self.bot).clone();
        let Some(incoming) = self.settings.gate.classify(data, bot.as_deref()) else {
            return true;
        };
        *lock(&self.last_chat) = Some(incoming.channel_id.clone());
        let mut text = incoming.text;
        let mut attachments = Vec::new();
        for (n, file) in incoming.files.iter().enumerate() {
            match self.download(&incoming.id, n, file) {
                Ok(attachment) => attachments.push(attachment),
                // The agent is told of a file it did not get, and why.
                Err(why) => text.push_str(&format!("\n[{} was not downloaded: {why}]", file.name)),
            }
        }
        let (channel, id) = (incoming.channel_id.clone(), incoming.id.clone());
        let message = InboundMessage {
            channel: CHANNEL.into(),
            idempotency_key: incoming.id,
            sender: incoming.author_id,
            chat: Some(incoming.channel_id),
            text: text.trim().to_owned(),
            attachments,
            sender_name: incoming.author_name,
        };
        let stored = self.submit(&Submission::Message(message));
        if stored {
            self.advance(&channel, &id);
        }
        stored
    }

    /// Sends one message of a reply. When Discord refuses it as too large
    /// (it does not say which file), the biggest file is named in the text
    /// instead and the rest are tried again, until it goes through. The
    /// message was not made, so the same nonce still makes it once.
    fn send_planned(
        &self,
        chat: &str,
        planned: outbound::Planned,
        nonce: Option<&str>,
    ) -> Result<String, PluginError> {
        let outbound::Planned {
            mut content,
            mut files,
        } = planned;
        // Notes that would take the text over Discord's limit: sent after.
        let mut later = Vec::new();
        let id = loop {
            match self.rest.send_files(chat, &content, &files, nonce) {
                Ok(id) => break id,
                Err(e) if e.too_large() && !files.is_empty() => {
                    let biggest = (0..files.len())
                        .max_by_key(|&n| files[n].bytes.len())
                        .unwrap_or_default();
                    let file = files.remove(biggest);
                    tracing::warn!(
                        file = %file.name,
                        size = file.bytes.len(),
                        "discord: a file was refused as too large: {e}"
                    );
                    let note = outbound::too_large(&file.name);
                    let joined = if content.is_empty() {
                        note.clone()
                    } else {
                        format!("{content}\n{note}")
                    };
                    if joined.chars().count() <= split::MAX_CHARS {
                        content = joined;
                    } else {
                        later.push(note);
                    }
                }
                Err(e) => return Err(send_error(&e)),
            }
        };
        if later.is_empty() {
            return Ok(id);
        }
        let mut last = id;
        for (n, piece) in split::split(&later.join("\n"), split::MAX_CHARS)
            .iter()
            .enumerate()
        {
            let nonce = nonce.map(|key| format!("{key}+{n}"));
            last = self
                .rest
                .send_message(chat, piece, None, nonce.as_deref())
                .map_err(|e| send_error(&e))?;
        }
        Ok(last)
    }

    /// Saves attachment `n` of message `id` under the attachments folder.
    fn download(&self, id: &str, n: usize, file: &gate::FileRef) -> Result<Attachment, String> {
        let cap = self.settings.max_file_bytes;
        if file.size > cap {
            return Err(format!(
                "it is {} bytes, over the {cap}-byte limit",
                file.size
            ));
        }
        let bytes = self.rest.download(&file.url, cap)?;
        let local = self
            .files_dir
            .join(format!("{id}-{n}-{}", safe_file_name(&file.name)));
        std::fs::create_dir_all(&self.files_dir)
            .and_then(|()| std::fs::write(&local, &bytes))
            .map_err(|e| format!("cannot save it to {}: {e}", local.display()))?;
        Ok(Attachment {
            id: format!("{id}-{n}"),
            name: file.name.clone(),
            mime: file
                .mime
                .clone()
                .unwrap_or_else(|| "application/octet-stream".into()),
            size: bytes.len() as u64,
            path: local.display().to_string(),
            url: None,
            transcript: None,
            voice: file.voice,
        })
    }

    /// Reads what each known channel got after its cursor (the daemon was
    /// stopped, or a session could not be resumed) and takes it, oldest
    /// first. A message already stored is stored once: its id is the
    /// idempotency key.
    fn catch_up(&self) -> bool {
        let cursors = lock(&self.cursors).clone();
        for (channel, after) in cursors {
            match self.rest.messages_after(&channel, &after) {
                Ok(messages) => {
                    for message in &messages {
                        if !self.take_message(message) {
                            return false;
                        }
                    }
                    if !messages.is_empty() {
                        tracing::info!(
                            channel,
                            count = messages.len(),
                            "discord: read what came while away"
                        );
                    }
                }
                Err(e) => tracing::warn!("discord: cannot read what came while away: {e}"),
            }
        }
        true
    }

    /// Moves `channel`'s cursor to message `id` if it is newer, and saves
    /// the cursors if the last save is a second old.
    fn advance(&self, channel: &str, id: &str) {
        {
            let mut cursors = lock(&self.cursors);
            if cursors.get(channel).is_some_and(|c| !rest::newer(id, c)) {
                return;
            }
            cursors.insert(channel.to_owned(), id.to_owned());
        }
        let due = {
            let mut saved = lock(&self.saved);
            saved.1 = true;
            saved.0.is_none_or(|at| at.elapsed() >= SAVE_EVERY)
        };
        if due {
            self.save_cursors();
        }
    }

    /// Saves the cursors in the host's store, if they changed.
    fn save_cursors(&self) {
        {
            let mut saved = lock(&self.saved);
            if !saved.1 {
                return;
            }
            *saved = (Some(Instant::now()), false);
        }
        let cursors = serde_json::to_value(&*lock(&self.cursors)).unwrap_or_default();
        let request = serde_json::json!({ "key": CURSORS, "value": cursors });
        if let Err(e) = self.host.call(service::KV_SET, &request) {
            tracing::warn!("discord: cannot save where each channel was read to: {e}");
        }
    }

    /// Shows `request` as a card with buttons in each owner's direct
    /// messages. A card that cannot be shown leaves the request
    /// unanswered, and the host denies it at its timeout: failing closed.
    fn show_card(&self, request: &ConfirmationRequest) {
        let text = cards::text(request);
        let buttons = cards::buttons(&request.id);
        let mut shown = Vec::new();
        for user in &self.settings.gate.users {
            let channel = match self.dm(user) {
                Ok(channel) => channel,
                Err(e) => {
                    tracing::error!("discord: cannot reach {user} for a confirmation: {e}");
                    continue;
                }
            };
            match self
                .rest
                .send_message(&channel, &text, Some(&buttons), None)
            {
                Ok(message) => shown.push(Card {
                    channel,
                    message,
                    text: text.clone(),
                }),
                Err(e) => tracing::error!("discord: cannot show a confirmation card: {e}"),
            }
        }
        lock(&self.cards).insert(request.id.clone(), shown);
    }

    /// The direct-message channel with `user`, asked of Discord once.
    fn dm(&self, user: &str) -> Result<String, rest::RestError> {
        if let Some(channel) = lock(&self.dms).get(user) {
            return Ok(channel.clone());
        }
        let channel = self.rest.dm_channel(user)?;
        lock(&self.dms).insert(user.to_owned(), channel.clone());
        Ok(channel)
    }

    /// A button press (`INTERACTION_CREATE`): acknowledged to Discord, and
    /// handed to the host as the presser's answer; the host takes it only
    /// from the owner.
    fn pressed(&self, data: &Value) {
        // 3: a message component.
        if data["type"].as_u64() != Some(3) {
            return;
        }
        let Some((id, choice)) = data["data"]["custom_id"].as_str().and_then(cards::read) else {
            return;
        };
        let user = data["user"]["id"]
            .as_str()
            .or(data["member"]["user"]["id"].as_str());
        let (Some(user), Some(interaction), Some(token)) =
            (user, data["id"].as_str(), data["token"].as_str())
        else {
            return;
        };
        if let Err(e) = self.rest.acknowledge(interaction, token) {
            tracing::debug!("discord: a button press was not acknowledged: {e}");
        }
        let answer = ConfirmationAnswer {
            id,
            sender: user.to_owned(),
            approve: choice != cards::Choice::Deny,
            always: choice == cards::Choice::Always,
            reason: None,
        };
        self.submit(&Submission::Confirmation(answer));
    }

    /// Submits until the host has it ([`Host::submit_until_stored`]);
    /// `false` when the host or the plugin is stopping.
    fn submit(&self, submission: &Submission) -> bool {
        self.host
            .submit_until_stored(submission, || self.stop.load(Ordering::Relaxed))
    }
}

/// The key under which the channels' cursors are kept.
const CURSORS: &str = "cursors";

/// The channels' cursors as the host's store kept them (none on a first
/// start, or if the store cannot say).
fn load_cursors(host: &Host) -> BTreeMap<String, String> {
    host.call(service::KV_GET, &serde_json::json!({ "key": CURSORS }))
        .ok()
        .and_then(|answer| serde_json::from_value(answer["value"].clone()).ok())
        .unwrap_or_default()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A send Discord refused for good is `HEARTH_REFUSED`, so the host's
/// outbox gives it up instead of sending it twenty times; anything else
/// is tried again later.
fn send_error(e: &rest::RestError) -> PluginError {
    if e.is_for_good() {
        PluginError::Refused(e.to_string())
    } else {
        PluginError::Failed(e.to_string())
    }
}
