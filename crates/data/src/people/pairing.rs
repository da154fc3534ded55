//! Pairing: how a stranger inside a channel's allow-list asks to become a
//! contact, on channels that allow it (`unknown_sender = "pairing"`).
//!
//! The stranger gets one short reply with a one-time code; the owner
//! approves the code (`hearth contacts approve CODE`, or by telling the
//! agent), and only then is the contact created. The stranger's messages
//! are dropped either way: nothing they send reaches a model before
//! approval. A sender gets at most one code an hour, and at most
//! [`MAX_PENDING`] codes wait at once, so a stranger cannot make the agent
//! talk much, or fill the table.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::contacts::{self, ContactsError};
use hearth_base::store::now_ms;

/// How long a code stays valid, and how often one sender may get one.
pub const CODE_TTL_MS: i64 = 3_600_000;
/// The most codes waiting for the owner at once.
pub const MAX_PENDING: i64 = 3;
/// Letters that cannot be mistaken for one another when read aloud or
/// typed from a phone.
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 6;

/// A code waiting for the owner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The code.
    pub code: String,
    /// The channel the stranger wrote on.
    pub channel: String,
    /// Their id there.
    pub sender: String,
    /// The name the channel gave for them.
    pub sender_name: Option<String>,
    /// When the code was given (Unix ms).
    pub created_at_ms: i64,
}

/// Why an approval failed.
#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    /// No pending, unexpired code matches.
    #[error("no pending pairing code {0:?} (codes last an hour; `hearth contacts` lists them)")]
    UnknownCode(String),
    /// Creating the contact failed (a taken name, an id already known).
    #[error(transparent)]
    Contacts(#[from] ContactsError),
    /// SQLite failed.
    #[error("the pairing store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// A new code for a stranger, or `None` when they had one within the hour
/// or too many codes are waiting (then they get silence).
pub fn request(
    conn: &Connection,
    channel: &str,
    sender: &str,
    chat: &str,
    sender_name: Option<&str>,
) -> rusqlite::Result<Option<String>> {
    let now = now_ms();
    let recent: i64 = conn.query_row(
        "SELECT COUNT(*) FROM pairing_codes WHERE channel = ?1 AND sender = ?2 AND created_at_ms > ?3",
        params![channel, sender, now - CODE_TTL_MS],
        |r| r.get(0),
    )?;
    if recent > 0 {
        return Ok(None);
    }
    let pending: i64 = conn.query_row(
        "SELECT COUNT(*) FROM pairing_codes WHERE state = 'pending' AND created_at_ms > ?1",
        [now - CODE_TTL_MS],
        |r| r.get(0),
    )?;
    if pending >= MAX_PENDING {
        return Ok(None);
    }
    let Some(code) = new_code() else {
        tracing::error!("no randomness for a pairing code; the stranger gets silence");
        return Ok(None);
    };
    let name = sender_name.map(|n| n.chars().take(contacts::MAX_NAME_CHARS).collect::<String>());
    conn.execute(
        "INSERT INTO pairing_codes (code, channel, sender, chat, sender_name, created_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![code, channel, sender, chat, name, now],
    )?;
    Ok(Some(code))
}

/// Codes waiting for the owner, oldest first.
pub fn pending(conn: &Connection) -> rusqlite::Result<Vec<Pending>> {
    conn.prepare_cached(
        "SELECT code, channel, sender, sender_name, created_at_ms FROM pairing_codes \
         WHERE state = 'pending' AND created_at_ms > ?1 ORDER BY created_at_ms",
    )?
    .query_map([now_ms() - CODE_TTL_MS], |r| {
        Ok(Pending {
            code: r.get(0)?,
            channel: r.get(1)?,
            sender: r.get(2)?,
            sender_name: r.get(3)?,
            created_at_ms: r.get(4)?,
        })
    })?
    .collect()
}

/// Approves `code`: creates the contact (named `name`, else the name the
/// channel gave, else "<channel> <id>"), answered by `agent`, with the
/// stranger's id. Returns the contact's name.
pub fn approve(
    conn: &Connection,
    code: &str,
    name: Option<&str>,
    agent: Option<i64>,
) -> Result<String, PairingError> {
    let code = code.trim().to_ascii_uppercase();
    let tx = conn.unchecked_transaction()?;
    let found: Option<(String, String, Option<String>)> = tx
        .query_row(
            "SELECT channel, sender, sender_name FROM pairing_codes \
             WHERE code = ?1 AND state = 'pending' AND created_at_ms > ?2",
            params![code, now_ms() - CODE_TTL_MS],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((channel, sender, sender_name)) = found else {
        return Err(PairingError::UnknownCode(code));
    };
    let name = name
        .map(str::to_owned)
        .or(sender_name.filter(|n| !n.trim().is_empty()))
        .unwrap_or_else(|| format!("{channel} {sender}"));
    let contact = contacts::add(&tx, &name, agent)?;
    contacts::add_identity(&tx, &name, &channel, &sender)?;
    tx.execute(
        "UPDATE pairing_codes SET state = 'approved', decided_at_ms = ?1, contact_id = ?2 WHERE code = ?3",
        params![now_ms(), contact, code],
    )?;
    tx.commit()?;
    Ok(name.trim().to_owned())
}

/// The reply a stranger gets with their code.
pub fn reply_text(code: &str) -> String {
    format!(
        "Hello! I only talk with people my owner knows. If they know you, ask them to approve code {code}."
    )
}

fn new_code() -> Option<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; CODE_LEN];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(
        bytes
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect(),
    )
}
