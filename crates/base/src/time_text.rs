//! How times and durations are written for people, in the owner's zone:
//! the scheduler's listings, the usage report and the budgets' replies
//! all say them the same way, and none of them needs another for it.

/// `ms` (Unix milliseconds) as an instant; out of range, the epoch.
pub fn timestamp(ms: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// `ms` as a local time in `zone` (`2026-03-29 09:00 CEST`).
pub fn local_time(ms: i64, zone: &str) -> String {
    match jiff::tz::TimeZone::get(zone) {
        Ok(tz) => timestamp(ms)
            .to_zoned(tz)
            .strftime("%Y-%m-%d %H:%M %Z")
            .to_string(),
        Err(_) => timestamp(ms).to_string(),
    }
}

/// A duration for people: `3 d 4 h`, `2 h 5 min`, `40 s`.
pub fn human(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    let (d, h, m) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}
