//! `hearth usage [--day|--month] [--json]`: tokens and estimated cost per
//! model, today and this month in the owner's zone, and the budgets.
//!
//! Beside a running daemon it asks the daemon (`usage` on the control
//! socket), which commits the rows its writer still holds and prices them
//! with the config it runs with. Without one it reads `hearth.db` alone,
//! opened read-only, with prices and budgets from the config on disk.

use std::process::ExitCode;

use anyhow::Context;
use rusqlite::{Connection, OpenFlags};

use super::client::Daemon;
use hearth_base::config::Config;
use hearth_base::store;
use hearth_model::usage::Settings;
use hearth_model::usage::report::{self, Which};

/// `hearth usage` beside a running daemon.
pub fn show_live(daemon: &mut Daemon, spans: &[Which], as_json: bool) -> anyhow::Result<ExitCode> {
    let answer = daemon.ask(serde_json::json!({ "op": "usage", "spans": spans }))?;
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&answer["report"])?);
    } else {
        outln!("{}", answer["text"].as_str().unwrap_or_default());
    }
    Ok(ExitCode::SUCCESS)
}

/// `hearth usage`: `spans` today, this month, or both.
pub fn show(config: &Config, spans: &[Which], as_json: bool) -> anyhow::Result<ExitCode> {
    let path = config.home.join(store::FILE_NAME);
    // No store yet: nothing has been recorded, which is an answer too.
    let conn = if path.exists() {
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("cannot open {} read-only", path.display()))?;
        Some(conn)
    } else {
        None
    };
    let settings = Settings::from_config(config);
    let report =
        report::build(conn.as_ref(), &settings, store::now_ms(), spans).with_context(|| {
            format!(
                "cannot read the usage from {} (its table is made when a daemon of this \
                 version starts)",
                path.display()
            )
        })?;
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        outln!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}
