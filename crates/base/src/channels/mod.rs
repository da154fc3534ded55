//! Channels as the rest of the host sees them, below the plugin host and
//! the router: the [`Channel`] trait (a channel's description and a way to
//! call it), [`events::ChannelEvents`] (streamed text, status and
//! confirmation requests for the channels that show them) and
//! [`answers::Board`] (the owner's answers on their way to the calls that
//! asked).
//!
//! Architecture invariant: nothing here imports the plugin host, the
//! router, policy or the agent. The plugin host implements [`Channel`] for
//! a loaded plugin; everyone else (the outbox, the confirmation gate, a
//! tool call's live output) holds the trait or the event queues, so the
//! layers above never call back up into the plugin host.

pub mod answers;
pub mod events;

use hearth_sdk::protocol::ChannelSpec;

/// The channel name of the local control socket.
pub const LOCAL_CHANNEL: &str = "local";

/// A channel the host delivers to: a loaded channel plugin.
pub trait Channel: Send + Sync {
    /// The channel part of the plugin's description, if it serves one.
    fn spec(&self) -> Option<&ChannelSpec>;

    /// Calls `method` with `payload`; the answer's bytes, or why not.
    fn call(&self, method: &str, payload: &[u8]) -> Result<Vec<u8>, CallError>;
}

/// Why a call to a channel failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// It failed for now (the network, the service's own trouble, the
    /// plugin unavailable): the same call may succeed later.
    #[error("{0}")]
    Failed(String),
    /// The plugin refused it for good (`HEARTH_REFUSED`): the same call
    /// again cannot succeed, so nobody should retry it.
    #[error("{0}")]
    Refused(String),
}
