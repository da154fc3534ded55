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
}

/// Service names for the host's `call`.
pub mod service {
    /// Who the host is: request `{}`, answer [`super::HostInfo`].
    pub const HOST_INFO: &str = "host.info";
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
}

/// The channel a plugin serves, if any.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChannelSpec {
    /// The channel's name, used in routing and in `[owner]` identities.
    pub name: String,
}

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
}

/// Something a plugin hands the host with `submit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Submission {
    /// A message from a person. `submit` returns OK only once it is stored.
    Message(InboundMessage),
    /// A change in the channel's health, shown in `hearth plugins`.
    ChannelStatus(ChannelStatus),
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
}

/// The answer to [`method::CHANNEL_SEND`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SendReceipt {
    /// The channel's id for the sent message, when it has one.
    #[serde(default)]
    pub message_id: Option<String>,
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
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object" })
}
