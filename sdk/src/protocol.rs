//! The JSON documents that cross the plugin boundary, shared by host and plugins.
//!
//! The ABI moves bytes; this module says what those bytes mean. Every shape
//! here is documented in `docs/plugins.md` for C authors. The protocol grows
//! by adding optional fields and new methods: readers ignore fields they do
//! not know, so an older plugin keeps working with a newer host.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Method names for `invoke`.
pub mod method {
    /// Run one tool: payload [`super::ToolCall`], result any JSON value.
    pub const TOOL_CALL: &str = "tool.call";
    /// Send one message on the plugin's channel: payload
    /// [`super::OutboundMessage`], result [`super::SendReceipt`].
    pub const CHANNEL_SEND: &str = "channel.send";
    /// Tell a channel something happened (a piece of a reply, a
    /// confirmation to show): payload [`super::ChannelEvent`], result
    /// ignored. Sent only to channels that set [`super::ChannelSpec::events`].
    pub const CHANNEL_EVENT: &str = "channel.event";
    /// Stop a tool call the plugin is running: payload
    /// [`super::CancelRequest`] (the `call_id` its [`super::ToolCall`]
    /// carried), result [`super::CancelAnswer`]. Sent on another thread
    /// than the call's, while it runs (the owner typed `/stop`); it may
    /// come twice, or after the call ended, or name a call the plugin never
    /// saw: each is answered `{"cancelled": false}` or `true`, never an
    /// error. A plugin that cannot stop its calls answers `UNSUPPORTED`,
    /// and the host lets the call run to its end and ignores its result.
    /// The call itself then ends promptly and answers as it likes (an
    /// error saying it was stopped, or what it had so far).
    pub const TOOL_CANCEL: &str = "tool.cancel";
    /// The health of the parts a plugin runs (the MCP plugin's servers):
    /// payload `{}`, result [`super::PluginStatus`]. Asked when the owner
    /// looks (`/status`, `hearth mcp list`), never polled. A plugin with
    /// nothing to report answers `UNSUPPORTED`.
    pub const PLUGIN_STATUS: &str = "plugin.status";
    /// The owner acts on a live view the plugin showed (a click, keys, an
    /// address to open): payload [`super::ViewInput`], result any JSON
    /// object. It comes from the owner's own screen (the canvas), never
    /// from the model; answer promptly (do not wait for a running call).
    /// A plugin that shows no view answers `UNSUPPORTED`.
    pub const VIEW_INPUT: &str = "view.input";
}

/// Service names for the host's `call`.
pub mod service {
    /// Who the host is: request `{}`, answer [`super::HostInfo`].
    pub const HOST_INFO: &str = "host.info";
    /// The calling channel's recent transcript and confirmations: request
    /// [`super::HistoryRequest`], answer [`super::ChannelHistory`].
    pub const CHANNEL_HISTORY: &str = "channel.history";
    /// Read a value from the plugin's own key-value namespace: request
    /// `{"key": "..."}`, answer `{"value": <JSON or null>}`.
    pub const KV_GET: &str = "kv.get";
    /// Write a value to the plugin's own key-value namespace: request
    /// `{"key": "...", "value": <JSON; null deletes>}`, answer `{}`.
    pub const KV_SET: &str = "kv.set";
    /// Tell the agent something happened (a background process failed):
    /// request [`super::Notice`], answer `{}` once the notice is stored in
    /// the agent's inbox. The same key twice is stored once.
    pub const AGENT_NOTIFY: &str = "agent.notify";
    /// A page the agent published, for a channel that serves pages (the
    /// canvas): request [`super::PageRequest`], answer
    /// [`super::PageAnswer`] (`page` or `refused`).
    pub const PAGE_GET: &str = "page.get";
    /// Run a page's named query (read-only, bounded): request
    /// [`super::PageRequest`] with `query`, answer [`super::PageAnswer`]
    /// (`rows` or `refused`).
    pub const PAGE_QUERY: &str = "page.query";
    /// Live output of a tool call the plugin is running (what a command
    /// prints as it prints it), shown to the owner while the call runs:
    /// request [`super::ToolOutput`] with the call's `call_id`, answer
    /// `{}`. The host throttles and bounds what it passes on; a plugin
    /// should send at most a few pieces a second. A host that does not know
    /// the service answers `UNSUPPORTED`: stop sending then. The call's
    /// result is unchanged by it and still carries the output the model sees.
    pub const TOOL_OUTPUT: &str = "tool.output";
    /// The plugin's tools changed at run time (an MCP server's list
    /// changed): request [`super::ToolsUpdate`], the plugin's whole tool
    /// list from now on (it replaces the one `describe` gave), answer `{}`.
    /// The host swaps its table in memory and returns; a model sees the new
    /// list from its next step. A tool whose name is invalid or taken by
    /// another provider is left out, and the answer names it in
    /// `skipped`.
    pub const TOOLS_SET: &str = "tools.set";
    /// A summary of long output by the owner's cheap model (`[llm.cheap]`):
    /// request [`super::SummaryRequest`], answer [`super::SummaryAnswer`].
    /// It waits for the model, at most the host's summary timeout, so call
    /// it only from a thread that may wait that long, and only when
    /// [`super::HostInfo::summaries`] is set. `UNSUPPORTED` means no cheap
    /// model; any other error (a timeout, a spent budget) means no summary
    /// this time: go on without one.
    pub const MODEL_SUMMARIZE: &str = "model.summarize";
    /// A frame of a live view the owner can watch (the browser's current
    /// tab): request [`super::ViewFrame`], answer [`super::ViewShown`].
    /// Only the newest frame waits for a slow channel; send at most a few
    /// a second. `shown: false` (or `UNSUPPORTED`) means no channel shows
    /// views: stop making frames.
    pub const VIEW_SHOW: &str = "view.show";
    /// For a channel that shows views: the owner's action on one, passed
    /// to the plugin that showed it as [`super::method::VIEW_INPUT`]:
    /// request [`super::ViewInputRequest`], answer the plugin's.
    pub const VIEW_INPUT: &str = "view.input";
}

