//! The agent's tables: the inbox queue it takes turns from, sessions and
//! their messages, compactions, and the hand-off to the outbox.
//!
//! Exactly once, from the user's point of view: a turn's reply is written
//! to the outbox and the inbox message marked done in one transaction. A
//! crash before that commit re-runs the turn after restart (its partial
//! messages are cleared first and the message is marked retried); a crash
//! after it leaves one reply in the outbox, delivered once.

use std::sync::Mutex;

use hearth_sdk::protocol::Attachment;
use rusqlite::{Connection, OptionalExtension, params};

use crate::scheduler::fire::SCHEDULER_CHANNEL;
use hearth_base::store::{MAIN_AGENT, now_ms};
use hearth_model::llm::{Block, Message, Role};

/// The pseudo-channel of messages between agents.
pub const AGENT_CHANNEL: &str = "agent";

/// An inbound message taken for a turn.
#[derive(Clone, Debug, Default)]
pub struct Claimed {
    /// The inbox row.
    pub id: i64,
    /// The agent taking it.
    pub agent_id: i64,
    /// Who speaks: the owner, a contact, or another agent.
    pub speaker: Speaker,
    /// `channel`, `agent` (another agent asks) or `agent_reply` (another
    /// agent answers).
    pub source: String,
    /// Agent-to-agent hops that led here.
    pub hops: i64,
    /// For a message between agents: the conversation the asking agent
    /// was in, where the answer goes back to.
    pub origin: Option<(String, String)>,
    /// Its channel.
    pub channel: String,
    /// Its chat (the sender when the channel has no chats).
    pub chat: String,
    /// Its text.
    pub text: String,
    /// Whether an earlier run of this turn was cut short.
    pub retried: bool,
    /// Its idempotency key: channels match streamed text to it.
    pub key: String,
    /// Files that came with it.
    pub attachments: Vec<Attachment>,
    /// The scheduled job whose firing stored it.
    pub job_id: Option<i64>,
    /// When it was stored (Unix milliseconds).
    pub received_at_ms: i64,
}

/// Who wrote a message, as the agent is told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Speaker {
    /// The owner.
    #[default]
    Owner,
    /// A contact, by display name.
    Contact(String),
    /// Another agent: `(id, name)`.
    Agent(i64, String),
    /// The scheduler: a reminder or task set earlier fired.
    Scheduler,
}

/// A message one agent leaves in another's inbox.
pub struct AgentMessage<'a> {
    /// The agent it is for.
    pub to: i64,
    /// The agent sending it.
    pub from: (i64, &'a str),
    /// `agent` (a request) or `agent_reply`.
    pub source: &'static str,
    /// Its text.
    pub text: &'a str,
    /// Hops so far, this one included.
    pub hops: i64,
    /// The conversation the first agent was in.
    pub origin: (&'a str, &'a str),
    /// Unique per message: a retried turn does not send twice.
    pub key: String,
}

/// A session's prompt history: the summary of compacted messages, and the
/// messages after it with their row ids.
pub struct History {
    /// The summary standing in for older messages.
    pub summary: Option<String>,
    /// `(row id, message)`, oldest first.
    pub messages: Vec<(i64, Message)>,
    /// The stored size of those messages, in bytes of JSON.
    pub chars: usize,
}

/// The conversation tables, on one connection.
pub struct Conversations {
    conn: Mutex<Connection>,
}

/// Makes sure the main agent's row exists (memory and sessions refer to it).
pub fn ensure_main_agent(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO agents (id, name, allowed_tools, created_at_ms) VALUES (?1, 'main', '[\"*\"]', ?2)",
        params![MAIN_AGENT, now_ms()],
    )?;
    Ok(())
}

impl Conversations {
    /// The conversation tables on `conn`; [`ensure_main_agent`] has run.
    pub fn new(conn: Connection) -> Conversations {
        Conversations {
            conn: Mutex::new(conn),
        }
    }

