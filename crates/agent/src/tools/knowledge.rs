//! `search_history` and `read_history`: the agent looks back over past
//! conversations through the FTS5 index; `manage_knowledge`: its memories
//! and scratchpad; the identity tools: the main agent's own text,
//! versioned.
//!
//! With `[memory.embeddings]`, `search_history` searches by meaning too
//! (`hybrid`), its query's vector fetched before the store is locked; a
//! failure to get it answers by keyword and says so.
//!
//! Scoping: the main agent and the owner search every agent's sessions
//! (the owner's conversations are the main agent's); a sub-agent searches
//! its own sessions only, and reads no other session around a hit.

use serde_json::{Value, json};

use crate::agent::profiles;
use hearth_base::caller::Caller;
use hearth_base::store::Cold;
use hearth_base::store::MAIN_AGENT;
use hearth_data::knowledge::hybrid;
use hearth_data::knowledge::identity::Identity;
use hearth_data::knowledge::notes::Notes;
use hearth_data::knowledge::recall::Recall;
use hearth_data::knowledge::search::{self, Query};

/// What the history tools work on.
pub struct KnowledgeTools {
    /// The store.
    pub cold: Cold,
}

impl KnowledgeTools {
    /// `search_history`; by meaning too through `recall`, when an
    /// embeddings endpoint is configured.
    pub fn search_history(
        &self,
        caller: &Caller,
        args: &Value,
        recall: Option<&Recall>,
    ) -> Result<Value, String> {
        let scope = scope(caller)?;
        let text = args["query"].as_str().unwrap_or_default();
        // Before the lock: the endpoint may take its whole short timeout.
        let vector = match recall {
            Some(recall) if !text.trim().is_empty() => Some(recall.query(text)),
            _ => None,
        };
        let conn = self.cold.lock();
        let agent = match (args["agent"].as_str(), scope) {
            (None, scope) => scope,
            (Some(name), scope) => {
                let id = profiles::id_of(&conn, name).map_err(|e| format!("field `agent`: {e}"))?;
                if scope.is_some_and(|own| own != id) {
                    return Err(
                        "field `agent`: a sub-agent searches its own conversations only".into(),
                    );
                }
                Some(id)
            }
        };
        let query = Query {
            text,
            agent,
            channel: args["channel"].as_str(),
            since_ms: instant(args, "since")?,
            until_ms: instant(args, "until")?,
            limit: args["limit"].as_u64().unwrap_or(10) as usize,
        };
        let found = hybrid::search(&conn, &query, recall, vector).map_err(|e| e.to_string())?;
        let mut result = json!({ "hits": found.hits, "count": found.hits.len() });
        if found.hybrid {
            result["search"] = json!("hybrid");
        } else if let Some(note) = found.fallback {
            result["search"] = json!("keyword");
            result["note"] = json!(note);
        }
        Ok(result)
    }

    /// `read_history`.
    pub fn read_history(&self, caller: &Caller, args: &Value) -> Result<Value, String> {
        let scope = scope(caller)?;
        let session = args["session"]
            .as_i64()
            .ok_or("field `session`: required, a session id from search_history")?;
        let around = args["around_message"]
            .as_i64()
            .ok_or("field `around_message`: required, a message id from search_history")?;
        let n = args["n"].as_u64().unwrap_or(5) as usize;
        let messages = search::read_around(&self.cold.lock(), session, around, n, scope)
            .map_err(|e| e.to_string())?;
        Ok(json!({ "session": session, "messages": messages }))
    }
}

/// The one agent whose sessions the caller may search; `None`: any.
fn scope(caller: &Caller) -> Result<Option<i64>, String> {
    match caller.agent_id() {
        Some(MAIN_AGENT) => Ok(None),
        Some(agent) => Ok(Some(agent)),
        None if !caller.is_scoped() => Ok(None),
        None => Err("only the owner and the agents search the history".into()),
    }
}

/// An optional instant field: RFC 3339, or a date (its midnight, UTC).
fn instant(args: &Value, key: &str) -> Result<Option<i64>, String> {
    let Some(text) = args[key].as_str() else {
        return Ok(None);
    };
    let bad = || format!("field `{key}`: {text:?} is not a time; use \"2026-11-24\" or RFC 3339");
    if let Ok(at) = text.trim().parse::<jiff::Timestamp>() {
        return Ok(Some(at.as_millisecond()));
    }
    let date: jiff::civil::Date = text.trim().parse().map_err(|_| bad())?;
    date.to_zoned(jiff::tz::TimeZone::UTC)
        .map(|z| Some(z.timestamp().as_millisecond()))
        .map_err(|_| bad())
}

