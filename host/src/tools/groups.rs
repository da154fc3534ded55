//! The built-in tools about agent groups: `manage_groups` and
//! `assign_mission`, the main agent's (the actions are in
//! `groups/actions.rs`, shared with `/groups` and `hearth groups`).

use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

use crate::groups::Groups;
use crate::groups::actions::Actor;
use crate::policy::Caller;
use crate::store::MAIN_AGENT;

/// `manage_groups`' spec.
pub fn manage_spec() -> ToolSpec {
    ToolSpec {
        name: "manage_groups".into(),
        description: "Manages agent groups: teams that take missions, led by the first member. \
                      See action \"help\"."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": { "enum": ["help", "list", "show", "create", "rename", "add_member", "remove_member", "set_leader", "archive"] },
                "group": { "type": "string", "maxLength": 80 },
                "name": { "type": "string", "maxLength": 40 },
                "new_name": { "type": "string", "maxLength": 40 },
                "agent": { "type": "string", "maxLength": 40 },
                "role": { "type": "string", "maxLength": 2000 },
                "auto_execute": { "type": "boolean" }
            },
            "required": ["action"],
            "additionalProperties": false
        }),
        risk: Risk::Write,
        targets: Default::default(),
    }
}

/// `assign_mission`'s spec.
pub fn mission_spec() -> ToolSpec {
    ToolSpec {
        name: "assign_mission".into(),
        description:
            "Gives a group its mission: the leader plans, the owner approves, the members \
                      carry it out."
                .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "group": { "type": "string", "minLength": 1, "maxLength": 80 },
                "mission": { "type": "string", "minLength": 1, "maxLength": 20000 }
            },
            "required": ["group", "mission"],
            "additionalProperties": false
        }),
        risk: Risk::Write,
        targets: Default::default(),
    }
}

/// Runs `manage_groups` (`mission`: `assign_mission`) for `caller`.
pub fn call(
    groups: &Groups,
    caller: &Caller,
    args: &Value,
    mission: bool,
) -> Result<Value, String> {
    if caller.agent_id().is_some_and(|id| id != MAIN_AGENT) || caller.is_scoped() {
        return Err("only the main agent manages groups".into());
    }
    if mission {
        let mut args = args.clone();
        args["action"] = json!("mission");
        return groups.act(Actor::Agent, &args);
    }
    groups.act(Actor::Agent, args)
}
