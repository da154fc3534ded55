//! The hard gate: only the owner's configured identities get in.
//!
//! Architecture invariant: unknown senders get silence. A message from
//! anyone else is dropped before it is stored: it never reaches the inbox,
//! the model or a reply. The drop is logged once per sender per hour, so a
//! stranger cannot flood the log either.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hearth_sdk::protocol::{ChannelSpec, OWNER_SENDER};

use super::LOCAL_CHANNEL;
use crate::config::OwnerConfig;

/// How often a dropped sender is logged.
const LOG_EVERY: Duration = Duration::from_secs(3600);

/// The owner allow-list.
pub struct Gate {
    owner: OwnerConfig,
    logged: Mutex<HashMap<(String, String), Instant>>,
}

impl Gate {
    /// A gate for `owner`.
    pub fn new(owner: OwnerConfig) -> Gate {
        Gate {
            owner,
            logged: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `sender` on `channel` is the owner. `spec` is the channel's
    /// description when a plugin serves it: a channel that authenticates
    /// the owner itself (the canvas) vouches for exactly one sender,
    /// [`OWNER_SENDER`], and a channel may name the owner's ids from its
    /// own allow-list.
    pub fn is_owner(&self, channel: &str, sender: &str, spec: Option<&ChannelSpec>) -> bool {
        channel == LOCAL_CHANNEL
            || spec.is_some_and(|c| {
                (c.authenticates_owner && sender == OWNER_SENDER)
                    || c.owners.iter().any(|id| id == sender)
            })
            || self
                .owner
                .identities
                .get(channel)
                .is_some_and(|ids| ids.iter().any(|id| id == sender))
    }

    /// Whether `sender` on `channel` may enter; logs a drop at most once an
    /// hour per sender.
    pub fn admits(&self, channel: &str, sender: &str, spec: Option<&ChannelSpec>) -> bool {
        if self.is_owner(channel, sender, spec) {
            return true;
        }
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
        false
    }
}