    /// After a restart: agent `agent_id`'s messages that were in flight go
    /// back to pending, marked retried. Returns how many.
    pub fn recover(&self, agent_id: i64) -> rusqlite::Result<usize> {
        self.conn().execute(
            "UPDATE inbox SET status = 'pending', retried = 1 WHERE status = 'in_flight' AND agent_id = ?1",
            [agent_id],
        )
    }

    /// A message whose turn could not be stored goes back to pending,
    /// marked retried, so its turn is run again from the start.
    pub fn requeue(&self, inbox_id: i64) -> rusqlite::Result<usize> {
        self.conn().execute(
            "UPDATE inbox SET status = 'pending', retried = 1 WHERE status = 'in_flight' AND id = ?1",
            [inbox_id],
        )
    }

    /// Takes agent `agent_id`'s oldest pending message, if any.
    pub fn claim_next(&self, agent_id: i64) -> rusqlite::Result<Option<Claimed>> {
        let conn = self.conn();
        let claimed = conn
            .prepare_cached(
                "UPDATE inbox SET status = 'in_flight' \
                 WHERE id = (SELECT id FROM inbox WHERE agent_id = ?1 AND status = 'pending' ORDER BY id LIMIT 1) \
                 RETURNING id, channel, COALESCE(chat, sender), text, retried, idempotency_key, attachments, \
                           contact_id, source, from_agent_id, hops, origin_channel, origin_chat, job_id, \
                           received_at_ms",
            )?
            .query_row([agent_id], |r| {
                let attachments: Option<String> = r.get(6)?;
                let origin = match (r.get::<_, Option<String>>(11)?, r.get::<_, Option<String>>(12)?) {
                    (Some(channel), Some(chat)) => Some((channel, chat)),
                    _ => None,
                };
                Ok((
                    Claimed {
                        id: r.get(0)?,
                        agent_id,
                        channel: r.get(1)?,
                        chat: r.get(2)?,
                        text: r.get(3)?,
                        retried: r.get(4)?,
                        key: r.get(5)?,
                        attachments: attachments
                            .and_then(|a| serde_json::from_str(&a).ok())
                            .unwrap_or_default(),
                        source: r.get(8)?,
                        hops: r.get(10)?,
                        origin,
                        speaker: Speaker::Owner,
                        job_id: r.get(13)?,
                        received_at_ms: r.get(14)?,
                    },
                    r.get::<_, Option<i64>>(7)?,
                    r.get::<_, Option<i64>>(9)?,
                ))
            })
            .optional()?;
        let Some((mut claimed, contact, from_agent)) = claimed else {
            return Ok(None);
        };
        claimed.speaker = match (contact, from_agent) {
            _ if claimed.source == "scheduler" => Speaker::Scheduler,
            (_, Some(agent)) => {
                let name: Option<String> = conn
                    .prepare_cached("SELECT name FROM agents WHERE id = ?1")?
                    .query_row([agent], |r| r.get(0))
                    .optional()?;
                Speaker::Agent(agent, name.unwrap_or_else(|| format!("agent {agent}")))
            }
            (Some(contact), None) => {
                let name: Option<String> = conn
                    .prepare_cached("SELECT display_name FROM contacts WHERE id = ?1")?
                    .query_row([contact], |r| r.get(0))
                    .optional()?;
                // A contact removed since is still not the owner.
                Speaker::Contact(name.unwrap_or_else(|| "a former contact".into()))
            }
            (None, None) => Speaker::Owner,
        };
        Ok(Some(claimed))
    }

    /// Messages waiting for a turn.
    pub fn pending(&self) -> rusqlite::Result<i64> {
        self.conn().query_row(
            "SELECT COUNT(*) FROM inbox WHERE status IN ('pending', 'in_flight')",
            [],
            |r| r.get(0),
        )
    }

    /// The model agent `agent`'s row names (see `profiles::model_of`).
    pub fn chosen_model(&self, agent: i64) -> rusqlite::Result<Option<String>> {
        super::profiles::model_of(&self.conn(), agent)
    }

    /// `/model ARG` (see `model_choice::answer`).
    pub fn answer_model(&self, choices: &[String], arg: &str) -> Result<String, String> {
        super::model_choice::answer(&self.conn(), choices, arg, "/model")
    }