/// `manage_knowledge`'s help.
const KNOWLEDGE_HELP: &str = "manage_knowledge, by tier:
- memory (short facts, all in every prompt): add {text}, update {id, text}, remove {id}, list {query?}
- scratchpad (title + body, titles in the prompt): add {title, body}, update {id, title?, body?}, \
remove {id}, list {query?}, read {id}
Memories over their budget are not cut: the prompt asks you to consolidate them.";

/// `manage_knowledge` for agent `agent`'s notes.
pub fn manage(notes: &Notes, agent: i64, args: &Value) -> Result<Value, String> {
    let action = args["action"].as_str().unwrap_or_default();
    if action == "help" {
        return Ok(json!({ "help": KNOWLEDGE_HELP }));
    }
    let id = || {
        args["id"]
            .as_i64()
            .ok_or_else(|| "field `id`: required, an id from `list`".to_owned())
    };
    let text = |key: &str| args[key].as_str().unwrap_or_default();
    match (args["tier"].as_str(), action) {
        (Some("memory"), "add") => notes.add_memory(agent, text("text")),
        (Some("memory"), "update") => notes.update_memory(agent, id()?, text("text")),
        (Some("memory"), "remove") => notes.remove_memory(agent, id()?),
        (Some("memory"), "list") => notes.list_memories(agent, args["query"].as_str()),
        (Some("scratchpad"), "add") => notes.add_entry(agent, text("title"), text("body")),
        (Some("scratchpad"), "update") => {
            notes.update_entry(agent, id()?, args["title"].as_str(), args["body"].as_str())
        }
        (Some("scratchpad"), "remove") => notes.remove_entry(agent, id()?),
        (Some("scratchpad"), "list") => notes.list_entries(agent, args["query"].as_str()),
        (Some("scratchpad"), "read") => notes.read_entry(agent, id()?),
        (Some("memory"), "read") => Err("field `action`: a memory has no body; use list".into()),
        (None, _) => Err("field `tier`: required, \"memory\" or \"scratchpad\"".into()),
        (Some(tier), action) => Err(format!(
            "field `action`: {action:?} is not an action for {tier}; call with action \"help\""
        )),
    }
}

/// Which of the identity's tools runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdentityTool {
    /// `update_identity`.
    Update,
    /// `identity_history`.
    History,
    /// `identity_rollback`.
    Rollback,
}

/// `update_identity`, `identity_history` and `identity_rollback`: the main
/// agent's identity, changed by the main agent or the owner only.
pub fn identity(
    tool: IdentityTool,
    identity: &Identity,
    caller: &Caller,
    args: &Value,
) -> Result<Value, String> {
    let author = match caller.agent_id() {
        Some(MAIN_AGENT) => "main agent".to_owned(),
        None if !caller.is_scoped() => "owner".to_owned(),
        _ => {
            return Err(
                "the identity is the main agent's: a sub-agent's instructions are changed with manage_agents"
                    .into(),
            );
        }
    };
    let version = || {
        args["version"]
            .as_i64()
            .ok_or_else(|| "field `version`: required, a number from identity_history".to_owned())
    };
    let text = args["text"].as_str().unwrap_or_default();
    let done = match tool {
        IdentityTool::Update => match args["mode"].as_str() {
            Some("append") => identity.append(text, &author),
            Some("replace_section") => {
                let section = args["section"].as_str().ok_or(
                    "field `section`: required with mode \"replace_section\", the heading's text",
                )?;
                identity.replace_section(section, text, &author)
            }
            _ => return Err("field `mode`: \"append\" or \"replace_section\"".into()),
        },
        IdentityTool::Rollback => identity.rollback(version()?, &author),
        IdentityTool::History => {
            if args.get("version").is_some() {
                let v = version()?;
                let text = identity.show(v).map_err(|e| e.to_string())?;
                return Ok(json!({ "version": v, "text": text }));
            }
            let versions = identity.history().map_err(|e| e.to_string())?;
            return Ok(json!({ "versions": versions }));
        }
    };
    let version = done.map_err(|e| e.to_string())?;
    Ok(json!({ "version": version, "text": identity.current() }))
}