/// How much a tool can change: the policy decides per tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Changes files or state.
    Write,
    /// Runs programs or has effects outside hearth.
    Exec,
}

/// One tool a plugin offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name: lowercase ASCII letters, digits, `_`, `.` and `-`.
    pub name: String,
    /// What it does, written for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// Its risk tier.
    pub risk: Risk,
    /// Which arguments the policy reads closely (a shell command line, the
    /// paths written). Optional: a tool without targets is judged by its
    /// risk tier alone.
    #[serde(default, skip_serializing_if = "Targets::is_empty")]
    pub targets: Targets,
}

/// The arguments of a tool call that the policy inspects, by name.
///
/// A shell tool names its command argument so the host's guard can read
/// the command line; a file tool names the paths it writes so development
/// mode can confine them and production mode can ask before system paths
/// change. Each name is a top-level key of the arguments object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Targets {
    /// The argument holding a shell command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The argument holding the directory a command runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Arguments holding paths the tool creates, changes or deletes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// Whether the tool runs the command, and every program it starts,
    /// under the confinement a call carries ([`ToolCall::floor`]), and
    /// checks the paths it opens itself against it. On a kernel with
    /// Landlock, a tool with a `command` that does not declare this asks
    /// the owner before every call, since nothing beneath the guard would
    /// hold.
    #[serde(default, skip_serializing_if = "is_false")]
    pub floor: bool,
    /// The argument in which a call asks to run outside the writable roots,
    /// with the reason the owner is shown (`shell_exec`'s `outside_roots`).
    /// A call that sets it asks the owner, and once approved runs without
    /// the confinement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate: Option<String>,
    /// Values of the tool's `action` argument that only read (`list`,
    /// `show`, `help`, ...): such a call is judged as a `read` tool, so it
    /// never asks, whatever the tool's own tier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_actions: Vec<String>,
    /// String arguments in which the host puts the owner's secrets for
    /// `{{secret:NAME}}` placeholders (the browser's `text`), after the
    /// ruling and the audit, which see only the placeholders. The plugin
    /// gets the value; the model, the log and the audit never do, and the
    /// result is redacted of it like every tool's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// Arguments naming whom the call sends a message to (an address, or
    /// a list of them; `"Name <addr>"` is read as `addr`), for tools that
    /// write to people (`mail_send`'s `to`, `cc`, `bcc`). A call that
    /// names anyone outside [`Targets::owner_recipients`] asks the owner in
    /// every mode, showing the call; one that names only the owner does not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recipients: Vec<String>,
    /// The owner's own addresses, compared without regard to case: a
    /// message to them alone is the owner writing to themselves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_recipients: Vec<String>,
}

