//! The gates: who gets in, and which agent answers them.
//!
//! - The hard gate is each channel's allow-list in the owner's config
//!   (Telegram's `allowed_chat_ids`, Signal's `allowed_numbers`). The
//!   channel plugin enforces it, and the host checks it again here; nothing
//!   an agent does can widen it.
//! - The owner is who `[owner.identities]` names on a channel. A channel
//!   for which it names no id keeps the old meaning: the ids its own config
//!   names as the owner's (`ChannelSpec::owners`) are the owner's.
//! - The soft gate is the contacts table: a sender inside the hard gate who
//!   is not the owner gets in only as a known, enabled contact with an
//!   assigned agent. On a channel that pairs, a stranger inside the hard
//!   gate gets a one-time code instead (`people::pairing`).
//!
//! Architecture invariant: unknown senders get silence. A message from
//! anyone else is dropped before it is stored: it never reaches the inbox,
//! the model or a reply (a pairing code is the one reply, and it comes from
//! the host, not a model). The drop is logged once per sender per hour, so
//! a stranger cannot flood the log either.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use hearth_sdk::protocol::{ChannelSpec, InboundMessage, OWNER_SENDER, UnknownSender};

use crate::people::{People, pairing};
use hearth_base::channels::LOCAL_CHANNEL;
use hearth_base::config::OwnerConfig;
use hearth_base::store::MAIN_AGENT;

/// How often a dropped sender is logged.
const LOG_EVERY: Duration = Duration::from_secs(3600);

/// What the gates decided about one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The owner: the main agent answers.
    Owner,
    /// A known, enabled contact; `agent_id` answers.
    Contact {
        /// The contact.
        contact_id: i64,
        /// The agent assigned to it.
        agent_id: i64,
    },
    /// A stranger inside the allow-list of a channel that pairs: they get
    /// this code in one short reply, and their message is dropped.
    Pair {
        /// The one-time code.
        code: String,
    },
    /// Silence.
    Drop,
}

impl Admission {
    /// The agent that takes an admitted message.
    pub fn agent_id(&self) -> Option<i64> {
        match self {
            Admission::Owner => Some(MAIN_AGENT),
            Admission::Contact { agent_id, .. } => Some(*agent_id),
            Admission::Pair { .. } | Admission::Drop => None,
        }
    }

    /// The contact an admitted message came from (`None`: the owner).
    pub fn contact_id(&self) -> Option<i64> {
        match self {
            Admission::Contact { contact_id, .. } => Some(*contact_id),
            _ => None,
        }
    }
}

/// The owner check and the two gates.
pub struct Gate {
    owner: OwnerConfig,
    people: Option<Arc<People>>,
    /// Each channel's allow-list as a set, built on its first message: a
    /// channel's description is fixed for its plugin's life, and a list
    /// of thousands must not cost a scan per message.
    hard: RwLock<HashMap<String, Arc<HashSet<String>>>>,
    logged: Mutex<HashMap<(String, String), Instant>>,
}

