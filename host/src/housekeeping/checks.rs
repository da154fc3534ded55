//! Housekeeping's lines in `hearth doctor`: the home's size by kind, and
//! what the last run removed (when, how many files, how many bytes).

use std::path::Path;

use super::sizes::{by_kind, human_bytes};
use crate::doctor::Finding;
use hearth_base::config::Config;

/// The `home size` and `housekeeping` findings for `home`.
pub fn findings(home: &Path, config: Option<&Config>) -> Vec<Finding> {
    let (parts, total) = by_kind(home, config);
    let shown: Vec<String> = parts
        .iter()
        .filter(|p| p.bytes > 0 || p.name == "database")
        .map(|p| format!("{} {}", p.name, human_bytes(p.bytes)))
        .collect();
    let size = Finding::ok(
        "home size",
        format!("{}: {}", human_bytes(total), shown.join(", ")),
    );
    let zone = hearth_base::schedule::owner_zone(config.and_then(|c| c.owner.timezone.as_deref()));
    let last = match super::last(home) {
        Ok(Some(report)) if report.failures.is_empty() => Finding::ok(
            "housekeeping",
            format!(
                "last run {}: {}",
                hearth_base::time_text::local_time(report.at_ms, &zone),
                report.summary()
            ),
        ),
        Ok(Some(report)) => Finding::warn(
            "housekeeping",
            format!(
                "last run {}: {}",
                hearth_base::time_text::local_time(report.at_ms, &zone),
                report.summary()
            ),
            "check the files' owner and permissions; `hearth housekeeping` tries again now",
        ),
        Ok(None) => Finding::ok(
            "housekeeping",
            "not run yet: the daemon runs it 30 s after start, then daily \
             (`hearth housekeeping` runs it now)",
        ),
        Err(e) => Finding::warn(
            "housekeeping",
            format!("its last run cannot be read: {e}"),
            "`hearth housekeeping` runs it now and records it again",
        ),
    };
    vec![size, last]
}
