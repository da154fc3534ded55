//! Which archives to keep: the newest `keep_last`, the newest of each of
//! the last `keep_monthly` calendar months, and the newest of each year.
//!
//! [`plan`] is a pure function over names, so the rule is tested on years
//! of simulated backups without a file; [`prune`] applies it to a folder.
//! Months and years are read in the owner's zone, counted back from the
//! month of the newest archive (so a hearth that was off for a while does
//! not lose its monthly archives to the calendar). A name that is not an
//! archive's is neither kept nor deleted: it is not ours.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::names;

/// How many archives of each kind to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// The newest archives kept whatever their age (at least 1).
    pub keep_last: usize,
    /// Calendar months, the newest archive's and those before it, whose
    /// newest archive is kept.
    pub keep_monthly: u32,
    /// Whether each year's newest archive is kept.
    pub keep_yearly: bool,
}

/// What [`plan`] decided, each list newest first.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The archives kept.
    pub keep: Vec<String>,
    /// The archives to delete.
    pub delete: Vec<String>,
}

impl Retention {
    /// The retention `[backup]` asks for.
    pub fn from_config(config: &hearth_base::config::BackupConfig) -> Retention {
        Retention {
            keep_last: config.keep_last as usize,
            keep_monthly: config.keep_monthly,
            keep_yearly: config.keep_yearly,
        }
    }
}

/// Sorts the archives among `names` into kept and deleted.
pub fn plan<S: AsRef<str>>(names: &[S], retention: &Retention, zone: &TimeZone) -> Plan {
    let mut archives: Vec<(Timestamp, &str)> = names
        .iter()
        .filter_map(|n| names::parse(n.as_ref()).map(|at| (at, n.as_ref())))
        .collect();
    archives.sort_unstable_by(|a, b| b.cmp(a));
    let month_of = |at: Timestamp| {
        let local = at.to_zoned(zone.clone());
        (i32::from(local.year()), i32::from(local.month()))
    };
    let newest_month = archives
        .first()
        .map(|(at, _)| month_of(*at))
        .map(|(y, m)| y * 12 + m);
    let (mut months, mut years) = (HashSet::new(), HashSet::new());
    let mut plan = Plan::default();
    for (index, (at, name)) in archives.iter().enumerate() {
        let (year, month) = month_of(*at);
        let age_in_months = newest_month.map_or(0, |newest| newest - (year * 12 + month));
        // Each set records the first (newest) archive of its bucket.
        let newest_of_month = months.insert((year, month));
        let newest_of_year = years.insert(year);
        let keep = index < retention.keep_last.max(1)
            || (newest_of_month && i64::from(age_in_months) < i64::from(retention.keep_monthly))
            || (newest_of_year && retention.keep_yearly);
        if keep {
            plan.keep.push((*name).to_owned());
        } else {
            plan.delete.push((*name).to_owned());
        }
    }
    plan
}

/// Applies [`plan`] to the archives in `dir`; returns the files deleted.
/// A file that cannot be deleted is left, with a warning in the log.
pub fn prune(dir: &Path, retention: &Retention, zone: &TimeZone) -> std::io::Result<Vec<PathBuf>> {
    let names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let mut deleted = Vec::new();
    for name in plan(&names, retention, zone).delete {
        let path = dir.join(&name);
        match std::fs::remove_file(&path) {
            Ok(()) => deleted.push(path),
            Err(e) => tracing::warn!(path = %path.display(), "cannot delete an old backup: {e}"),
        }
    }
    Ok(deleted)
}

/// The newest archive in `dir` and when it was made; `None` when there is
/// none (or no folder).
pub fn newest(dir: &Path) -> Option<(Timestamp, PathBuf)> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            names::parse(&name).map(|at| (at, e.path()))
        })
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Retention = Retention {
        keep_last: 30,
        keep_monthly: 12,
        keep_yearly: true,
    };

    fn day(date: &str) -> String {
        names::name(format!("{date}T03:30:00Z").parse().unwrap())
    }

    /// Three years of nightly backups, with retention after each one, as
    /// the daemon runs it: exactly the 30 newest, the newest of each of
    /// the 11 months before them, and the newest of each earlier year.
    #[test]
    fn three_years_of_daily_backups_keep_exactly_the_expected_archives() {
        let zone = TimeZone::UTC;
        let mut date = jiff::civil::date(2024, 1, 1);
        let mut dir: Vec<String> = Vec::new();
        let mut made = 0;
        while date <= jiff::civil::date(2026, 12, 31) {
            dir.push(day(&date.to_string()));
            made += 1;
            let plan = plan(&dir, &DEFAULT, &zone);
            dir.retain(|n| !plan.delete.contains(n));
            date = date.tomorrow().unwrap();
        }
        assert_eq!(made, 1096);
        let mut expected: Vec<String> = (2..=31).map(|d| day(&format!("2026-12-{d:02}"))).collect();
        for end in [
            "2026-01-31",
            "2026-02-28",
            "2026-03-31",
            "2026-04-30",
            "2026-05-31",
            "2026-06-30",
            "2026-07-31",
            "2026-08-31",
            "2026-09-30",
            "2026-10-31",
            "2026-11-30",
            "2025-12-31",
            "2024-12-31",
        ] {
            expected.push(day(end));
        }
        expected.sort();
        dir.sort();
        assert_eq!(dir, expected);
        assert_eq!(dir.len(), 43);
        // Applied once to the whole three years, the rule keeps the same.
        let all: Vec<String> = (0..1096)
            .map(|n| {
                let d = jiff::civil::date(2024, 1, 1)
                    .checked_add(jiff::Span::new().days(n))
                    .unwrap();
                day(&d.to_string())
            })
            .collect();
        let mut once = plan(&all, &DEFAULT, &zone).keep;
        once.sort();
        assert_eq!(once, expected);
    }

    #[test]
    fn names_that_are_not_archives_are_neither_kept_nor_deleted() {
        let names = [
            day("2020-01-01"),
            day("2020-01-02"),
            "notes.txt".to_owned(),
            ".hearth-backup-2020-01-03T033000Z.tar.gz.partial".to_owned(),
        ];
        let one = Retention {
            keep_last: 1,
            keep_monthly: 0,
            keep_yearly: false,
        };
        let plan = plan(&names, &one, &TimeZone::UTC);
        assert_eq!(plan.keep, vec![day("2020-01-02")]);
        assert_eq!(plan.delete, vec![day("2020-01-01")]);
    }

    #[test]
    fn months_are_the_owner_s() {
        // 23:30 UTC on the 31st is already the 1st in Berlin: that archive
        // is February's there, and January's newest is the one before.
        let names = [
            names::name("2026-01-31T23:30:00Z".parse().unwrap()),
            names::name("2026-01-30T23:30:00Z".parse().unwrap()),
            names::name("2026-01-29T23:30:00Z".parse().unwrap()),
        ];
        let monthly = Retention {
            keep_last: 1,
            keep_monthly: 12,
            keep_yearly: false,
        };
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let plan = plan(&names, &monthly, &berlin);
        assert_eq!(plan.keep, names[..2].to_vec());
        assert_eq!(plan.delete, names[2..].to_vec());
    }
}
