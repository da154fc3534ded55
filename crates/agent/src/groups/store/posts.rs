//! A group's comms log: the members' reports, decisions and interface
//! entries, and hearth's own notes.

use rusqlite::{Connection, params};
use serde::Serialize;

use super::GroupError;
use hearth_base::store::now_ms;

/// An entry of the comms log.
#[derive(Clone, Debug, Serialize)]
pub struct Post {
    /// Its id.
    pub id: i64,
    /// Who posted (an agent's name), or none for hearth itself.
    pub who: Option<String>,
    /// The deliverable it is about.
    pub deliverable: Option<String>,
    /// `status`, `finding`, `change`, `question`, `complete`, `decision`,
    /// `interface` or `system`.
    pub kind: String,
    /// What it says.
    pub content: String,
    /// When, in ms since the epoch.
    pub at_ms: i64,
}

/// Adds an entry to the comms log.
pub fn post(
    conn: &Connection,
    group: i64,
    agent: Option<i64>,
    deliverable: Option<&str>,
    kind: &str,
    content: &str,
) -> Result<(), GroupError> {
    conn.execute(
        "INSERT INTO group_posts (group_id, agent_id, deliverable, kind, content, at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![group, agent, deliverable, kind, content, now_ms()],
    )?;
    Ok(())
}

/// The newest `limit` posts (of `kind`, when given), oldest first.
pub fn posts(
    conn: &Connection,
    group: i64,
    kind: Option<&str>,
    limit: i64,
) -> Result<Vec<Post>, GroupError> {
    let mut posts: Vec<Post> = conn
        .prepare_cached(
            "SELECT p.id, a.name, p.deliverable, p.kind, p.content, p.at_ms \
             FROM group_posts p LEFT JOIN agents a ON a.id = p.agent_id \
             WHERE p.group_id = ?1 AND (?2 IS NULL OR p.kind = ?2) ORDER BY p.id DESC LIMIT ?3",
        )?
        .query_map(params![group, kind, limit], |r| {
            Ok(Post {
                id: r.get(0)?,
                who: r.get(1)?,
                deliverable: r.get(2)?,
                kind: r.get(3)?,
                content: r.get(4)?,
                at_ms: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    posts.reverse();
    Ok(posts)
}
