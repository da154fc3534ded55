//! The built-in tools about agents: `manage_agents`, `send_agent_message`,
//! `manage_agent_templates` and `spawn_agent`.
//!
//! Only the main agent (or the owner) changes the agents; agents pass
//! messages at most `max_agent_hops` times per message from a person; a
//! worker's spec is checked before anything runs.

use serde_json::{Value, json};

use super::TurnContext;
use super::people::{PeopleTools, field};
use crate::agent::history::{AgentMessage, send_to_agent};
use crate::agent::profiles::{self, Draft};
use crate::agent::templates::{self, WorkerSpec};
use hearth_base::caller::Caller;
use hearth_base::store::MAIN_AGENT;

/// `manage_agent_templates`' help.
const TEMPLATES_HELP: &str = "manage_agent_templates actions:
- list: every template
- create {name, spec: {system_prompt, allowed_tools, max_turns?, model?, token_budget?}}
- update {name, spec}: replaces the template's spec
- delete {name}
A template is what spawn_agent's workers are: their instructions, tools and bounds.";

/// `manage_agents`' help.
const AGENTS_HELP: &str = "manage_agents actions (main agent only):
- list: every agent with its tools and model
- create {name, system_prompt, allowed_tools, model?}: a sub-agent; allowed_tools names tools (a Lua skill's tools as skill.*)
- update {name, new_name?, system_prompt?, allowed_tools?, model?, enabled?}
- delete {name}";

impl PeopleTools {
    /// `manage_agents`: the main agent's, or the owner's.
    pub fn manage_agents(&self, caller: &Caller, args: &Value) -> Result<Value, String> {
        if caller.agent_id().is_some_and(|id| id != MAIN_AGENT) {
            return Err(
                "only the main agent manages agents; a sub-agent cannot change any agent".into(),
            );
        }
        let action = args["action"].as_str().unwrap_or_default();
        let draft = || -> Result<Draft, String> {
            Ok(Draft {
                name: args["new_name"].as_str().map(str::to_owned),
                system_prompt: args["system_prompt"].as_str().map(str::to_owned),
                allowed_tools: match args.get("allowed_tools") {
                    None => None,
                    Some(list) => Some(
                        serde_json::from_value(list.clone())
                            .map_err(|_| "field `allowed_tools`: expected a list of tool names")?,
                    ),
                },
                model: args.get("model").map(|m| m.as_str().map(str::to_owned)),
                enabled: args["enabled"].as_bool(),
            })
        };
        let changed = |what: String| {
            self.router.agents_changed.notify_one();
            Ok(json!({ "ok": true, "done": what }))
        };
        match action {
            "help" => Ok(json!({ "help": AGENTS_HELP })),
            "list" => {
                let agents = self
                    .people
                    .read(profiles::list)
                    .map_err(|e| e.to_string())?;
                Ok(json!({ "agents": agents }))
            }
            "create" => {
                let name = field(args, "name")?;
                let mut draft = draft()?;
                draft.name = Some(name.to_owned());
                if draft.allowed_tools.is_none() {
                    return Err(
                        "field `allowed_tools`: required to create an agent (a list, may be empty)"
                            .into(),
                    );
                }
                self.people
                    .read(|conn| profiles::create(conn, &draft))
                    .map_err(|e| e.to_string())?;
                changed(format!("created {name}"))
            }
            "update" => {
                let name = field(args, "name")?;
                let draft = draft()?;
                // `change`: the directory records whether a contact's
                // agent is enabled.
                self.people
                    .change(|conn| profiles::update(conn, name, &draft))
                    .map_err(|e| e.to_string())?;
                changed(format!("updated {name}"))
            }
            "delete" => {
                let name = field(args, "name")?;
                self.people
                    .change(|conn| profiles::delete(conn, name))
                    .map_err(|e| e.to_string())?;
                changed(format!("deleted {name}"))
            }
            other => Err(format!(
                "field `action`: unknown action {other:?}; try \"help\""
            )),
        }
    }

    /// `manage_agent_templates`.
    pub fn manage_templates(&self, args: &Value) -> Result<Value, String> {
        let action = args["action"].as_str().unwrap_or_default();
        let done = |what: String| Ok(json!({ "ok": true, "done": what }));
        match action {
            "help" => Ok(json!({ "help": TEMPLATES_HELP })),
            "list" => {
                let list = self
                    .people
                    .read(templates::list)
                    .map_err(|e| e.to_string())?;
                Ok(json!({ "templates": list }))
            }
            "create" | "update" => {
                let name = field(args, "name")?;
                let spec = spec_of(&args["spec"], "spec.")?;
                self.people
                    .read(|conn| {
                        if action == "create" {
                            templates::create(conn, name, &spec)
                        } else {
                            templates::update(conn, name, &spec)
                        }
                    })
                    .map_err(|e| e.to_string())?;
                done(format!("{action}d template {name}"))
            }
            "delete" => {
                let name = field(args, "name")?;
                self.people
                    .read(|conn| templates::delete(conn, name))
                    .map_err(|e| e.to_string())?;
                done(format!("deleted template {name}"))
            }
            other => Err(format!(
                "field `action`: unknown action {other:?}; try \"help\""
            )),
        }
    }

    /// `spawn_agent`: runs a worker of a template or an inline spec on
    /// `task`, blocking until it answers.
    pub fn spawn_agent(
        &self,
        caller: &Caller,
        turn: Option<&TurnContext>,
        args: &Value,
    ) -> Result<Value, String> {
        let task = field(args, "task")?;
        let spec = match (args.get("template"), args.get("spec")) {
            (Some(name), None) => {
                let name = name.as_str().unwrap_or_default();
                self.people
                    .read(|conn| templates::get(conn, name))
                    .map_err(|e| format!("field `template`: {e}"))?
                    .spec
            }
            (None, Some(spec)) => spec_of(spec, "spec.")?,
            _ => {
                return Err(
                    "give either `template` (a name) or `spec` (an inline worker), not both".into(),
                );
            }
        };
        self.workers.run(caller, turn, &spec, task)
    }

    /// `send_agent_message`: leaves a message in another agent's inbox;
    /// its answer comes back to this conversation the same way.
    pub fn send_agent_message(
        &self,
        turn: Option<&TurnContext>,
        args: &Value,
    ) -> Result<Value, String> {
        let turn = turn.ok_or("send_agent_message works only inside an agent's turn")?;
        let target = field(args, "agent")?;
        let text = field(args, "text")?;
        let hops = turn.hops + 1;
        if hops > i64::from(self.max_hops) {
            return Err(format!(
                "refused: agents have passed messages {} times since the person's message, the limit is {} \
                 ([agent] max_agent_hops); answer without asking another agent",
                turn.hops, self.max_hops
            ));
        }
        let to = self
            .people
            .read(|conn| profiles::id_of(conn, target))
            .map_err(|e| format!("field `agent`: {e}"))?;
        if to == turn.agent {
            return Err("field `agent`: that is you".into());
        }
        let enabled = self
            .people
            .read(|conn| profiles::get(conn, to))
            .map_err(|e| e.to_string())?
            .is_some_and(|p| p.enabled);
        if !enabled {
            return Err(format!("field `agent`: {target} is disabled"));
        }
        let key = format!(
            "agent:{}:{}",
            turn.inbox_id,
            hearth_policy::confirm::fingerprint(target, &json!(text))
        );
        let message = AgentMessage {
            to,
            from: (turn.agent, &turn.agent_name),
            source: "agent",
            text,
            hops,
            origin: (&turn.channel, &turn.chat),
            key,
        };
        self.people
            .read(|conn| send_to_agent(conn, &message))
            .map_err(|e| format!("the message could not be stored: {e}"))?;
        self.router.agent(to).wake.notify_one();
        Ok(json!({
            "ok": true,
            "sent_to": target,
            "note": "its answer comes back to this conversation as a new message"
        }))
    }
}

/// A worker spec from arguments, its defaults filled in and checked;
/// `prefix` names where it sits (`spec.`).
fn spec_of(value: &Value, prefix: &str) -> Result<WorkerSpec, String> {
    let object = value.as_object().ok_or_else(|| {
        format!(
            "field `{}`: expected an object",
            prefix.trim_end_matches('.')
        )
    })?;
    let tools = match object.get("allowed_tools") {
        None => Vec::new(),
        Some(list) => serde_json::from_value(list.clone())
            .map_err(|_| format!("field `{prefix}allowed_tools`: expected a list of tool names"))?,
    };
    let spec = WorkerSpec {
        system_prompt: object
            .get("system_prompt")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned(),
        allowed_tools: tools,
        max_turns: object
            .get("max_turns")
            .and_then(Value::as_u64)
            .map_or(templates::DEFAULT_TURNS, |n| {
                n.min(u64::from(u32::MAX)) as u32
            }),
        model: object
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
        token_budget: object
            .get("token_budget")
            .and_then(Value::as_u64)
            .unwrap_or(templates::DEFAULT_TOKEN_BUDGET),
    };
    templates::check(&spec, prefix).map_err(|e| e.to_string())?;
    Ok(spec)
}
