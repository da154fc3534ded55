//! Slash commands: handled by the host, without the model.

use serde_json::Value;

use super::Agent;
use super::history::{Claimed, Speaker};
use crate::policy::Caller;

/// The help text.
const HELP: &str = "Commands:
/help - this list
/new - start a fresh conversation
/tools - the tools I can use
/skills - the skills I know
/status - model, uptime, plugins, tools, queue, kernel floor
/tool NAME {json} - call a tool directly
/stop - stop what I am doing";

/// What a contact may type.
const CONTACT_HELP: &str = "Commands:
/help - this list
/new - start a fresh conversation
/stop - stop what I am doing";

/// Answers a slash command. A contact gets the conversation's commands;
/// the rest are the owner's.
pub(super) async fn handle(agent: &Agent, claimed: &Claimed) -> String {
    let text = claimed.text.trim();
    let (command, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let owner = claimed.speaker == Speaker::Owner;
    match command {
        "/help" if owner => HELP.into(),
        "/help" => CONTACT_HELP.into(),
        "/new" => {
            match agent
                .conversations
                .end_session(agent.profile.id, &claimed.channel, &claimed.chat)
            {
                Ok(_) => "Started a new conversation.".into(),
                Err(e) => format!("Could not start a new conversation: {e}"),
            }
        }
        "/tools" if owner => {
            let tools = agent.tools.list();
            let mut out = format!("{} tools:", tools.len());
            for t in tools {
                out.push_str(&format!(
                    "\n- {} ({}): {}",
                    t.spec.name,
                    t.source,
                    t.spec.description.lines().next().unwrap_or_default()
                ));
            }
            out
        }
        "/skills" if owner => {
            let skills = agent.skills();
            if skills.is_empty() {
                return "No skills yet.".into();
            }
            let mut out = format!("{} skills:", skills.len());
            for (name, description) in skills {
                out.push_str(&format!("\n- {name}: {description}"));
            }
            out
        }
        "/status" if owner => agent.status_text(),
        "/stop" => "Stopped (any turn that was running has been cancelled).".into(),
        // A command typed in a sub-agent's conversation reaches only the
        // tools that agent may use.
        "/tool" if owner || !agent.profile.is_main() => call_tool(agent, claimed, rest).await,
        "/tools" | "/skills" | "/status" | "/tool" => {
            "That command is for the owner. Try /help.".into()
        }
        other => format!("Unknown command {other}. Try /help."),
    }
}

async fn call_tool(agent: &Agent, claimed: &Claimed, rest: &str) -> String {
    let rest = rest.trim();
    let (name, json) = rest.split_once(char::is_whitespace).unwrap_or((rest, "{}"));
    if name.is_empty() {
        return "Usage: /tool NAME {json}".into();
    }
    let args: Value = match serde_json::from_str(json.trim()) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return "The arguments must be a JSON object, like {\"text\":\"hi\"}.".into(),
        Err(e) => return format!("The arguments are not valid JSON: {e}"),
    };
    let tools = agent.tools.clone();
    let name = name.to_owned();
    let caller = match &claimed.speaker {
        Speaker::Contact(name) => Caller::contact(name, &claimed.channel, &agent.profile.scope()),
        _ => Caller::owner(&claimed.channel),
    };
    let turn = agent.turn_context(claimed);
    match tokio::task::spawn_blocking(move || tools.call_in_turn(&caller, &turn, &name, args)).await
    {
        Ok(Ok(result)) => serde_json::to_string_pretty(&result).unwrap_or_default(),
        Ok(Err(e)) => format!("Error: {e}"),
        Err(e) => format!("Error: the tool call was lost: {e}"),
    }
}
