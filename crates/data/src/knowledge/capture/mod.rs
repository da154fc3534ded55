//! Automatic memory capture (`[memory.capture]`), the store's side: which
//! conversations are due (new messages past their mark, quiet long
//! enough, their agent not busy), what of them the cheap model reads, the
//! mark that says how far it has read, and keeping what it proposed as
//! memories marked captured. The daemon's task (`host/src/capture.rs`)
//! asks the model between these steps.
//!
//! - `proposals`: the model's answer parsed, each fact judged and
//!   deduplicated;
//! - `prompt`: what the model is asked.
//!
//! A session's mark moves past every message read, whatever came of it
//! (nothing proposed, a bad answer, a contact's conversation passed
//! over), so no message is read twice and a memory the owner drops is
//! never captured again from the same words.

pub mod prompt;
pub mod proposals;

use rusqlite::{Connection, OptionalExtension, params};

use super::notes::{MAX_MEMORIES, MEMORY_BUDGET_CHARS};
use hearth_base::store::now_ms;

/// How far back a conversation may have been active to be read: older
/// ones (from before capture was turned on, say) are left alone.
pub const LOOKBACK_MS: i64 = 7 * 24 * 3600 * 1000;
/// The longest part of one message the model reads.
pub const MAX_MESSAGE_CHARS: usize = 4_000;
/// The most messages read at once.
const MAX_ROWS: i64 = 400;

/// A conversation with messages capture has not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The session.
    pub session: i64,
    /// Its agent, whose memories capture adds to.
    pub agent: i64,
    /// Its mark: the last message read (0: none).
    pub mark: i64,
    /// When its newest message was stored.
    pub last_at_ms: i64,
}

/// Who said a line of the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaker {
    /// The owner.
    Owner,
    /// A contact (read only with `contacts = true`).
    Contact,
    /// The agent.
    Agent,
}

impl Speaker {
    /// Its label in the question.
    pub fn label(self) -> &'static str {
        match self {
            Speaker::Owner => "Owner",
            Speaker::Contact => "Contact",
            Speaker::Agent => "Assistant",
        }
    }
}

/// What the model reads of a conversation's new part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transcript {
    /// Who said what, in order (text only: no tool calls or results).
    pub lines: Vec<(Speaker, String)>,
    /// The last message read: the mark once this is done.
    pub up_to: i64,
    /// Lines the owner wrote.
    pub owner_lines: usize,
    /// Lines a contact wrote.
    pub contact_lines: usize,
}

/// Every conversation of the last [`LOOKBACK_MS`] with messages past its
/// mark, oldest activity first.
pub fn pending(conn: &Connection, now: i64) -> rusqlite::Result<Vec<Pending>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.id, s.agent_id, coalesce(c.up_to_message_id, 0), \
                (SELECT max(id) FROM messages WHERE session_id = s.id) AS last_id \
         FROM sessions s LEFT JOIN capture_marks c ON c.session_id = s.id \
         WHERE s.ended_at_ms IS NULL OR s.ended_at_ms > ?1",
    )?;
    let rows: Vec<(i64, i64, i64, Option<i64>)> = stmt
        .query_map([now - LOOKBACK_MS], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::new();
    for (session, agent, mark, last) in rows {
        let Some(last) = last.filter(|&last| last > mark) else {
            continue;
        };
        let last_at_ms: i64 = conn
            .prepare_cached("SELECT created_at_ms FROM messages WHERE id = ?1")?
            .query_row([last], |r| r.get(0))?;
        if last_at_ms > now - LOOKBACK_MS {
            out.push(Pending {
                session,
                agent,
                mark,
                last_at_ms,
            });
        }
    }
    out.sort_by_key(|p| p.last_at_ms);
    Ok(out)
}

/// Whether `agent` has a turn running (its conversation may not be over).
pub fn busy(conn: &Connection, agent: i64) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM inbox WHERE agent_id = ?1 AND status = 'in_flight')",
    )?
    .query_row([agent], |r| r.get(0))
}

/// Reads session `p`'s messages past its mark, in order, until the text
/// reaches `max_chars` (at least one message is read, cut to
/// [`MAX_MESSAGE_CHARS`]). What is left stays past the new mark for the
/// next read.
pub fn read(conn: &Connection, p: &Pending, max_chars: usize) -> rusqlite::Result<Transcript> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.id, m.role, i.contact_id, i.source, \
                (SELECT group_concat(json_extract(value, '$.text'), char(10)) \
                 FROM json_each(CASE WHEN json_valid(m.content) THEN m.content ELSE '[]' END) \
                 WHERE json_extract(value, '$.type') = 'text') \
         FROM messages m LEFT JOIN inbox i ON i.id = m.inbox_id \
         WHERE m.session_id = ?1 AND m.id > ?2 ORDER BY m.id LIMIT ?3",
    )?;
    type Row = (i64, String, Option<i64>, Option<String>, Option<String>);
    let rows = stmt.query_map(
        params![p.session, p.mark, MAX_ROWS],
        |r| -> rusqlite::Result<Row> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        },
    )?;
    let mut t = Transcript {
        up_to: p.mark,
        ..Transcript::default()
    };
    let mut chars = 0;
    for row in rows {
        let (id, role, contact, source, text) = row?;
        let speaker = match (role.as_str(), contact, source.as_deref()) {
            ("assistant", _, _) => Some(Speaker::Agent),
            ("user", Some(_), _) => Some(Speaker::Contact),
            ("user", None, Some("channel")) => Some(Speaker::Owner),
            // A scheduled task's text, another agent's message, a tool's
            // result: not what anyone said.
            _ => None,
        };
        let text = text.map(|t| plain(&t)).unwrap_or_default();
        let (Some(speaker), false) = (speaker, text.is_empty()) else {
            t.up_to = id;
            continue;
        };
        let size = text.chars().count();
        if chars > 0 && chars + size > max_chars {
            break;
        }
        chars += size;
        t.up_to = id;
        match speaker {
            Speaker::Owner => t.owner_lines += 1,
            Speaker::Contact => t.contact_lines += 1,
            Speaker::Agent => {}
        }
        t.lines.push((speaker, text));
    }
    Ok(t)
}

