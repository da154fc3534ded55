//! The built-in tools about agent groups: `manage_groups` and
//! `assign_mission`, the main agent's (the actions are in
//! `groups/actions.rs`, shared with `/groups` and `hearth groups`).

use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

use hearth_base::caller::Caller;
use hearth_base::store::MAIN_AGENT;

/// The agent groups as the tools and the owner's commands reach them:
/// implemented by `groups::Groups`, which runs its members' turns through
/// the tool registry, so the registry holds it only as this trait.
pub trait GroupActions: Send + Sync {
    /// A `manage_groups` action (`args["action"]`) taken by the main agent.
    fn act_for_agent(&self, args: &Value) -> Result<Value, String>;
    /// The same, taken by the owner (who may also decide plans).
    fn act_for_owner(&self, args: &Value) -> Result<Value, String>;
    /// `/groups REST`, answered as text.
    fn slash(&self, rest: &str) -> String;
}

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
    groups: &dyn GroupActions,
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
        return groups.act_for_agent(&args);
    }
    groups.act_for_agent(args)
}
