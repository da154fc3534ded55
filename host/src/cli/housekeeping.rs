//! `hearth housekeeping [--json]`: runs housekeeping now, beside a running
//! daemon or without one, and says what it removed. The daemon runs the
//! same thing shortly after start and then daily; this is for the owner
//! who wants the space now, and for tests.

use std::process::ExitCode;

use serde_json::json;

use crate::housekeeping::{self, kinds::ALL};
use hearth_base::config::Config;

/// Runs it on `config`'s home and prints the report.
pub fn run(config: &Config, as_json: bool) -> anyhow::Result<ExitCode> {
    // Opening the store migrates a new home, so the run finds its tables.
    drop(hearth_base::store::Store::open(
        &config.home.join(hearth_base::store::FILE_NAME),
    )?);
    let report = housekeeping::run(config, hearth_base::store::now_ms())?;
    if as_json {
        let retention: serde_json::Map<String, serde_json::Value> = ALL
            .iter()
            .map(|k| {
                (
                    k.key().to_owned(),
                    k.retention(&config.housekeeping).describe().into(),
                )
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({ "report": report, "retention": retention }))?
        );
    } else {
        outln!("housekeeping: {}", report.summary());
    }
    Ok(if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
