//! A group's members: agents with the owner's words about their role, one
//! of them leading, each with its state, progress and blockers.

use rusqlite::{Connection, params};
use serde::Serialize;

use super::{Group, GroupError, agent_named, atomic};

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
