//! `[heartbeat]`: the agent's regular look at a checklist the owner keeps
//! (`HEARTBEAT.md`), speaking only when something needs them
//! (docs/operations.md, "Heartbeat"). Off until the owner turns it on:
//! every run is a model call, paid for.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[heartbeat]`, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct HeartbeatConfig {
    /// Whether the heartbeat runs.
    pub enabled: bool,
    /// When: a 5-field cron expression (or `@daily`...) read in the
    /// owner's zone.
    pub schedule: String,
    /// The checklist file; `None`: `$HEARTH_HOME/HEARTBEAT.md`.
    pub checklist: Option<PathBuf>,
    /// Where its answers go, `(channel, chat)`; `None`: to the owner, as a
    /// scheduled task's.
    pub to: Option<(String, String)>,
}

/// The schedule when none is given: every day at 08:00.
pub const DEFAULT_SCHEDULE: &str = "0 8 * * *";

/// The checklist's file name in the home when none is given.
pub const CHECKLIST_FILE: &str = "HEARTBEAT.md";

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig {
            enabled: false,
            schedule: DEFAULT_SCHEDULE.to_owned(),
            checklist: None,
            to: None,
        }
    }
}

impl HeartbeatConfig {
    /// The checklist's path for the home `home`.
    pub fn checklist_in(&self, home: &Path) -> PathBuf {
        self.checklist
            .clone()
            .unwrap_or_else(|| home.join(CHECKLIST_FILE))
    }
}

/// `[heartbeat]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHeartbeat {
    enabled: Option<bool>,
    schedule: Option<String>,
    checklist: Option<String>,
    channel: Option<String>,
    chat: Option<String>,
}

/// Checks `[heartbeat]`: the schedule must read in `zone` (even while it is
/// off, so turning it on later cannot fail), `checklist` is resolved
/// against `base`, and `channel` and `chat` come together; the error is
/// `(key, message)`.
pub(super) fn build(
    raw: RawHeartbeat,
    base: &Path,
    zone: &str,
) -> Result<HeartbeatConfig, (String, String)> {
    let key = |k: &str| format!("heartbeat.{k}");
    let schedule = raw
        .schedule
        .unwrap_or_else(|| DEFAULT_SCHEDULE.to_owned())
        .trim()
        .to_owned();
    crate::schedule::Schedule::checked_cron(&schedule, zone)
        .map_err(|e| (key("schedule"), e.to_string()))?;
    let checklist = match raw.checklist {
        Some(path) if path.trim().is_empty() => {
            return Err((key("checklist"), "must not be empty".to_owned()));
        }
        Some(path) => {
            Some(super::resolve(base, path.trim()).map_err(|e| (key("checklist"), e.to_string()))?)
        }
        None => None,
    };
    let text = |k: &str, v: Option<String>| match v {
        Some(v) if v.trim().is_empty() => Err((key(k), "must not be empty".to_owned())),
        v => Ok(v.map(|v| v.trim().to_owned())),
    };
    let to = match (text("channel", raw.channel)?, text("chat", raw.chat)?) {
        (Some(channel), Some(chat)) => {
            if channel == "scheduler" {
                return Err((
                    key("channel"),
                    "\"scheduler\" is the scheduler's own pseudo-channel, which no one reads; \
                     name a channel plugin such as \"telegram\""
                        .to_owned(),
                ));
            }
            Some((channel, chat))
        }
        (None, None) => None,
        (Some(_), None) => {
            return Err((
                key("chat"),
                "required with heartbeat.channel: the chat on that channel it speaks in \
                 (leave both out to reach the owner as scheduled tasks do)"
                    .to_owned(),
            ));
        }
        (None, Some(_)) => {
            return Err((
                key("channel"),
                "required with heartbeat.chat: the channel plugin the chat is on".to_owned(),
            ));
        }
    };
    Ok(HeartbeatConfig {
        enabled: raw.enabled.unwrap_or(false),
        schedule,
        checklist,
        to,
    })
}
