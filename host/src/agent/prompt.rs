//! The system prompt: who the agent is, when it is, what it knows, and what
//! it can do.
//!
//! Skills appear by name and description only; the agent reads a skill's
//! body with `read_skill` when it needs it, which keeps every prompt small
//! however many skills there are.

use std::fmt::Write as _;

use super::history::Speaker;
use super::profiles::Profile;
use super::stamp::local_time;
use crate::knowledge::notes::{MEMORY_BUDGET_CHARS, PromptNotes};

/// What goes into the system prompt.
pub struct PromptParts<'a> {
    /// The identity text (the main agent's).
    pub identity: &'a str,
    /// The agent the prompt is for.
    pub profile: &'a Profile,
    /// The owner's name, when configured.
    pub owner: Option<&'a str>,
    /// Who wrote the message being answered.
    pub speaker: &'a Speaker,
    /// `(name, description)` of each skill.
    pub skills: Vec<(String, String)>,
    /// The agent's own memories and scratchpad titles.
    pub notes: &'a PromptNotes,
    /// This session's notepad, when something is written there.
    pub notepad: Option<&'a str>,
    /// `(name, description)` of each tool.
    pub tools: &'a [(String, String)],
    /// The names of the owner's secrets (never their values).
    pub secrets: &'a [String],
    /// The summary of compacted history, if any.
    pub summary: Option<&'a str>,
    /// The owner's time zone.
    pub zone: &'a jiff::tz::TimeZone,
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

/// Builds the system prompt.
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
    match parts.speaker {
        Speaker::Owner => p.push_str("You are speaking with your owner.\n"),
        Speaker::Contact(name) => {
            let _ = writeln!(
                p,
                "You are speaking with {name}, a contact of your owner (not your owner). \
                 Do for them only what your owner would want done for them."
            );
        }
        Speaker::Agent(_, name) => {
            let _ = writeln!(
                p,
                "The message comes from {name}, another of your owner's agents, not from a person."
            );
        }
        Speaker::Scheduler => p.push_str(
            "The message comes from your scheduler, not from a person: a reminder or task set \
             earlier is due. Carry it out for your owner.\n",
        ),
    }
    let _ = writeln!(
        p,
        "Current date and time: {}. Each message starts with when it came, on which channel and \
         from whom.",
        local_time(jiff::Timestamp::now(), parts.zone)
    );
    if !parts.skills.is_empty() {
        p.push_str("\n## Skills\nRead a skill's instructions with read_skill before using it.\n");
        for (name, description) in &parts.skills {
            let _ = writeln!(p, "- {name}: {description}");
        }
    }
    notes(&mut p, parts.notes);
    if let Some(notepad) = parts.notepad.filter(|n| !n.trim().is_empty()) {
        p.push_str(
            "\n## Notepad (this conversation; yours to keep current with the notepad tool)\n",
        );
        p.push_str(notepad.trim());
        p.push('\n');
    }
    if !parts.tools.is_empty() {
        p.push_str("\n## Tools\n");
        for (name, description) in parts.tools {
            let first_line = description.lines().next().unwrap_or_default();
            let _ = writeln!(p, "- {name}: {first_line}");
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
    if let Some(summary) = parts.summary {
        p.push_str("\n## Earlier in this conversation (summary)\n");
        p.push_str(summary.trim());
        p.push('\n');
    }
    p
}

/// The agent's memories in full and its scratchpad by title; over the
/// memories' budget, a request to consolidate (nothing is cut).
fn notes(p: &mut String, notes: &PromptNotes) {
    p.push_str("\n## Memory\n");
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
