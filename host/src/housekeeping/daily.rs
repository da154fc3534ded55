//! The daemon's housekeeping task: a run shortly after start (so a home
//! that was off for weeks is tidied without waiting a day), then one a
//! day, each on a blocking thread.
//!
//! It keeps real time, not the scheduler's clock: files age by their real
//! modification times, and a clock moved for a test (`HEARTH_FAKE_NOW`)
//! must not make today's files look months old.

use std::sync::Arc;
use std::time::Duration;

use hearth_base::config::Config;

/// How long after start the first run waits: past the busy first moments
/// (plugins connecting, missed jobs firing).
pub const FIRST_RUN_AFTER: Duration = Duration::from_secs(30);

/// The time between runs.
pub const EVERY: Duration = Duration::from_secs(24 * 3600);

/// Runs housekeeping on `config`'s home for as long as the daemon runs.
pub async fn run(config: Arc<Config>) {
    tokio::time::sleep(FIRST_RUN_AFTER).await;
    loop {
        let config = Arc::clone(&config);
        let now = hearth_base::store::now_ms();
        // What the run touched (its code, the heap it grew) is not needed
        // again for a day: given back as start-up's is.
        let run = move || {
            let report = super::run(&config, now);
            crate::resident::give_back();
            report
        };
        match tokio::task::spawn_blocking(run).await {
            Ok(Ok(report)) if report.files > 0 || !report.failures.is_empty() => {
                tracing::info!(
                    files = report.files,
                    bytes = report.bytes,
                    "housekeeping: {}",
                    report.summary()
                );
            }
            Ok(Ok(report)) => tracing::debug!("housekeeping: {}", report.summary()),
            Ok(Err(e)) => tracing::error!("housekeeping failed (tried again tomorrow): {e}"),
            Err(e) => tracing::error!("housekeeping stopped short: {e}"),
        }
        tokio::time::sleep(EVERY).await;
    }
}
