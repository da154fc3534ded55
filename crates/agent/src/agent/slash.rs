//! Slash commands: handled by the host, without the model.

use serde_json::{Value, json};

use super::Agent;
use super::history::{Claimed, Speaker};
use hearth_base::caller::Caller;

/// The help text.
const HELP: &str = "Commands:
/help - this list
/new - start a fresh conversation
/tools - the tools I can use
/skills - the skills I know
/status - model, uptime, plugins, tools, queue, kernel floor
/agents - the agents: the main one and its sub-agents
/contacts - the people I may talk to, and pairing codes waiting
/contacts approve CODE [NAME] - let a stranger who got CODE in
/schedule - reminders and scheduled tasks, soonest first
/groups [NAME] - agent groups; one group's members, deliverables and plan
/groups NAME approve | reject REASON | assign ID MEMBER - decide a group's plan
/usage - tokens and estimated cost today and this month, and the budgets
/memory - what I remember (captured ones marked); /memory drop ID forgets one
/model [NAME | default] - the model I use, and switching among the configured ones
/browser - what the agent's browser is doing
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
            match agent.base.conversations.end_session(
                agent.profile.id,
                &claimed.channel,
                &claimed.chat,
            ) {
                Ok(_) => "Started a new conversation.".into(),
                Err(e) => format!("Could not start a new conversation: {e}"),
            }
        }
        "/tools" if owner => {
            let tools = agent.base.tools.list();
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
        "/agents" if owner => agents(agent),
        "/contacts" if owner => contacts(agent, rest),
        "/schedule" if owner => schedule(agent),
        "/groups" if owner => match agent.base.tools.groups() {
            Some(groups) => groups.slash(rest),
            None => "Groups run in the daemon.".into(),
        },
        "/usage" if owner => usage(agent).await,
        "/memory" if owner => super::memories::slash(agent, rest),
        "/model" if owner && agent.profile.is_main() => match &agent.base.llm {
            Ok(llm) => agent
                .base
                .conversations
                .answer_model(&llm.choices(), rest)
                .unwrap_or_else(|e| format!("Not switched: {e}.")),
            Err(why) => format!("No model is configured: {why}"),
        },
        "/browser" if owner => agent.browser_text(),
        "/stop" => "Stopped (any turn that was running has been cancelled).".into(),
        // A command typed in a sub-agent's conversation reaches only the
        // tools that agent may use.
        "/tool" if owner || !agent.profile.is_main() => call_tool(agent, claimed, rest).await,
        "/tools" | "/skills" | "/status" | "/tool" | "/agents" | "/contacts" | "/schedule"
        | "/usage" | "/groups" | "/browser" | "/model" | "/memory" => {
            "That command is for the owner. Try /help.".into()
        }
        other => format!("Unknown command {other}. Try /help."),
    }
}

/// `/usage`: today's and this month's tokens and estimated cost per model,
/// and the budgets (read on a blocking thread: it waits for queued rows).
async fn usage(agent: &Agent) -> String {
    let meter = std::sync::Arc::clone(&agent.base.usage);
    let report = tokio::task::spawn_blocking(move || {
        meter.report(
            hearth_base::store::now_ms(),
            &hearth_model::usage::report::Which::BOTH,
        )
    })
    .await;
    match report {
        Ok(Ok(report)) => report.text(),
        Ok(Err(e)) => format!("Could not read the usage: {e}"),
        Err(e) => format!("Could not read the usage: {e}"),
    }
}

/// `/schedule`: every job, soonest first.
fn schedule(agent: &Agent) -> String {
    let Some(tools) = agent.base.tools.schedule_tools() else {
        return "The scheduler runs in the daemon.".into();
    };
    match tools.call(&Caller::owner("slash"), None, &json!({ "action": "list" })) {
        Ok(list) => {
            let jobs = list["jobs"].as_array().cloned().unwrap_or_default();
            if jobs.is_empty() {
                return "No reminders or scheduled tasks. Ask me to set one.".into();
            }
            let mut out = format!(
                "Jobs (times in {}):",
                list["owner_zone"].as_str().unwrap_or("UTC")
            );
            for j in &jobs {
                let when = j["cron"]
                    .as_str()
                    .map(|c| format!("{c} {}", j["zone"].as_str().unwrap_or_default()))
                    .unwrap_or_else(|| "once".into());
                out.push_str(&format!(
                    "\n- {} {} [{}] next {}: {} ({when}, {})",
                    j["id"],
                    j["kind"].as_str().unwrap_or("?"),
                    j["state"].as_str().unwrap_or("?"),
                    j["next_run"].as_str().unwrap_or("-"),
                    j["text"]
                        .as_str()
                        .unwrap_or_default()
                        .lines()
                        .next()
                        .unwrap_or_default(),
                    j["agent"].as_str().unwrap_or("?"),
                ));
            }
            out
        }
        Err(e) => format!("Could not list the jobs: {e}"),
    }
}

