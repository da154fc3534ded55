//! The Matrix channel: a client of the client-server API, built like the
//! other channels: durable, honest about its health, behind the same two
//! gates and the same approvals.
//!
//! - `config`: `[plugins.matrix]`;
//! - `client`: the API calls, with the server's rate limits kept;
//! - `sync`: a `/sync` answer read into messages, reactions and invites,
//!   through the channel's gate;
//! - `html`: replies as Matrix HTML.
//!
//! Files: one in a message is downloaded (up to `max_file_bytes`) to
//! `$HEARTH_HOME/attachments/matrix/` and reaches the agent as an
//! attachment; one the agent attaches to a reply is uploaded and sent after
//! the text, as `m.image`, `m.audio`, `m.video` or `m.file` by its type.
//!
//! End-to-end encryption is not supported: the bot reads and writes only
//! unencrypted rooms, and says so (docs/operations.md, and a notice when
//! an encrypted message reaches it). docs/operations.md, "Matrix", says
//! why and what would change it.
//!
//! Architecture invariant: the `/sync` token moves (and is saved) only
//! once every message of its batch is stored, so a restart syncs again
//! from the last stored batch: nothing is lost, and the event ids (the
//! idempotency keys) store nothing twice.

pub mod client;
pub mod config;
pub mod html;
pub mod sync;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hearth_sdk::files::safe_file_name;
use hearth_sdk::protocol::{
    Attachment, ChannelEvent, ChannelSpec, ChannelState, ChannelStatus, ConfirmationAnswer,
    ConfirmationRequest, ConfirmationState, Description, InboundMessage, OutboundMessage,
    SendReceipt, Submission, service,
};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::{Value, json};

use client::Client;
use config::Settings;
use sync::{FileRef, Item};

/// The channel's name.
pub const CHANNEL: &str = "matrix";
/// How long one `/sync` waits for something new.
const SYNC_WAIT: Duration = Duration::from_secs(30);
/// The longest wait between two failed syncs.
const MOST_BACKOFF: Duration = Duration::from_secs(60);
/// The key the sync token is kept under.
const SINCE: &str = "since";
/// The most characters one message carries (Matrix caps an event at 64
/// KiB of JSON).
const MAX_CHARS: usize = 20_000;
/// The most bytes of a saved file's name: the event id and the sender's
/// file name must fit a file system's 255-byte name.
const MAX_NAME_BYTES: usize = 150;

/// What an encrypted room is told, once.
const ENCRYPTED_NOTICE: &str = "This room is end-to-end encrypted, and hearth reads only \
    unencrypted rooms: write to it in a room without encryption (docs/operations.md, Matrix).";

/// The plugin: inert when `[plugins.matrix]` is empty.
pub struct Matrix {
    running: Option<Running>,
}

struct Running {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    host: Host,
    client: Client,
    settings: Settings,
    /// Where attachments are saved: `$HEARTH_HOME/attachments/matrix`.
    files_dir: PathBuf,
    stop: AtomicBool,
    /// The bot's user id, once `whoami` said it.
    me: Mutex<Option<String>>,
    /// The room the last message that got in came from: cards and
    /// "typing…" go there.
    last_room: Mutex<Option<String>>,
    /// Each pending confirmation's card: its event id -> (confirmation
    /// id, room).
    cards: Mutex<HashMap<String, (String, String)>>,
    /// Rooms told that the bot cannot read encrypted messages.
    told_encrypted: Mutex<Vec<String>>,
    /// Transaction ids: unique in this process, prefixed by its start.
    txn: AtomicU64,
    started_ms: u128,
}

