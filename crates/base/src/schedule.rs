//! When a job fires: a cron expression read in an IANA time zone, or one
//! instant. Parsing and calendar arithmetic are croner's and jiff's; this
//! file only states the rules and checks the input.
//!
//! The rules, for a cron job in a zone with daylight saving time:
//! - a wall-clock time the spring-forward change skips (02:30 on the last
//!   Sunday of March in Berlin) fires once, at the first valid instant after
//!   it (03:00 local);
//! - a wall-clock time the fall-back change repeats fires once, at its first
//!   occurrence (02:30 summer time);
//! - expressions that fire every few minutes keep firing through both
//!   halves of a repeated hour, each instant once.
//!
//! Expressions have five fields (minute hour day-of-month month
//! day-of-week), with names for months and weekdays (`MON`, `JAN`), `0` or
//! `7` for Sunday, and the aliases `@yearly`, `@monthly`, `@weekly`,
//! `@daily` and `@hourly`. When both day fields are restricted, a day that
//! matches either fires, as in Vixie cron.

use std::collections::HashMap;
use std::str::FromStr;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{Span, Timestamp, Zoned, civil};

/// Why a schedule was refused.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleError {
    /// The cron expression does not parse.
    #[error("{expr:?} is not a valid cron expression: {reason}")]
    Cron {
        /// The expression as given.
        expr: String,
        /// What the parser said.
        reason: String,
    },
    /// The cron expression parses but never fires (`0 0 30 2 *`).
    #[error("{expr:?} never fires")]
    Never {
        /// The expression as given.
        expr: String,
    },
    /// The zone is not in the tz database.
    #[error("{zone:?} is not a known IANA time zone (like \"Europe/Berlin\")")]
    Zone {
        /// The zone as given.
        zone: String,
    },
    /// The instant does not parse.
    #[error(
        "{text:?} is not a time: use RFC 3339 (\"2026-12-24T18:00:00+01:00\") or a local time \
         (\"2026-12-24 18:00\")"
    )]
    Instant {
        /// The text as given.
        text: String,
    },
    /// The delay does not parse.
    #[error("{text:?} is not a delay: use a duration like \"20m\", \"2h 30m\" or \"1d\"")]
    Delay {
        /// The text as given.
        text: String,
    },
    /// A one-shot instant that has passed.
    #[error("{at} is in the past (now is {now})")]
    Past {
        /// The instant.
        at: Timestamp,
        /// Now.
        now: Timestamp,
    },
}

/// When a job fires.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// Every match of a cron expression, read in a zone.
    Cron {
        /// The expression as given.
        expr: String,
        /// The parsed expression.
        cron: Box<Cron>,
        /// The zone.
        zone: TimeZone,
    },
    /// Once.
    Once(Timestamp),
}

impl Schedule {
    /// A cron schedule; `zone` is an IANA name.
    pub fn cron(expr: &str, zone: &str) -> Result<Schedule, ScheduleError> {
        let tz = time_zone(zone)?;
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(expr.trim())
            .map_err(|e| ScheduleError::Cron {
                expr: expr.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Schedule::Cron {
            expr: expr.trim().to_owned(),
            cron: Box::new(cron),
            zone: tz,
        })
    }

    /// [`Schedule::cron`], refusing an expression that never fires (it
    /// names a day no month has): said when the job is made, not at its
    /// first run.
    pub fn checked_cron(expr: &str, zone: &str) -> Result<Schedule, ScheduleError> {
        let schedule = Schedule::cron(expr, zone)?;
        if schedule.next_after(Timestamp::UNIX_EPOCH).is_none() {
            return Err(ScheduleError::Never {
                expr: expr.to_owned(),
            });
        }
        Ok(schedule)
    }

    /// The first instant strictly after `after` at which this fires.
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Once(at) => (*at > after).then_some(*at),
            Schedule::Cron { cron, zone, .. } => {
                let start = after.to_zoned(zone.clone());
                cron.find_next_occurrence(&start, false)
                    .ok()
                    .map(|z: Zoned| z.timestamp())
            }
        }
    }

    /// The next `n` instants after `after`.
    pub fn upcoming(&self, after: Timestamp, n: usize) -> Vec<Timestamp> {
        let mut out = Vec::with_capacity(n);
        let mut at = after;
        while out.len() < n {
            match self.next_after(at) {
                Some(next) => {
                    out.push(next);
                    at = next;
                }
                None => break,
            }
        }
        out
    }
}

/// Schedules parsed once per distinct expression and zone, for a pass over
/// many jobs. Parsing is the expensive part (croner fills a table of 5,000
/// years for every expression, about 30 µs); computing a next run from a
/// parsed schedule takes a microsecond or two, and jobs share expressions.
#[derive(Default)]
pub struct Parsed {
    cron: HashMap<(String, String), Result<Schedule, ScheduleError>>,
}

