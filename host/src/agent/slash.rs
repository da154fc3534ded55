//! Slash commands: handled by the host, without the model.

use serde_json::Value;

use super::Agent;
use super::history::Claimed;
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

/// Answers a slash command.
pub(super) async fn handle(agent: &Agent, claimed: &Claimed) -> String {
    let text = claimed.text.trim();
    let (command, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    match command {
        "/help" => HELP.into(),
        "/new" => match agent
            .conversations
            .end_session(&claimed.channel, &claimed.chat)
        {
            Ok(_) => "Started a new conversation.".into(),
            Err(e) => format!("Could not start a new conversation: {e}"),
        },
        "/tools" => {
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
        "/skills" => {
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
        "/status" => agent.status_text(),
        "/stop" => "Stopped (any turn that was running has been cancelled).".into(),
        "/tool" => call_tool(agent, &claimed.channel, rest).await,
        other => format!("Unknown command {other}. Try /help."),
    }
}

async fn call_tool(agent: &Agent, channel: &str, rest: &str) -> String {
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
    let caller = Caller::owner(channel);
    match tokio::task::spawn_blocking(move || tools.call_as(&caller, &name, args, 0)).await {
        Ok(Ok(result)) => serde_json::to_string_pretty(&result).unwrap_or_default(),
        Ok(Err(e)) => format!("Error: {e}"),
        Err(e) => format!("Error: the tool call was lost: {e}"),
    }
}
