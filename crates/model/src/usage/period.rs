//! Today and this month in the owner's time zone: the spans the daily
//! budget counts over and the reports add up.
//!
//! A day runs from local midnight to the next local midnight, so it is 23
//! or 25 hours long on the days the clocks change; where midnight itself is
//! skipped (a zone that springs forward at 00:00) the day starts at the
//! first valid instant after it.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;

/// A span of time: from `start_ms` (included) to `end_ms` (excluded),
/// Unix milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Its first millisecond.
    pub start_ms: i64,
    /// The first millisecond after it.
    pub end_ms: i64,
}

impl Span {
    /// Whether `at_ms` falls inside.
    pub fn contains(&self, at_ms: i64) -> bool {
        (self.start_ms..self.end_ms).contains(&at_ms)
    }
}

/// The local day around `at_ms` in `zone`.
pub fn day(at_ms: i64, zone: &TimeZone) -> Span {
    let date = local_date(at_ms, zone);
    span(date, date.tomorrow().ok(), zone)
}

/// The local calendar month around `at_ms` in `zone`.
pub fn month(at_ms: i64, zone: &TimeZone) -> Span {
    let first = local_date(at_ms, zone).first_of_month();
    let next = first.last_of_month().tomorrow().ok();
    span(first, next, zone)
}

/// The civil date at `at_ms` in `zone`.
pub fn local_date(at_ms: i64, zone: &TimeZone) -> Date {
    instant(at_ms).to_zoned(zone.clone()).date()
}

fn span(first: Date, next: Option<Date>, zone: &TimeZone) -> Span {
    Span {
        start_ms: midnight(first, zone).unwrap_or(i64::MIN),
        end_ms: next.and_then(|d| midnight(d, zone)).unwrap_or(i64::MAX),
    }
}

/// The first instant of `date` in `zone` (midnight, or the first valid
/// instant after a midnight the zone skips).
fn midnight(date: Date, zone: &TimeZone) -> Option<i64> {
    date.to_zoned(zone.clone())
        .ok()
        .map(|z| z.timestamp().as_millisecond())
}

fn instant(at_ms: i64) -> Timestamp {
    Timestamp::from_millisecond(at_ms).unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn days_and_months_follow_the_owners_zone() {
        // (zone, instant, day start, day end, month start, month end)
        let cases = [
            (
                "UTC",
                "2026-11-25T18:00:00Z",
                "2026-11-25T00:00:00Z",
                "2026-11-26T00:00:00Z",
                "2026-11-01T00:00:00Z",
                "2026-12-01T00:00:00Z",
            ),
            // Still the 25th in UTC, already the 26th in Kiritimati (+14).
            (
                "Pacific/Kiritimati",
                "2026-11-25T18:00:00Z",
                "2026-11-25T10:00:00Z",
                "2026-11-26T10:00:00Z",
                "2026-10-31T10:00:00Z",
                "2026-11-30T10:00:00Z",
            ),
            // A 23-hour day: Berlin springs forward on 2026-03-29.
            (
                "Europe/Berlin",
                "2026-03-29T12:00:00Z",
                "2026-03-28T23:00:00Z",
                "2026-03-29T22:00:00Z",
                "2026-02-28T23:00:00Z",
                "2026-03-31T22:00:00Z",
            ),
            // A 25-hour day: New York falls back on 2026-11-01.
            (
                "America/New_York",
                "2026-11-01T12:00:00Z",
                "2026-11-01T04:00:00Z",
                "2026-11-02T05:00:00Z",
                "2026-11-01T04:00:00Z",
                "2026-12-01T05:00:00Z",
            ),
            // Santiago springs forward at midnight (2026-09-06): that day
            // starts at 01:00 local, the first instant that exists.
            (
                "America/Santiago",
                "2026-09-06T12:00:00Z",
                "2026-09-06T04:00:00Z",
                "2026-09-07T03:00:00Z",
                "2026-09-01T04:00:00Z",
                "2026-10-01T03:00:00Z",
            ),
        ];
        for (zone, at, day_start, day_end, month_start, month_end) in cases {
            let tz = TimeZone::get(zone).unwrap();
            let at = ms(at);
            let d = day(at, &tz);
            assert_eq!(
                (d.start_ms, d.end_ms),
                (ms(day_start), ms(day_end)),
                "{zone} day"
            );
            assert!(d.contains(at) && !d.contains(d.end_ms), "{zone}");
            let m = month(at, &tz);
            assert_eq!(
                (m.start_ms, m.end_ms),
                (ms(month_start), ms(month_end)),
                "{zone} month"
            );
        }
    }
}
