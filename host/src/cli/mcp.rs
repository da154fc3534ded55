//! `hearth mcp list`: the MCP servers the owner configured, their state
//! and their tools.
//!
//! With a daemon running, the rows are its own (the `mcp` request over the
//! control socket), so the states are live. Without one, the command's own
//! runtime loads the plugin as a one-shot (`serving = false`), which starts
//! no server: the states then say only what is configured and which tools
//! were last seen.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::client::Daemon;
use crate::daemon::control::mcp_rows;
use crate::runtime::Runtime;

/// `hearth mcp list` from the running daemon.
pub fn list_live(daemon: &mut Daemon, as_json: bool) -> anyhow::Result<ExitCode> {
    let answer = daemon.ask(json!({ "op": "mcp" }))?;
    print(&answer, true, as_json)
}

/// `hearth mcp list` from this command's own runtime.
pub fn list(rt: &Runtime, as_json: bool) -> anyhow::Result<ExitCode> {
    print(&mcp_rows(&rt.plugins, &rt.tools), false, as_json)
}

fn print(doc: &Value, live: bool, as_json: bool) -> anyhow::Result<ExitCode> {
    if as_json {
        let out = json!({ "plugin": doc["plugin"], "servers": doc["servers"], "live": live });
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let plugin = &doc["plugin"];
    if plugin["state"] != "active" {
        outln!(
            "the mcp plugin is {}: {}",
            plugin["state"].as_str().unwrap_or("?"),
            plugin["reason"].as_str().unwrap_or("no reason given")
        );
        return Ok(ExitCode::SUCCESS);
    }
    let servers = doc["servers"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if servers.is_empty() {
        outln!("no MCP servers are configured ([plugins.mcp.servers.NAME], docs/mcp.md)");
        return Ok(ExitCode::SUCCESS);
    }
    if !live {
        outln!("the daemon is not running: states are as configured, tools as last seen");
    }
    outln!("mcp servers ({}):", servers.len());
    for server in servers {
        let tools: Vec<&str> = server["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        outln!(
            "  {:<16} {:<9} tools: {}",
            server["name"].as_str().unwrap_or("?"),
            server["state"].as_str().unwrap_or("?"),
            tools.len()
        );
        if let Some(detail) = server["detail"].as_str().filter(|d| !d.is_empty()) {
            outln!("      {detail}");
        }
        for tool in tools {
            outln!("      {tool}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