impl Targets {
    /// Whether no argument is named and no floor is declared.
    pub fn is_empty(&self) -> bool {
        self.command.is_none()
            && self.cwd.is_none()
            && self.writes.is_empty()
            && !self.floor
            && self.escalate.is_none()
            && self.read_actions.is_empty()
            && self.secrets.is_empty()
            && self.recipients.is_empty()
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// The channel a plugin serves, if any.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelSpec {
    /// The channel's name, used in routing and in `[owner]` identities.
    pub name: String,
    /// Whether the channel takes [`method::CHANNEL_EVENT`]: streamed reply
    /// text, agent status and confirmation requests.
    #[serde(default)]
    pub events: bool,
    /// Whether the channel authenticates the owner itself (the canvas's
    /// login token). Its messages and answers then count as the owner's
    /// when their sender is [`OWNER_SENDER`], with no `[owner]` identity
    /// configured for it; any other sender is a stranger.
    #[serde(default)]
    pub authenticates_owner: bool,
    /// Senders the channel's own config names as the owner's (the private
    /// chats in Telegram's `allowed_chat_ids`, Signal's `allowed_numbers`).
    /// The host counts them as the owner only while `[owner.identities]`
    /// names no id for this channel: configs written before contacts
    /// existed keep working.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<String>,
    /// The channel's allow-list, the hard gate: every sender or chat id its
    /// config lets in at all. Only the owner's config widens it; a contact
    /// identity outside it is refused, and a message from outside it is
    /// dropped even when a contact names its sender.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
    /// The config key holding [`ChannelSpec::allowed`]
    /// (`plugins.telegram.allowed_chat_ids`), named in refusals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_key: Option<String>,
    /// What a sender inside the allow-list who is neither the owner nor a
    /// known contact gets.
    #[serde(default, skip_serializing_if = "UnknownSender::is_silent")]
    pub unknown_sender: UnknownSender,
    /// Whether the channel shows live tool output
    /// ([`ChannelEvent::ToolOutput`]; needs `events`). A channel that
    /// cannot show it line by line (a chat app) leaves it unset and keeps
    /// "typing…" up from [`ChannelEvent::Status`] instead.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tool_output: bool,
    /// Whether the channel shows agent groups live
    /// ([`ChannelEvent::Group`]; needs `events`). A chat app leaves it
    /// unset: its owner hears of groups only at milestones.
    #[serde(default, skip_serializing_if = "is_false")]
    pub groups: bool,
    /// Whether the channel shows live views ([`ChannelEvent::View`]; needs
    /// `events`) and passes the owner's actions on them back
    /// ([`service::VIEW_INPUT`]). Only a channel that authenticates the
    /// owner sets it: whoever sees a view can drive it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub views: bool,
}

/// What a channel does with a sender inside its allow-list who is neither
/// the owner nor a known contact (`unknown_sender` in its config).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownSender {
    /// Silence: the message is dropped before the inbox.
    #[default]
    Silent,
    /// One short reply with a one-time code the owner can approve; the
    /// message itself is still dropped.
    Pairing,
}

impl UnknownSender {
    /// Reads a channel config's `unknown_sender` value; the error names the
    /// key and the values it takes.
    pub fn parse(value: &Value) -> Result<UnknownSender, String> {
        match value.as_str() {
            Some("silent") => Ok(UnknownSender::Silent),
            Some("pairing") => Ok(UnknownSender::Pairing),
            _ => Err(format!(
                "unknown_sender: {value} is not \"silent\" or \"pairing\""
            )),
        }
    }

    /// Whether this is the default, [`UnknownSender::Silent`].
    pub fn is_silent(&self) -> bool {
        *self == UnknownSender::Silent
    }
}

/// The sender a channel that authenticates the owner itself submits as.
pub const OWNER_SENDER: &str = "owner";

/// The answer to `describe`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// Tools offered.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The channel served.
    #[serde(default)]
    pub channel: Option<ChannelSpec>,
}

/// The payload of [`method::TOOL_CALL`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Which of the plugin's tools.
    pub tool: String,
    /// The arguments object, already validated by the host.
    #[serde(default)]
    pub args: Value,
    /// The confinement this call, and the programs it starts, must run
    /// under: set in either mode for a call the owner did not approve to
    /// run outside the writable roots, to tools that declare
    /// [`Targets::floor`]. A plugin that cannot apply it on a kernel with
    /// Landlock must not run the call; its own file access obeys
    /// [`Floor::hidden`] and the roots (`Floor::writable`) with path checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Floor>,
    /// This call's id, unique among the calls running: what
    /// [`method::TOOL_CANCEL`] names to stop it, and what
    /// [`service::TOOL_OUTPUT`] names to show its output. Set when the call
    /// runs in an agent's turn (the owner can stop it and see it run);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The arguments in which the host put secrets for `{{secret:NAME}}`
    /// placeholders ([`Targets::secrets`]): their text is a secret. The
    /// plugin keeps it out of its logs and of what it shows (the browser
    /// masks the field it typed it into).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

