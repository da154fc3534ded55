//! The `contacts` and `contact_identities` tables: who the agents may talk
//! to besides the owner, and by which id on which channel.
//!
//! Every change goes through here and checks what the database alone
//! cannot: names are trimmed and bounded, "owner" is reserved, an id is one
//! contact's at a time. Whether an id is inside a channel's allow-list (the
//! hard gate) is the caller's check, since only the running channels know
//! their lists.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use hearth_base::store::now_ms;

/// The longest display name.
pub const MAX_NAME_CHARS: usize = 80;
/// The name that always means the owner, and no contact may take.
pub const OWNER: &str = "owner";

/// A contact, as listed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Contact {
    /// Its row id.
    pub id: i64,
    /// Its unique display name.
    pub name: String,
    /// Whether its messages reach an agent.
    pub enabled: bool,
    /// The agent that answers it, by name.
    pub agent: Option<String>,
    /// Whether this row is the owner's.
    pub is_owner: bool,
    /// `(channel, id)` of each active identity.
    pub identities: Vec<Identity>,
}

/// One active identity of a contact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The channel (`telegram`).
    pub channel: String,
    /// The channel's id for the person.
    pub id: String,
}

/// What a change to the contacts may set.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    /// A new display name.
    pub name: Option<String>,
    /// A new agent, by id; `Some(None)` unassigns.
    pub agent: Option<Option<i64>>,
    /// Enabled or not.
    pub enabled: Option<bool>,
}

/// Why a change to the contacts was refused.
#[derive(Debug, thiserror::Error)]
pub enum ContactsError {
    /// No contact has that display name.
    #[error("no contact named {0:?}; `list` shows them")]
    Unknown(String),
    /// Another contact already has that display name.
    #[error("a contact named {0:?} already exists; names are unique (ignoring case)")]
    DuplicateName(String),
    /// The name is empty, too long, or reserved.
    #[error("field `name`: {0}")]
    BadName(String),
    /// The id already belongs to a contact.
    #[error("{channel} id {id:?} already belongs to {holder:?}; remove it there first")]
    IdentityTaken {
        /// The channel.
        channel: String,
        /// The id.
        id: String,
        /// The contact that has it.
        holder: String,
    },
    /// The contact has no such identity.
    #[error("{name:?} has no {channel} id {id:?}")]
    NoSuchIdentity {
        /// The contact.
        name: String,
        /// The channel.
        channel: String,
        /// The id.
        id: String,
    },
    /// The owner's row is kept from `[owner]` at every start.
    #[error("the owner's contact is kept from [owner] in hearth.toml; change it there")]
    OwnerRow,
    /// SQLite failed.
    #[error("the contacts store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Every contact, the owner first, then by name.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<Contact>> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.display_name, c.enabled, a.name, c.is_owner FROM contacts c \
         LEFT JOIN agents a ON a.id = c.agent_id ORDER BY c.is_owner DESC, c.display_name",
    )?;
    let mut contacts = stmt
        .query_map([], |r| {
            Ok(Contact {
                id: r.get(0)?,
                name: r.get(1)?,
                enabled: r.get(2)?,
                agent: r.get(3)?,
                is_owner: r.get(4)?,
                identities: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut ids = conn.prepare_cached(
        "SELECT contact_id, channel, native_id FROM contact_identities \
         WHERE removed_at_ms IS NULL ORDER BY channel, native_id",
    )?;
    let rows = ids.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            Identity {
                channel: r.get(1)?,
                id: r.get(2)?,
            },
        ))
    })?;
    for row in rows {
        let (contact, identity) = row?;
        if let Some(c) = contacts.iter_mut().find(|c| c.id == contact) {
            c.identities.push(identity);
        }
    }
    Ok(contacts)
}

