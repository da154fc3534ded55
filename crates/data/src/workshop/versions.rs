//! Every content the agent's scripts and pages had, so a bad edit can be
//! rolled back.
//!
//! A save records the new content as the next version (`1, 2, ...` per
//! name); an unchanged content records nothing, so the file watcher seeing
//! a save that `write_script` already recorded adds no version. A deletion
//! is a version without content. A rollback is not done here: the caller
//! saves the old content through its usual path (validation, hot reload),
//! which records it as a new version, so history only ever grows.

use ring::digest::{SHA256, digest};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use hearth_base::store::{Cold, now_ms};

/// The versions table, on the store's cold connection.
#[derive(Clone)]
pub struct Versions {
    cold: Cold,
}

/// What a version belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A file under `$HEARTH_HOME`: a tool, a library, a skill's file.
    Script,
    /// A page, by its path.
    Page,
}

/// One version, without its content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Version {
    /// 1, 2, ... per name.
    pub version: i64,
    /// SHA-256 of the content, hex; empty for a deletion.
    pub hash: String,
    /// Bytes of content.
    pub size: i64,
    /// Whether this version is a deletion.
    pub deleted: bool,
    /// Who saved it.
    pub author: String,
    /// What the save was.
    pub note: String,
    /// When, in ms since the epoch.
    pub created_at_ms: i64,
}

impl Versions {
    /// Versions kept on `cold`.
    pub fn new(cold: Cold) -> Versions {
        Versions { cold }
    }

    /// Records `content` (`None`: deleted) as the newest version of
    /// `name`, unless it is already the newest; returns the new version's
    /// number.
    pub fn record(
        &self,
        kind: Kind,
        name: &str,
        content: Option<&str>,
        author: &str,
        note: &str,
    ) -> rusqlite::Result<Option<i64>> {
        let hash = content.map(sha256_hex).unwrap_or_default();
        let mut conn = self.cold.lock();
        // Most calls (every script at every start) change nothing: a plain
        // read answers them without taking the store's write lock.
        if unchanged(&newest(&conn, kind, name)?, content, &hash) {
            return Ok(None);
        }
        // Immediate: two savers of one name never take the same number.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let newest = newest(&tx, kind, name)?;
        if unchanged(&newest, content, &hash) {
            return Ok(None);
        }
        let version = newest.map_or(1, |(v, _, _)| v + 1);
        tx.execute(
            "INSERT INTO versions (kind, name, version, content, hash, author, note, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![kind.as_str(), name, version, content, hash, author, note, now_ms()],
        )?;
        tx.commit()?;
        Ok(Some(version))
    }

    /// Every version of `name`, oldest first.
    pub fn history(&self, kind: Kind, name: &str) -> rusqlite::Result<Vec<Version>> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT version, hash, length(CAST(content AS BLOB)), content IS NULL, author, note, created_at_ms \
             FROM versions WHERE kind = ?1 AND name = ?2 ORDER BY version",
        )?;
        stmt.query_map(params![kind.as_str(), name], |r| {
            Ok(Version {
                version: r.get(0)?,
                hash: r.get(1)?,
                size: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                deleted: r.get(3)?,
                author: r.get(4)?,
                note: r.get(5)?,
                created_at_ms: r.get(6)?,
            })
        })?
        .collect()
    }

    /// The content of version `version` of `name`: `None` when there is no
    /// such version, `Some(None)` when it is a deletion.
    pub fn content(
        &self,
        kind: Kind,
        name: &str,
        version: i64,
    ) -> rusqlite::Result<Option<Option<String>>> {
        self.cold
            .lock()
            .query_row(
                "SELECT content FROM versions WHERE kind = ?1 AND name = ?2 AND version = ?3",
                params![kind.as_str(), name, version],
                |r| r.get(0),
            )
            .optional()
    }
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Script => "script",
            Kind::Page => "page",
        }
    }
}

/// The newest version of `name`: its number, hash, and whether it is a
/// deletion.
fn newest(
    conn: &Connection,
    kind: Kind,
    name: &str,
) -> rusqlite::Result<Option<(i64, String, bool)>> {
    conn.query_row(
        "SELECT version, hash, content IS NULL FROM versions \
         WHERE kind = ?1 AND name = ?2 ORDER BY version DESC LIMIT 1",
        params![kind.as_str(), name],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .optional()
}

/// Whether `content` (with `hash`) is what `newest` already holds; nothing
/// recorded and nothing there is unchanged too.
fn unchanged(newest: &Option<(i64, String, bool)>, content: Option<&str>, hash: &str) -> bool {
    match newest {
        Some((_, newest_hash, deleted)) => *deleted == content.is_none() && newest_hash == hash,
        None => content.is_none(),
    }
}

/// SHA-256 of `text`, as lowercase hex.
pub fn sha256_hex(text: &str) -> String {
    digest(&SHA256, text.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_unchanged_saves_deletions_and_history() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        hearth_base::store::Store::open(&path).unwrap();
        let versions = Versions::new(Cold::open(&path).unwrap());
        let record = |content: Option<&str>| {
            versions
                .record(Kind::Script, "tools/a.lua", content, "main", "saved")
                .unwrap()
        };
        assert_eq!(record(None), None, "nothing there, nothing to record");
        assert_eq!(record(Some("one")), Some(1));
        assert_eq!(record(Some("one")), None, "unchanged");
        assert_eq!(record(Some("two")), Some(2));
        assert_eq!(record(None), Some(3));
        assert_eq!(record(None), None);
        assert_eq!(record(Some("one")), Some(4));
        let history = versions.history(Kind::Script, "tools/a.lua").unwrap();
        let shown: Vec<(i64, bool, i64)> = history
            .iter()
            .map(|v| (v.version, v.deleted, v.size))
            .collect();
        assert_eq!(
            shown,
            [(1, false, 3), (2, false, 3), (3, true, 0), (4, false, 3)]
        );
        assert_eq!(history[0].hash, history[3].hash);
        assert_eq!(
            versions.content(Kind::Script, "tools/a.lua", 2).unwrap(),
            Some(Some("two".into()))
        );
        assert_eq!(
            versions.content(Kind::Script, "tools/a.lua", 3).unwrap(),
            Some(None)
        );
        assert_eq!(
            versions.content(Kind::Script, "tools/a.lua", 9).unwrap(),
            None
        );
        assert!(
            versions
                .history(Kind::Page, "tools/a.lua")
                .unwrap()
                .is_empty()
        );
    }
}