/// A message's text for the question: without the stamp the agent's
/// turn puts before an incoming message (`[Fri 2026-12-04 09:30 CET ·
/// telegram · from Sam, your owner] `), its white space folded, the
/// question's own tags taken out of it, cut to [`MAX_MESSAGE_CHARS`].
fn plain(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = unstamped(&text)
        .replace("<conversation>", "[conversation]")
        .replace("</conversation>", "[/conversation]");
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{} […]", &text[..cut]),
        None => text,
    }
}

/// `text` without a leading stamp: a bracket of at most 200 bytes
/// whose parts are joined by ` · `.
fn unstamped(text: &str) -> &str {
    let Some(end) = text.find("] ").filter(|&end| end < 200) else {
        return text;
    };
    match text.starts_with('[') && text[..end].contains(" · ") {
        true => &text[end + 2..],
        false => text,
    }
}

/// Moves session `session`'s mark to message `up_to`.
pub fn advance(conn: &Connection, session: i64, up_to: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO capture_marks (session_id, up_to_message_id, at_ms) VALUES (?1, ?2, ?3) \
         ON CONFLICT (session_id) DO UPDATE SET up_to_message_id = max(up_to_message_id, \
         excluded.up_to_message_id), at_ms = excluded.at_ms",
    )?
    .execute(params![session, up_to, now_ms()])?;
    Ok(())
}

/// Agent `agent`'s memories, oldest first.
pub fn known(conn: &Connection, agent: i64) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT fact FROM memory WHERE agent_id = ?1 ORDER BY id")?
        .query_map([agent], |r| r.get(0))?
        .collect()
}

/// What keeping a capture's proposals did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// `(id, fact)` of each memory added.
    pub added: Vec<(i64, String)>,
    /// Proposals already known (or proposed twice).
    pub known: usize,
    /// Proposals refused: a secret's look, an instruction's, too long.
    pub refused: usize,
    /// Proposals left out by a limit: the cap per conversation, the
    /// memories' count or budget.
    pub over: usize,
}

/// Keeps `proposals` (as the model wrote them) as agent `p.agent`'s
/// memories captured from `p.session`, in one transaction with the mark
/// moved to `up_to`: each cleaned, the known ones left out, at most
/// `cap` captured from this session in all, never past the memories'
/// count or budget. `secret` says whether a fact holds one of the
/// owner's secrets.
pub fn keep(
    conn: &Connection,
    p: &Pending,
    up_to: i64,
    proposals: &[String],
    cap: usize,
    secret: &dyn Fn(&str) -> bool,
) -> rusqlite::Result<Kept> {
    let tx = conn.unchecked_transaction()?;
    let memories = known(&tx, p.agent)?;
    let mut count = memories.len();
    let mut chars: usize = memories.iter().map(|m| m.chars().count()).sum();
    let mut seen: Vec<String> = memories.iter().map(|m| proposals::normalized(m)).collect();
    let captured: usize =
        tx.prepare_cached(
            "SELECT count(*) FROM memory WHERE agent_id = ?1 AND session_id = ?2 \
             AND source = 'captured'",
        )?
        .query_row([p.agent, p.session], |r| r.get::<_, i64>(0))? as usize;
    let mut room = cap.saturating_sub(captured);
    let mut kept = Kept::default();
    for proposal in proposals {
        let fact = match proposals::clean(proposal) {
            Ok(fact) if !secret(&fact) => fact,
            _ => {
                kept.refused += 1;
                continue;
            }
        };
        if proposals::is_known(&fact, &seen) {
            kept.known += 1;
            continue;
        }
        let size = fact.chars().count();
        if room == 0 || count >= MAX_MEMORIES || chars + size > MEMORY_BUDGET_CHARS {
            kept.over += 1;
            continue;
        }
        tx.prepare_cached(
            "INSERT INTO memory (agent_id, fact, created_at_ms, source, session_id) \
             VALUES (?1, ?2, ?3, 'captured', ?4)",
        )?
        .execute(params![p.agent, fact, now_ms(), p.session])?;
        kept.added.push((tx.last_insert_rowid(), fact.clone()));
        seen.push(proposals::normalized(&fact));
        (room, count, chars) = (room - 1, count + 1, chars + size);
    }
    advance(&tx, p.session, up_to)?;
    tx.commit()?;
    Ok(kept)
}

/// When the next pending conversation becomes quiet enough, `quiet_ms`
/// after its last message; `None`: nothing is pending.
pub fn next_due(pending: &[Pending], quiet_ms: i64) -> Option<i64> {
    pending.iter().map(|p| p.last_at_ms + quiet_ms).min()
}

/// The mark of session `session`, if it has one.
pub fn mark(conn: &Connection, session: i64) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT up_to_message_id FROM capture_marks WHERE session_id = ?1")?
        .query_row([session], |r| r.get(0))
        .optional()
}

#[cfg(test)]
mod tests;