impl Gate {
    /// A gate for `owner`, with the contacts in `people` (`None`: the
    /// owner alone gets in, as in a one-shot CLI command).
    pub fn new(owner: OwnerConfig, people: Option<Arc<People>>) -> Gate {
        Gate {
            owner,
            people,
            hard: RwLock::new(HashMap::new()),
            logged: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `sender` on `channel` is the owner. `spec` is the channel's
    /// description when a plugin serves it: a channel that authenticates
    /// the owner itself (the canvas) vouches for exactly one sender,
    /// [`OWNER_SENDER`].
    pub fn is_owner(&self, channel: &str, sender: &str, spec: Option<&ChannelSpec>) -> bool {
        if channel == LOCAL_CHANNEL {
            return true;
        }
        if spec.is_some_and(|c| c.authenticates_owner && sender == OWNER_SENDER) {
            return true;
        }
        match self.owner.identities.get(channel) {
            Some(ids) if !ids.is_empty() => ids.iter().any(|id| id == sender),
            // No owner id named for this channel: the channel's own list of
            // the owner's ids stands (configs from before contacts).
            _ => spec.is_some_and(|c| c.owners.iter().any(|id| id == sender)),
        }
    }

    /// Decides about `message`, which came in on the channel `spec`
    /// describes. Logs a drop at most once an hour per sender.
    pub fn admit(&self, message: &InboundMessage, spec: Option<&ChannelSpec>) -> Admission {
        let (channel, sender) = (message.channel.as_str(), message.sender.as_str());
        if self.is_owner(channel, sender, spec) {
            return Admission::Owner;
        }
        let admission = match (spec, &self.people) {
            (Some(spec), Some(people)) if self.inside_hard_gate(spec, message) => {
                match people.lookup(channel, sender) {
                    Some(known) if known.enabled && !known.is_owner => match known.agent_id {
                        Some(agent_id) => Admission::Contact {
                            contact_id: known.contact_id,
                            agent_id,
                        },
                        None => Admission::Drop,
                    },
                    Some(_) => Admission::Drop,
                    None if spec.unknown_sender == UnknownSender::Pairing => {
                        self.pair(people, message)
                    }
                    None => Admission::Drop,
                }
            }
            _ => Admission::Drop,
        };
        if admission == Admission::Drop {
            self.log_drop(channel, sender);
        }
        admission
    }

    /// Whether the message's sender or chat is in the channel's
    /// allow-list.
    fn inside_hard_gate(&self, spec: &ChannelSpec, message: &InboundMessage) -> bool {
        let cached = self
            .hard
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&spec.name)
            .cloned();
        let allowed = cached.unwrap_or_else(|| {
            let set: Arc<HashSet<String>> = Arc::new(spec.allowed.iter().cloned().collect());
            self.hard
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(spec.name.clone(), Arc::clone(&set));
            set
        });
        allowed.contains(&message.sender)
            || message
                .chat
                .as_ref()
                .is_some_and(|chat| allowed.contains(chat))
    }

    fn pair(&self, people: &People, message: &InboundMessage) -> Admission {
        let chat = message.chat.as_deref().unwrap_or(&message.sender);
        let requested = people.read(|conn| {
            pairing::request(
                conn,
                &message.channel,
                &message.sender,
                chat,
                message.sender_name.as_deref(),
            )
        });
        match requested {
            Ok(Some(code)) => {
                tracing::info!(channel = %message.channel, sender = %message.sender, "pairing code given to a stranger");
                Admission::Pair { code }
            }
            Ok(None) => Admission::Drop,
            Err(e) => {
                tracing::error!("cannot store a pairing code: {e}");
                Admission::Drop
            }
        }
    }

    fn log_drop(&self, channel: &str, sender: &str) {
        let key = (channel.to_owned(), sender.to_owned());
        let mut logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        let due = logged.get(&key).is_none_or(|at| at.elapsed() >= LOG_EVERY);
        if due {
            // Bound the map: strangers must not grow it without limit.
            if logged.len() >= 10_000 {
                logged.retain(|_, at| at.elapsed() < LOG_EVERY);
            }
            logged.insert(key, Instant::now());
            tracing::warn!(
                channel,
                sender,
                "message from an unknown sender dropped (logged once an hour per sender)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_of_dropped_strangers_forgets_the_old_once_it_is_full() {
        let gate = Gate::new(OwnerConfig::default(), None);
        let Some(stale) = Instant::now().checked_sub(LOG_EVERY + Duration::from_secs(1)) else {
            // A machine up for less than an hour has no instant that old.
            return;
        };
        {
            let mut logged = gate.logged.lock().unwrap();
            for i in 0..9_999 {
                logged.insert(("telegram".into(), format!("old-{i}")), stale);
            }
            logged.insert(("telegram".into(), "recent".into()), Instant::now());
        }
        gate.log_drop("telegram", "new");
        let logged = gate.logged.lock().unwrap();
        let mut left: Vec<&str> = logged.keys().map(|(_, s)| s.as_str()).collect();
        left.sort_unstable();
        assert_eq!(left, ["new", "recent"]);
    }
}
