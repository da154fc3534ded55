//! The daemon's scheduled backups: `[backup] schedule`, a cron expression
//! in the owner's zone, timed by the scheduler's `Clock` and wall-clock
//! timer (so `HEARTH_FAKE_NOW` moves it like every job).
//!
//! The last archive in the backup folder is the task's only state: the
//! next backup is the schedule's first instant after it. So a restart
//! right after a backup finds that archive and waits for the next time
//! (no second backup), and a daemon that was off at the scheduled time
//! makes one backup when it starts, however many runs it missed. With no
//! archive yet, the first is made at the first scheduled time from start.
//! A failed backup is logged and tried again at the next scheduled time.

use std::sync::Arc;

use jiff::Timestamp;

use super::{Backups, retention};
use hearth_agent::scheduler::timer::WallTimer;
use hearth_base::schedule::Schedule;

/// Makes backups on `schedule` for as long as the daemon runs.
pub async fn run(backups: Arc<Backups>, schedule: Schedule) {
    let clock = backups.clock();
    let timer = match WallTimer::new() {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::error!(
                "scheduled backups have no wall-clock timer ({e}); checking every minute"
            );
            None
        }
    };
    let started = clock.now();
    let mut last_attempt: Option<Timestamp> = None;
    loop {
        // An archive named in the future (made while the clock was wrong)
        // must not hold the schedule back until that day.
        let newest = retention::newest(backups.dir())
            .map(|(at, _)| at)
            .filter(|at| *at <= clock.now());
        let after = newest.max(last_attempt).unwrap_or(started);
        let Some(due) = schedule.next_after(after) else {
            tracing::warn!("the backup schedule never fires again; no scheduled backups");
            return;
        };
        let now = clock.now();
        if due > now {
            let wake = clock.to_system_ms(due.as_millisecond());
            match &timer {
                Some(timer) => {
                    if let Err(e) = timer.sleep_until(wake).await {
                        tracing::warn!("the backup timer failed ({e}); checking in a minute");
                        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                    }
                }
                None => {
                    let wait = (wake - hearth_base::store::now_ms()).clamp(0, 60_000);
                    tokio::time::sleep(std::time::Duration::from_millis(wait as u64)).await;
                }
            }
            // Look again: the timer also wakes when the clock is set.
            continue;
        }
        if newest.is_some() && now.duration_since(due).as_secs() > 60 {
            tracing::info!(due = %due, "a scheduled backup was missed while hearth was down; making it now");
        }
        // Named no earlier than its due time, so that the archive itself
        // says this run is done.
        let at = now.max(due);
        last_attempt = Some(at);
        let job = Arc::clone(&backups);
        match tokio::task::spawn_blocking(move || job.run_at(None, at)).await {
            Ok(Ok(made)) => tracing::info!(
                path = %made.path.display(),
                size = made.size,
                files = made.manifest.files.len(),
                pruned = made.pruned.len(),
                "scheduled backup made"
            ),
            Ok(Err(e)) => tracing::error!("scheduled backup failed: {e}"),
            Err(e) => tracing::error!("scheduled backup failed: {e}"),
        }
    }
}
