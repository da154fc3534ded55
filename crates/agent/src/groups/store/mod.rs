//! The groups' tables: `groups` here, `group_members` in `members.rs`,
//! `group_deliverables` in `deliverables.rs`, `group_posts` in `posts.rs`,
//! and every change to them.
//!
//! The database is the truth about a group; the shared folder and the
//! canvas view are written from what these functions read. Each change is
//! one statement or one transaction, so a crash leaves a group in a state
//! the engine can resume from.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

mod deliverables;
mod members;
mod posts;

pub use deliverables::{
    Deliverable, complete_keys, deliverables, execute, finish_deliverable, start_deliverable,
};
pub use members::{
    Member, add_member, member_named, members, remove_member, set_leader, set_member_state,
};
pub use posts::{Post, post, posts};

use super::GroupError;
use super::plan::{self, Plan};
use crate::agent::profiles;
use hearth_base::store::now_ms;

/// Where a group stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// No mission, or between missions.
    Idle,
    /// The leader is writing the plan.
    Planning,
    /// The plan waits for the owner (or, with problems listed, for the
    /// owner to assign it by hand).
    AwaitingApproval,
    /// The members are carrying out the plan.
    Executing,
    /// Every deliverable is complete and the summary delivered.
    Complete,
    /// The mission stopped: planning failed.
    Failed,
    /// Put away; kept for the record.
    Archived,
}

impl Status {
    /// Its name in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Planning => "planning",
            Status::AwaitingApproval => "awaiting-approval",
            Status::Executing => "executing",
            Status::Complete => "complete",
            Status::Failed => "failed",
            Status::Archived => "archived",
        }
    }

    fn parse(s: &str) -> Status {
        match s {
            "planning" => Status::Planning,
            "awaiting-approval" => Status::AwaitingApproval,
            "executing" => Status::Executing,
            "complete" => Status::Complete,
            "failed" => Status::Failed,
            "archived" => Status::Archived,
            _ => Status::Idle,
        }
    }

    /// Whether a mission is under way (planning, waiting or executing).
    pub fn busy(self) -> bool {
        matches!(
            self,
            Status::Planning | Status::AwaitingApproval | Status::Executing
        )
    }
}

/// A group's row.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    /// Its id.
    pub id: i64,
    /// Its unique name.
    pub name: String,
    /// Where it stands.
    pub status: Status,
    /// The current mission.
    pub mission: Option<String>,
    /// Whether a plan runs without the owner's approval.
    pub auto_execute: bool,
    /// The current plan, as the leader (or the owner) wrote it.
    pub plan: Option<Plan>,
    /// The plan's problems when the leader's tries failed: the owner
    /// assigns it by hand.
    pub plan_errors: Vec<String>,
    /// Failed plan checks in this round.
    pub plan_tries: i64,
    /// Plans made for this mission (re-plans add one).
    pub plan_round: i64,
    /// Why the leader plans again: a failure, or the owner's rejection.
    pub replan_reason: Option<String>,
    /// The leader's final summary.
    pub summary: Option<String>,
}

/// Runs `change` all or nothing: inside a savepoint, so it nests in a
/// caller's (a milestone stored with the message that tells the owner).
pub fn atomic<T>(
    conn: &Connection,
    change: impl FnOnce() -> Result<T, GroupError>,
) -> Result<T, GroupError> {
    conn.execute_batch("SAVEPOINT group_change")?;
    match change() {
        Ok(value) => {
            conn.execute_batch("RELEASE group_change")?;
            Ok(value)
        }
        Err(e) => {
            conn.execute_batch("ROLLBACK TO group_change; RELEASE group_change")?;
            Err(e)
        }
    }
}

/// Creates a group, named `name` or given a free random name.
pub fn create(conn: &Connection, name: Option<&str>, random: u64) -> Result<Group, GroupError> {
    let name = match name {
        Some(name) => {
            super::names::check(name).map_err(GroupError::Invalid)?;
            if find(conn, name)?.is_some() {
                return Err(GroupError::Duplicate(name.to_owned()));
            }
            name.to_owned()
        }
        None => {
            let taken: Vec<String> = conn
                .prepare_cached("SELECT name FROM groups")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            super::names::pick(&taken, random)
        }
    };
    conn.execute(
        "INSERT INTO groups (name, created_at_ms, updated_at_ms) VALUES (?1, ?2, ?2)",
        params![name, now_ms()],
    )?;
    get(conn, &name)
}

/// A group by name (ignoring case).
pub fn get(conn: &Connection, name: &str) -> Result<Group, GroupError> {
    find(conn, name)?.ok_or_else(|| GroupError::Unknown(name.trim().to_owned()))
}

/// A group by id.
pub fn by_id(conn: &Connection, id: i64) -> Result<Group, GroupError> {
    conn.prepare_cached(&format!("{SELECT} WHERE id = ?1"))?
        .query_row([id], row)
        .optional()?
        .ok_or_else(|| GroupError::Unknown(format!("#{id}")))
}