/// Adds a contact; returns its id.
pub fn add(conn: &Connection, name: &str, agent: Option<i64>) -> Result<i64, ContactsError> {
    let name = check_name(name)?;
    if find(conn, &name)?.is_some() {
        return Err(ContactsError::DuplicateName(name));
    }
    let now = now_ms();
    conn.execute(
        "INSERT INTO contacts (display_name, agent_id, created_at_ms, updated_at_ms) \
         VALUES (?1, ?2, ?3, ?3)",
        params![name, agent, now],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Changes a contact (never the owner's row).
pub fn update(conn: &Connection, name: &str, changes: &Changes) -> Result<(), ContactsError> {
    let id = editable(conn, name)?;
    // All of it or none: a refused field leaves the row as it was.
    let tx = conn.unchecked_transaction()?;
    let conn = &*tx;
    if let Some(new) = &changes.name {
        let new = check_name(new)?;
        if find(conn, &new)?.is_some_and(|(other, _)| other != id) {
            return Err(ContactsError::DuplicateName(new));
        }
        conn.execute(
            "UPDATE contacts SET display_name = ?1 WHERE id = ?2",
            params![new, id],
        )?;
    }
    if let Some(agent) = changes.agent {
        conn.execute(
            "UPDATE contacts SET agent_id = ?1 WHERE id = ?2",
            params![agent, id],
        )?;
    }
    if let Some(enabled) = changes.enabled {
        conn.execute(
            "UPDATE contacts SET enabled = ?1 WHERE id = ?2",
            params![enabled, id],
        )?;
    }
    conn.execute(
        "UPDATE contacts SET updated_at_ms = ?1 WHERE id = ?2",
        params![now_ms(), id],
    )?;
    tx.commit()?;
    Ok(())
}

/// Removes a contact and its identities (never the owner's row). Their
/// past messages stay in the inbox and sessions.
pub fn remove(conn: &Connection, name: &str) -> Result<(), ContactsError> {
    let id = editable(conn, name)?;
    let tx = conn.unchecked_transaction()?;
    tx.execute("DELETE FROM contact_identities WHERE contact_id = ?1", [id])?;
    tx.execute(
        "UPDATE pairing_codes SET contact_id = NULL WHERE contact_id = ?1",
        [id],
    )?;
    tx.execute("DELETE FROM contacts WHERE id = ?1", [id])?;
    tx.commit()?;
    Ok(())
}

/// Gives a contact an id on a channel.
pub fn add_identity(
    conn: &Connection,
    name: &str,
    channel: &str,
    native_id: &str,
) -> Result<(), ContactsError> {
    let id = editable(conn, name)?;
    if let Some(holder) = holder(conn, channel, native_id)? {
        return Err(ContactsError::IdentityTaken {
            channel: channel.into(),
            id: native_id.into(),
            holder,
        });
    }
    conn.execute(
        "INSERT INTO contact_identities (contact_id, channel, native_id, created_at_ms) \
         VALUES (?1, ?2, ?3, ?4)",
        params![id, channel, native_id, now_ms()],
    )?;
    Ok(())
}

/// Takes an id on a channel away from a contact (kept, marked removed).
pub fn remove_identity(
    conn: &Connection,
    name: &str,
    channel: &str,
    native_id: &str,
) -> Result<(), ContactsError> {
    let id = editable(conn, name)?;
    let changed = conn.execute(
        "UPDATE contact_identities SET removed_at_ms = ?1 \
         WHERE contact_id = ?2 AND channel = ?3 AND native_id = ?4 AND removed_at_ms IS NULL",
        params![now_ms(), id, channel, native_id],
    )?;
    if changed == 0 {
        return Err(ContactsError::NoSuchIdentity {
            name: name.into(),
            channel: channel.into(),
            id: native_id.into(),
        });
    }
    Ok(())
}

/// Makes the owner's row match `[owner]`: its name, and exactly the
/// identities `[owner.identities]` lists. An id another contact held moves
/// to the owner, with a warning: the config is the authority.
pub fn upsert_owner(
    conn: &Connection,
    name: &str,
    identities: &[(String, String)],
) -> rusqlite::Result<i64> {
    let tx = conn.unchecked_transaction()?;
    let now = now_ms();
    let existing: Option<i64> = tx
        .query_row("SELECT id FROM contacts WHERE is_owner = 1", [], |r| {
            r.get(0)
        })
        .optional()?;
    // The owner's name wins over a contact that took it first.
    let clash: Option<(i64, String)> = tx
        .query_row(
            "SELECT id, display_name FROM contacts WHERE display_name = ?1 AND is_owner = 0",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((other, taken)) = clash {
        let renamed = format!("{taken} (contact {other})");
        tracing::warn!(contact = %taken, renamed = %renamed, "a contact had the owner's name; renamed");
        tx.execute(
            "UPDATE contacts SET display_name = ?1, updated_at_ms = ?2 WHERE id = ?3",
            params![renamed, now, other],
        )?;
    }
    let owner = match existing {
        Some(id) => {
            tx.execute(
                "UPDATE contacts SET display_name = ?1, enabled = 1, agent_id = 1, updated_at_ms = ?2 \
                 WHERE id = ?3",
                params![name, now, id],
            )?;
            id
        }
        None => {
            tx.execute(
                "INSERT INTO contacts (display_name, enabled, agent_id, is_owner, created_at_ms, updated_at_ms) \
                 VALUES (?1, 1, 1, 1, ?2, ?2)",
                params![name, now],
            )?;
            tx.last_insert_rowid()
        }
    };
    tx.execute(
        "UPDATE contact_identities SET removed_at_ms = ?1 WHERE contact_id = ?2 AND removed_at_ms IS NULL",
        params![now, owner],
    )?;
    for (channel, native_id) in identities {
        let moved = tx.execute(
            "UPDATE contact_identities SET removed_at_ms = ?1 \
             WHERE channel = ?2 AND native_id = ?3 AND removed_at_ms IS NULL",
            params![now, channel, native_id],
        )?;
        if moved > 0 {
            tracing::warn!(channel = %channel, id = %native_id, "an owner identity was a contact's; it is the owner's now");
        }
        tx.execute(
            "INSERT INTO contact_identities (contact_id, channel, native_id, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4)",
            params![owner, channel, native_id, now],
        )?;
    }
    tx.commit()?;
    Ok(owner)
}

/// A contact's `(id, is_owner)` by display name (ignoring case).
pub fn find(conn: &Connection, name: &str) -> rusqlite::Result<Option<(i64, bool)>> {
    conn.prepare_cached("SELECT id, is_owner FROM contacts WHERE display_name = ?1")?
        .query_row([name.trim()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

/// A contact's id by name, refusing the owner's row (kept from `[owner]`).
fn editable(conn: &Connection, name: &str) -> Result<i64, ContactsError> {
    match find(conn, name)? {
        None => Err(ContactsError::Unknown(name.trim().to_owned())),
        Some((_, true)) => Err(ContactsError::OwnerRow),
        Some((id, false)) => Ok(id),
    }
}

fn holder(conn: &Connection, channel: &str, native_id: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "SELECT c.display_name FROM contact_identities i JOIN contacts c ON c.id = i.contact_id \
         WHERE i.channel = ?1 AND i.native_id = ?2 AND i.removed_at_ms IS NULL",
    )?
    .query_row([channel, native_id], |r| r.get(0))
    .optional()
}

fn check_name(name: &str) -> Result<String, ContactsError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ContactsError::BadName("must not be empty".into()));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ContactsError::BadName(format!(
            "at most {MAX_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(ContactsError::BadName(
            "must not contain control characters".into(),
        ));
    }
    if name.eq_ignore_ascii_case(OWNER) {
        return Err(ContactsError::BadName(format!(
            "{OWNER:?} always means the owner"
        )));
    }
    Ok(name.to_owned())
}
