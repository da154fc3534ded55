//! `hearth schedule`: the owner's view of reminders and scheduled tasks.
//!
//! Every action goes through the running daemon's control socket, which
//! answers with the same code as the agent's `manage_schedule` (the owner
//! is the caller, so no approval is asked). `list` also works without a
//! daemon, reading `hearth.db`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::client::Daemon;
use hearth_agent::scheduler::jobs::{kind_name, missed_name};
use hearth_agent::scheduler::{Clock, Jobs};
use hearth_base::config::Config;
use hearth_base::schedule;
use hearth_base::store::{Cold, Store};
use hearth_base::time_text::local_time;

/// `hearth schedule list [--json]`.
pub fn list(
    config: &Config,
    daemon: Option<&mut Daemon>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let jobs: Vec<Value> = match daemon {
        Some(d) => {
            let answer = d.ask(json!({ "op": "schedule", "action": "list" }))?;
            answer["result"]["jobs"]
                .as_array()
                .cloned()
                .context("the daemon sent a malformed answer")?
        }
        None => offline_list(config)?,
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&jobs)?);
        return Ok(ExitCode::SUCCESS);
    }
    if jobs.is_empty() {
        outln!("no jobs");
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:>4}  {:<8} {:<9} {:<22} {:<24} {:<10} text",
        "id",
        "kind",
        "state",
        "next run",
        "schedule",
        "agent"
    );
    for job in &jobs {
        let when = job["cron"]
            .as_str()
            .map(|c| format!("{c} ({})", job["zone"].as_str().unwrap_or_default()))
            .or_else(|| job["at"].as_str().map(|a| format!("once {a}")))
            .unwrap_or_default();
        let text = job["text"].as_str().unwrap_or_default();
        outln!(
            "{:>4}  {:<8} {:<9} {:<22} {:<24} {:<10} {}",
            job["id"],
            job["kind"].as_str().unwrap_or_default(),
            job["state"].as_str().unwrap_or_default(),
            job["next_run"].as_str().unwrap_or("-"),
            when,
            job["agent"].as_str().unwrap_or_default(),
            text.lines().next().unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `hearth schedule run|enable|disable|remove ID`, through the daemon.
pub fn act(daemon: Option<&mut Daemon>, action: &str, id: i64) -> anyhow::Result<ExitCode> {
    let Some(daemon) = daemon else {
        bail!(
            "hearth is not running; `hearth schedule {action}` goes through the daemon (start it with `hearth run`)"
        );
    };
    let answer = daemon.ask(json!({ "op": "schedule", "action": action, "id": id }))?;
    let result = &answer["result"];
    match action {
        "run_now" => outln!("job {id} fired; its answer arrives like any other"),
        "remove" => outln!("job {id} removed"),
        _ => {
            let next: Vec<&str> = result["next_runs"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            outln!(
                "job {id} is {}{}",
                result["state"].as_str().unwrap_or(action),
                if next.is_empty() {
                    String::new()
                } else {
                    format!("; next: {}", next.join(", "))
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The jobs, read from `hearth.db` while no daemon runs.
fn offline_list(config: &Config) -> anyhow::Result<Vec<Value>> {
    let path = config.home.join(hearth_base::store::FILE_NAME);
    let store = Store::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    drop(store);
    let zone = schedule::owner_zone(config.owner.timezone.as_deref());
    let jobs = Jobs::new(
        Cold::open(&path)?,
        Clock::system(),
        config.scheduler.clone(),
        zone.clone(),
    );
    Ok(jobs
        .list(None)?
        .iter()
        .map(|j| {
            json!({
                "id": j.id,
                "kind": kind_name(j.kind),
                "state": j.state(),
                "cron": j.cron,
                "zone": j.cron.as_ref().map(|_| &j.zone),
                "at": j.at_ms.map(|ms| local_time(ms, &zone)),
                "text": j.text,
                "agent": format!("agent {}", j.agent_id),
                "missed": missed_name(j.missed),
                "next_run": j.next_run_ms.filter(|_| j.enabled).map(|ms| local_time(ms, &zone)),
                "last_outcome": j.last_outcome,
            })
        })
        .collect())
}