/// Every group, archived ones last.
pub fn list(conn: &Connection) -> Result<Vec<Group>, GroupError> {
    Ok(conn
        .prepare_cached(&format!(
            "{SELECT} ORDER BY status = 'archived', name COLLATE NOCASE"
        ))?
        .query_map([], row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// The groups the engine works on.
pub fn active(conn: &Connection) -> Result<Vec<Group>, GroupError> {
    Ok(conn
        .prepare_cached(&format!(
            "{SELECT} WHERE status IN ('planning', 'awaiting-approval', 'executing') ORDER BY id"
        ))?
        .query_map([], row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Renames a group.
pub fn rename(conn: &Connection, group: &Group, new: &str) -> Result<(), GroupError> {
    super::names::check(new).map_err(GroupError::Invalid)?;
    if find(conn, new)?.is_some_and(|g| g.id != group.id) {
        return Err(GroupError::Duplicate(new.to_owned()));
    }
    touch(conn, "name = ?2", params![group.id, new])
}

/// Sets the group's status.
pub fn set_status(conn: &Connection, group: i64, status: Status) -> Result<(), GroupError> {
    touch(conn, "status = ?2", params![group, status.as_str()])
}

/// Starts a mission: a fresh plan round, nothing left of the last mission.
pub fn start_mission(conn: &Connection, group: i64, mission: &str) -> Result<(), GroupError> {
    atomic(conn, || {
        conn.execute(
            "DELETE FROM group_deliverables WHERE group_id = ?1",
            [group],
        )?;
        conn.execute("DELETE FROM group_posts WHERE group_id = ?1", [group])?;
        conn.execute(
        "UPDATE group_members SET state = 'idle', progress = '', blockers = '' WHERE group_id = ?1",
        [group],
    )?;
        conn.execute(
            "UPDATE groups SET status = 'planning', mission = ?2, plan = NULL, plan_errors = NULL, \
         plan_tries = 0, plan_round = 1, replan_reason = NULL, summary = NULL, updated_at_ms = ?3 \
         WHERE id = ?1",
            params![group, mission, now_ms()],
        )?;
        Ok(())
    })
}

/// Records a failed plan check of this round; returns the tries so far.
pub fn plan_refused(conn: &Connection, group: i64) -> Result<i64, GroupError> {
    Ok(conn.query_row(
        "UPDATE groups SET plan_tries = plan_tries + 1, updated_at_ms = ?2 WHERE id = ?1 \
         RETURNING plan_tries",
        params![group, now_ms()],
        |r| r.get(0),
    )?)
}

/// Stores the plan of this round and its problems (none: it may run once
/// approved), and the status that follows.
pub fn store_plan(
    conn: &Connection,
    group: i64,
    plan: Option<&Plan>,
    errors: &[String],
    status: Status,
) -> Result<(), GroupError> {
    let plan = plan.map(|p| serde_json::to_string(p).unwrap_or_default());
    let errors = (!errors.is_empty()).then(|| serde_json::to_string(errors).unwrap_or_default());
    touch(
        conn,
        "plan = ?2, plan_errors = ?3, status = ?4",
        params![group, plan, errors, status.as_str()],
    )
}

/// Sends the leader back to planning: `reason` is what it is told.
pub fn replan(conn: &Connection, group: i64, reason: &str) -> Result<(), GroupError> {
    touch(
        conn,
        "status = 'planning', plan_round = plan_round + 1, plan_tries = 0, plan_errors = NULL, \
         replan_reason = ?2",
        params![group, reason],
    )
}

/// Stores the final summary; the group is complete.
pub fn complete(conn: &Connection, group: i64, summary: &str) -> Result<(), GroupError> {
    touch(
        conn,
        "status = 'complete', summary = ?2",
        params![group, summary],
    )
}

/// The agent named `name`, or an error listing the agents there are.
pub fn agent_named(conn: &Connection, name: &str) -> Result<profiles::Profile, GroupError> {
    let all = profiles::list(conn)?;
    all.iter()
        .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
        .cloned()
        .ok_or_else(|| GroupError::NotAnAgent {
            name: name.trim().to_owned(),
            known: all
                .iter()
                .filter(|p| p.enabled)
                .map(|p| p.name.clone())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Validates `plan` against the group's members and finished work.
pub fn check_plan(
    conn: &Connection,
    group: &Group,
    plan: &Plan,
) -> Result<Vec<String>, GroupError> {
    let names: Vec<String> = members(conn, group.id)?
        .into_iter()
        .map(|m| m.name)
        .collect();
    let complete = complete_keys(conn, group.id)?;
    Ok(plan::validate(
        plan,
        &plan::Context {
            members: &names,
            complete: &complete,
        },
    ))
}

const SELECT: &str = "SELECT id, name, status, mission, auto_execute, plan, plan_errors, plan_tries, \
                      plan_round, replan_reason, summary FROM groups";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Group> {
    let status: String = r.get(2)?;
    let plan: Option<String> = r.get(5)?;
    let errors: Option<String> = r.get(6)?;
    Ok(Group {
        id: r.get(0)?,
        name: r.get(1)?,
        status: Status::parse(&status),
        mission: r.get(3)?,
        auto_execute: r.get(4)?,
        plan: plan.and_then(|p| serde_json::from_str(&p).ok()),
        plan_errors: errors
            .and_then(|e| serde_json::from_str(&e).ok())
            .unwrap_or_default(),
        plan_tries: r.get(7)?,
        plan_round: r.get(8)?,
        replan_reason: r.get(9)?,
        summary: r.get(10)?,
    })
}

fn find(conn: &Connection, name: &str) -> Result<Option<Group>, GroupError> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} WHERE name = ?1 COLLATE NOCASE"))?
        .query_row([name.trim()], row)
        .optional()?)
}

/// Updates `set` on group `?1`, and its time.
fn touch(conn: &Connection, set: &str, params: impl rusqlite::Params) -> Result<(), GroupError> {
    conn.execute(
        &format!(
            "UPDATE groups SET {set}, updated_at_ms = {} WHERE id = ?1",
            now_ms()
        ),
        params,
    )?;
    Ok(())
}
