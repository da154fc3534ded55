//! Where the owner is reached: the channel and id a message for the owner
//! (from `send_message`, a scheduled task, a job that keeps failing) goes
//! to.
//!
//! `[owner] notify` is tried first, then any running channel that knows the
//! owner: an id from `[owner.identities]`, the channel's own owner ids, or
//! a channel that authenticates the owner itself (the canvas).

use std::collections::BTreeMap;

use hearth_sdk::protocol::{ChannelSpec, OWNER_SENDER};

use hearth_base::channels::LOCAL_CHANNEL;
use hearth_base::config::OwnerConfig;

/// The owner, and the running channels.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    /// `[owner]`.
    pub owner: OwnerConfig,
    /// Each running channel's description, by name.
    pub channels: BTreeMap<String, ChannelSpec>,
}

impl Reach {
    /// `(channel, id)` where the owner is reached now.
    pub fn owner_address(&self) -> Result<(String, String), String> {
        self.owner
            .notify
            .as_deref()
            .and_then(|c| self.address(c))
            .or_else(|| self.channels.keys().find_map(|c| self.address(c)))
            .ok_or_else(|| {
                "no running channel knows the owner: set [owner.identities] and [owner] notify"
                    .into()
            })
    }

    /// Where a message for the owner waits when no running channel knows
    /// them: the `[owner] notify` channel with the owner's id there (the
    /// outbox delivers once it runs), else the control socket's `owner`
    /// chat, shown to the next `hearth chat`.
    pub fn owner_address_or_later(&self) -> (String, String) {
        if let Ok(address) = self.owner_address() {
            return address;
        }
        let configured = self.owner.notify.as_ref().and_then(|channel| {
            let id = self.owner.identities.get(channel)?.first()?;
            Some((channel.clone(), id.clone()))
        });
        configured.unwrap_or_else(|| (LOCAL_CHANNEL.to_owned(), "owner".to_owned()))
    }

    /// The owner's id on running channel `channel`, if it knows one.
    fn address(&self, channel: &str) -> Option<(String, String)> {
        let spec = self.channels.get(channel)?;
        let id = self
            .owner
            .identities
            .get(channel)
            .and_then(|ids| ids.first())
            .or_else(|| spec.owners.first())
            .cloned()
            .or_else(|| spec.authenticates_owner.then(|| OWNER_SENDER.to_owned()))?;
        Some((channel.to_owned(), id))
    }
}
