//! `/memory`: the owner sees the agent's memories, those automatic
//! capture added marked with the day it did, and drops any of them
//! (`/memory drop ID`). A dropped memory is not captured again from the
//! same messages: capture has read past them.

use super::Agent;
use hearth_data::knowledge::notes::MEMORY_BUDGET_CHARS;

/// Answers `/memory` with `rest` after the command.
pub(super) fn slash(agent: &Agent, rest: &str) -> String {
    let notes = &agent.base.notes;
    let id = agent.profile.id;
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        [] => match notes.listed(id) {
            Ok(listed) => list(agent, &listed),
            Err(e) => format!("Could not read the memories: {e}"),
        },
        ["drop" | "forget" | "remove", which] => match which.trim_start_matches('#').parse() {
            Ok(memory) => match notes.remove_memory(id, memory) {
                Ok(_) => format!("Dropped memory {memory}."),
                Err(_) => format!("There is no memory {memory}; /memory lists them."),
            },
            Err(_) => format!("{which:?} is not a memory's id; /memory lists them."),
        },
        _ => "Use /memory to list the memories, /memory drop ID to drop one.".into(),
    }
}

/// The listing: each memory with its id, the captured ones with the day.
fn list(agent: &Agent, listed: &[hearth_data::knowledge::notes::Listed]) -> String {
    let capture = &agent.base.capture;
    if listed.is_empty() {
        return format!("No memories yet.\nAutomatic capture: {capture}.");
    }
    let chars: usize = listed.iter().map(|m| m.text.chars().count()).sum();
    let mut out = format!(
        "Memories ({}, {chars} of {MEMORY_BUDGET_CHARS} characters):",
        listed.len()
    );
    for m in listed {
        out.push_str(&format!("\n{}. {}", m.id, m.text));
        if let Some(at) = m.captured_at_ms {
            out.push_str(&format!(" (captured {})", day(at, &agent.base.zone)));
        }
    }
    out.push_str(&format!(
        "\nAutomatic capture: {capture}.\n/memory drop ID forgets one."
    ));
    out
}

/// `ms` as the owner's day, `3 Dec`.
fn day(ms: i64, zone: &jiff::tz::TimeZone) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_zoned(zone.clone()).strftime("%-d %b").to_string())
        .unwrap_or_else(|_| "?".into())
}
