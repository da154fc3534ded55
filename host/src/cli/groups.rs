//! `hearth groups`: the owner's view of agent groups and the owner's say
//! over their plans, through the running daemon's control socket (the
//! groups' engine runs there; the answers come from the same code as the
//! agent's `manage_groups`, with the owner's rights to approve).

use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::GroupsAction;
use super::client::Daemon;

/// One request: `action` with its fields.
pub struct Request {
    /// The action (`list`, `show`, `create`, `approve`, ...).
    pub action: &'static str,
    /// Its fields, as the control socket's `groups` takes them.
    pub fields: Value,
}

/// Sends `request` and prints the answer (JSON with `json`).
pub fn run(
    daemon: Option<&mut Daemon>,
    request: Request,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let Some(daemon) = daemon else {
        bail!(
            "hearth is not running; `hearth groups` goes through the daemon (start it with `hearth run`)"
        );
    };
    let mut ask = request.fields;
    ask["op"] = json!("groups");
    ask["action"] = json!(request.action);
    let answer = daemon.ask(ask)?;
    let result = &answer["result"];
    if as_json {
        outln!("{}", serde_json::to_string_pretty(result)?);
        return Ok(ExitCode::SUCCESS);
    }
    match request.action {
        "list" => {
            let groups = result["groups"]
                .as_array()
                .context("the daemon sent a malformed answer")?;
            if groups.is_empty() {
                outln!("no groups");
            }
            for g in groups {
                outln!("{}", g["line"].as_str().unwrap_or_default());
            }
        }
        "show" => outln!("{}", result["text"].as_str().unwrap_or_default()),
        "create" => outln!("created {}", result["group"].as_str().unwrap_or_default()),
        _ => outln!("{}", result["done"].as_str().unwrap_or("done")),
    }
    Ok(ExitCode::SUCCESS)
}

/// The control request of a `hearth groups` command.
pub fn request(action: Option<GroupsAction>) -> anyhow::Result<Request> {
    let (action, fields) = match action {
        None | Some(GroupsAction::List) => ("list", json!({})),
        Some(GroupsAction::Show { group }) => ("show", json!({ "group": group })),
        Some(GroupsAction::Create { name, auto_execute }) => (
            "create",
            json!({ "name": name, "auto_execute": auto_execute.then_some(true) }),
        ),
        Some(GroupsAction::Rename { group, new_name }) => {
            ("rename", json!({ "group": group, "new_name": new_name }))
        }
        Some(GroupsAction::Add { group, agent, role }) => (
            "add_member",
            json!({ "group": group, "agent": agent, "role": role }),
        ),
        Some(GroupsAction::Remove { group, agent }) => {
            ("remove_member", json!({ "group": group, "agent": agent }))
        }
        Some(GroupsAction::Leader { group, agent }) => {
            ("set_leader", json!({ "group": group, "agent": agent }))
        }
        Some(GroupsAction::Archive { group }) => ("archive", json!({ "group": group })),
        Some(GroupsAction::Mission { group, mission }) => (
            "mission",
            json!({ "group": group, "mission": mission.join(" ") }),
        ),
        Some(GroupsAction::Approve { group }) => ("approve", json!({ "group": group })),
        Some(GroupsAction::Reject { group, reason }) => (
            "reject",
            json!({ "group": group, "reason": reason.join(" ") }),
        ),
        Some(GroupsAction::Assign {
            group,
            deliverable,
            agent,
        }) => (
            "assign",
            json!({ "group": group, "deliverable": deliverable, "agent": agent }),
        ),
        Some(GroupsAction::Plan { group, file }) => {
            ("plan", json!({ "group": group, "plan": plan_file(&file)? }))
        }
    };
    Ok(Request { action, fields })
}

/// The text of a plan file, for `hearth groups plan NAME FILE`.
pub fn plan_file(path: &std::path::Path) -> anyhow::Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if meta.len() > hearth_agent::groups::plan::MAX_PLAN_BYTES as u64 {
        bail!(
            "{}: {} bytes, over the plan limit of {} bytes",
            path.display(),
            meta.len(),
            hearth_agent::groups::plan::MAX_PLAN_BYTES
        );
    }
    std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))
}
