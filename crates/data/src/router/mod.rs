//! The router: where inbound messages enter the daemon and replies leave it.
//!
//! - `gate`: who gets in, and which agent answers: the owner (the main
//!   agent), or a known contact inside the channel's allow-list (its
//!   assigned agent); everyone else is dropped before the inbox, silently,
//!   and logged at most once per sender per hour.
//! - `inbox`: the writer thread that stores admitted messages.
//! - `outbox`: replies, stored before they are sent, delivered with retries;
//! - `local`: the control socket's connected clients (the local channel).
//!
//! Channel events (streamed text, status, confirmation requests) are
//! `hearth_base::channels`, below the router, so policy can post to them.
//!
//! [`Router`] ties them to the agents: storing a message wakes the agent
//! that takes it; a stored `/stop` also cancels that agent's turn in
//! progress, and no other's.

mod gate;
pub mod inbox;
pub mod local;
pub mod outbox;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hearth_sdk::protocol::{ChannelSpec, ConfirmationAnswer, InboundMessage};
use tokio::sync::Notify;

pub use gate::{Admission, Gate};

use hearth_base::channels::answers::Board;

/// Wakes the agents and the outbox, and admits senders.
pub struct Router {
    gate: Gate,
    agents: Mutex<HashMap<i64, Arc<AgentSignals>>>,
    /// Notified when a reply is stored or a client connects.
    pub outbox_wake: Arc<Notify>,
    /// Where the owner's answers to confirmations go.
    pub confirmations: Arc<Board>,
    /// Notified when an agent is created, changed or deleted: the runners
    /// are brought in line with the table.
    pub agents_changed: Notify,
}

impl Router {
    /// A router with `gate`.
    pub fn new(gate: Gate) -> Router {
        Router {
            gate,
            agents: Mutex::new(HashMap::new()),
            outbox_wake: Arc::new(Notify::new()),
            confirmations: Arc::new(Board::default()),
            agents_changed: Notify::new(),
        }
    }

    /// Whether `message` may enter, and for which agent; logs
    /// (rate-limited) when it may not. `spec` is the description of the
    /// channel it came in on.
    pub fn admit(&self, message: &InboundMessage, spec: Option<&ChannelSpec>) -> Admission {
        self.gate.admit(message, spec)
    }

    /// The wake-up and stop signals of agent `id`.
    pub fn agent(&self, id: i64) -> Arc<AgentSignals> {
        let mut agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(agents.entry(id).or_default())
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
        if !self.gate.is_owner(channel, &answer.sender, spec) {
            return false;
        }
        self.confirmations.answer(answer, &answer.sender)
    }

    /// Called once a message for agent `agent_id` is stored.
    pub fn stored(&self, message: &InboundMessage, agent_id: i64) {
        let agent = self.agent(agent_id);
        if message.text.trim() == "/stop" {
            agent.stops.fetch_add(1, Ordering::SeqCst);
            agent.stop_turn.notify_waiters();
        }
        agent.wake.notify_one();
    }
}

/// One agent's signals: a message for it was stored; its turn should stop.
#[derive(Default)]
pub struct AgentSignals {
    /// Notified when a message for the agent is stored.
    pub wake: Notify,
    stop_turn: Notify,
    stops: AtomicU64,
}

impl AgentSignals {
    /// A counter that moves on every `/stop` for this agent: a turn
    /// remembers it at the start and stops when it has moved.
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