/// The request of [`service::TOOLS_SET`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolsUpdate {
    /// Every tool the plugin offers now.
    pub tools: Vec<ToolSpec>,
}

/// The request of [`service::MODEL_SUMMARIZE`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRequest {
    /// What the text is, for the model: `the output of \`make test\` in
    /// /src/app, exit code 2`.
    pub about: String,
    /// The text, or as much of it as the plugin sends (the host reads its
    /// head and tail when it is long).
    pub text: String,
}

/// The answer to [`service::MODEL_SUMMARIZE`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryAnswer {
    /// The summary, plain text.
    pub summary: String,
}

/// The answer to [`method::PLUGIN_STATUS`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PluginStatus {
    /// One entry per part the plugin runs, in the plugin's order.
    pub parts: Vec<PartStatus>,
}

/// The health of one part of a plugin (an MCP server).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartStatus {
    /// Its name (the config key).
    pub name: String,
    /// Where it stands.
    pub state: PartState,
    /// Why, or what it is, in a few words (`stdio, protocol 2025-11-25`,
    /// `exited with status 1; restarting in 4 s`).
    #[serde(default)]
    pub detail: String,
    /// How many tools it offers now.
    #[serde(default)]
    pub tools: usize,
}

/// The states a plugin's part reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartState {
    /// Working.
    Up,
    /// Being started or connected.
    Starting,
    /// Not running, and started on first use.
    Idle,
    /// Working with trouble.
    Degraded,
    /// Not working; retried with backoff.
    Down,
    /// Switched off in the config.
    Off,
}

/// The payload of [`method::TOOL_CANCEL`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    /// The [`ToolCall::call_id`] of the call to stop.
    pub call_id: String,
}

/// The answer to [`method::TOOL_CANCEL`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelAnswer {
    /// Whether a running call was found and told to stop. `false` for a
    /// call that already ended or was never seen.
    pub cancelled: bool,
}

/// Which of a command's output streams a piece of live output is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// The request of [`service::TOOL_OUTPUT`]: a piece of a running call's
/// output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The [`ToolCall::call_id`] of the call.
    pub call_id: String,
    /// Which stream.
    pub stream: OutputStream,
    /// The text (at most 64 KiB; a plugin cuts a piece at a character
    /// boundary).
    pub text: String,
    /// Bytes of the stream the plugin left out just before `text` (to keep
    /// up with a flood).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: u64,
}

/// How a tool call whose output was shown live ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallEnd {
    /// It answered.
    Ok,
    /// It failed.
    Error,
    /// The owner stopped it (`/stop`).
    Cancelled,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The confinement of a call the owner did not approve, in either mode
/// (applied with Landlock; see `hearth_sdk::floor`): `protect` holds `/`
/// and `writable` the writable roots, so outside the roots nothing is
/// written; the protected paths inside the roots stay read-only; the
/// hidden paths (the owner's credentials) are neither read nor written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floor {
    /// Absolute paths that stay read-only: readable and executable, never
    /// written, truncated, removed, renamed or replaced, and nothing new
    /// made inside them. Paths that do not exist yet cannot be made.
    pub protect: Vec<String>,
    /// Absolute paths inside protected ones that stay writable (device
    /// files such as `/dev/null`; the owner's home inside a protected
    /// `/root`). A protected path inside one of them is protected again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// Absolute paths neither read nor written: the owner's credentials
    /// (the secret store, the canvas and control tokens, the store's files,
    /// the config). A plugin applies this to the programs it starts with
    /// Landlock, and to the paths its own code opens by checking the
    /// resolved path and the file's identity (a hard link is the same
    /// file), since no kernel rule covers a plugin's own process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
}

/// Something a plugin hands the host with `submit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Submission {
    /// A message from a person. `submit` returns OK only once it is stored.
    Message(InboundMessage),
    /// A change in the channel's health, shown in `hearth plugins`.
    ChannelStatus(ChannelStatus),
    /// Someone answered a confirmation request. It counts only when the
    /// sender is the owner.
    Confirmation(ConfirmationAnswer),
}

