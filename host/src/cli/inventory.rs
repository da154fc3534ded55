//! Printing the plugin and tool inventory, as tables or JSON.

use std::process::ExitCode;

use serde_json::json;

use crate::plugins::PluginState;
use crate::runtime::Runtime;
use crate::scripting::describe_problem;

/// `hearth plugins`. A channel's health is the running daemon's (this
/// command's own copy of a channel plugin does not serve it); without a
/// running daemon it is `null`.
pub fn plugins(rt: &Runtime, as_json: bool) -> anyhow::Result<ExitCode> {
    let reports = rt.plugins.reports();
    let live = super::chat::daemon_status(&rt.config.home);
    let health_of = |name: Option<&String>| -> Option<serde_json::Value> {
        let channels = live.as_ref()?["channels"].as_array()?;
        channels
            .iter()
            .find(|c| c["plugin"].as_str() == name.map(String::as_str))
            .filter(|c| !c["state"].is_null())
            .map(|c| json!({ "state": c["state"], "detail": c["detail"] }))
    };
    if as_json {
        let rows: Vec<_> = reports
            .iter()
            .map(|r| {
                let (state, reason) = state_parts(&r.state);
                let health = health_of(r.name.as_ref());
                json!({
                    "name": r.name, "version": r.version, "path": r.path,
                    "state": state, "reason": reason,
                    "tools": r.tools, "channel": r.channel, "channel_status": health,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("plugins ({}):", reports.len());
    for r in &reports {
        let (state, reason) = state_parts(&r.state);
        println!(
            "  {:<12} {:<8} {:<8} tools: {:<3} {}",
            r.name.as_deref().unwrap_or("?"),
            r.version.as_deref().unwrap_or("-"),
            state,
            r.tools.len(),
            r.path.display()
        );
        if let Some(reason) = reason {
            println!("      reason: {reason}");
        }
        if let Some(channel) = &r.channel {
            let health = match (&live, health_of(r.name.as_ref())) {
                (None, _) => "the daemon is not running".to_owned(),
                (Some(_), None) => "no report yet".to_owned(),
                (Some(_), Some(h)) => match h["detail"].as_str().filter(|d| !d.is_empty()) {
                    Some(detail) => format!("{} ({detail})", h["state"].as_str().unwrap_or("?")),
                    None => h["state"].as_str().unwrap_or("?").to_owned(),
                },
            };
            println!("      channel {channel}: {health}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `hearth tools`: every tool with its source, then scripts that failed to
/// load (file, line, error).
pub fn tools(rt: &Runtime, as_json: bool) -> anyhow::Result<ExitCode> {
    let listed = rt.tools.list();
    let problems = script_problems(rt);
    if as_json {
        let rows: Vec<_> = listed
            .iter()
            .map(|t| json!({ "spec": t.spec, "source": t.source }))
            .collect();
        let out = json!({ "tools": rows, "script_errors": problems });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("tools ({}):", listed.len());
    for t in &listed {
        let risk = serde_json::to_value(t.spec.risk)?;
        println!(
            "  {:<20} {:<6} {:<24} {}",
            t.spec.name,
            risk.as_str().unwrap_or("?"),
            t.source,
            t.spec.description
        );
    }
    if !problems.is_empty() {
        println!("\nscripts that did not load ({}):", problems.len());
        for p in &problems {
            println!("  {p}");
        }
    }
    if let Some(scripts) = rt.tools.scripts() {
        let catalog = scripts.catalog();
        let skills: Vec<_> = catalog.skills().collect();
        println!("\nskills ({}):", skills.len());
        for s in skills {
            println!("  {:<20} {}", s.doc.name, s.doc.description);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn script_problems(rt: &Runtime) -> Vec<String> {
    rt.tools
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
        .chain(script_problems(rt))
        .collect()
}

fn state_parts(state: &PluginState) -> (&'static str, Option<&str>) {
    match state {
        PluginState::Active => ("active", None),
        PluginState::Off(why) => ("off", Some(why.as_str())),
        PluginState::Failed(why) => ("failed", Some(why.as_str())),
    }
}
