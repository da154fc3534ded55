//! Each agent's two tiers of notes: memories (short facts, all of them in
//! every prompt) and the scratchpad (entries with a title and a body; only
//! titles and ids in the prompt, a body read on demand); and each
//! session's notepad (freeform working state, in that session's every
//! prompt, untouched by compaction).
//!
//! With recall by meaning (`recall`), listing either tier with a query
//! finds entries by their words and by their meaning (`hybrid::fuse`),
//! and every change wakes the indexer that embeds it.
//!
//! Memories have a budget in characters. Going over it refuses nothing and
//! drops nothing: the prompt says so, and asks the agent to consolidate.
//! The hard limits below only stop a runaway.

use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::hybrid;
use super::recall::Recall;
use hearth_base::store::now_ms;

/// The most memories one agent keeps.
pub const MAX_MEMORIES: usize = 500;
/// The longest memory, in characters.
pub const MAX_MEMORY_CHARS: usize = 500;
/// The memories' size, in characters, past which the prompt asks the
/// agent to consolidate them.
pub const MEMORY_BUDGET_CHARS: usize = 6_000;
/// The most scratchpad entries one agent keeps.
pub const MAX_ENTRIES: usize = 1_000;
/// The longest scratchpad title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// The longest scratchpad body, in characters.
pub const MAX_BODY_CHARS: usize = 20_000;
/// The longest session notepad, in characters.
pub const MAX_NOTEPAD_CHARS: usize = 8_000;

/// What the prompt shows of an agent's notes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptNotes {
    /// `(id, memory)`, oldest first.
    pub memories: Vec<(i64, String)>,
    /// The memories' size in characters.
    pub memory_chars: usize,
    /// `(id, title)` of each scratchpad entry, oldest first.
    pub titles: Vec<(i64, String)>,
}

/// One memory as the owner's `/memory` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its id (`/memory drop ID`).
    pub id: i64,
    /// The fact.
    pub text: String,
    /// When automatic capture added it; `None`: the agent wrote it.
    pub captured_at_ms: Option<i64>,
}

/// The notes of every agent, on one connection.
pub struct Notes {
    conn: Mutex<Connection>,
    recall: Option<Arc<Recall>>,
}

impl Notes {
    /// The notes on `conn`.
    pub fn new(conn: Connection) -> Notes {
        Notes::with_recall(conn, None)
    }

    /// The notes on `conn`, found by meaning too through `recall`.
    pub fn with_recall(conn: Connection, recall: Option<Arc<Recall>>) -> Notes {
        Notes {
            conn: Mutex::new(conn),
            recall,
        }
    }

    /// Recall by meaning, when configured: the history's searches use it
    /// too.
    pub fn recall(&self) -> Option<&Arc<Recall>> {
        self.recall.as_ref()
    }

    /// Wakes the indexer after a change a trigger queued.
    fn changed(&self) {
        if let Some(recall) = &self.recall {
            recall.wake();
        }
    }

    /// Lists `entries` (`(id, text)`, oldest first) that match `query`:
    /// by its words (`words`: the ids that hold it), and by meaning when
    /// recall is configured; best first, each with how it was found. The
    /// second value is the note a result carries about how it searched.
    fn lookup(
        &self,
        kind: &str,
        agent: i64,
        query: &str,
        words: Vec<i64>,
    ) -> Result<Lookup, String> {
        let Some(recall) = &self.recall else {
            return Ok((words.into_iter().map(|id| (id, None)).collect(), None));
        };
        // Fetched before the lock: the endpoint may take its timeout.
        let vector = recall.query(query);
        let near = match vector {
            Ok(vector) => recall
                .notes_like(&self.conn(), kind, agent, &vector, 20)
                .map_err(|e| e.to_string())?,
            Err(e) => {
                let note = json!(hybrid::fallback_note(&e));
                return Ok((words.into_iter().map(|id| (id, None)).collect(), Some(note)));
            }
        };
        let fused = hybrid::fuse(&words, &near)
            .into_iter()
            .map(|(id, matched, similarity)| {
                let how = json!({
                    "matched": matched,
                    "similarity": similarity.map(|s| (s * 1000.0).round() / 1000.0),
                });
                (id, Some(how))
            })
            .collect();
        Ok((fused, Some(json!("hybrid"))))
    }