    /// Agent `agent`'s open session for `(channel, chat)`, started if there
    /// is none.
    pub fn session(&self, agent: i64, channel: &str, chat: &str) -> rusqlite::Result<i64> {
        let conn = self.conn();
        let open: Option<i64> = conn
            .prepare_cached(
                "SELECT id FROM sessions WHERE agent_id = ?1 AND channel = ?2 AND chat = ?3 \
                 AND ended_at_ms IS NULL ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![agent, channel, chat], |r| r.get(0))
            .optional()?;
        match open {
            Some(id) => Ok(id),
            None => {
                conn.execute(
                    "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (?1, ?2, ?3, ?4)",
                    params![agent, channel, chat, now_ms()],
                )?;
                Ok(conn.last_insert_rowid())
            }
        }
    }

    /// Ends agent `agent`'s open session for `(channel, chat)` (`/new`).
    pub fn end_session(&self, agent: i64, channel: &str, chat: &str) -> rusqlite::Result<usize> {
        self.conn().execute(
            "UPDATE sessions SET ended_at_ms = ?1 WHERE agent_id = ?2 AND channel = ?3 AND chat = ?4 \
             AND ended_at_ms IS NULL",
            params![now_ms(), agent, channel, chat],
        )
    }

    /// Replaces the files stored with inbox message `inbox_id` (their
    /// transcripts added), so a retried turn finds them done.
    pub fn set_attachments(&self, inbox_id: i64, files: &[Attachment]) -> rusqlite::Result<()> {
        let files = (!files.is_empty()).then(|| serde_json::to_string(files).unwrap_or_default());
        self.conn().execute(
            "UPDATE inbox SET attachments = ?1 WHERE id = ?2",
            params![files, inbox_id],
        )?;
        Ok(())
    }

    /// Stores a message for `chat` on `channel` that answers nothing (a
    /// notice from hearth itself); the caller wakes the outbox.
    pub fn tell(&self, channel: &str, chat: &str, text: &str) -> rusqlite::Result<()> {
        hearth_data::router::outbox::enqueue(&self.conn(), channel, chat, text, &[]).map(|_| ())
    }

    /// Clears what an interrupted run of this turn left behind.
    pub fn clear_turn(&self, inbox_id: i64) -> rusqlite::Result<usize> {
        self.conn()
            .execute("DELETE FROM messages WHERE inbox_id = ?1", [inbox_id])
    }

    /// Appends a message to a session.
    pub fn append(&self, session: i64, inbox_id: i64, message: &Message) -> rusqlite::Result<i64> {
        append_on(&self.conn(), session, inbox_id, message).map(|(id, _)| id)
    }

    /// Appends `message` to the session and to `history`, the turn's copy
    /// of it, so the next step of the turn builds its request without
    /// reading and parsing the whole session again.
    pub fn append_to(
        &self,
        history: &mut History,
        session: i64,
        inbox_id: i64,
        message: Message,
    ) -> rusqlite::Result<()> {
        let (id, stored) = append_on(&self.conn(), session, inbox_id, &message)?;
        history.chars += stored;
        history.messages.push((id, message));
        Ok(())
    }

    /// The session's prompt history: the latest compaction's summary and
    /// the messages after it.
    pub fn history(&self, session: i64) -> rusqlite::Result<History> {
        let conn = self.conn();
        let compaction: Option<(i64, String)> = conn
            .prepare_cached(
                "SELECT up_to_message_id, summary FROM compactions WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
            )?
            .query_row([session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let after = compaction.as_ref().map_or(0, |(id, _)| *id);
        let mut stmt = conn.prepare_cached(
            "SELECT id, role, content FROM messages WHERE session_id = ?1 AND id > ?2 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![session, after], |r| {
            let role: String = r.get(1)?;
            let content: String = r.get(2)?;
            Ok((r.get::<_, i64>(0)?, role, content))
        })?;
        let mut messages = Vec::new();
        let mut chars = 0;
        for row in rows {
            let (id, role, content) = row?;
            chars += content.len();
            let content: Vec<Block> = serde_json::from_str(&content).unwrap_or_default();
            let role = if role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            };
            messages.push((id, Message { role, content }));
        }
        Ok(History {
            summary: compaction.map(|(_, s)| s),
            messages,
            chars,
        })
    }

    /// Records that `summary` replaces the session's messages up to
    /// `up_to_message_id`.
    pub fn compact(
        &self,
        session: i64,
        up_to_message_id: i64,
        summary: &str,
    ) -> rusqlite::Result<()> {
        self.conn().execute(
            "INSERT INTO compactions (session_id, up_to_message_id, summary, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
            params![session, up_to_message_id, summary, now_ms()],
        )?;
        Ok(())
    }

    /// Stores the turn's reply and marks its message done, atomically,
    /// together with the model's last message when there is one. The reply
    /// goes to the outbox for the conversation it answers, or for
    /// `deliver_to` when given (a scheduled task's answer, for the owner),
    /// or, when it answers another agent, to that agent's inbox as
    /// `reply_to` says.
    pub fn finish(
        &self,
        claimed: &Claimed,
        last: Option<(i64, &Message)>,
        reply: &str,
        files: &[Attachment],
        reply_to: Option<&AgentMessage<'_>>,
        deliver_to: Option<(&str, &str)>,
    ) -> rusqlite::Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        if let Some((session, message)) = last {
            append_on(&tx, session, claimed.id, message)?;
        }
        let (channel, chat) = deliver_to.unwrap_or((&claimed.channel, &claimed.chat));
        if let Some(message) = reply_to {
            send_to_agent(&tx, message)?;
        } else if channel != AGENT_CHANNEL && channel != SCHEDULER_CHANNEL {
            // A reply on the agents' channel that is not sent back (the hop
            // limit is spent), or a task's answer that asks for silence,
            // stays in the session only: no channel delivers there.
            tx.prepare_cached(
                "INSERT OR IGNORE INTO outbox (inbox_id, channel, chat, text, next_attempt_at_ms, created_at_ms, attachments) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
            )?
            .execute(params![
                claimed.id,
                channel,
                chat,
                reply,
                now_ms(),
                (!files.is_empty()).then(|| serde_json::to_string(files).unwrap_or_default()),
            ])?;
        }
        tx.prepare_cached("UPDATE inbox SET status = 'done', done_at_ms = ?1 WHERE id = ?2")?
            .execute(params![now_ms(), claimed.id])?;
        tx.commit()
    }