impl Plugin for Matrix {
    const NAME: &'static str = "matrix";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let Some(settings) = config::parse(config).map_err(|why| {
            PluginError::InvalidArguments(why.trim_start_matches("invalid arguments: ").to_owned())
        })?
        else {
            tracing::debug!("matrix: not configured ([plugins.matrix] is empty)");
            return Ok(Matrix { running: None });
        };
        if settings.allowed.is_empty() {
            tracing::warn!("matrix: allowed_user_ids is empty, so every message is dropped");
        }
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client =
            Client::new(&settings.homeserver, &settings.token).map_err(PluginError::Failed)?;
        let shared = Arc::new(Shared {
            host,
            client,
            settings,
            files_dir: PathBuf::from(&info.home).join("attachments").join(CHANNEL),
            stop: AtomicBool::new(false),
            me: Mutex::new(None),
            last_room: Mutex::new(None),
            cards: Mutex::default(),
            told_encrypted: Mutex::default(),
            txn: AtomicU64::new(0),
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0),
        });
        let running = Running {
            shared: Arc::clone(&shared),
            thread: Mutex::new(None),
        };
        if info.serving {
            let thread = std::thread::Builder::new()
                .name("hearth-matrix".into())
                .spawn(move || shared.run())
                .map_err(|e| PluginError::failed(format!("cannot start its thread: {e}")))?;
            *lock(&running.thread) = Some(thread);
        }
        Ok(Matrix {
            running: Some(running),
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: Vec::new(),
            channel: self.running.as_ref().map(|r| ChannelSpec {
                name: CHANNEL.into(),
                events: true,
                owners: r.shared.settings.allowed.clone(),
                allowed: r.shared.settings.allowed.clone(),
                allowed_key: Some("plugins.matrix.allowed_user_ids".into()),
                unknown_sender: r.shared.settings.unknown_sender,
                ..ChannelSpec::default()
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
            .ok_or_else(|| PluginError::failed("matrix is not configured ([plugins.matrix])"))?;
        let shared = &running.shared;
        // The outbox may send a reply again after a crash: the same
        // transaction ids, derived from the reply's key, make the server
        // keep one event each.
        let txn = |part: &str| match &message.key {
            Some(key) => format!("{key}.{part}"),
            None => shared.next_txn(),
        };
        let mut last = None;
        for (n, piece) in pieces(&message.text).iter().enumerate() {
            let content = json!({
                "msgtype": "m.text",
                "body": piece,
                "format": "org.matrix.custom.html",
                "formatted_body": html::to_html(piece),
            });
            let id = shared
                .client
                .send(&message.chat, &txn(&n.to_string()), &content)
                .map_err(|e| PluginError::Failed(e.to_string()))?;
            last = Some(id);
        }
        for (n, file) in message.attachments.iter().enumerate() {
            let content = shared.file_content(file)?;
            let id = shared
                .client
                .send(&message.chat, &txn(&format!("file{n}")), &content)
                .map_err(|e| PluginError::Failed(e.to_string()))?;
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
            } => shared.settle(&id, state, &decided_by),
            ChannelEvent::Status { busy, .. } => {
                let room = lock(&shared.last_room).clone();
                let me = lock(&shared.me).clone();
                if let (Some(room), Some(me)) = (room, me)
                    && let Err(e) = shared.client.typing(&room, &me, busy)
                {
                    tracing::debug!("matrix: no typing notice: {e}");
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn shutdown(&self) {
        if let Some(running) = &self.running {
            running.shared.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = lock(&running.thread).take() {
                let _ = thread.join();
            }
        }
    }
}

impl Shared {
    /// The sync loop: until the plugin stops, or the token is refused.
    fn run(&self) {
        let mut backoff = Duration::from_secs(1);
        let me = loop {
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            match self.client.whoami() {
                Ok(me) => break me,
                Err(e @ client::ClientError::Refused { status: 401, .. }) => {
                    self.health(
                        ChannelState::Down,
                        format!("{e}: set the right access token"),
                    );
                    return;
                }
                Err(e) => {
                    self.health(ChannelState::Degraded, e.to_string());
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                }
            }
        };
        tracing::info!("matrix: signed in as {me}");
        *lock(&self.me) = Some(me.clone());
        let mut since = self.load_since();
        // A first sync ever brings old history: it is not the owner
        // talking now, so only its invites are taken.
        let mut first = since.is_none();
        let mut up = false;
        while !self.stop.load(Ordering::Relaxed) {
            let wait = if first { Duration::ZERO } else { SYNC_WAIT };
            let answer = match self.client.sync(since.as_deref(), wait) {
                Ok(answer) => answer,
                Err(e) => {
                    up = false;
                    self.health(ChannelState::Degraded, format!("{e}; syncing again"));
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                    continue;
                }
            };
            backoff = Duration::from_secs(1);
            if !up {
                up = true;
                self.health(ChannelState::Up, format!("syncing as {me}; unencrypted rooms only (end-to-end encryption is not supported)"));
            }
            let batch = sync::read(&answer, &me, &self.settings.allowed);
            let mut done = true;
            for item in batch.items {
                if first && !matches!(item, Item::Invite { .. }) {
                    continue;
                }
                if !self.take(item) {
                    done = false;
                    break;
                }
            }
            if !done {
                // The host is closing: the token stays, and the batch
                // comes again at the next start.
                return;
            }
            if let Some(next) = batch.next_batch {
                self.save_since(&next);
                since = Some(next);
            }
            first = false;
        }
    }

    /// One item of a batch; `false` when the host is closing.
    fn take(&self, item: Item) -> bool {
        match item {
            Item::Invite { room, by } => {
                match self.client.join(&room) {
                    Ok(()) => tracing::info!("matrix: joined {room}, invited by {by}"),
                    Err(e) => tracing::warn!("matrix: cannot join {room}: {e}"),
                }
                true
            }
            Item::Encrypted { room } => {
                let new = {
                    let mut told = lock(&self.told_encrypted);
                    !told.contains(&room) && {
                        told.push(room.clone());
                        true
                    }
                };
                if new {
                    let content = json!({ "msgtype": "m.notice", "body": ENCRYPTED_NOTICE });
                    if let Err(e) = self.client.send(&room, &self.next_txn(), &content) {
                        tracing::warn!("matrix: cannot say the room is encrypted: {e}");
                    }
                    tracing::warn!("matrix: {room} is encrypted; its messages cannot be read");
                }
                true
            }
            Item::Reaction {
                sender, to, key, ..
            } => {
                let approve = match key.as_str() {
                    "✅" | "👍" | "✔️" => true,
                    "❌" | "👎" | "✖️" => false,
                    _ => return true,
                };
                self.answer(&to, &sender, approve)
            }
            Item::Message(message) => {
                // A reply to a card that says yes or no answers it.
                if let Some(card) = &message.in_reply_to {
                    let word = message.body.trim().to_lowercase();
                    let choice = match word.as_str() {
                        "yes" | "y" | "approve" => Some(true),
                        "no" | "n" | "deny" => Some(false),
                        _ => None,
                    };
                    if let Some(approve) = choice
                        && lock(&self.cards).contains_key(card)
                    {
                        return self.answer(card, &message.sender, approve);
                    }
                }
                *lock(&self.last_room) = Some(message.room.clone());
                let mut text = message.body;
                let mut attachments = Vec::new();
                if let Some(file) = &message.file {
                    match self.download(&message.event_id, file) {
                        Ok(attachment) => attachments.push(attachment),
                        // The agent is told of a file it did not get, and
                        // why: the message itself still gets in.
                        Err(why) => {
                            text.push_str(&format!("\n[{} was not downloaded: {why}]", file.name))
                        }
                    }
                }
                self.submit(&Submission::Message(InboundMessage {
                    channel: CHANNEL.into(),
                    idempotency_key: message.event_id,
                    sender: message.sender,
                    chat: Some(message.room),
                    text: text.trim().to_owned(),
                    attachments,
                    sender_name: None,
                }))
            }
        }
    }

    /// Saves the file of message `event_id` under the attachments folder.
    fn download(&self, event_id: &str, file: &FileRef) -> Result<Attachment, String> {
        let cap = self.settings.max_file_bytes;
        // The event's word is enough to skip a download that would be cut
        // off anyway; the download itself stops at the cap whatever the
        // event said.
        if let Some(size) = file.size.filter(|size| *size > cap) {
            return Err(format!("it is {size} bytes, over the {cap}-byte limit"));
        }
        let bytes = self
            .client
            .download(&file.server, &file.media_id, cap)
            .map_err(|e| e.to_string())?;
        let local = self.files_dir.join(saved_name(event_id, &file.name));
        std::fs::create_dir_all(&self.files_dir)
            .and_then(|()| std::fs::write(&local, &bytes))
            .map_err(|e| format!("cannot save it to {}: {e}", local.display()))?;
        Ok(Attachment {
            id: event_id.to_owned(),
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

    /// Uploads `file` and gives the event content that shows it, by its
    /// media type. An upload is not idempotent (a resent reply uploads
    /// again), but the send that follows is: the room gets one event.
    fn file_content(&self, file: &Attachment) -> Result<Value, PluginError> {
        let bytes = std::fs::read(&file.path)
            .map_err(|e| PluginError::failed(format!("cannot read {}: {e}", file.path)))?;
        let name = if file.name.is_empty() {
            Path::new(&file.path)
                .file_name()
                .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned())
        } else {
            file.name.clone()
        };
        let mime = if file.mime.is_empty() {
            "application/octet-stream"
        } else {
            file.mime.as_str()
        };
        let uri = match self.client.upload(&name, mime, &bytes) {
            Ok(uri) => uri,
            // A file the homeserver will never take: the owner is told in
            // its place, rather than the reply failing again and again.
            Err(e @ client::ClientError::Refused { status: 413, .. }) => {
                tracing::warn!("matrix: a file was refused: {e}");
                return Ok(json!({
                    "msgtype": "m.notice",
                    "body": format!("[{name} could not be sent: the homeserver refuses files that big ({} bytes)]", bytes.len()),
                }));
            }
            Err(e) => return Err(PluginError::Failed(e.to_string())),
        };
        let msgtype = match mime.split('/').next() {
            Some("image") => "m.image",
            Some("audio") => "m.audio",
            Some("video") => "m.video",
            _ => "m.file",
        };
        let mut content = json!({
            "msgtype": msgtype,
            "body": name,
            "filename": name,
            "url": uri,
            "info": { "mimetype": mime, "size": bytes.len() },
        });
        if file.voice && msgtype == "m.audio" {
            // How Element marks a recorded voice message (MSC3245).
            content["org.matrix.msc3245.voice"] = json!({});
            content["org.matrix.msc1767.audio"] = json!({});
        }
        Ok(content)
    }

    /// The answer `sender` gave on the card `card` (an event id), if it
    /// is one; the host takes it only from the owner.
    fn answer(&self, card: &str, sender: &str, approve: bool) -> bool {
        let Some((id, _)) = lock(&self.cards).get(card).cloned() else {
            return true;
        };
        self.submit(&Submission::Confirmation(ConfirmationAnswer {
            id,
            sender: sender.to_owned(),
            approve,
            always: false,
            reason: None,
        }))
    }

    /// Shows `request` as a card in the room the owner last wrote from.
    /// Unshown, the request is denied at its timeout: failing closed.
    fn show_card(&self, request: &ConfirmationRequest) {
        let Some(room) = lock(&self.last_room).clone() else {
            tracing::warn!("matrix: no room to show a confirmation in yet");
            return;
        };
        let what = request
            .command
            .clone()
            .unwrap_or_else(|| serde_json::to_string_pretty(&request.args).unwrap_or_default());
        let what: String = what.chars().take(3000).collect();
        let body = format!(
            "Approve {}?\n\n{what}\n\n{}\nReact ✅ to approve or ❌ to deny, or reply yes or no.",
            request.tool, request.reason
        );
        let content = json!({
            "msgtype": "m.text",
            "body": body,
            "format": "org.matrix.custom.html",
            "formatted_body": html::to_html(&format!(
                "**Approve `{}`?**\n\n```\n{}\n```\n\n{}\n\nReact ✅ to approve or ❌ to deny, or reply *yes* or *no*.",
                request.tool,
                what.replace("```", "'''"),
                request.reason
            )),
        });
        match self.client.send(&room, &self.next_txn(), &content) {
            Ok(event) => {
                lock(&self.cards).insert(event, (request.id.clone(), room));
            }
            Err(e) => tracing::error!("matrix: cannot show a confirmation card: {e}"),
        }
    }

    /// Says under the card how request `id` was decided.
    fn settle(&self, id: &str, state: ConfirmationState, by: &str) {
        let card = {
            let mut cards = lock(&self.cards);
            let found = cards
                .iter()
                .find(|(_, (c, _))| c == id)
                .map(|(e, _)| e.clone());
            found.and_then(|event| cards.remove(&event).map(|(_, room)| (event, room)))
        };
        let Some((event, room)) = card else { return };
        let outcome = match state {
            ConfirmationState::Approved => "Approved.",
            ConfirmationState::Denied => "Denied.",
            ConfirmationState::Expired if by == "stop" => "Withdrawn: the turn was stopped.",
            ConfirmationState::Expired => "Expired: nobody answered, so it was denied.",
            ConfirmationState::Pending => return,
        };
        let content = json!({
            "msgtype": "m.notice",
            "body": outcome,
            "m.relates_to": { "m.in_reply_to": { "event_id": event } },
        });
        if let Err(e) = self.client.send(&room, &self.next_txn(), &content) {
            tracing::warn!("matrix: cannot say how a card was decided: {e}");
        }
    }

    /// Submits until the host has it ([`Host::submit_until_stored`]);
    /// `false` when the host or the plugin is stopping.
    fn submit(&self, submission: &Submission) -> bool {
        self.host
            .submit_until_stored(submission, || self.stop.load(Ordering::Relaxed))
    }

    fn health(&self, state: ChannelState, detail: String) {
        if let Err(e) = self
            .host
            .submit(&Submission::ChannelStatus(ChannelStatus { state, detail }))
        {
            tracing::debug!("matrix: the channel's status was not taken: {e}");
        }
    }

    fn next_txn(&self) -> String {
        let n = self.txn.fetch_add(1, Ordering::Relaxed);
        format!("hearth-{}-{n}", self.started_ms)
    }

    fn load_since(&self) -> Option<String> {
        self.host
            .call(service::KV_GET, &json!({ "key": SINCE }))
            .ok()
            .and_then(|answer| answer["value"].as_str().map(str::to_owned))
    }

    fn save_since(&self, since: &str) {
        let request = json!({ "key": SINCE, "value": since });
        if let Err(e) = self.host.call(service::KV_SET, &request) {
            tracing::warn!("matrix: cannot save the sync token: {e}");
        }
    }

    /// Sleeps `wait`, waking early when the plugin stops.
    fn sleep(&self, wait: Duration) {
        let until = std::time::Instant::now() + wait;
        while !self.stop.load(Ordering::Relaxed) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `text` in pieces of at most [`MAX_CHARS`] characters, cut at a
/// paragraph or line where one is near.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if rest.chars().count() <= MAX_CHARS {
            out.push(rest.to_owned());
            break;
        }
        let hard = rest
            .char_indices()
            .nth(MAX_CHARS)
            .map_or(rest.len(), |(at, _)| at);
        let cut = rest[..hard]
            .rfind("\n\n")
            .or_else(|| rest[..hard].rfind('\n'))
            .filter(|&at| at > hard / 2)
            .unwrap_or(hard);
        out.push(rest[..cut].trim_end().to_owned());
        rest = rest[cut..].trim_start();
    }
    out
}

/// The name a downloaded file is saved under: the event id (unique, so
/// two files of one name do not meet) and the sender's name, each made
/// safe as a path component, the name cut from its front to keep its
/// extension.
fn saved_name(event_id: &str, name: &str) -> String {
    let name = safe_file_name(name);
    let mut start = name.len().saturating_sub(MAX_NAME_BYTES);
    while !name.is_char_boundary(start) {
        start += 1;
    }
    format!("{}-{}", safe_file_name(event_id), &name[start..])
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_name_is_safe_and_fits_a_file_name() {
        assert_eq!(
            saved_name("$abc:example.org", "../cat photo.jpg"),
            "_abc_example.org-_cat_photo.jpg"
        );
        let long = saved_name("$x", &format!("{}.pdf", "ü".repeat(90)));
        assert!(long.len() <= 160 && long.ends_with("ü.pdf"), "{long}");
    }

    #[test]
    fn long_replies_are_cut_at_lines_and_short_ones_are_whole() {
        assert_eq!(pieces("hello"), ["hello"]);
        assert!(pieces("  ").is_empty());
        let long = "line of text\n".repeat(4000);
        let cut = pieces(&long);
        assert!(cut.len() >= 3);
        assert!(
            cut.iter()
                .all(|p| p.chars().count() <= MAX_CHARS && p.ends_with("text"))
        );
    }
}
