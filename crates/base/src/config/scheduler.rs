//! `[scheduler]`: the limits that keep a runaway agent from flooding the
//! scheduler with jobs.

use serde::Deserialize;

/// `[scheduler]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// The most jobs (not removed, not finished) one agent may have.
    pub max_jobs_per_agent: u32,
    /// The most jobs one creator (the owner, or one agent) may create in an
    /// hour, counting jobs removed since.
    pub max_creations_per_hour: u32,
    /// Runs in a row that may fail before a job is disabled and the owner
    /// told.
    pub max_failures: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            max_jobs_per_agent: 200,
            max_creations_per_hour: 30,
            max_failures: 3,
        }
    }
}

impl SchedulerConfig {
    /// The first key whose value is out of range, with why.
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        let checks = [
            ("max_jobs_per_agent", self.max_jobs_per_agent, 100_000),
            (
                "max_creations_per_hour",
                self.max_creations_per_hour,
                100_000,
            ),
            ("max_failures", self.max_failures, 1_000),
        ];
        for (key, value, most) in checks {
            if value == 0 || value > most {
                return Err((format!("scheduler.{key}"), format!("must be 1 to {most}")));
            }
        }
        Ok(())
    }
}