/// The answer to a [`ConfirmationRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationAnswer {
    /// The request's id.
    pub id: String,
    /// Who answered, in the channel's terms.
    pub sender: String,
    /// Approve (`true`) or deny.
    pub approve: bool,
    /// With an approval: also allow this exact call from now on, without
    /// asking (a grant, listed and revoked with `hearth approvals`).
    #[serde(default)]
    pub always: bool,
    /// With a denial: why, in the owner's words (a group's plan sent back
    /// to its leader carries it; a tool call's denial ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An inbound message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboundMessage {
    /// The channel it came in on.
    pub channel: String,
    /// Unique per channel (Telegram `update_id`, Signal timestamp+sender,
    /// canvas client id): a second submit with the same key is a no-op.
    pub idempotency_key: String,
    /// Who sent it, in the channel's terms.
    pub sender: String,
    /// The conversation it belongs to, when the channel has several.
    #[serde(default)]
    pub chat: Option<String>,
    /// The text.
    pub text: String,
    /// Files that came with it, already saved where the agent can read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The sender's name as the channel shows it (Telegram's first name),
    /// offered to the owner when a pairing code is approved. Never an
    /// identity: the host decides who is speaking from `sender` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
}

/// A file that came with a message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// The channel's id for it.
    pub id: String,
    /// Its file name, as the sender gave it.
    pub name: String,
    /// Its media type.
    pub mime: String,
    /// Its size in bytes.
    pub size: u64,
    /// Where it is saved (an absolute path on this machine).
    pub path: String,
    /// Where the owner can open it, when the channel serves files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// What the audio says. The host sets it: on a voice message or audio
    /// file it transcribed (kept with the stored message, so it is
    /// transcribed once), and on a reply it spoke (`reply_with_voice`),
    /// where it is the text spoken. A channel leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// A voice message. On a message: the sender recorded it as one
    /// (Telegram's `voice`), not an audio file they sent. On a reply: the
    /// channel should send it as one (Telegram's `sendVoice`, for OGG/Opus)
    /// where it can, else as audio or a file.
    #[serde(default, skip_serializing_if = "is_false")]
    pub voice: bool,
}

/// A channel's health.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChannelStatus {
    /// Up, degraded or down.
    pub state: ChannelState,
    /// Why, in a few words.
    #[serde(default)]
    pub detail: String,
}

/// The states a channel reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelState {
    /// Working.
    Up,
    /// Working with trouble (retrying, rate-limited).
    Degraded,
    /// Not working; reconnecting.
    Down,
}

/// The payload of [`method::CHANNEL_SEND`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboundMessage {
    /// The conversation to send to.
    pub chat: String,
    /// The text (markdown).
    pub text: String,
    /// Stable and unique per reply (`out-<n>`): a resend carries the same.
    #[serde(default)]
    pub key: Option<String>,
    /// The idempotency key of the message this answers, if any.
    #[serde(default)]
    pub in_reply_to: Option<String>,
    /// When the reply was stored, in ms since the epoch.
    #[serde(default)]
    pub at_ms: i64,
    /// Files sent after the text. `path` is the file on this machine;
    /// `name` and `mime` say how to present it; `id`, `size` and `url` are
    /// informative.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

/// The answer to [`method::CHANNEL_SEND`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SendReceipt {
    /// The channel's id for the sent message, when it has one.
    #[serde(default)]
    pub message_id: Option<String>,
}

/// A frame of a live view ([`service::VIEW_SHOW`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewFrame {
    /// `image/jpeg` or `image/png`; empty when `closed`.
    #[serde(default)]
    pub mime: String,
    /// The image, base64; empty when `closed`.
    #[serde(default)]
    pub data: String,
    /// The size, in CSS pixels, of what the image shows (a click's
    /// fractions of the image are of this).
    #[serde(default)]
    pub width: u32,
    /// See `width`.
    #[serde(default)]
    pub height: u32,
    /// What the view shows (a page's title).
    #[serde(default)]
    pub title: String,
    /// Where it is (a page's address).
    #[serde(default)]
    pub url: String,
    /// The view ended (the browser stopped); no image.
    #[serde(default, skip_serializing_if = "is_false")]
    pub closed: bool,
}

/// The answer to [`service::VIEW_SHOW`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewShown {
    /// Whether any channel shows views; `false`: stop making frames.
    pub shown: bool,
}