/// `/agents`: every agent, its state, model and tools.
fn agents(agent: &Agent) -> String {
    let Some(people) = agent.base.tools.people_tools() else {
        return "Agents are served by the running daemon.".into();
    };
    match people.manage_agents(&Caller::owner("slash"), &json!({ "action": "list" })) {
        Ok(list) => {
            let mut out = String::from("Agents:");
            for a in list["agents"].as_array().into_iter().flatten() {
                let tools: Vec<&str> = a["allowed_tools"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                out.push_str(&format!(
                    "\n- {}{}{}: {}",
                    a["name"].as_str().unwrap_or("?"),
                    if a["enabled"] == true {
                        ""
                    } else {
                        " (disabled)"
                    },
                    a["model"]
                        .as_str()
                        .map(|m| format!(" [{m}]"))
                        .unwrap_or_default(),
                    if tools.is_empty() {
                        "no tools".to_owned()
                    } else {
                        tools.join(", ")
                    }
                ));
            }
            out
        }
        Err(e) => format!("Error: {e}"),
    }
}

/// `/contacts`, and `/contacts approve CODE [NAME]`.
fn contacts(agent: &Agent, rest: &str) -> String {
    let Some(people) = agent.base.tools.people_tools() else {
        return "Contacts are served by the running daemon.".into();
    };
    let mut words = rest.split_whitespace();
    if words.next() == Some("approve") {
        let Some(code) = words.next() else {
            return "Usage: /contacts approve CODE [NAME]".into();
        };
        let name: Vec<&str> = words.collect();
        let mut args = json!({ "action": "approve", "code": code });
        if !name.is_empty() {
            args["name"] = name.join(" ").into();
        }
        return match people.manage_contacts(&args) {
            Ok(done) => done["done"].as_str().unwrap_or("Approved.").to_owned(),
            Err(e) => format!("Error: {e}"),
        };
    }
    match people.manage_contacts(&json!({ "action": "list" })) {
        Ok(list) => {
            let mut out = String::from("Contacts:");
            for c in list["contacts"].as_array().into_iter().flatten() {
                let ids: Vec<String> = c["identities"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|i| {
                        format!(
                            "{} {}",
                            i["channel"].as_str().unwrap_or("?"),
                            i["id"].as_str().unwrap_or("?")
                        )
                    })
                    .collect();
                out.push_str(&format!(
                    "\n- {}{} (agent: {}): {}",
                    c["name"].as_str().unwrap_or("?"),
                    match (c["is_owner"] == true, c["enabled"] == true) {
                        (true, _) => " (owner)",
                        (false, true) => "",
                        (false, false) => " (disabled)",
                    },
                    c["agent"].as_str().unwrap_or("none"),
                    if ids.is_empty() {
                        "no ids".to_owned()
                    } else {
                        ids.join(", ")
                    }
                ));
            }
            let codes = list["pairing_codes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !codes.is_empty() {
                out.push_str("\nPairing codes waiting (/contacts approve CODE):");
                for p in codes {
                    out.push_str(&format!(
                        "\n- {} from {} {}",
                        p["code"].as_str().unwrap_or("?"),
                        p["channel"].as_str().unwrap_or("?"),
                        p["sender"].as_str().unwrap_or("?")
                    ));
                }
            }
            out
        }
        Err(e) => format!("Error: {e}"),
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
    let tools = agent.base.tools.clone();
    let name = name.to_owned();
    let caller = match &claimed.speaker {
        Speaker::Contact(name) => Caller::contact(name, &claimed.channel, &agent.profile.scope()),
        _ if agent.profile.is_main() => Caller::owner(&claimed.channel),
        // Only the main agent's conversations have the owner in them; any
        // other command runs no wider than the agent answering it.
        _ => agent.profile.caller(),
    };
    let turn = agent.turn_context(claimed);
    match tokio::task::spawn_blocking(move || tools.call_in_turn(&caller, &turn, &name, args)).await
    {
        Ok(Ok(result)) => serde_json::to_string_pretty(&result).unwrap_or_default(),
        Ok(Err(e)) => format!("Error: {e}"),
        Err(e) => format!("Error: the tool call was lost: {e}"),
    }
}
