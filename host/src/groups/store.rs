//! The groups' tables: `groups`, `group_members`, `group_deliverables` and
//! `group_posts`, and every change to them.
//!
//! The database is the truth about a group; the shared folder and the
//! canvas view are written from what these functions read. Each change is
//! one statement or one transaction, so a crash leaves a group in a state
//! the engine can resume from.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::GroupError;
use super::plan::{self, Plan};
use crate::agent::profiles;
use crate::store::now_ms;

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

/// A member of a group.
#[derive(Clone, Debug, Serialize)]
pub struct Member {
    /// The agent's id.
    pub agent_id: i64,
    /// The agent's name.
    pub name: String,
    /// The owner's words about its role.
    pub role: String,
    /// Whether it leads.
    pub leader: bool,
    /// `idle`, `working`, `blocked` or `errored`.
    pub state: String,
    /// Its last progress report.
    pub progress: String,
    /// What blocks it, as it said.
    pub blockers: String,
    /// Whether the agent is enabled.
    pub enabled: bool,
}

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

/// Adds agent `agent` (by name) with `role`; the first member leads.
pub fn add_member(
    conn: &Connection,
    group: &Group,
    agent: &str,
    role: &str,
) -> Result<(), GroupError> {
    let profile = agent_named(conn, agent)?;
    if !profile.enabled {
        return Err(GroupError::Disabled(profile.name));
    }
    if role.chars().count() > 2000 {
        return Err(GroupError::Invalid(
            "field `role`: at most 2,000 characters".into(),
        ));
    }
    let members = members(conn, group.id)?;
    if members.iter().any(|m| m.agent_id == profile.id) {
        return Err(GroupError::AlreadyMember {
            agent: profile.name,
            group: group.name.clone(),
        });
    }
    if members.len() >= 20 {
        return Err(GroupError::Invalid(format!(
            "{} has 20 members, the most a group may have",
            group.name
        )));
    }
    conn.execute(
        "INSERT INTO group_members (group_id, agent_id, role, leader, position) \
         VALUES (?1, ?2, ?3, ?4, (SELECT ifnull(max(position), 0) + 1 FROM group_members WHERE group_id = ?1))",
        params![group.id, profile.id, role.trim(), members.is_empty()],
    )?;
    Ok(())
}

/// Removes a member; when it led, the next member leads.
pub fn remove_member(conn: &Connection, group: &Group, agent: &str) -> Result<(), GroupError> {
    let member = member_named(conn, group, agent)?;
    atomic(conn, || {
        conn.execute(
            "DELETE FROM group_members WHERE group_id = ?1 AND agent_id = ?2",
            params![group.id, member.agent_id],
        )?;
        if member.leader {
            conn.execute(
                "UPDATE group_members SET leader = 1 WHERE group_id = ?1 AND position = \
             (SELECT min(position) FROM group_members WHERE group_id = ?1)",
                [group.id],
            )?;
        }
        Ok(())
    })
}

/// Makes member `agent` the leader.
pub fn set_leader(conn: &Connection, group: &Group, agent: &str) -> Result<(), GroupError> {
    let member = member_named(conn, group, agent)?;
    atomic(conn, || {
        conn.execute(
            "UPDATE group_members SET leader = 0 WHERE group_id = ?1",
            [group.id],
        )?;
        conn.execute(
            "UPDATE group_members SET leader = 1 WHERE group_id = ?1 AND agent_id = ?2",
            params![group.id, member.agent_id],
        )?;
        Ok(())
    })
}

/// The members, in the order they joined.
pub fn members(conn: &Connection, group: i64) -> Result<Vec<Member>, GroupError> {
    Ok(conn
        .prepare_cached(
            "SELECT m.agent_id, a.name, m.role, m.leader, m.state, m.progress, m.blockers, a.enabled \
             FROM group_members m JOIN agents a ON a.id = m.agent_id \
             WHERE m.group_id = ?1 ORDER BY m.position",
        )?
        .query_map([group], |r| {
            Ok(Member {
                agent_id: r.get(0)?,
                name: r.get(1)?,
                role: r.get(2)?,
                leader: r.get(3)?,
                state: r.get(4)?,
                progress: r.get(5)?,
                blockers: r.get(6)?,
                enabled: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?)
}

/// A member by agent name.
pub fn member_named(conn: &Connection, group: &Group, agent: &str) -> Result<Member, GroupError> {
    members(conn, group.id)?
        .into_iter()
        .find(|m| m.name.eq_ignore_ascii_case(agent.trim()))
        .ok_or_else(|| GroupError::NotAMember {
            agent: agent.trim().to_owned(),
            group: group.name.clone(),
        })
}

/// Sets a member's state and, when given, its progress and blockers.
pub fn set_member_state(
    conn: &Connection,
    group: i64,
    agent: i64,
    state: &str,
    progress: Option<&str>,
    blockers: Option<&str>,
) -> Result<(), GroupError> {
    conn.execute(
        "UPDATE group_members SET state = ?3, progress = ifnull(?4, progress), \
         blockers = ifnull(?5, blockers) WHERE group_id = ?1 AND agent_id = ?2",
        params![group, agent, state, progress, blockers],
    )?;
    Ok(())
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