    /// What agent `agent`'s prompt shows.
    pub fn for_prompt(&self, agent: i64) -> rusqlite::Result<PromptNotes> {
        let conn = self.conn();
        let memories: Vec<(i64, String)> = conn
            .prepare_cached("SELECT id, fact FROM memory WHERE agent_id = ?1 ORDER BY id")?
            .query_map([agent], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let titles = conn
            .prepare_cached("SELECT id, title FROM scratchpad WHERE agent_id = ?1 ORDER BY id")?
            .query_map([agent], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let memory_chars = memories.iter().map(|(_, m)| m.chars().count()).sum();
        Ok(PromptNotes {
            memories,
            memory_chars,
            titles,
        })
    }

    /// Agent `agent`'s memories, oldest first, each with whether capture
    /// added it.
    pub fn listed(&self, agent: i64) -> rusqlite::Result<Vec<Listed>> {
        self.conn()
            .prepare_cached(
                "SELECT id, fact, CASE source WHEN 'captured' THEN created_at_ms END \
                 FROM memory WHERE agent_id = ?1 ORDER BY id",
            )?
            .query_map([agent], |r| {
                Ok(Listed {
                    id: r.get(0)?,
                    text: r.get(1)?,
                    captured_at_ms: r.get(2)?,
                })
            })?
            .collect()
    }

    /// Wakes the indexer after memories were added elsewhere (by
    /// capture, on its own connection).
    pub fn added_elsewhere(&self) {
        self.changed();
    }

    /// Adds a memory.
    pub fn add_memory(&self, agent: i64, text: &str) -> Result<Value, String> {
        let text = checked(text, "text", MAX_MEMORY_CHARS)?;
        let conn = self.conn();
        let count = count(&conn, "memory", agent)?;
        if count >= MAX_MEMORIES {
            return Err(format!(
                "memory is full ({MAX_MEMORIES} memories): consolidate or remove some first"
            ));
        }
        conn.execute(
            "INSERT INTO memory (agent_id, fact, created_at_ms) VALUES (?1, ?2, ?3)",
            params![agent, text, now_ms()],
        )
        .map_err(|e| e.to_string())?;
        let id = conn.last_insert_rowid();
        drop(conn);
        self.changed();
        Ok(json!({ "id": id, "remembered": text }))
    }

    /// Rewrites memory `id`.
    pub fn update_memory(&self, agent: i64, id: i64, text: &str) -> Result<Value, String> {
        let text = checked(text, "text", MAX_MEMORY_CHARS)?;
        let n = self
            .conn()
            .execute(
                "UPDATE memory SET fact = ?1 WHERE agent_id = ?2 AND id = ?3",
                params![text, agent, id],
            )
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(unknown("memory", id));
        }
        self.changed();
        Ok(json!({ "id": id, "updated": text }))
    }

    /// Removes memory `id`.
    pub fn remove_memory(&self, agent: i64, id: i64) -> Result<Value, String> {
        let n = self
            .conn()
            .execute(
                "DELETE FROM memory WHERE agent_id = ?1 AND id = ?2",
                [agent, id],
            )
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(unknown("memory", id));
        }
        Ok(json!({ "removed": id }))
    }

    /// The memories containing `query` (ignoring case), and those like it
    /// in meaning when recall is configured; or all.
    pub fn list_memories(&self, agent: i64, query: Option<&str>) -> Result<Value, String> {
        let notes = self.for_prompt(agent).map_err(|e| e.to_string())?;
        let query = query.map(str::trim).filter(|q| !q.is_empty());
        let Some(query) = query else {
            let memories: Vec<Value> = notes
                .memories
                .into_iter()
                .map(|(id, text)| json!({ "id": id, "text": text }))
                .collect();
            return Ok(json!({
                "memories": memories,
                "chars": notes.memory_chars,
                "budget_chars": MEMORY_BUDGET_CHARS,
            }));
        };
        let needle = query.to_lowercase();
        let words = notes
            .memories
            .iter()
            .filter(|(_, m)| m.to_lowercase().contains(&needle))
            .map(|(id, _)| *id)
            .collect();
        let (found, how) = self.lookup("memory", agent, query, words)?;
        let text: std::collections::HashMap<i64, String> = notes.memories.into_iter().collect();
        let memories: Vec<Value> = found
            .into_iter()
            .filter_map(|(id, how)| {
                let mut entry = json!({ "id": id, "text": text.get(&id)? });
                merge(&mut entry, how);
                Some(entry)
            })
            .collect();
        let mut result = json!({
            "memories": memories,
            "chars": notes.memory_chars,
            "budget_chars": MEMORY_BUDGET_CHARS,
        });
        search_note(&mut result, how);
        Ok(result)
    }