    /// Stores `text` for `(channel, chat)` as a message that answers no
    /// inbound one (a notice for the owner). The caller wakes the outbox.
    pub fn notice(&self, channel: &str, chat: &str, text: &str) -> rusqlite::Result<i64> {
        hearth_data::router::outbox::enqueue(&self.conn(), channel, chat, text, &[])
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Leaves a message in another agent's inbox; `false` when a message with
/// its key is already there. The caller wakes that agent.
pub fn send_to_agent(conn: &Connection, m: &AgentMessage<'_>) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO inbox \
             (channel, idempotency_key, sender, chat, text, received_at_ms, agent_id, source, \
              from_agent_id, hops, origin_channel, origin_chat) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            if m.source == "agent" {
                AGENT_CHANNEL
            } else {
                m.origin.0
            },
            m.key,
            m.from.1,
            if m.source == "agent" {
                m.from.1
            } else {
                m.origin.1
            },
            m.text,
            now_ms(),
            m.to,
            m.source,
            m.from.0,
            m.hops,
            m.origin.0,
            m.origin.1,
        ])?;
    Ok(changed == 1)
}

fn append_on(
    conn: &Connection,
    session: i64,
    inbox_id: i64,
    message: &Message,
) -> rusqlite::Result<(i64, usize)> {
    let content = serde_json::to_string(&message.content).unwrap_or_else(|_| "[]".into());
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    conn.prepare_cached(
        "INSERT INTO messages (session_id, inbox_id, role, content, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![session, inbox_id, role, content, now_ms()])?;
    Ok((conn.last_insert_rowid(), content.len()))
}
