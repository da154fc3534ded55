//! `hearth doctor [--json]`: every check in one report, OK/WARN/FAIL with
//! the fix, exit code 1 when anything failed.
//!
//! The disk checks run here (they need no daemon, and must work when the
//! daemon cannot start). The rest comes from the running daemon over the
//! control socket (`doctor`), which knows its channels' live health and
//! holds the model's key; without a daemon the plugins are loaded once, as
//! `hearth check` does, and the model is asked from here.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use super::client::{Daemon, runtime};
use crate::doctor::live::{self, ModelSetup};
use crate::doctor::{Finding, Level, local, text, worst};
use crate::runtime::Runtime;
use hearth_base::config::{self, Config, ConfigError};
use hearth_model::llm::Llm;

/// Runs every check on the config at `path` (as loaded) and prints the
/// report.
pub fn run(
    path: Option<&Path>,
    loaded: Result<Config, ConfigError>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let mut findings = vec![local::config(path, loaded.as_ref().map(|_| ()))];
    let config = loaded.ok();
    let home = match &config {
        Some(config) => Some(config.home.clone()),
        None => config::fallback_home().ok(),
    };
    match &home {
        Some(home) => {
            findings.extend(local::home(home));
            findings.extend(local::store(home));
            findings.push(local::disk(home));
            findings.extend(crate::housekeeping::checks::findings(home, config.as_ref()));
        }
        None => findings.push(Finding::fail(
            "home",
            "no home directory: neither the config, HEARTH_HOME nor HOME names one",
            "set HEARTH_HOME, or `home` in the config",
        )),
    }
    if let Some(config) = &config {
        findings.push(local::landlock(config.mode));
        findings.push(local::capture(config));
    }
    findings.push(local::service());
    if let Some(home) = &home {
        findings.extend(daemon_checks(home, config));
    }
    if as_json {
        let report = json!({ "worst": worst(&findings), "findings": findings });
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        outln!("{}", text(&findings));
    }
    Ok(if worst(&findings) == Level::Fail {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The running daemon's answers, or, without one, the same checks on
/// plugins loaded for this command.
fn daemon_checks(home: &Path, config: Option<Config>) -> Vec<Finding> {
    let daemon = match Daemon::find(home) {
        Ok(daemon) => daemon,
        Err(e) => {
            return vec![Finding::fail(
                "daemon",
                format!("{e:#}"),
                "if a daemon runs, restart it with this version of hearth",
            )];
        }
    };
    if let Some(mut daemon) = daemon {
        return match daemon.ask(json!({ "op": "doctor" })) {
            Ok(answer) => {
                let running = Finding::ok(
                    "daemon",
                    format!(
                        "running (pid {}, up {} s)",
                        answer["pid"], answer["uptime_s"]
                    ),
                );
                let served: Result<Vec<Finding>, _> =
                    serde_json::from_value(answer["findings"].clone());
                match served {
                    Ok(served) => std::iter::once(running).chain(served).collect(),
                    Err(e) => vec![Finding::fail(
                        "daemon",
                        format!("its doctor answer is malformed: {e}"),
                        "use a `hearth` of the same version as the running daemon",
                    )],
                }
            }
            Err(e) => vec![Finding::fail(
                "daemon",
                format!("it did not answer the checks: {e:#}"),
                "restart it; its log says more",
            )],
        };
    }
    let mut findings = vec![Finding::warn(
        "daemon",
        "not running: the channels' live health is known only while it runs",
        "start it (`systemctl --user start hearth`, or `hearth run`)",
    )];
    let Some(config) = config else {
        return findings;
    };
    findings.extend(one_shot(config));
    findings
}

/// The plugins, scripts and model checked on a runtime of this command's
/// own (no daemon runs).
fn one_shot(config: Config) -> Vec<Finding> {
    let deadline = std::time::Duration::from_millis(config.daemon.shutdown_timeout_ms);
    let llm = config.llm.as_ref().map(|c| {
        Llm::new(c).map_err(|e| format!("{e} (in this shell; the daemon's environment may differ)"))
    });
    let mut findings = match Runtime::start_one_shot(config) {
        Ok(rt) => {
            let mut found = live::plugins(&rt.plugins, false);
            found.extend(live::parts(&rt.plugins));
            found.extend(live::scripts(&rt.tools));
            if let Err(e) = rt.stop(deadline) {
                found.push(Finding::warn(
                    "plugins",
                    format!("they did not stop cleanly: {e}"),
                    "the plugin named hangs at shutdown; report it to its author",
                ));
            }
            found
        }
        Err(e) => vec![Finding::fail(
            "plugins",
            format!("hearth cannot start: {e}"),
            "fix what the message names; `hearth check` says more",
        )],
    };
    let setup = match &llm {
        None => ModelSetup::Absent,
        Some(Err(why)) => ModelSetup::Broken(why),
        Some(Ok(llm)) => ModelSetup::Ready(llm),
    };
    findings.push(match runtime() {
        Ok(rt) => rt.block_on(live::model(setup)),
        Err(e) => Finding::fail("model", format!("{e:#}"), "the system is out of resources"),
    });
    findings
}
