//! Who is who, in memory: every active contact identity, looked up by
//! channel and id without touching the database.
//!
//! The gate asks on every inbound message, on the plugin's thread, so the
//! answer must cost a hash lookup. The directory is rebuilt whole from the
//! tables after every change (contacts change at human speed) and swapped
//! in, so a lookup never sees half a change.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::Connection;

/// What the gate needs to know about a known sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Known {
    /// The contact's row id.
    pub contact_id: i64,
    /// Its display name: how the agent is told who speaks.
    pub name: Arc<str>,
    /// Whether the contact is enabled.
    pub enabled: bool,
    /// The agent that answers it, when one is assigned and enabled.
    pub agent_id: Option<i64>,
    /// Whether this is the owner's row (informative: the owner check in
    /// the gate is the authority).
    pub is_owner: bool,
}

/// Every active identity, by channel, then by the channel's id.
#[derive(Default)]
pub struct Directory {
    by_channel: HashMap<String, HashMap<String, Known>>,
}

impl Directory {
    /// Reads every active identity.
    pub fn load(conn: &Connection) -> rusqlite::Result<Directory> {
        let mut stmt = conn.prepare_cached(
            "SELECT i.channel, i.native_id, c.id, c.display_name, c.enabled, \
                    CASE WHEN a.enabled THEN a.id END, c.is_owner \
             FROM contact_identities i JOIN contacts c ON c.id = i.contact_id \
             LEFT JOIN agents a ON a.id = c.agent_id \
             WHERE i.removed_at_ms IS NULL",
        )?;
        let mut directory = Directory::default();
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                Known {
                    contact_id: r.get(2)?,
                    name: Arc::from(r.get::<_, String>(3)?),
                    enabled: r.get(4)?,
                    agent_id: r.get(5)?,
                    is_owner: r.get(6)?,
                },
            ))
        })?;
        for row in rows {
            let (channel, id, known) = row?;
            directory
                .by_channel
                .entry(channel)
                .or_default()
                .insert(id, known);
        }
        Ok(directory)
    }

    /// The contact `id` is on `channel`, if any.
    pub fn get(&self, channel: &str, id: &str) -> Option<&Known> {
        self.by_channel.get(channel)?.get(id)
    }

    /// How many identities are known.
    pub fn len(&self) -> usize {
        self.by_channel.values().map(HashMap::len).sum()
    }

    /// Whether no identity is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
