//! A group's deliverables: the approved plan put in place, each one
//! started in a session of its own and ended complete or failed (with what
//! it blocks).

use std::collections::BTreeSet;

use rusqlite::{Connection, params};
use serde::Serialize;

use super::{Group, GroupError, atomic, members};
use crate::groups::plan::Plan;
use hearth_base::store::now_ms;

/// A deliverable's row.
#[derive(Clone, Debug, Serialize)]
pub struct Deliverable {
    /// Its id in the plan (`D1`).
    pub key: String,
    /// Its title.
    pub title: String,
    /// What done means.
    pub description: String,
    /// The member's agent id.
    pub assignee: i64,
    /// The member's name.
    pub assignee_name: String,
    /// The ids it waits for.
    pub depends_on: Vec<String>,
    /// `pending`, `running`, `complete`, `failed` or `blocked`.
    pub status: String,
    /// The member's session for it, once started.
    pub session_id: Option<i64>,
    /// How many times it was started afresh (a restart resumes; it does
    /// not start again).
    pub starts: i64,
    /// The member's result.
    pub result: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
}

/// Puts the approved plan's deliverables in place of every one not yet
/// complete, and starts executing.
pub fn execute(conn: &Connection, group: &Group, plan: &Plan) -> Result<(), GroupError> {
    let members = members(conn, group.id)?;
    atomic(conn, || {
        conn.execute(
            "DELETE FROM group_deliverables WHERE group_id = ?1 AND status != 'complete'",
            [group.id],
        )?;
        for d in &plan.deliverables {
            let assignee = members
                .iter()
                .find(|m| m.name.eq_ignore_ascii_case(d.assignee.trim()))
                .ok_or_else(|| GroupError::NotAMember {
                    agent: d.assignee.clone(),
                    group: group.name.clone(),
                })?;
            conn.execute(
            "INSERT INTO group_deliverables (group_id, key, round, title, description, assignee, depends_on) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                group.id,
                d.id,
                group.plan_round,
                d.title,
                d.description,
                assignee.agent_id,
                serde_json::to_string(&d.depends_on).unwrap_or_else(|_| "[]".into())
            ],
        )?;
        }
        conn.execute(
            "UPDATE group_members SET state = 'idle', blockers = '' WHERE group_id = ?1",
            [group.id],
        )?;
        conn.execute(
            "UPDATE groups SET status = 'executing', plan_errors = NULL, replan_reason = NULL, \
         updated_at_ms = ?2 WHERE id = ?1",
            params![group.id, now_ms()],
        )?;
        Ok(())
    })
}

/// The deliverables, in plan order.
pub fn deliverables(conn: &Connection, group: i64) -> Result<Vec<Deliverable>, GroupError> {
    Ok(conn
        .prepare_cached(
            "SELECT d.key, d.title, d.description, d.assignee, a.name, d.depends_on, d.status, \
             d.session_id, d.starts, d.result, d.error \
             FROM group_deliverables d JOIN agents a ON a.id = d.assignee \
             WHERE d.group_id = ?1 ORDER BY d.round, d.id",
        )?
        .query_map([group], |r| {
            let depends: String = r.get(5)?;
            Ok(Deliverable {
                key: r.get(0)?,
                title: r.get(1)?,
                description: r.get(2)?,
                assignee: r.get(3)?,
                assignee_name: r.get(4)?,
                depends_on: serde_json::from_str(&depends).unwrap_or_default(),
                status: r.get(6)?,
                session_id: r.get(7)?,
                starts: r.get(8)?,
                result: r.get(9)?,
                error: r.get(10)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?)
}

/// The ids of the complete deliverables.
pub fn complete_keys(conn: &Connection, group: i64) -> Result<BTreeSet<String>, GroupError> {
    Ok(conn
        .prepare_cached(
            "SELECT key FROM group_deliverables WHERE group_id = ?1 AND status = 'complete'",
        )?
        .query_map([group], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Marks a pending deliverable running, in a session of its own; counts a
/// fresh start. Returns the session.
pub fn start_deliverable(
    conn: &Connection,
    group: &Group,
    d: &Deliverable,
) -> Result<i64, GroupError> {
    atomic(conn, || {
        conn.execute(
        "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (?1, 'group', ?2, ?3)",
        params![d.assignee, format!("{}/{}", group.name, d.key), now_ms()],
    )?;
        let session = conn.last_insert_rowid();
        conn.execute(
        "UPDATE group_deliverables SET status = 'running', session_id = ?3, starts = starts + 1, \
         started_at_ms = ?4 WHERE group_id = ?1 AND key = ?2",
        params![group.id, d.key, session, now_ms()],
    )?;
        conn.execute(
        "UPDATE group_members SET state = 'working', blockers = '' WHERE group_id = ?1 AND agent_id = ?2",
        params![group.id, d.assignee],
    )?;
        Ok(session)
    })
}

/// Ends a running deliverable: `complete` with its result, or `failed`
/// with why (its member errored, everything after it blocked).
pub fn finish_deliverable(
    conn: &Connection,
    group: i64,
    d: &Deliverable,
    outcome: Result<&str, &str>,
) -> Result<(), GroupError> {
    atomic(conn, || {
        let (status, result, error, member) = match outcome {
            Ok(result) => ("complete", Some(result), None, "idle"),
            Err(why) => ("failed", None, Some(why), "errored"),
        };
        conn.execute(
        "UPDATE group_deliverables SET status = ?3, result = ?4, error = ?5, finished_at_ms = ?6 \
         WHERE group_id = ?1 AND key = ?2 AND status = 'running'",
        params![group, d.key, status, result, error, now_ms()],
    )?;
        conn.execute(
            "UPDATE group_members SET state = ?3 WHERE group_id = ?1 AND agent_id = ?2",
            params![group, d.assignee, member],
        )?;
        if outcome.is_err() {
            // Everything that waits on it, directly or not, is blocked.
            let all = deliverables(conn, group)?;
            let mut blocked: BTreeSet<&str> = [d.key.as_str()].into();
            loop {
                let more: Vec<&str> = all
                    .iter()
                    .filter(|x| x.status == "pending" && !blocked.contains(x.key.as_str()))
                    .filter(|x| x.depends_on.iter().any(|k| blocked.contains(k.as_str())))
                    .map(|x| x.key.as_str())
                    .collect();
                if more.is_empty() {
                    break;
                }
                for key in more {
                    conn.execute(
                        "UPDATE group_deliverables SET status = 'blocked', error = ?3 \
                     WHERE group_id = ?1 AND key = ?2",
                        params![group, key, format!("blocked: {} failed", d.key)],
                    )?;
                    blocked.insert(key);
                }
            }
        }
        Ok(())
    })
}
