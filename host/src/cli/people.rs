//! `hearth contacts` and `hearth agents`: who the agents talk to, and
//! which agents there are.
//!
//! With a daemon running they go through its control socket, so an
//! approved contact is let in at once (the daemon's directory is the one
//! the gate reads). Without one they open `hearth.db` and nothing else.

use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};

use super::client::Daemon;
use hearth_agent::agent::profiles::{self, Profile};
use hearth_base::config::Config;
use hearth_base::store::Store;
use hearth_data::people::contacts::{self, Contact};
use hearth_data::people::pairing::{self, Pending};

/// `hearth contacts [--json]`.
pub fn list_contacts(
    config: &Config,
    daemon: Option<&mut Daemon>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let (list, codes): (Vec<Contact>, Vec<Pending>) = match daemon {
        Some(d) => {
            let answer = d.ask(json!({ "op": "contacts", "action": "list" }))?;
            (
                from_answer(&answer["result"]["contacts"])?,
                from_answer(&answer["result"]["pairing_codes"])?,
            )
        }
        None => {
            let store = open(config)?;
            (
                contacts::list(store.conn()).context("cannot read the contacts")?,
                pairing::pending(store.conn()).context("cannot read the pairing codes")?,
            )
        }
    };
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({ "contacts": list, "pairing_codes": codes }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{:<24} {:<8} {:<12} ids", "name", "state", "agent");
    for c in &list {
        let state = match (c.is_owner, c.enabled) {
            (true, _) => "owner",
            (false, true) => "enabled",
            (false, false) => "disabled",
        };
        let ids: Vec<String> = c
            .identities
            .iter()
            .map(|i| format!("{} {}", i.channel, i.id))
            .collect();
        outln!(
            "{:<24} {:<8} {:<12} {}",
            c.name,
            state,
            c.agent.as_deref().unwrap_or("-"),
            ids.join(", ")
        );
    }
    if !codes.is_empty() {
        outln!("\npairing codes waiting (approve with `hearth contacts approve CODE`):");
        for p in &codes {
            outln!(
                "  {}  {} {}{}",
                p.code,
                p.channel,
                p.sender,
                p.sender_name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `hearth contacts approve CODE [--name NAME] [--agent AGENT]`.
pub fn approve(
    config: &Config,
    daemon: Option<&mut Daemon>,
    code: &str,
    name: Option<&str>,
    agent: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let agent = agent.unwrap_or(&config.agent.contact_agent);
    let done = match daemon {
        Some(d) => {
            let answer = d.ask(json!({
                "op": "contacts", "action": "approve", "code": code, "name": name, "agent": agent
            }))?;
            answer["result"]["done"]
                .as_str()
                .unwrap_or("approved")
                .to_owned()
        }
        None => {
            let store = open(config)?;
            let agent = profiles::id_of(store.conn(), agent)?;
            let name = pairing::approve(store.conn(), code, name, Some(agent))?;
            format!("{name} is a contact now")
        }
    };
    outln!("{done}");
    Ok(ExitCode::SUCCESS)
}

/// `hearth agents [--json]`.
pub fn list_agents(
    config: &Config,
    daemon: Option<&mut Daemon>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let list: Vec<Profile> = match daemon {
        Some(d) => {
            let answer = d.ask(json!({ "op": "agents" }))?;
            from_answer(&answer["result"]["agents"])?
        }
        None => profiles::list(open(config)?.conn()).context("cannot read the agents")?,
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:>3}  {:<20} {:<8} {:<20} tools",
        "id",
        "name",
        "state",
        "model"
    );
    for a in &list {
        outln!(
            "{:>3}  {:<20} {:<8} {:<20} {}",
            a.id,
            a.name,
            if a.enabled { "enabled" } else { "disabled" },
            a.model.as_deref().unwrap_or("(configured)"),
            a.allowed_tools.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn from_answer<T: serde::de::DeserializeOwned>(value: &Value) -> anyhow::Result<T> {
    serde_json::from_value(value.clone()).context("the daemon sent a malformed answer")
}

fn open(config: &Config) -> anyhow::Result<Store> {
    let path = config.home.join(hearth_base::store::FILE_NAME);
    Store::open(&path).with_context(|| format!("cannot open {}", path.display()))
}
