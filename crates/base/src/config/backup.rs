//! `[backup]`: when hearth backs itself up, where the archives go, and how
//! many it keeps (docs/operations.md, "Backups and restore").

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[backup]`, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct BackupConfig {
    /// Whether the daemon makes scheduled backups.
    pub enabled: bool,
    /// When: a 5-field cron expression read in the owner's zone.
    pub schedule: String,
    /// Where archives go; `None`: `$HEARTH_HOME/backups`.
    pub dir: Option<PathBuf>,
    /// Whether `secrets.json` goes into the archive.
    pub include_secrets: bool,
    /// Whether what people sent and the agent made (`media/`,
    /// `attachments/`, `voice/`) goes into the archive.
    pub include_media: bool,
    /// The newest archives kept whatever their age.
    pub keep_last: u32,
    /// Months (this one and the ones before) whose newest archive is kept.
    pub keep_monthly: u32,
    /// Whether each year's newest archive is kept forever.
    pub keep_yearly: bool,
}

/// The schedule when none is given: every night at 03:30.
pub const DEFAULT_SCHEDULE: &str = "30 3 * * *";

impl Default for BackupConfig {
    fn default() -> Self {
        BackupConfig {
            enabled: true,
            schedule: DEFAULT_SCHEDULE.to_owned(),
            dir: None,
            include_secrets: true,
            include_media: true,
            keep_last: 30,
            keep_monthly: 12,
            keep_yearly: true,
        }
    }
}

impl BackupConfig {
    /// The folder archives go to when `hearth backup` is given no `--to`.
    pub fn dir_in(&self, home: &Path) -> PathBuf {
        self.dir.clone().unwrap_or_else(|| home.join("backups"))
    }
}

/// `[backup]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBackup {
    enabled: Option<bool>,
    schedule: Option<String>,
    dir: Option<String>,
    include_secrets: Option<bool>,
    include_media: Option<bool>,
    keep_last: Option<u32>,
    keep_monthly: Option<u32>,
    keep_yearly: Option<bool>,
}

/// Checks `[backup]`: the schedule must read in `zone`, `dir` is resolved
/// against `base`; the error is `(key, message)`.
pub(super) fn build(
    raw: RawBackup,
    base: &Path,
    zone: &str,
) -> Result<BackupConfig, (String, String)> {
    let defaults = BackupConfig::default();
    let schedule = raw.schedule.unwrap_or(defaults.schedule);
    crate::schedule::Schedule::checked_cron(&schedule, zone)
        .map_err(|e| ("backup.schedule".to_owned(), e.to_string()))?;
    let dir = match raw.dir {
        Some(dir) if dir.trim().is_empty() => {
            return Err(("backup.dir".to_owned(), "must not be empty".to_owned()));
        }
        Some(dir) => {
            Some(super::resolve(base, &dir).map_err(|e| ("backup.dir".to_owned(), e.to_string()))?)
        }
        None => None,
    };
    let keep_last = raw.keep_last.unwrap_or(defaults.keep_last);
    if !(1..=100_000).contains(&keep_last) {
        return Err((
            "backup.keep_last".to_owned(),
            "must be 1 to 100000: the newest archive is always kept".to_owned(),
        ));
    }
    let keep_monthly = raw.keep_monthly.unwrap_or(defaults.keep_monthly);
    if keep_monthly > 1_200 {
        return Err((
            "backup.keep_monthly".to_owned(),
            "must be 0 to 1200".to_owned(),
        ));
    }
    Ok(BackupConfig {
        enabled: raw.enabled.unwrap_or(defaults.enabled),
        schedule: schedule.trim().to_owned(),
        dir,
        include_secrets: raw.include_secrets.unwrap_or(defaults.include_secrets),
        include_media: raw.include_media.unwrap_or(defaults.include_media),
        keep_last,
        keep_monthly,
        keep_yearly: raw.keep_yearly.unwrap_or(defaults.keep_yearly),
    })
}
