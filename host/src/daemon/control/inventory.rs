//! The plugin and tool inventory as JSON rows: what the daemon answers to
//! `plugins`, `tools` and `mcp`, and what a CLI command without a daemon
//! builds from its own runtime, so both print from the same rows.

use serde_json::{Value, json};

use hearth_agent::tools::ToolRegistry;
use hearth_plugins::{PluginSet, PluginState};
use hearth_script::describe_problem;

/// One row per plugin found. `live` says whether the plugins are the
/// running daemon's: only then is a channel's health known
/// (`channel_status`, `null` until the channel reports).
pub fn plugins(set: &PluginSet, live: bool) -> Vec<Value> {
    set.reports()
        .iter()
        .map(|r| {
            let (state, reason) = state_parts(&r.state);
            let health = set
                .active()
                .iter()
                .filter(|_| live)
                .find(|p| Some(&p.name) == r.name.as_ref())
                .and_then(|p| p.channel_status())
                .map(|h| json!({ "state": h.state, "detail": h.detail }));
            json!({
                "name": r.name, "version": r.version, "path": r.path,
                "state": state, "reason": reason,
                "tools": r.tools, "channel": r.channel, "channel_status": health,
            })
        })
        .collect()
}

/// The MCP plugin's servers: `{"plugin": {state, reason}, "servers":
/// [{name, state, detail, tools: [names]}]}`, each server's tools being
/// the registry's `mcp.<server>.*`.
pub fn mcp(set: &PluginSet, registry: &ToolRegistry) -> Value {
    const PLUGIN: &str = "mcp";
    let report = set
        .reports()
        .into_iter()
        .find(|r| r.name.as_deref() == Some(PLUGIN));
    let (state, reason) = match &report {
        Some(r) => {
            let (state, reason) = state_parts(&r.state);
            (state, reason.map(str::to_owned))
        }
        None => ("missing", Some("no plugin named mcp was found".to_owned())),
    };
    let listed = registry.list();
    let servers: Vec<Value> = hearth_plugins::parts(set.active())
        .into_iter()
        .filter(|part| part.plugin == PLUGIN)
        .map(|part| {
            let prefix = format!("{PLUGIN}.{}.", part.status.name);
            let tools: Vec<&str> = listed
                .iter()
                .map(|t| t.spec.name.as_str())
                .filter(|name| name.starts_with(&prefix))
                .collect();
            json!({
                "name": part.status.name, "state": part.status.state,
                "detail": part.status.detail, "tools": tools,
            })
        })
        .collect();
    json!({ "plugin": { "state": state, "reason": reason }, "servers": servers })
}

/// Every tool with its source, the scripts that failed to load, and the
/// skills: `{"tools":[{"spec","source"}],"script_errors":[..],"skills":[..]}`.
pub fn tools(registry: &ToolRegistry) -> Value {
    let tools: Vec<Value> = registry
        .list()
        .iter()
        .map(|t| json!({ "spec": t.spec, "source": t.source }))
        .collect();
    // `null` without a script subsystem, so no empty section is shown.
    let skills: Option<Vec<Value>> = registry.scripts().map(|s| {
        s.catalog()
            .skills()
            .map(|s| json!({ "name": s.doc.name, "description": s.doc.description }))
            .collect()
    });
    json!({ "tools": tools, "script_errors": script_problems(registry), "skills": skills })
}

/// The scripts that failed to load: file, line, error.
pub fn script_problems(registry: &ToolRegistry) -> Vec<String> {
    registry
        .scripts()
        .map(|s| {
            s.catalog()
                .problems()
                .iter()
                .map(describe_problem)
                .collect()
        })
        .unwrap_or_default()
}

fn state_parts(state: &PluginState) -> (&'static str, Option<&str>) {
    match state {
        PluginState::Active => ("active", None),
        PluginState::Off(why) => ("off", Some(why.as_str())),
        PluginState::Failed(why) => ("failed", Some(why.as_str())),
    }
}