    /// Adds a scratchpad entry.
    pub fn add_entry(&self, agent: i64, title: &str, body: &str) -> Result<Value, String> {
        let title = checked(title, "title", MAX_TITLE_CHARS)?;
        let body = checked(body, "body", MAX_BODY_CHARS)?;
        let conn = self.conn();
        if count(&conn, "scratchpad", agent)? >= MAX_ENTRIES {
            return Err(format!(
                "the scratchpad is full ({MAX_ENTRIES} entries): remove some first"
            ));
        }
        let now = now_ms();
        conn.execute(
            "INSERT INTO scratchpad (agent_id, title, body, created_at_ms, updated_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?4)",
            params![agent, title, body, now],
        )
        .map_err(|e| e.to_string())?;
        let id = conn.last_insert_rowid();
        drop(conn);
        self.changed();
        Ok(json!({ "id": id, "title": title }))
    }

    /// Changes an entry's title, body or both.
    pub fn update_entry(
        &self,
        agent: i64,
        id: i64,
        title: Option<&str>,
        body: Option<&str>,
    ) -> Result<Value, String> {
        if title.is_none() && body.is_none() {
            return Err("fields `title`, `body`: give at least one to change".into());
        }
        let title = title
            .map(|t| checked(t, "title", MAX_TITLE_CHARS))
            .transpose()?;
        let body = body
            .map(|b| checked(b, "body", MAX_BODY_CHARS))
            .transpose()?;
        let n = self
            .conn()
            .execute(
                "UPDATE scratchpad SET title = ifnull(?1, title), body = ifnull(?2, body), \
                 updated_at_ms = ?3 WHERE agent_id = ?4 AND id = ?5",
                params![title, body, now_ms(), agent, id],
            )
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(unknown("scratchpad entry", id));
        }
        self.changed();
        Ok(json!({ "id": id, "updated": true }))
    }

    /// Removes an entry.
    pub fn remove_entry(&self, agent: i64, id: i64) -> Result<Value, String> {
        let n = self
            .conn()
            .execute(
                "DELETE FROM scratchpad WHERE agent_id = ?1 AND id = ?2",
                [agent, id],
            )
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(unknown("scratchpad entry", id));
        }
        Ok(json!({ "removed": id }))
    }

    /// Every entry's id and title; with `query`, the entries whose title
    /// or body contains it (ignoring case), and those like it in meaning
    /// when recall is configured.
    pub fn list_entries(&self, agent: i64, query: Option<&str>) -> Result<Value, String> {
        let notes = self.for_prompt(agent).map_err(|e| e.to_string())?;
        let query = query.map(str::trim).filter(|q| !q.is_empty());
        let Some(query) = query else {
            let entries: Vec<Value> = notes
                .titles
                .into_iter()
                .map(|(id, title)| json!({ "id": id, "title": title }))
                .collect();
            return Ok(json!({ "entries": entries }));
        };
        let words: Vec<i64> = self
            .conn()
            .prepare_cached(
                "SELECT id FROM scratchpad WHERE agent_id = ?1                  AND instr(lower(title || char(10) || body), lower(?2)) > 0 ORDER BY id",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![agent, query], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| e.to_string())?;
        let (found, how) = self.lookup("scratchpad", agent, query, words)?;
        let titles: std::collections::HashMap<i64, String> = notes.titles.into_iter().collect();
        let entries: Vec<Value> = found
            .into_iter()
            .filter_map(|(id, how)| {
                let mut entry = json!({ "id": id, "title": titles.get(&id)? });
                merge(&mut entry, how);
                Some(entry)
            })
            .collect();
        let mut result = json!({ "entries": entries });
        search_note(&mut result, how);
        Ok(result)
    }

    /// One entry, with its body.
    pub fn read_entry(&self, agent: i64, id: i64) -> Result<Value, String> {
        self.conn()
            .query_row(
                "SELECT title, body, updated_at_ms FROM scratchpad WHERE agent_id = ?1 AND id = ?2",
                [agent, id],
                |r| {
                    Ok(json!({
                        "id": id,
                        "title": r.get::<_, String>(0)?,
                        "body": r.get::<_, String>(1)?,
                        "updated_at_ms": r.get::<_, i64>(2)?,
                    }))
                },
            )
            .optional()
            .map_err(|e| e.to_string())?
            .ok_or_else(|| unknown("scratchpad entry", id))
    }

    /// Session `session`'s notepad, if anything is written there.
    pub fn notepad(&self, session: i64) -> rusqlite::Result<Option<String>> {
        self.conn()
            .prepare_cached("SELECT text FROM notepads WHERE session_id = ?1")?
            .query_row([session], |r| r.get(0))
            .optional()
    }

    /// `notepad {action, text}` in the open session of `agent` on
    /// `(channel, chat)`: replace the notepad, append to it, or clear it.
    pub fn write_notepad(
        &self,
        agent: i64,
        channel: &str,
        chat: &str,
        action: &str,
        text: Option<&str>,
    ) -> Result<Value, String> {
        let conn = self.conn();
        let session: i64 = conn
            .query_row(
                "SELECT id FROM sessions WHERE agent_id = ?1 AND channel = ?2 AND chat = ?3 \
                 AND ended_at_ms IS NULL ORDER BY id DESC LIMIT 1",
                params![agent, channel, chat],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| e.to_string())?
            .ok_or("the notepad belongs to a conversation, and this one has not started")?;
        let current: String = conn
            .query_row(
                "SELECT text FROM notepads WHERE session_id = ?1",
                [session],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let next = match (action, text) {
            ("clear", _) => String::new(),
            ("replace", Some(text)) => text.trim().to_owned(),
            ("append", Some(text)) if current.is_empty() => text.trim().to_owned(),
            ("append", Some(text)) => format!("{}\n{}", current.trim_end(), text.trim()),
            ("replace" | "append", None) => {
                return Err(format!("field `text`: required with action {action:?}"));
            }
            (other, _) => {
                return Err(format!(
                    "field `action`: {other:?} is not an action; use replace, append or clear"
                ));
            }
        };
        let chars = next.chars().count();
        if chars > MAX_NOTEPAD_CHARS {
            return Err(format!(
                "field `text`: the notepad would be {chars} characters, more than the \
                 {MAX_NOTEPAD_CHARS} allowed; replace it with a shorter version"
            ));
        }
        conn.execute(
            "INSERT INTO notepads (session_id, text, updated_at_ms) VALUES (?1, ?2, ?3) \
             ON CONFLICT (session_id) DO UPDATE SET text = excluded.text, updated_at_ms = excluded.updated_at_ms",
            params![session, next, now_ms()],
        )
        .map_err(|e| e.to_string())?;
        Ok(json!({ "notepad": next, "chars": chars }))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `text` trimmed, if it is 1 to `max` characters; else an error naming
/// `field`.
fn checked<'a>(text: &'a str, field: &str, max: usize) -> Result<&'a str, String> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars == 0 {
        return Err(format!("field `{field}`: required, a non-empty string"));
    }
    if chars > max {
        return Err(format!(
            "field `{field}`: {chars} characters, more than the {max} allowed"
        ));
    }
    Ok(text)
}

