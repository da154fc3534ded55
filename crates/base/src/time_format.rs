//! strftime-style formatting of Unix times, in UTC: Lua's
//! `hearth.time.format` and the times the CLI prints in its records.
//!
//! A small, exact subset (the specifiers scripts actually use) instead of a
//! date-time crate's formatter: the output is predictable, and the same in a
//! script and on the owner's terminal.

/// Weekday names, Sunday first (as `tm_wday` counts).
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Formats `at` (seconds since the Unix epoch) with `format`. Supported:
/// `%Y %m %d %H %M %S %j %a %A %b %B %s %Z %z %%`.
pub fn format(format: &str, at: f64) -> Result<String, String> {
    if !at.is_finite() || at.abs() > 1e13 {
        return Err(format!("hearth.time.format: {at} is not a usable time"));
    }
    let secs = at.floor() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let weekday = (days + 4).rem_euclid(7) as usize; // 1970-01-01 was a Thursday
    let yday = days - days_from_civil(year, 1, 1) + 1;
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&year.to_string()),
            Some('m') => out.push_str(&format!("{month:02}")),
            Some('d') => out.push_str(&format!("{day:02}")),
            Some('H') => out.push_str(&format!("{hour:02}")),
            Some('M') => out.push_str(&format!("{minute:02}")),
            Some('S') => out.push_str(&format!("{second:02}")),
            Some('j') => out.push_str(&format!("{yday:03}")),
            Some('a') => out.push_str(&DAYS[weekday][..3]),
            Some('A') => out.push_str(DAYS[weekday]),
            Some('b') => out.push_str(&MONTHS[month as usize - 1][..3]),
            Some('B') => out.push_str(MONTHS[month as usize - 1]),
            Some('s') => out.push_str(&secs.to_string()),
            Some('Z') => out.push_str("UTC"),
            Some('z') => out.push_str("+0000"),
            Some('%') => out.push('%'),
            Some(other) => return Err(format!("hearth.time.format: unknown specifier %{other}")),
            None => return Err("hearth.time.format: the format ends with a lone %".into()),
        }
    }
    Ok(out)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) to days since 1970-01-01.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::format;

    #[test]
    fn formats_known_instants() {
        let cases = [
            (
                0.0,
                "%Y-%m-%d %H:%M:%S %a %j",
                "1970-01-01 00:00:00 Thu 001",
            ),
            (
                951_782_400.0,
                "%Y-%m-%d %A %B",
                "2000-02-29 Tuesday February",
            ),
            (
                1_795_000_000.5,
                "%Y-%m-%dT%H:%M:%SZ",
                "2026-11-18T11:06:40Z",
            ),
            (-86_400.0, "%Y-%m-%d", "1969-12-31"),
            (
                1_700_000_000.0,
                "%s %Z %z 100%%",
                "1700000000 UTC +0000 100%",
            ),
        ];
        for (at, fmt, expected) in cases {
            assert_eq!(format(fmt, at).unwrap(), expected, "{at} {fmt}");
        }
        assert!(format("%Q", 0.0).unwrap_err().contains("%Q"));
        assert!(format("%Y", f64::NAN).is_err());
    }
}
