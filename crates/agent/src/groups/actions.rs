//! What the owner and the main agent ask of groups: `manage_groups` and
//! `assign_mission` (the main agent), `/groups` and `hearth groups` (the
//! owner), one set of actions behind them all.
//!
//! Deciding a plan (`approve`, `reject`, `assign`, `plan`) is the owner's
//! alone: an agent never approves its own group's work.

use serde_json::{Value, json};

use super::plan;
use super::store::{self, Group, Status};
use super::{GroupError, Groups, view};

/// Who asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// The main agent, through its tools.
    Agent,
    /// The owner, at a channel or the terminal.
    Owner,
}

/// `manage_groups`' help.
pub const HELP: &str = "manage_groups actions:
- list: every group with its status and members
- show {group}: members, deliverables, the comms log
- create {name?, auto_execute?}: a new group; without a name it gets a random one (brisk-crew)
- rename {group, new_name}
- add_member {group, agent, role?}: an existing agent joins, with the owner's words about its role; the first member leads
- remove_member {group, agent}
- set_leader {group, agent}
- archive {group}
Give a group its mission with assign_mission {group, mission}. The owner approves plans.";

/// The longest mission.
const MAX_MISSION_CHARS: usize = 20_000;

impl Groups {
    /// Runs one action of `args["action"]` for `actor`.
    pub fn act(&self, actor: Actor, args: &Value) -> Result<Value, String> {
        let action = args["action"].as_str().unwrap_or_default();
        let text = |field: &str| -> Result<&str, String> {
            args[field]
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| format!("field `{field}`: required"))
        };
        let group = || -> Result<Group, String> {
            store::get(&self.cold.lock(), text("group")?).map_err(|e| e.to_string())
        };
        let owner_only = || -> Result<(), String> {
            match actor {
                Actor::Owner => Ok(()),
                Actor::Agent => Err(format!(
                    "only the owner may {action} a group's plan (the card, /groups, hearth groups)"
                )),
            }
        };
        let result = match action {
            "help" => return Ok(json!({ "help": HELP })),
            "list" => return self.list(),
            "show" => return self.show(&group()?),
            "create" => {
                let name = args["name"]
                    .as_str()
                    .map(str::trim)
                    .filter(|n| !n.is_empty());
                let created = {
                    let conn = self.cold.lock();
                    store::create(&conn, name, random()).and_then(|g| {
                        let auto = args["auto_execute"]
                            .as_bool()
                            .unwrap_or(self.config.auto_execute);
                        conn.execute(
                            "UPDATE groups SET auto_execute = ?2 WHERE id = ?1",
                            rusqlite::params![g.id, auto],
                        )?;
                        Ok(g)
                    })
                };
                let g = created.map_err(|e| e.to_string())?;
                self.changed(g.id);
                return Ok(json!({ "ok": true, "group": g.name }));
            }
            "rename" => {
                let g = group()?;
                let new_name = text("new_name")?;
                store::rename(&self.cold.lock(), &g, new_name).map(|()| {
                    // The folder follows; the next change rewrites it anyway.
                    let old = self.dir.join(&g.name);
                    if old.exists() {
                        if let Err(e) = std::fs::rename(&old, self.dir.join(new_name)) {
                            tracing::warn!(group = %new_name, "cannot move the group's folder: {e}");
                        }
                    }
                    (g.id, format!("renamed {} to {new_name}", g.name))
                })
            }
            "add_member" => {
                let g = group()?;
                let role = args["role"].as_str().unwrap_or_default();
                store::add_member(&self.cold.lock(), &g, text("agent")?, role).map(|()| {
                    (
                        g.id,
                        format!("{} joined {}", text("agent").unwrap_or_default(), g.name),
                    )
                })
            }
            "remove_member" => {
                let g = group()?;
                if g.status.busy() {
                    return Err(busy(&g, "members leave between missions").to_string());
                }
                store::remove_member(&self.cold.lock(), &g, text("agent")?).map(|()| {
                    (
                        g.id,
                        format!("{} left {}", text("agent").unwrap_or_default(), g.name),
                    )
                })
            }
            "set_leader" => {
                let g = group()?;
                store::set_leader(&self.cold.lock(), &g, text("agent")?).map(|()| {
                    (
                        g.id,
                        format!("{} leads {}", text("agent").unwrap_or_default(), g.name),
                    )
                })
            }
            "archive" => {
                let g = group()?;
                store::set_status(&self.cold.lock(), g.id, Status::Archived)
                    .map(|()| (g.id, format!("archived {}", g.name)))
            }
            "mission" => {
                let g = group()?;
                let mission = text("mission")?;
                self.mission(&g, mission).map(|()| {
                    (
                        g.id,
                        format!(
                            "{} is planning its mission; the plan comes to the owner",
                            g.name
                        ),
                    )
                })
            }
            "approve" => {
                owner_only()?;
                let g = group()?;
                self.approve(&g, "owner")
                    .map(|()| (g.id, format!("{} is executing its plan", g.name)))
            }
            "reject" => {
                owner_only()?;
                let g = group()?;
                let reason = args["reason"].as_str().unwrap_or_default();
                self.reject(&g, reason, "owner")
                    .map(|()| (g.id, format!("{}'s plan went back to its leader", g.name)))
            }
            "assign" => {
                owner_only()?;
                let g = group()?;
                self.assign(&g, text("deliverable")?, text("agent")?)
            }
            "plan" => {
                owner_only()?;
                let g = group()?;
                self.owner_plan(&g, text("plan")?)
            }
            other => {
                return Err(format!(
                    "field `action`: unknown action {other:?}; try \"help\""
                ));
            }
        };
        let (id, done) = result.map_err(|e| e.to_string())?;
        self.changed(id);
        self.poke();
        Ok(json!({ "ok": true, "done": done }))
    }

    /// Gives `group` its mission: the leader plans it next.
    fn mission(&self, group: &Group, mission: &str) -> Result<(), GroupError> {
        if group.status == Status::Archived || group.status.busy() {
            return Err(busy(group, "a group takes one mission at a time"));
        }
        if mission.chars().count() > MAX_MISSION_CHARS {
            return Err(GroupError::Invalid(format!(
                "field `mission`: at most {MAX_MISSION_CHARS} characters"
            )));
        }
        let conn = self.cold.lock();
        let members = store::members(&conn, group.id)?;
        if members.is_empty() {
            return Err(GroupError::Empty(group.name.clone()));
        }
        if let Some(off) = members.iter().find(|m| !m.enabled) {
            return Err(GroupError::Disabled(off.name.clone()));
        }
        store::start_mission(&conn, group.id, mission)?;
        store::post(
            &conn,
            group.id,
            None,
            None,
            "system",
            &format!("Mission: {mission}"),
        )?;
        Ok(())
    }

    /// Approves the waiting plan: its deliverables replace every one not
    /// yet complete, and execution starts.
    pub(super) fn approve(&self, group: &Group, by: &str) -> Result<(), GroupError> {
        if group.status != Status::AwaitingApproval {
            return Err(busy(group, "there is no plan waiting for approval"));
        }
        let plan = group
            .plan
            .clone()
            .ok_or_else(|| busy(group, "there is no plan to approve"))?;
        let errors = store::check_plan(&self.cold.lock(), group, &plan)?;
        if !errors.is_empty() {
            return Err(GroupError::Invalid(format!(
                "the plan of {} has problems; assign it by hand first:\n- {}",
                group.name,
                errors.join("\n- ")
            )));
        }
        {
            let conn = self.cold.lock();
            store::execute(&conn, group, &plan)?;
            let what = if by == "auto_execute" {
                "The plan runs without approval (auto_execute).".to_owned()
            } else {
                format!("The plan was approved by {by}.")
            };
            store::post(&conn, group.id, None, None, "system", &what)?;
        }
        self.card_decided(group, true, by);
        self.changed(group.id);
        self.poke();
        Ok(())
    }

    /// Sends the waiting plan back to the leader with the owner's reason.
    pub(super) fn reject(&self, group: &Group, reason: &str, by: &str) -> Result<(), GroupError> {
        if group.status != Status::AwaitingApproval {
            return Err(busy(group, "there is no plan waiting for approval"));
        }
        let reason = reason.trim();
        let told = if reason.is_empty() {
            "The owner rejected the plan without saying why. Plan it differently.".to_owned()
        } else {
            format!("The owner rejected the plan: {reason}")
        };
        {
            let conn = self.cold.lock();
            store::replan(&conn, group.id, &told)?;
            store::post(&conn, group.id, None, None, "system", &told)?;
        }
        self.card_decided(group, false, by);
        self.changed(group.id);
        self.poke();
        Ok(())
    }

    /// The owner assigns deliverable `key` of the waiting plan to `agent`;
    /// the plan is checked again.
    fn assign(&self, group: &Group, key: &str, agent: &str) -> Result<(i64, String), GroupError> {
        if group.status != Status::AwaitingApproval {
            return Err(busy(
                group,
                "plans are assigned by hand while they wait for approval",
            ));
        }
        let mut plan = group
            .plan
            .clone()
            .ok_or_else(|| busy(group, "there is no plan to assign; give one with `plan`"))?;
        let conn = self.cold.lock();
        let member = store::member_named(&conn, group, agent)?;
        let d = plan
            .deliverables
            .iter_mut()
            .find(|d| d.id == key)
            .ok_or_else(|| GroupError::Invalid(format!("the plan has no deliverable {key:?}")))?;
        d.assignee = member.name.clone();
        let errors = store::check_plan(&conn, group, &plan)?;
        store::store_plan(
            &conn,
            group.id,
            Some(&plan),
            &errors,
            Status::AwaitingApproval,
        )?;
        let done = if errors.is_empty() {
            format!("{key} is {}'s; the plan is ready to approve", member.name)
        } else {
            format!(
                "{key} is {}'s; still to fix: {}",
                member.name,
                errors.join("; ")
            )
        };
        Ok((group.id, done))
    }

    /// The owner gives the whole plan (markdown with YAML frontmatter):
    /// given by the owner, it is approved by being given.
    fn owner_plan(&self, group: &Group, text: &str) -> Result<(i64, String), GroupError> {
        if !matches!(group.status, Status::AwaitingApproval | Status::Planning) {
            return Err(busy(
                group,
                "a plan is given while the group plans or waits for one",
            ));
        }
        let plan = plan::from_markdown(text).map_err(GroupError::Invalid)?;
        let errors = store::check_plan(&self.cold.lock(), group, &plan)?;
        if !errors.is_empty() {
            return Err(GroupError::Invalid(format!(
                "the plan has problems:\n- {}",
                errors.join("\n- ")
            )));
        }
        store::store_plan(
            &self.cold.lock(),
            group.id,
            Some(&plan),
            &[],
            Status::AwaitingApproval,
        )?;
        let group = store::by_id(&self.cold.lock(), group.id)?;
        self.approve(&group, "owner")?;
        Ok((
            group.id,
            format!("{} is executing the owner's plan", group.name),
        ))
    }

    /// `/groups [NAME [approve | reject REASON | assign ID MEMBER]]`, the
    /// owner's, in a chat.
    pub fn slash(&self, rest: &str) -> String {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let args = match words.as_slice() {
            [] => json!({ "action": "list" }),
            [group] => json!({ "action": "show", "group": group }),
            [group, "approve"] => json!({ "action": "approve", "group": group }),
            [group, "reject", reason @ ..] => {
                json!({ "action": "reject", "group": group, "reason": reason.join(" ") })
            }
            [group, "assign", key, agent] => {
                json!({ "action": "assign", "group": group, "deliverable": key, "agent": agent })
            }
            _ => {
                return "Usage: /groups, /groups NAME, /groups NAME approve, /groups NAME reject \
                        REASON, /groups NAME assign ID MEMBER"
                    .into();
            }
        };
        match self.act(Actor::Owner, &args) {
            Ok(answer) if args["action"] == "list" => {
                let lines: Vec<&str> = answer["groups"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|g| g["line"].as_str())
                    .collect();
                if lines.is_empty() {
                    "No groups yet. Ask me to make one.".into()
                } else {
                    lines.join("\n")
                }
            }
            Ok(answer) if args["action"] == "show" => {
                answer["text"].as_str().unwrap_or_default().to_owned()
            }
            Ok(answer) => answer["done"].as_str().unwrap_or("Done.").to_owned(),
            Err(e) => e,
        }
    }

    fn list(&self) -> Result<Value, String> {
        let conn = self.cold.lock();
        let groups = store::list(&conn).map_err(|e| e.to_string())?;
        let mut rows = Vec::new();
        for g in groups {
            let members = store::members(&conn, g.id).map_err(|e| e.to_string())?;
            rows.push(json!({
                "name": g.name,
                "status": g.status,
                "line": view::list_line(&g, members.len()),
                "members": members.iter().map(|m| &m.name).collect::<Vec<_>>(),
                "leader": members.iter().find(|m| m.leader).map(|m| &m.name),
            }));
        }
        Ok(json!({ "groups": rows }))
    }

    fn show(&self, group: &Group) -> Result<Value, String> {
        let conn = self.cold.lock();
        let read = || -> Result<_, GroupError> {
            Ok((
                store::members(&conn, group.id)?,
                store::deliverables(&conn, group.id)?,
                store::posts(&conn, group.id, None, view::VIEW_POSTS)?,
            ))
        };
        let (members, deliverables, posts) = read().map_err(|e| e.to_string())?;
        let shown = view::of(group, &members, &deliverables, &posts);
        Ok(json!({ "text": view::text(&shown), "view": shown }))
    }
}

/// "`group` is `status`: `why`".
fn busy(group: &Group, why: &str) -> GroupError {
    GroupError::Busy {
        group: group.name.clone(),
        status: group.status.as_str(),
        why: why.to_owned(),
    }
}

/// Random bits for a name.
fn random() -> u64 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

/// How the tool registry, the control socket and `/groups` reach the
/// groups, without importing them.
impl crate::tools::GroupActions for Groups {
    fn act_for_agent(&self, args: &Value) -> Result<Value, String> {
        self.act(Actor::Agent, args)
    }

    fn act_for_owner(&self, args: &Value) -> Result<Value, String> {
        self.act(Actor::Owner, args)
    }

    fn slash(&self, rest: &str) -> String {
        Groups::slash(self, rest)
    }
}
