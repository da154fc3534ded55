//! The scheduler: reminders, one-shot and recurring jobs, scheduled tasks.
//!
//! - `hearth_base::schedule` (below the config, which checks schedules with it):
//!   when a job fires: cron in an IANA zone, or one instant, with the DST
//!   rules stated and tested there;
//! - `jobs`: the `jobs` table, its limits and validation;
//! - `fire`: due jobs become inbox messages, exactly once;
//! - `heartbeat`: the one job `[heartbeat]` keeps, whose prompt is the
//!   owner's checklist;
//! - `timer`: sleeping until a wall-clock instant, woken early when the
//!   clock is set;
//! - `clock`: the one source of "now", which tests can move.
//!
//! [`Scheduler::run`] is one task: fire what is due, then sleep until the
//! earliest next run or until a job changes. With nothing due it holds no
//! timer and makes no wake-ups. Runs missed while the daemon was down are
//! found by the first pass after start, each job's `missed` policy decides
//! what fires, and a clock that jumps is handled the same way.

pub mod clock;
pub mod fire;
pub mod heartbeat;
pub mod jobs;
pub mod timer;

use std::sync::Arc;

pub use clock::Clock;
pub use jobs::{Job, JobChanges, JobError, Jobs, Kind, Missed, NewJob, When};

use hearth_sdk::protocol::{ChannelEvent, UpcomingJob};

use hearth_base::channels::events::ChannelEvents;
use hearth_data::router::Router;

/// How many upcoming jobs the channels are shown.
const UPCOMING: usize = 10;

/// The scheduler task's parts.
pub struct Scheduler {
    jobs: Arc<Jobs>,
    router: Arc<Router>,
    events: Arc<ChannelEvents>,
    /// The upcoming jobs the channels were last told about.
    shown: std::sync::Mutex<Vec<UpcomingJob>>,
}

impl Scheduler {
    /// A scheduler firing `jobs` into the inbox, waking agents through
    /// `router` and showing the next jobs on the channels of `events`.
    pub fn new(jobs: Arc<Jobs>, router: Arc<Router>, events: Arc<ChannelEvents>) -> Scheduler {
        Scheduler {
            jobs,
            router,
            events,
            // The channels start out showing no jobs (the canvas's hello
            // carries its list, empty until told), so an empty schedule is
            // never broadcast: a browser that connects as the daemon starts
            // gets no frame it did not ask for.
            shown: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Fires due jobs and sleeps until the next, for as long as the daemon
    /// runs.
    pub async fn run(self: Arc<Self>) {
        let timer = match timer::WallTimer::new() {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::error!(
                    "the scheduler has no wall-clock timer ({e}); it checks every minute"
                );
                None
            }
        };
        loop {
            let next = self.pass();
            self.show_upcoming();
            let clock = self.jobs.clock();
            let wake = next.map(|ms| clock.to_system_ms(ms));
            tokio::select! {
                () = sleep_until(timer.as_ref(), wake) => {}
                () = self.jobs.changed.notified() => {}
            }
        }
    }

    /// Fires what is due now; returns the next due instant (clock ms).
    pub fn pass(&self) -> Option<i64> {
        let now = self.jobs.clock().now_ms();
        match self.jobs.with_conn(|conn| fire::fire_due(conn, now)) {
            Ok(pass) => {
                if pass.fired > 0 {
                    tracing::info!(fired = pass.fired, "scheduled jobs fired");
                }
                for agent in pass.agents {
                    self.router.agent(agent).wake.notify_one();
                }
                pass.next_due_ms
            }
            Err(e) => {
                // The jobs stay due; the next pass (a minute on) tries again.
                tracing::error!("cannot fire scheduled jobs: {e}");
                Some(now + 60_000)
            }
        }
    }

    /// Fires job `id` now, outside its schedule.
    pub fn run_now(&self, id: i64) -> Result<Job, JobError> {
        let job = self.jobs.get(id)?;
        let now = self.jobs.clock().now_ms();
        self.jobs
            .with_conn(|conn| fire::fire_now(conn, &job, now))?;
        self.router.agent(job.agent_id).wake.notify_one();
        self.jobs.get(id)
    }

    /// Tells the channels that show them the next jobs, when those
    /// changed since they were last told.
    fn show_upcoming(&self) {
        let upcoming = match self.jobs.upcoming(UPCOMING) {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!("cannot read the upcoming jobs: {e}");
                return;
            }
        };
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        if *shown == upcoming {
            return;
        }
        self.events.broadcast(&ChannelEvent::Schedule {
            jobs: upcoming.clone(),
        });
        *shown = upcoming;
    }

    /// The jobs.
    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }
}

/// Sleeps until the system clock reads `at_ms`; forever when `None`.
async fn sleep_until(timer: Option<&timer::WallTimer>, at_ms: Option<i64>) {
    match (timer, at_ms) {
        (_, None) => std::future::pending().await,
        (Some(timer), Some(at)) => {
            if let Err(e) = timer.sleep_until(at).await {
                tracing::warn!("the scheduler's timer failed ({e}); checking again in a minute");
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            }
        }
        (None, Some(at)) => {
            let wait = (at - hearth_base::store::now_ms()).clamp(0, 60_000);
            tokio::time::sleep(std::time::Duration::from_millis(wait as u64)).await;
        }
    }
}