impl Parsed {
    /// The next run after `after` of a job whose schedule is `cron` in
    /// `zone`, or `at` (ms) for a one-shot.
    pub fn next_after(
        &mut self,
        cron: Option<&str>,
        zone: &str,
        at: Option<i64>,
        after: Timestamp,
    ) -> Result<Option<Timestamp>, ScheduleError> {
        let Some(expr) = cron else {
            let at = Timestamp::from_millisecond(at.unwrap_or_default())
                .unwrap_or(Timestamp::UNIX_EPOCH);
            return Ok(Schedule::Once(at).next_after(after));
        };
        let schedule = self
            .cron
            .entry((expr.to_owned(), zone.to_owned()))
            .or_insert_with(|| Schedule::cron(expr, zone));
        match schedule {
            Ok(s) => Ok(s.next_after(after)),
            Err(e) => Err(e.clone()),
        }
    }
}

/// The zone named `name`, from the tz database.
pub fn time_zone(name: &str) -> Result<TimeZone, ScheduleError> {
    TimeZone::get(name.trim()).map_err(|_| ScheduleError::Zone {
        zone: name.to_owned(),
    })
}

/// The IANA name of the owner's zone: `configured`, else the system's,
/// else UTC.
pub fn owner_zone(configured: Option<&str>) -> String {
    configured
        .map(str::to_owned)
        .or_else(|| {
            TimeZone::try_system()
                .ok()
                .and_then(|tz| tz.iana_name().map(str::to_owned))
        })
        .unwrap_or_else(|| "UTC".into())
}

/// Reads `text` as an instant: RFC 3339 with an offset, or a local date and
/// time read in `zone`. A local time the spring-forward change skips means
/// the first valid instant after it; one the fall-back change repeats means
/// its first occurrence (the cron rules).
pub fn parse_instant(text: &str, zone: &TimeZone) -> Result<Timestamp, ScheduleError> {
    let trimmed = text.trim();
    if let Ok(at) = Timestamp::from_str(trimmed) {
        return Ok(at);
    }
    let local = civil::DateTime::from_str(trimmed).map_err(|_| ScheduleError::Instant {
        text: text.to_owned(),
    })?;
    let ambiguous = zone.to_ambiguous_timestamp(local);
    let bad = || ScheduleError::Instant {
        text: text.to_owned(),
    };
    match ambiguous.offset() {
        AmbiguousOffset::Unambiguous { .. } | AmbiguousOffset::Fold { .. } => {
            ambiguous.earlier().map_err(|_| bad())
        }
        AmbiguousOffset::Gap { .. } => {
            // `earlier` reads the time with the offset after the change,
            // which lands before the gap; the change itself is the first
            // valid instant after the skipped time.
            let before_gap = ambiguous.earlier().map_err(|_| bad())?;
            zone.following(before_gap)
                .next()
                .map(|t| t.timestamp())
                .ok_or_else(bad)
        }
    }
}