/// What a lookup found: each entry's id with how it was found (`matched`,
/// `similarity`; `None` by keyword only), and how it searched (`"hybrid"`,
/// the note on why it could not, or `None` without recall).
type Lookup = (Vec<(i64, Option<Value>)>, Option<Value>);

/// `how` (`matched`, `similarity`) added to a listed entry.
fn merge(entry: &mut Value, how: Option<Value>) {
    if let (Some(entry), Some(Value::Object(how))) = (entry.as_object_mut(), how) {
        entry.extend(how.into_iter().filter(|(_, v)| !v.is_null()));
    }
}

/// How a lookup searched, on its result: `"search": "hybrid"`, or
/// `"search": "keyword"` with the note saying why meaning was not.
fn search_note(result: &mut Value, how: Option<Value>) {
    match how {
        Some(Value::String(s)) if s == "hybrid" => result["search"] = json!("hybrid"),
        Some(note) => {
            result["search"] = json!("keyword");
            result["note"] = note;
        }
        None => {}
    }
}

fn count(conn: &Connection, table: &str, agent: i64) -> Result<usize, String> {
    conn.query_row(
        &format!("SELECT count(*) FROM {table} WHERE agent_id = ?1"),
        [agent],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as usize)
    .map_err(|e| e.to_string())
}

fn unknown(what: &str, id: i64) -> String {
    format!("field `id`: no {what} {id}; `list` shows them")
}
