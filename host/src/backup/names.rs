//! An archive's name: `hearth-backup-2026-11-26T233000Z.tar.gz`, the
//! instant it was made in UTC to the second. Retention and the scheduled
//! backups read the time back from the name alone, and nothing that does
//! not match the pattern exactly is ever deleted.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

/// What every archive's name starts with.
pub const PREFIX: &str = "hearth-backup-";
/// What every archive's name ends with.
pub const SUFFIX: &str = ".tar.gz";

/// The name of an archive made at `at`.
pub fn name(at: Timestamp) -> String {
    format!("{PREFIX}{}{SUFFIX}", at.strftime(FORMAT))
}

/// The instant an archive named `name` was made; `None` for a name that is
/// not exactly an archive's.
pub fn parse(name: &str) -> Option<Timestamp> {
    let stamp = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    // `YYYY-MM-DDTHHMMSSZ`, digits where digits go: strptime alone would
    // take a shorter year or a sign.
    let shape = "dddd-dd-ddTddddddZ";
    if stamp.len() != shape.len()
        || !stamp.bytes().zip(shape.bytes()).all(|(c, s)| match s {
            b'd' => c.is_ascii_digit(),
            other => c == other,
        })
    {
        return None;
    }
    let civil = DateTime::strptime(FORMAT, stamp).ok()?;
    civil.to_zoned(TimeZone::UTC).ok().map(|z| z.timestamp())
}

/// The instant's format inside the name.
const FORMAT: &str = "%Y-%m-%dT%H%M%SZ";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_as_its_instant_to_the_second() {
        let at: Timestamp = "2026-11-26T23:30:00.750Z".parse().unwrap();
        let name = name(at);
        assert_eq!(name, "hearth-backup-2026-11-26T233000Z.tar.gz");
        assert_eq!(parse(&name), Some("2026-11-26T23:30:00Z".parse().unwrap()));
    }

    #[test]
    fn only_exact_names_are_archives() {
        for other in [
            "hearth-backup-2026-11-26T233000Z.tar.gz.partial",
            ".hearth-backup-2026-11-26T233000Z.tar.gz.partial",
            "hearth-backup-2026-11-26T233000Z.tar",
            "hearth-backup-2026-11-26T2330Z.tar.gz",
            "hearth-backup-2026-13-26T233000Z.tar.gz",
            "hearth-backup-+2026-11-26T233000Z.tar.gz",
            "my-hearth-backup-2026-11-26T233000Z.tar.gz",
            "notes.txt",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
