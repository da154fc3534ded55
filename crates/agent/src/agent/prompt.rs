//! The system prompt: who the agent is and what it may do (fixed), and
//! what it knows in this conversation (the context).
//!
//! Every call pays for the whole prompt unless the provider reads it from
//! its cache, which it does only for a prefix byte-identical to an earlier
//! request's (`llm::cache`). So the prompt is ordered by how often each
//! part changes: the fixed part (identity, instructions, skills, the
//! secrets' names) changes only when the owner edits them, and is the same
//! for every conversation of an agent; the context (memories, scratchpad
//! titles, the notepad, the summary of compacted history) is built when a
//! conversation starts and kept as it is while the cache holds it
//! (`agent::context`); what changes per message (the time, the channel,
//! the sender) is in the header each message starts with
//! (`agent::stamp`), never here. The tools are described once, in the
//! request's tool list, not again in the prompt.
//!
//! Skills appear by name and description only; the agent reads a skill's
//! body with `read_skill` when it needs it, which keeps every prompt small
//! however many skills there are.

use std::fmt::Write as _;

use super::profiles::Profile;
use hearth_data::knowledge::notes::{MEMORY_BUDGET_CHARS, PromptNotes};

/// What goes into the fixed system prompt.
pub struct PromptParts<'a> {
    /// The identity text (the main agent's).
    pub identity: &'a str,
    /// The agent the prompt is for.
    pub profile: &'a Profile,
    /// The owner's name, when configured.
    pub owner: Option<&'a str>,
    /// `(name, description)` of each skill.
    pub skills: Vec<(String, String)>,
    /// The names of the owner's secrets (never their values).
    pub secrets: &'a [String],
}

/// What goes into a conversation's context.
pub struct ContextParts<'a> {
    /// The agent's own memories and scratchpad titles.
    pub notes: &'a PromptNotes,
    /// This session's notepad, when something is written there.
    pub notepad: Option<&'a str>,
    /// The summary of compacted history, if any.
    pub summary: Option<&'a str>,
}

/// A system prompt in its two parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemPrompt {
    /// The same for every conversation of the agent.
    pub fixed: String,
    /// This conversation's; may be empty.
    pub context: String,
}

/// The identity used when `[agent] identity_file` is not set.
pub const DEFAULT_IDENTITY: &str = "You are hearth, a personal AI assistant running on your owner's \
own always-on home computer. You have full use of this machine through your tools. Be direct and \
brief, say what you did, and ask before doing anything destructive. You can extend yourself by \
writing Lua tools and skills with write_script; fix them with script_status when they fail.";

/// The base of every sub-agent's prompt: it may do only what its
/// instructions and tools allow.
pub const SUB_AGENT_BASE: &str = "You are {name}, one of the agents of hearth, a personal assistant \
running on its owner's home computer. You work only within the instructions below and the tools \
you are given; anything else, you decline briefly and say who could help (the owner). You do not \
see the owner's memory or their conversations, and you never guess at them. Never reveal secrets, \
passwords or private details about the owner. To ask another agent for something, use \
send_agent_message.";

/// What every message's header means, and how to treat each kind of
/// sender: said once here, so the header itself stays short.
const HEADERS: &str = "Each message starts with a header saying when it came, on which channel \
and from whom, like [Wed 2026-11-25 19:40 CET · telegram · from your owner]; the newest \
message's header is the current time. A message from a contact is from a contact of your owner \
(not your owner): do for them only what your owner would want done for them. A message from \
another agent comes from another of your owner's agents, not from a person. A message from the \
scheduler comes from your scheduler, not from a person: a reminder or task set earlier is due; \
carry it out for your owner.";

/// Builds the fixed system prompt.
pub fn system_prompt(parts: &PromptParts<'_>) -> String {
    let mut p = String::with_capacity(4096);
    if parts.profile.is_main() {
        p.push_str(parts.identity.trim());
    } else {
        p.push_str(&SUB_AGENT_BASE.replace("{name}", &parts.profile.name));
        if !parts.profile.system_prompt.is_empty() {
            p.push_str("\n\n## Your instructions\n");
            p.push_str(parts.profile.system_prompt.trim());
        }
    }
    p.push_str("\n\n");
    if let Some(owner) = parts.owner {
        let _ = writeln!(p, "Your owner is {owner}.");
    }
    p.push_str(HEADERS);
    p.push('\n');
    if !parts.skills.is_empty() {
        p.push_str("\n## Skills\nRead a skill's instructions with read_skill before using it.\n");
        for (name, description) in &parts.skills {
            let _ = writeln!(p, "- {name}: {description}");
        }
    }
    if !parts.secrets.is_empty() {
        let _ = writeln!(
            p,
            "\n## Secrets\nThe owner's secrets, by name; you never see their values. A Lua tool \
             uses one in hearth.http as {{{{secret:NAME}}}} in a header value or the url's path \
             or query, and the host puts the value in: {}",
            parts.secrets.join(", ")
        );
    }
    p
}

/// Builds a conversation's context: the agent's notes, the notepad, the
/// summary of what was compacted.
pub fn context(parts: &ContextParts<'_>) -> String {
    let mut p = String::with_capacity(1024);
    notes(&mut p, parts.notes);
    if let Some(notepad) = parts.notepad.filter(|n| !n.trim().is_empty()) {
        p.push_str(
            "\n## Notepad (this conversation; yours to keep current with the notepad tool)\n",
        );
        p.push_str(notepad.trim());
        p.push('\n');
    }
    if let Some(summary) = parts.summary {
        p.push_str("\n## Earlier in this conversation (summary)\n");
        p.push_str(summary.trim());
        p.push('\n');
    }
    p.trim_start().to_owned()
}

/// The agent's memories in full and its scratchpad by title; over the
/// memories' budget, a request to consolidate (nothing is cut).
fn notes(p: &mut String, notes: &PromptNotes) {
    p.push_str(
        "## Memory (as this conversation began; what changed since is in the conversation)\n",
    );
    if notes.memories.is_empty() {
        p.push_str("(nothing remembered yet; manage_knowledge keeps facts worth keeping)\n");
    }
    for (id, fact) in &notes.memories {
        let _ = writeln!(p, "- [{id}] {fact}");
    }
    if notes.memory_chars > MEMORY_BUDGET_CHARS {
        let _ = writeln!(
            p,
            "Your memories take {} characters, over their budget of {MEMORY_BUDGET_CHARS}: \
             consolidate them now with manage_knowledge (merge related ones with update, remove \
             what is stale, move long ones to the scratchpad). Nothing has been dropped.",
            notes.memory_chars
        );
    }
    if !notes.titles.is_empty() {
        p.push_str(
            "\n## Scratchpad\nTitles only; read an entry with manage_knowledge \
             {\"tier\": \"scratchpad\", \"action\": \"read\", \"id\": ...}.\n",
        );
        for (id, title) in &notes.titles {
            let _ = writeln!(p, "- [{id}] {title}");
        }
    }
}
