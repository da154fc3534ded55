//! The router: where inbound messages enter the daemon and replies leave it.
//!
//! - `gate`: who gets in. Only the owner's identities reach the agent;
//!   everyone else is dropped before the inbox, silently, and logged at most
//!   once per sender per hour.
//! - `inbox`: the writer thread that stores admitted messages.
//! - `outbox`: replies, stored before they are sent, delivered with retries;
//! - `local`: the control socket's connected clients (the local channel).
//! - `events`: streamed text, status and confirmation requests for the
//!   channels that show them.
//!
//! [`Router`] ties them to the agent: storing a message wakes the agent; a
//! stored `/stop` also cancels the turn in progress.

pub mod events;
mod gate;
pub mod inbox;
pub mod local;
pub mod outbox;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hearth_sdk::protocol::{ChannelSpec, ConfirmationAnswer, InboundMessage};
use tokio::sync::Notify;

pub use gate::Gate;

use crate::policy::Board;

/// The channel name of the local control socket.
pub const LOCAL_CHANNEL: &str = "local";

/// Wakes the agent and the outbox, and admits senders.
pub struct Router {
    gate: Gate,
    /// Notified when a message is stored.
    pub agent_wake: Arc<Notify>,
    stop_turn: Notify,
    stops: AtomicU64,
    /// Notified when a reply is stored or a client connects.
    pub outbox_wake: Arc<Notify>,
    /// Where the owner's answers to confirmations go.
    pub confirmations: Arc<Board>,
}

impl Router {
    /// A router with `gate`.
    pub fn new(gate: Gate) -> Router {
        Router {
            gate,
            agent_wake: Arc::new(Notify::new()),
            stop_turn: Notify::new(),
            stops: AtomicU64::new(0),
            outbox_wake: Arc::new(Notify::new()),
            confirmations: Arc::new(Board::default()),
        }
    }

    /// Whether `message` may enter; logs (rate-limited) when it may not.
    /// `spec` is the description of the channel it came in on.
    pub fn admits(&self, message: &InboundMessage, spec: Option<&ChannelSpec>) -> bool {
        self.gate.admits(&message.channel, &message.sender, spec)
    }

    /// Hands an answer to a confirmation to the call waiting for it, if it
    /// comes from the owner; anyone else's answer is ignored (and logged as
    /// a stranger's message would be).
    pub fn answer_confirmation(
        &self,
        channel: &str,
        answer: &ConfirmationAnswer,
        spec: Option<&ChannelSpec>,
    ) -> bool {
        if !self.gate.admits(channel, &answer.sender, spec) {
            return false;
        }
        self.confirmations
            .answer(&answer.id, answer.approve, answer.always, &answer.sender)
    }

    /// Called once a message is stored.
    pub fn stored(&self, message: &InboundMessage) {
        if message.text.trim() == "/stop" {
            self.stops.fetch_add(1, Ordering::SeqCst);
            self.stop_turn.notify_waiters();
        }
        self.agent_wake.notify_one();
    }

    /// A counter that moves on every `/stop`: a turn remembers it at the
    /// start and stops when it has moved.
    pub fn stop_generation(&self) -> u64 {
        self.stops.load(Ordering::SeqCst)
    }

    /// Resolves once a `/stop` has come after `generation`.
    pub async fn stopped_since(&self, generation: u64) {
        loop {
            let notified = self.stop_turn.notified();
            if self.stop_generation() != generation {
                return;
            }
            notified.await;
        }
    }
}