/// The owner's action on a live view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ViewInput {
    /// A click at `x`, `y`: fractions (0-1) of the frame's width and
    /// height.
    Click {
        /// From the left edge.
        x: f64,
        /// From the top edge.
        y: f64,
    },
    /// The wheel turned at `x`, `y` (fractions) by `dy` CSS pixels (down
    /// is positive).
    Scroll {
        /// From the left edge.
        x: f64,
        /// From the top edge.
        y: f64,
        /// How far.
        dy: f64,
    },
    /// Text typed where the focus is.
    Text {
        /// The characters.
        text: String,
    },
    /// A key that is not text (Enter, Tab, Backspace, an arrow...).
    Key {
        /// Its name, as a browser's `KeyboardEvent.key` says it.
        key: String,
    },
    /// Open an address (in the browser: a new tab, which the view shows).
    Open {
        /// The address.
        url: String,
    },
    /// Go back a page.
    Back,
}

/// The request of [`service::VIEW_INPUT`]: which plugin's view, and what
/// the owner did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewInputRequest {
    /// The plugin that showed the view ([`ChannelEvent::View`]'s
    /// `source`).
    pub source: String,
    /// What the owner did.
    pub input: ViewInput,
}

/// The payload of [`method::CHANNEL_EVENT`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChannelEvent {
    /// A piece of the reply being generated for `turn` (the idempotency key
    /// of the message it answers). The final reply still comes by
    /// [`method::CHANNEL_SEND`].
    Delta {
        /// The chat the turn belongs to.
        chat: String,
        /// The message being answered.
        turn: String,
        /// The new text.
        text: String,
    },
    /// The streamed text of `turn` so far is void: the model started a new
    /// step or a retry.
    DeltaReset {
        /// The chat the turn belongs to.
        chat: String,
        /// The message being answered.
        turn: String,
    },
    /// The main agent started or finished a turn, or another agent or a
    /// worker did; the model the main agent uses.
    Status {
        /// Whether the main agent runs a turn (what "typing…" follows).
        busy: bool,
        /// The configured model, if any.
        model: Option<String>,
        /// The other agents and the workers running a turn now, by name.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        working: Vec<String>,
    },
    /// A tool call waits for the owner's approval.
    Confirmation(ConfirmationRequest),
    /// A confirmation was decided.
    ConfirmationDecided {
        /// The request's id.
        id: String,
        /// `approved`, `denied` or `expired`.
        state: ConfirmationState,
        /// Who decided: the owner's sender id, or `timeout`.
        decided_by: String,
    },
    /// Live output of a tool call running in `turn`, throttled (at most a
    /// few events a second per call) and bounded (in bytes per event and
    /// per call). Sent only to the turn's channel, when it sets
    /// [`ChannelSpec::tool_output`]. The call's last event has `ended` set
    /// (and may carry no text).
    ToolOutput {
        /// The chat the turn belongs to.
        chat: String,
        /// The message being answered.
        turn: String,
        /// The call, unique within the turn (the model's id for it).
        call: String,
        /// The tool.
        tool: String,
        /// The command line it runs, for tools that run one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        /// Which stream `text` is from.
        stream: OutputStream,
        /// The new text.
        text: String,
        /// Bytes of the stream left out just before `text` (the live view
        /// keeps up with a flood by skipping; the call's result is whole).
        #[serde(default, skip_serializing_if = "is_zero")]
        skipped: u64,
        /// Set on the call's last event: how it ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ended: Option<CallEnd>,
    },
    /// The scheduler's next jobs changed (one was added, changed, removed
    /// or fired): the soonest ones, for channels that show them.
    Schedule {
        /// At most ten, soonest first.
        jobs: Vec<UpcomingJob>,
    },
    /// A frame of a live view (the browser's current tab), for channels
    /// that set [`ChannelSpec::views`]. Only the newest waits for a slow
    /// channel: frames in between are dropped.
    View {
        /// The plugin that shows it (where [`service::VIEW_INPUT`] goes).
        source: String,
        /// The frame.
        frame: ViewFrame,
    },
    /// An agent group changed (a member's state, a deliverable, a post):
    /// the whole group as it stands now. Sent only to channels that set
    /// [`ChannelSpec::groups`].
    Group(GroupView),
}

/// An agent group as a channel shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupView {
    /// Its id: stays when the group is renamed.
    #[serde(default)]
    pub id: i64,
    /// Its unique name (`brisk-crew`).
    pub name: String,
    /// `idle`, `planning`, `awaiting-approval`, `executing`, `complete`,
    /// `failed` or `archived`.
    pub status: String,
    /// The mission, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mission: Option<String>,
    /// The plan's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_summary: Option<String>,
    /// The plan's problems, when the owner must assign it by hand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_errors: Vec<String>,
    /// The leader's final summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The members, the leader marked.
    pub members: Vec<GroupMemberView>,
    /// The deliverables, in plan order.
    pub deliverables: Vec<DeliverableView>,
    /// The newest entries of the comms log, oldest first.
    pub posts: Vec<GroupPostView>,
}