/// Reads `text` as a delay from `now` ("20m", "2h 30m", "1d").
pub fn parse_delay(
    text: &str,
    now: Timestamp,
    zone: &TimeZone,
) -> Result<Timestamp, ScheduleError> {
    let bad = || ScheduleError::Delay {
        text: text.to_owned(),
    };
    let span = Span::from_str(text.trim()).map_err(|_| bad())?;
    if span.is_negative() || span.is_zero() {
        return Err(bad());
    }
    // Days are calendar days in the zone (a day across a DST change is 23
    // or 25 hours), so the span is added to a zoned time.
    now.to_zoned(zone.clone())
        .checked_add(span)
        .map(|z| z.timestamp())
        .map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// `(expression, zone, after, the next instants)`.
    const CASES: &[(&str, &str, &str, &[&str])] = &[
        // Every day at 09:00 Berlin: 08:00Z in winter, 07:00Z in summer.
        (
            "0 9 * * *",
            "Europe/Berlin",
            "2026-01-14T12:00:00Z",
            &["2026-01-15T08:00:00Z", "2026-01-16T08:00:00Z"],
        ),
        (
            "0 9 * * *",
            "Europe/Berlin",
            "2026-07-14T12:00:00Z",
            &["2026-07-15T07:00:00Z", "2026-07-16T07:00:00Z"],
        ),
        // Across the spring-forward change: 09:00 moves from 08:00Z to 07:00Z.
        (
            "0 9 * * *",
            "Europe/Berlin",
            "2026-03-28T12:00:00Z",
            &["2026-03-29T07:00:00Z", "2026-03-30T07:00:00Z"],
        ),
        // 02:30 does not exist on 2026-03-29 in Berlin: once, at 03:00 local.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-03-28T12:00:00Z",
            &["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"],
        ),
        // 02:30 happens twice on 2026-10-25: once, at the first (summer time).
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-10-24T12:00:00Z",
            &["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"],
        ),
        // Mondays at 09:00, by name.
        (
            "0 9 * * MON",
            "UTC",
            "2026-11-24T00:00:00Z",
            &["2026-11-30T09:00:00Z", "2026-12-07T09:00:00Z"],
        ),
        // Sunday is 0 and 7.
        (
            "0 9 * * 0",
            "UTC",
            "2026-11-24T00:00:00Z",
            &["2026-11-29T09:00:00Z"],
        ),
        (
            "0 9 * * 7",
            "UTC",
            "2026-11-24T00:00:00Z",
            &["2026-11-29T09:00:00Z"],
        ),
        (
            "@daily",
            "Asia/Tokyo",
            "2026-11-24T00:00:00Z",
            &["2026-11-24T15:00:00Z", "2026-11-25T15:00:00Z"],
        ),
        (
            "*/15 * * * *",
            "UTC",
            "2026-11-24T10:07:00Z",
            &[
                "2026-11-24T10:15:00Z",
                "2026-11-24T10:30:00Z",
                "2026-11-24T10:45:00Z",
                "2026-11-24T11:00:00Z",
            ],
        ),
        // The 31st: months without one are skipped.
        (
            "0 12 31 * *",
            "UTC",
            "2026-01-31T13:00:00Z",
            &[
                "2026-03-31T12:00:00Z",
                "2026-05-31T12:00:00Z",
                "2026-07-31T12:00:00Z",
                "2026-08-31T12:00:00Z",
            ],
        ),
        // Feb 29: leap years only.
        (
            "0 0 29 2 *",
            "UTC",
            "2026-01-01T00:00:00Z",
            &["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"],
        ),
        // Both day fields restricted: either matches (the 1st, or a Friday).
        (
            "0 8 1 * FRI",
            "UTC",
            "2026-11-24T00:00:00Z",
            &[
                "2026-11-27T08:00:00Z",
                "2026-12-01T08:00:00Z",
                "2026-12-04T08:00:00Z",
            ],
        ),
        // Every 30 minutes through the repeated hour: each instant once.
        (
            "*/30 * * * *",
            "Europe/Berlin",
            "2026-10-24T23:45:00Z",
            &[
                "2026-10-25T00:00:00Z",
                "2026-10-25T00:30:00Z",
                "2026-10-25T01:00:00Z",
                "2026-10-25T01:30:00Z",
                "2026-10-25T02:00:00Z",
            ],
        ),
    ];

    #[test]
    fn fire_times_match_the_table() {
        for (expr, zone, after, want) in CASES {
            let schedule = Schedule::checked_cron(expr, zone).unwrap();
            let got: Vec<String> = schedule
                .upcoming(at(after), want.len())
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(&got, want, "{expr} in {zone} after {after}");
        }
    }

    #[test]
    fn bad_expressions_and_zones_are_refused_with_what_was_wrong() {
        let cases: &[(&str, &str, &str)] = &[
            ("61 * * * *", "UTC", "not a valid cron expression"),
            ("* * *", "UTC", "not a valid cron expression"),
            ("0 0 0 0 0 0", "UTC", "not a valid cron expression"),
            ("", "UTC", "not a valid cron expression"),
            ("0 0 30 2 *", "UTC", "never fires"),
            ("0 9 * * *", "Mars/Olympus", "not a known IANA time zone"),
            ("0 9 * * *", "", "not a known IANA time zone"),
        ];
        for (expr, zone, want) in cases {
            let err = Schedule::checked_cron(expr, zone).unwrap_err().to_string();
            assert!(err.contains(want), "{expr:?} {zone:?}: {err}");
        }
    }

    #[test]
    fn one_shot_instants_are_read_with_the_cron_rules() {
        let berlin = time_zone("Europe/Berlin").unwrap();
        let cases: &[(&str, &str)] = &[
            ("2026-12-24T18:00:00+01:00", "2026-12-24T17:00:00Z"),
            ("2026-12-24 18:00", "2026-12-24T17:00:00Z"),
            ("2026-07-01T09:30", "2026-07-01T07:30:00Z"),
            // Skipped by the spring-forward change: the change itself.
            ("2026-03-29 02:30", "2026-03-29T01:00:00Z"),
            // Repeated by the fall-back change: the first.
            ("2026-10-25 02:30", "2026-10-25T00:30:00Z"),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_instant(text, &berlin).unwrap().to_string(),
                *want,
                "{text}"
            );
        }
        for bad in ["tomorrow", "2026-13-01 10:00", "", "12:00"] {
            assert!(matches!(
                parse_instant(bad, &berlin),
                Err(ScheduleError::Instant { .. })
            ));
        }
    }

    #[test]
    fn delays_are_added_in_calendar_days() {
        let berlin = time_zone("Europe/Berlin").unwrap();
        let now = at("2026-03-28T09:00:00Z");
        assert_eq!(
            parse_delay("20m", now, &berlin).unwrap(),
            at("2026-03-28T09:20:00Z")
        );
        // A day across the spring-forward change is 23 hours.
        assert_eq!(
            parse_delay("1d", now, &berlin).unwrap(),
            at("2026-03-29T08:00:00Z")
        );
        for bad in ["", "soon", "-5m", "0s"] {
            assert!(parse_delay(bad, now, &berlin).is_err(), "{bad}");
        }
    }
}
