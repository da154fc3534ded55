//! Standing grants: "always allow this exact call".
//!
//! A grant is keyed by the full SHA-256 fingerprint of the tool and its
//! arguments, so it covers one exact call and nothing else: a command that
//! differs by one byte asks again. Grants are read from SQLite on every
//! ask, not cached, so `hearth approvals revoke` takes effect at once, even
//! while the daemon runs.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use hearth_base::store::{Cold, now_ms};

/// One grant, as `hearth approvals` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// Its number, for `revoke`.
    pub id: i64,
    /// The tool.
    pub tool: String,
    /// The exact arguments it allows.
    pub args: Value,
    /// The shell command line, for shell tools.
    pub command: Option<String>,
    /// Who granted it.
    pub granted_by: String,
    /// When (Unix ms).
    pub created_at_ms: i64,
    /// How many calls it let through.
    pub uses: i64,
    /// When it last let one through.
    pub last_used_at_ms: Option<i64>,
    /// When it was revoked, if it was.
    pub revoked_at_ms: Option<i64>,
}

/// The grants table, as the policy uses it.
pub struct Grants {
    conn: Cold,
}

impl Grants {
    /// Grants stored on the shared cold connection.
    pub fn new(conn: Cold) -> Grants {
        Grants { conn }
    }

    /// Whether an active grant covers `fingerprint`; counts the use.
    pub fn take(&self, fingerprint: &str) -> rusqlite::Result<bool> {
        let conn = self.conn.lock();
        let id: Option<i64> = conn
            .query_row(
                "SELECT id FROM grants WHERE fingerprint = ?1 AND revoked_at_ms IS NULL",
                [fingerprint],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = id {
            conn.execute(
                "UPDATE grants SET uses = uses + 1, last_used_at_ms = ?1 WHERE id = ?2",
                params![now_ms(), id],
            )?;
        }
        Ok(id.is_some())
    }

    /// Stores a grant for one exact call (a second grant of the same call
    /// changes nothing).
    pub fn add(
        &self,
        tool: &str,
        fingerprint: &str,
        args: &Value,
        command: Option<&str>,
        by: &str,
    ) -> rusqlite::Result<()> {
        self.conn.lock().execute(
            "INSERT INTO grants (tool, fingerprint, args, command, granted_by, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            params![tool, fingerprint, args.to_string(), command, by, now_ms()],
        )?;
        Ok(())
    }
}

/// Every grant, newest first; revoked ones only with `all`.
pub fn list(conn: &Connection, all: bool) -> rusqlite::Result<Vec<Grant>> {
    let mut stmt = conn.prepare(
        "SELECT id, tool, args, command, granted_by, created_at_ms, uses, last_used_at_ms, \
         revoked_at_ms FROM grants WHERE ?1 OR revoked_at_ms IS NULL ORDER BY id DESC",
    )?;
    let rows = stmt.query_map([all], |r| {
        let args: String = r.get(2)?;
        Ok(Grant {
            id: r.get(0)?,
            tool: r.get(1)?,
            args: serde_json::from_str(&args).unwrap_or(Value::String(args)),
            command: r.get(3)?,
            granted_by: r.get(4)?,
            created_at_ms: r.get(5)?,
            uses: r.get(6)?,
            last_used_at_ms: r.get(7)?,
            revoked_at_ms: r.get(8)?,
        })
    })?;
    rows.collect()
}

/// Revokes grant `id`; returns whether an active grant had that id.
pub fn revoke(conn: &Connection, id: i64) -> rusqlite::Result<bool> {
    let changed = conn.execute(
        "UPDATE grants SET revoked_at_ms = ?1 WHERE id = ?2 AND revoked_at_ms IS NULL",
        params![now_ms(), id],
    )?;
    Ok(changed == 1)
}
