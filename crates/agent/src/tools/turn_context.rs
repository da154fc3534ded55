//! What a tool call made by the model knows about the turn it is part of.
//!
//! Most tools need nothing of the sort. The built-ins that act for the
//! agent do: `send_agent_message` counts hops from the message being
//! answered and tells the other agent where the answer goes back to.

/// The turn a call belongs to.
#[derive(Clone, Debug, Default)]
pub struct TurnContext {
    /// The agent whose turn it is.
    pub agent: i64,
    /// Its name.
    pub agent_name: String,
    /// The inbox message being answered.
    pub inbox_id: i64,
    /// Agent-to-agent hops that led to that message.
    pub hops: i64,
    /// The conversation's channel.
    pub channel: String,
    /// The conversation's chat.
    pub chat: String,
}