/// A member of a [`GroupView`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMemberView {
    /// The agent's name.
    pub name: String,
    /// What the owner said its role is.
    #[serde(default)]
    pub role: String,
    /// Whether it leads the group.
    #[serde(default)]
    pub leader: bool,
    /// `idle`, `working`, `blocked` or `errored`.
    pub state: String,
    /// Its last progress report.
    #[serde(default)]
    pub progress: String,
}

/// A deliverable of a [`GroupView`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliverableView {
    /// Its id in the plan (`D1`).
    pub id: String,
    /// Its title.
    pub title: String,
    /// The member doing it.
    pub assignee: String,
    /// `planned` (in a plan waiting for approval), `pending`, `running`,
    /// `complete`, `failed` or `blocked`.
    pub status: String,
    /// The ids it waits for.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// An entry of a [`GroupView`]'s comms log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupPostView {
    /// When, in ms since the epoch.
    pub at_ms: i64,
    /// The agent that posted; empty for hearth itself.
    #[serde(default)]
    pub who: String,
    /// The deliverable it is about.
    #[serde(default)]
    pub deliverable: String,
    /// `status`, `finding`, `change`, `question`, `complete`, `decision`,
    /// `interface` or `system`.
    pub kind: String,
    /// What it says (cut at 2,000 characters).
    pub content: String,
}

/// A job the scheduler will fire.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpcomingJob {
    /// Its id (`hearth schedule` names it).
    pub id: i64,
    /// `reminder` or `task`.
    pub kind: String,
    /// The reminder's message or the task's prompt.
    pub text: String,
    /// Its schedule in words: the cron expression and zone, or `once`.
    pub schedule: String,
    /// When it fires next, in ms since the epoch.
    pub next_run_ms: i64,
    /// The same in the owner's zone (`2026-12-24 18:00 CET`).
    pub next_run: String,
}

/// A request for the owner's approval of one exact tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationRequest {
    /// Unique; the answer names it.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The exact arguments.
    pub args: Value,
    /// The exact command line, for tools that run one.
    #[serde(default)]
    pub command: Option<String>,
    /// The directory the command runs in, for tools that run one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The mode the daemon runs in (`development` or `production`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Why it asks.
    pub reason: String,
    /// The SHA-256 of the exact call, in hex: an approval is bound to it.
    pub fingerprint: String,
    /// When it was asked, in ms since the epoch.
    pub at_ms: i64,
    /// When it is denied unanswered, in ms since the epoch.
    pub expires_at_ms: i64,
}

/// Where a confirmation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmationState {
    /// Waiting for the owner.
    Pending,
    /// The owner approved; the call ran.
    Approved,
    /// The owner denied; the call did not run.
    Denied,
    /// Nobody answered in time (or the daemon stopped, or the request was
    /// withdrawn: see [`ConfirmationState::withdrawn`]); the call did not
    /// run.
    Expired,
}

/// The `decided_by` of a request withdrawn because the owner stopped the
/// turn that asked (`/stop`).
pub const DECIDED_BY_STOP: &str = "stop";
/// The `decided_by` of a request withdrawn because whoever asked went away
/// (the `hearth tool call` that asked was interrupted).
pub const DECIDED_BY_WITHDRAWAL: &str = "withdrawn";

impl ConfirmationState {
    /// Whether a request in this state, decided by `decided_by`, was
    /// withdrawn before anyone answered. The protocol has no state of its
    /// own for that (an older channel would not read it): it is `expired`,
    /// decided by [`DECIDED_BY_STOP`] or [`DECIDED_BY_WITHDRAWAL`].
    pub fn withdrawn(self, decided_by: &str) -> bool {
        self == ConfirmationState::Expired
            && (decided_by == DECIDED_BY_STOP || decided_by == DECIDED_BY_WITHDRAWAL)
    }
}

/// The request of [`service::CHANNEL_HISTORY`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRequest {
    /// The chat.
    pub chat: String,
    /// The most messages, newest kept (at most 1000).
    #[serde(default = "default_history_limit")]
    pub limit: u32,
}

/// The answer to [`service::CHANNEL_HISTORY`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelHistory {
    /// Oldest first: the owner's messages and the agent's replies.
    pub messages: Vec<HistoryMessage>,
    /// Recent confirmations (pending and decided), oldest first.
    pub confirmations: Vec<ConfirmationRecord>,
}

