//! `[housekeeping]`: how long each kind of file the home gathers is kept
//! before the daily housekeeping removes it (docs/operations.md,
//! "Housekeeping"). Every kind defaults to 30 days; `0` or `"forever"`
//! keeps a kind forever.

use serde::Deserialize;

/// The days a kind is kept when `[housekeeping]` does not say.
pub const DEFAULT_DAYS: u32 = 30;

/// The longest retention written as days (a century); beyond it, say
/// `"forever"`.
const MAX_DAYS: i64 = 36_500;

/// How long one kind of file is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retention {
    /// Removed once older than this many days.
    Days(u32),
    /// Never removed.
    Forever,
}

impl Retention {
    /// The age in milliseconds past which a file goes; `None` for forever.
    pub fn max_age_ms(self) -> Option<i64> {
        match self {
            Retention::Days(days) => Some(i64::from(days) * 86_400_000),
            Retention::Forever => None,
        }
    }

    /// As written in the config and shown by the doctor.
    pub fn describe(self) -> String {
        match self {
            Retention::Days(1) => "1 day".to_owned(),
            Retention::Days(days) => format!("{days} days"),
            Retention::Forever => "forever".to_owned(),
        }
    }
}

/// `[housekeeping]`, checked: a retention per kind.
#[derive(Clone, Debug, PartialEq)]
pub struct HousekeepingConfig {
    /// `logs/` other than the shell's exec logs.
    pub logs: Retention,
    /// `logs/exec-*.log`: the shell plugin's full command output.
    pub exec_logs: Retention,
    /// `media/`: images and PDFs prepared for the model.
    pub media: Retention,
    /// `attachments/`: files people sent on the channels.
    pub attachments: Retention,
    /// `voice/`: voice notes the agent spoke.
    pub voice: Retention,
    /// `workers/`: `spawn_agent` workers' full results.
    pub workers: Retention,
    /// `processes/proc-*/`: records (and output) of background processes
    /// that have ended.
    pub processes: Retention,
}

impl Default for HousekeepingConfig {
    fn default() -> Self {
        let days = Retention::Days(DEFAULT_DAYS);
        HousekeepingConfig {
            logs: days,
            exec_logs: days,
            media: days,
            attachments: days,
            voice: days,
            workers: days,
            processes: days,
        }
    }
}

/// One kind's value as written: days, or a word.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawRetention {
    /// A number of days; `0` keeps forever.
    Days(i64),
    /// `"forever"` (anything else is refused).
    Word(String),
}

/// `[housekeeping]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHousekeeping {
    logs: Option<RawRetention>,
    exec_logs: Option<RawRetention>,
    media: Option<RawRetention>,
    attachments: Option<RawRetention>,
    voice: Option<RawRetention>,
    workers: Option<RawRetention>,
    processes: Option<RawRetention>,
}

/// Checks `[housekeeping]`; the error is `(key, message)`.
pub(super) fn build(raw: RawHousekeeping) -> Result<HousekeepingConfig, (String, String)> {
    let one = |key: &str, value: Option<RawRetention>| -> Result<Retention, (String, String)> {
        let bad = |why: String| {
            Err((
                format!("housekeeping.{key}"),
                format!(
                    "{why}: give days to keep (1 to {MAX_DAYS}), or 0 or \"forever\" to keep forever"
                ),
            ))
        };
        match value {
            None => Ok(Retention::Days(DEFAULT_DAYS)),
            Some(RawRetention::Days(0)) => Ok(Retention::Forever),
            Some(RawRetention::Days(days)) if (1..=MAX_DAYS).contains(&days) => {
                Ok(Retention::Days(days as u32))
            }
            Some(RawRetention::Days(days)) => bad(format!("{days} is out of range")),
            Some(RawRetention::Word(word)) if word.trim().eq_ignore_ascii_case("forever") => {
                Ok(Retention::Forever)
            }
            Some(RawRetention::Word(word)) => bad(format!("{word:?} is not a retention")),
        }
    };
    Ok(HousekeepingConfig {
        logs: one("logs", raw.logs)?,
        exec_logs: one("exec_logs", raw.exec_logs)?,
        media: one("media", raw.media)?,
        attachments: one("attachments", raw.attachments)?,
        voice: one("voice", raw.voice)?,
        workers: one("workers", raw.workers)?,
        processes: one("processes", raw.processes)?,
    })
}
