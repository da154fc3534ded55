//! `hearth usage [--day|--month] [--json]`: tokens and estimated cost per
//! model, today and this month in the owner's zone, and the budgets.
//!
//! It reads `hearth.db` alone, opened read-only, whether or not the daemon
//! runs: in WAL mode a reader never holds the daemon up, and the daemon
//! commits a call's row within milliseconds of the call. Prices and budgets
//! come from the config on disk.

use std::process::ExitCode;

use anyhow::Context;
use rusqlite::{Connection, OpenFlags};

use crate::config::Config;
use crate::store;
use crate::usage::Settings;
use crate::usage::report::{self, Which};

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
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}