/// One message of a channel's transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryMessage {
    /// Stable and unique: `in-<idempotency key>` for the owner's messages,
    /// `out-<n>` for replies (the same `key` as in [`OutboundMessage`]).
    pub key: String,
    /// `user` or `agent`.
    pub role: String,
    /// The text.
    pub text: String,
    /// When it was stored, in ms since the epoch.
    pub at_ms: i64,
    /// The idempotency key of the owner's message (for a reply: of the
    /// message it answers).
    pub id: Option<String>,
    /// Files that came with it.
    #[serde(default)]
    pub attachments: Vec<Attachment>,
}

/// A confirmation and where it stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationRecord {
    /// The request.
    #[serde(flatten)]
    pub request: ConfirmationRequest,
    /// Where it stands.
    pub state: ConfirmationState,
    /// Who decided, once decided.
    pub decided_by: Option<String>,
}

fn default_history_limit() -> u32 {
    200
}

/// The request of [`service::AGENT_NOTIFY`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    /// Unique per plugin: a notice is stored once per key.
    pub key: String,
    /// What the agent is told, as plain text.
    pub text: String,
}

/// The request of [`service::PAGE_GET`] and [`service::PAGE_QUERY`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PageRequest {
    /// The page's path, without `/pages/`.
    pub path: String,
    /// The named query to run (`page.query` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The query's parameters, from the URL's query string.
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, String>,
    /// Whether the request carries the owner's valid session: without it,
    /// only public pages are answered.
    #[serde(default)]
    pub session: bool,
}

/// The answer of [`service::PAGE_GET`] and [`service::PAGE_QUERY`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PageAnswer {
    /// The page to serve.
    Page {
        /// Its MIME type (`text/markdown` is for the server to render).
        mime: String,
        /// Served without a session (sandboxed, rate-limited).
        public: bool,
        /// The text, for a page saved with content.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// The absolute path of the file to serve, checked by the host
        /// just now, for a page saved with a file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
    },
    /// A query's result.
    Rows {
        /// Whether its page is public (its answer may be read cross-origin).
        public: bool,
        /// `{ "columns": [...], "rows": [{column: value}], "row_count": n,
        /// "truncated": bool }`.
        result: Value,
    },
    /// Not served: `status` is the HTTP status to answer with.
    Refused {
        /// 400 (a bad query or parameter), 401 (private, no session),
        /// 404 (no such page or query), 500 (the host failed).
        status: u16,
        /// What was wrong, for the visitor.
        error: String,
    },
}

/// The answer to [`service::HOST_INFO`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// The host's version.
    pub version: String,
    /// The host's ABI major.
    pub abi_major: u16,
    /// The host's ABI minor.
    pub abi_minor: u16,
    /// `$HEARTH_HOME`, where a plugin may keep its files.
    pub home: String,
    /// `development` or `production`.
    #[serde(default = "default_mode")]
    pub mode: String,
    /// The writable roots: where a program or tool the owner did not
    /// approve may write. Each call the owner did not approve carries the
    /// whole confinement ([`ToolCall::floor`]); this is for plugins that
    /// start programs outside a tool call.
    #[serde(default)]
    pub confine_to: Vec<String>,
    /// The owner's credentials (the secret store, the tokens, the store's
    /// files, the config): no program a plugin starts may read or write
    /// them. A plugin that starts helper programs (servers, converters)
    /// hides them with Landlock ([`crate::floor::helper`]).
    #[serde(default)]
    pub hidden: Vec<String>,
    /// Whether this host serves channels. `false` when a CLI command
    /// (`hearth tools`, `hearth plugins`) loaded the plugin only to list or
    /// call its tools while the daemon may be running: a channel plugin
    /// then starts no poller or listener, so it never competes with the
    /// daemon's for updates or ports.
    #[serde(default = "default_serving")]
    pub serving: bool,
    /// Whether [`service::MODEL_SUMMARIZE`] can answer: a cheap model is
    /// configured and this host is the daemon.
    #[serde(default)]
    pub summaries: bool,
    /// The most verbose level the host's log keeps: `off`, `error`, `warn`,
    /// `info`, `debug` or `trace`. A plugin need not hand over events below
    /// it (the Rust SDK does not): each would wake the host's log thread
    /// only to be dropped. `None` from a host that does not say.
    #[serde(default)]
    pub log_level: Option<String>,
}

fn default_serving() -> bool {
    true
}

fn default_mode() -> String {
    "production".into()
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object" })
}
