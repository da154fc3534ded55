//! `hearth approvals` and `hearth audit`: the policy's records.
//!
//! With a daemon running they ask it over the control socket (it commits
//! its queued audit rows first, so the answer is current). Without one
//! they open `hearth.db` and nothing else: no plugin, no Lua worker. A
//! revoked grant stops counting at the daemon's next ask, since grants are
//! read per ask.

use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::json;

use super::client::Daemon;
use hearth_base::config::Config;
use hearth_base::store::{self, Store};
use hearth_base::time_format;
use hearth_policy::audit::Record;
use hearth_policy::grants::Grant;
use hearth_policy::{audit, grants};

/// `hearth approvals [--all] [--json]`.
pub fn approvals(
    config: &Config,
    daemon: Option<&mut Daemon>,
    all: bool,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let list: Vec<Grant> = match daemon {
        Some(d) => {
            let answer = d.ask(json!({ "op": "approvals", "all": all }))?;
            serde_json::from_value(answer["grants"].clone())
                .context("the daemon sent malformed grants")?
        }
        None => grants::list(open(config)?.conn(), all).context("cannot read the grants")?,
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        outln!("no standing grants (answer \"always allow\" on a confirmation to make one)");
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:>4}  {:<19}  {:<14} {:>5}  what",
        "id",
        "granted",
        "tool",
        "uses"
    );
    for g in &list {
        let what = g.command.clone().unwrap_or_else(|| g.args.to_string());
        let revoked = g
            .revoked_at_ms
            .map(|at| format!("  (revoked {})", when(at)))
            .unwrap_or_default();
        outln!(
            "{:>4}  {:<19}  {:<14} {:>5}  {}{revoked}",
            g.id,
            when(g.created_at_ms),
            g.tool,
            g.uses,
            one_line(&what, 80)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `hearth approvals revoke ID`.
pub fn revoke(config: &Config, daemon: Option<&mut Daemon>, id: i64) -> anyhow::Result<ExitCode> {
    match daemon {
        Some(d) => {
            d.ask(json!({ "op": "revoke", "id": id }))?;
        }
        None => {
            if !grants::revoke(open(config)?.conn(), id).context("cannot revoke the grant")? {
                bail!("there is no active grant {id}; `hearth approvals` lists them");
            }
        }
    }
    outln!("grant {id} revoked: that call asks again from now on");
    Ok(ExitCode::SUCCESS)
}

/// `hearth audit [--tool T] [--limit N] [--json]`.
pub fn audit(
    config: &Config,
    daemon: Option<&mut Daemon>,
    tool: Option<&str>,
    limit: u32,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let records: Vec<Record> = match daemon {
        Some(d) => {
            let answer = d.ask(json!({ "op": "audit", "tool": tool, "limit": limit }))?;
            serde_json::from_value(answer["records"].clone())
                .context("the daemon sent malformed audit rows")?
        }
        None => {
            audit::recent(open(config)?.conn(), tool, limit).context("cannot read the audit")?
        }
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&records)?);
        return Ok(ExitCode::SUCCESS);
    }
    for r in &records {
        let approval = match (&r.approval, &r.approver) {
            (Some(a), Some(by)) => format!(" {a} by {by}"),
            (Some(a), None) => format!(" {a}"),
            _ => String::new(),
        };
        outln!(
            "{}  {:<16} {:<14} {}{approval} -> {} ({:.1} ms)",
            when(r.at_ms),
            r.caller,
            r.tool,
            r.decision,
            r.outcome,
            r.duration_ms
        );
        outln!("      args: {}", one_line(&r.args.to_string(), 120));
        if let Some(reason) = &r.reason {
            outln!("      reason: {}", one_line(reason, 120));
        }
        if let Some(detail) = &r.detail {
            outln!("      detail: {}", one_line(detail, 120));
        }
    }
    if records.is_empty() {
        outln!("no tool calls recorded");
    }
    Ok(ExitCode::SUCCESS)
}

fn open(config: &Config) -> anyhow::Result<Store> {
    let db = config.home.join(store::FILE_NAME);
    Store::open(&db).with_context(|| format!("cannot open {}", db.display()))
}

/// A Unix-ms time as `YYYY-MM-DD HH:MM:SS` (UTC).
fn when(at_ms: i64) -> String {
    time_format::format("%Y-%m-%d %H:%M:%S", at_ms as f64 / 1000.0).unwrap_or_else(|e| e)
}

/// `text` on one line, cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}
