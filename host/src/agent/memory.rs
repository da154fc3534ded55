//! The agent's memory: short facts it keeps with `remember`, drops with
//! `forget`, lists with `recall`, and sees in every prompt.

use std::sync::Mutex;

use rusqlite::Connection;
use serde_json::{Value, json};

/// The most facts one agent keeps; the prompt must stay small.
pub const MAX_FACTS: usize = 200;
/// The longest fact, in characters.
pub const MAX_FACT_CHARS: usize = 500;

/// One agent's facts, in SQLite.
pub struct Memory {
    conn: Mutex<Connection>,
    agent_id: i64,
}

impl Memory {
    /// The memory of `agent_id`, on its own connection.
    pub fn new(conn: Connection, agent_id: i64) -> Memory {
        Memory {
            conn: Mutex::new(conn),
            agent_id,
        }
    }

    /// Every fact as `(id, fact)`, oldest first.
    pub fn facts(&self) -> rusqlite::Result<Vec<(i64, String)>> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare_cached("SELECT id, fact FROM memory WHERE agent_id = ?1 ORDER BY id")?;
        let rows = stmt.query_map([self.agent_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }

    /// `remember {fact}`.
    pub fn remember(&self, fact: &str) -> Result<Value, String> {
        let fact = fact.trim();
        if fact.is_empty() || fact.chars().count() > MAX_FACT_CHARS {
            return Err(format!("a fact must be 1-{MAX_FACT_CHARS} characters"));
        }
        let conn = self.conn();
        let count: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM memory WHERE agent_id = ?1",
                [self.agent_id],
                |r| r.get(0),
            )
            .map_err(|e| e.to_string())?;
        if count as usize >= MAX_FACTS {
            return Err(format!(
                "memory is full ({MAX_FACTS} facts): forget something first"
            ));
        }
        conn.execute(
            "INSERT INTO memory (agent_id, fact, created_at_ms) VALUES (?1, ?2, ?3)",
            rusqlite::params![self.agent_id, fact, crate::store::now_ms()],
        )
        .map_err(|e| e.to_string())?;
        Ok(json!({ "id": conn.last_insert_rowid(), "remembered": fact }))
    }

    /// `forget {id}`.
    pub fn forget(&self, id: i64) -> Result<Value, String> {
        let n = self
            .conn()
            .execute(
                "DELETE FROM memory WHERE agent_id = ?1 AND id = ?2",
                [self.agent_id, id],
            )
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!("no fact with id {id}; use recall to list them"));
        }
        Ok(json!({ "forgot": id }))
    }

    /// `recall {query?}`: facts containing `query` (case-insensitive), or all.
    pub fn recall(&self, query: Option<&str>) -> Result<Value, String> {
        let needle = query.map(str::to_lowercase).unwrap_or_default();
        let facts: Vec<Value> = self
            .facts()
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|(_, f)| f.to_lowercase().contains(&needle))
            .map(|(id, fact)| json!({ "id": id, "fact": fact }))
            .collect();
        Ok(json!({ "facts": facts }))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}
