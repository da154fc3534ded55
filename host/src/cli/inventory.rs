//! `hearth plugins` and `hearth tools`: the plugin and tool inventory, as
//! tables or JSON.
//!
//! With a daemon running, the rows are its own (asked over the control
//! socket): its live plugins, their channels' health, its tool registry.
//! Without one, they come from the command's own runtime, with the same
//! row builders, so the output has one shape either way.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::client::Daemon;
use crate::daemon::control::{plugin_rows, script_problems, tool_rows};
use crate::runtime::Runtime;
use hearth_plugins::PluginState;

/// Whose plugins a listing shows, which says what a channel's health is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The running daemon's: each channel's reported health.
    Daemon,
    /// This command's own, because no daemon runs.
    NoDaemon,
    /// `hearth check`'s own, whether a daemon runs or not: it checks the
    /// config file, and its channels never connect.
    Check,
}

/// `hearth plugins` from the running daemon.
pub fn plugins_live(daemon: &mut Daemon, as_json: bool) -> anyhow::Result<ExitCode> {
    let answer = daemon.ask(json!({ "op": "plugins" }))?;
    print_plugins(rows(&answer["plugins"]), Whose::Daemon, as_json)
}

/// `hearth plugins` from this command's own runtime (no channel health
/// is known).
pub fn plugins(rt: &Runtime, whose: Whose, as_json: bool) -> anyhow::Result<ExitCode> {
    print_plugins(&plugin_rows(&rt.plugins, false), whose, as_json)
}

/// `hearth tools` from the running daemon.
pub fn tools_live(daemon: &mut Daemon, as_json: bool) -> anyhow::Result<ExitCode> {
    let answer = daemon.ask(json!({ "op": "tools" }))?;
    print_tools(&answer, as_json)
}

/// `hearth tools` from this command's own runtime, with the tools only
/// the daemon provides marked as such.
pub fn tools(rt: &Runtime, as_json: bool) -> anyhow::Result<ExitCode> {
    let mut doc = tool_rows(&rt.tools);
    let extra: Vec<Value> = rt
        .tools
        .daemon_only()
        .into_iter()
        .map(|t| json!({ "spec": t.spec, "source": t.source, "needs_daemon": true }))
        .collect();
    if let Some(tools) = doc["tools"].as_array_mut() {
        tools.extend(extra);
        tools.sort_by(|a, b| a["spec"]["name"].as_str().cmp(&b["spec"]["name"].as_str()));
    }
    print_tools(&doc, as_json)
}

/// Everything `hearth check` counts as a failure.
pub fn problems(rt: &Runtime) -> Vec<String> {
    let failed = rt
        .plugins
        .reports()
        .into_iter()
        .filter_map(|r| match r.state {
            PluginState::Failed(why) => Some(why),
            _ => None,
        });
    failed
        .chain(rt.plugins.warnings().iter().cloned())
        .chain(rt.tool_warnings.iter().cloned())
        .chain(script_problems(&rt.tools))
        .collect()
}

/// What `hearth check` warns about without failing: channels whose owner
/// is whoever their allow-list names, because `[owner.identities]` names
/// no id for them. That was the meaning before contacts; with contacts,
/// a contact inside the allow-list would count as the owner. And voice:
/// a speech key that is not set, or no ffmpeg to convert with.
pub fn warnings(rt: &Runtime) -> Vec<String> {
    let speech = rt.tools.speech().map(|s| s.warnings()).unwrap_or_default();
    rt.plugins
        .active()
        .iter()
        .filter_map(|p| p.description().channel.as_ref())
        .filter(|c| !c.owners.is_empty())
        .filter(|c| {
            rt.config
                .owner
                .identities
                .get(&c.name)
                .is_none_or(Vec::is_empty)
        })
        .map(|c| {
            format!(
                "[owner.identities] names no {name} id, so every id in {key} counts as the owner; \
                 that is ambiguous once contacts exist: set [owner.identities] {name} = [\"<your id>\"] \
                 (docs/agents.md)",
                name = c.name,
                key = c.allowed_key.as_deref().unwrap_or("the channel's allow-list"),
            )
        })
        .chain(speech)
        .collect()
}

/// Prints plugin rows; `whose` says whether they are the daemon's (only
/// then can a channel's health be known).
fn print_plugins(rows: &[Value], whose: Whose, as_json: bool) -> anyhow::Result<ExitCode> {
    if as_json {
        outln!("{}", serde_json::to_string_pretty(rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("plugins ({}):", rows.len());
    for r in rows {
        outln!(
            "  {:<12} {:<8} {:<8} tools: {:<3} {}",
            r["name"].as_str().unwrap_or("?"),
            r["version"].as_str().unwrap_or("-"),
            r["state"].as_str().unwrap_or("?"),
            rows_len(&r["tools"]),
            r["path"].as_str().unwrap_or("?")
        );
        if let Some(reason) = r["reason"].as_str() {
            outln!("      reason: {reason}");
        }
        if let Some(channel) = r["channel"].as_str() {
            let health = &r["channel_status"];
            let shown = match (whose, health["state"].as_str()) {
                (Whose::NoDaemon, _) => "the daemon is not running".to_owned(),
                (Whose::Check, _) => {
                    "not connected by `hearth check` (`hearth status` shows the daemon's)"
                        .to_owned()
                }
                (Whose::Daemon, None) => "no report yet".to_owned(),
                (Whose::Daemon, Some(state)) => {
                    match health["detail"].as_str().filter(|d| !d.is_empty()) {
                        Some(detail) => format!("{state} ({detail})"),
                        None => state.to_owned(),
                    }
                }
            };
            outln!("      channel {channel}: {shown}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints `{"tools","script_errors","skills"}`: every tool with its
/// source, then scripts that failed to load (file, line, error), then
/// the skills.
fn print_tools(doc: &Value, as_json: bool) -> anyhow::Result<ExitCode> {
    let (tools, problems, skills) = (
        rows(&doc["tools"]),
        rows(&doc["script_errors"]),
        rows(&doc["skills"]),
    );
    if as_json {
        let out = json!({ "tools": tools, "script_errors": problems });
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let needing = tools.iter().filter(|t| t["needs_daemon"] == true).count();
    if needing > 0 {
        outln!(
            "tools ({}, of which {needing} only in the running daemon):",
            tools.len()
        );
    } else {
        outln!("tools ({}):", tools.len());
    }
    for t in tools {
        let spec = &t["spec"];
        let row = format!(
            "  {:<20} {:<6} {:<24} {}",
            spec["name"].as_str().unwrap_or("?"),
            spec["risk"].as_str().unwrap_or("?"),
            t["source"].as_str().unwrap_or("?"),
            spec["description"].as_str().unwrap_or("")
        );
        outln!("{}", super::fit(row));
    }
    if !problems.is_empty() {
        outln!("\nscripts that did not load ({}):", problems.len());
        for p in problems {
            outln!("  {}", p.as_str().unwrap_or("?"));
        }
    }
    if doc["skills"].is_array() {
        outln!("\nskills ({}):", skills.len());
        for s in skills {
            let row = format!(
                "  {:<20} {}",
                s["name"].as_str().unwrap_or("?"),
                s["description"].as_str().unwrap_or("")
            );
            outln!("{}", super::fit(row));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn rows(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

fn rows_len(value: &Value) -> usize {
    rows(value).len()
}
