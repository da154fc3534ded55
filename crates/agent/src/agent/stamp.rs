//! When, where and from whom: the line each message the model sees starts
//! with, and the time the system prompt gives.
//!
//! The system prompt says what time it is now, but a conversation spans
//! days: without a time on each message the model cannot tell "yesterday"
//! from "an hour ago", nor answer "remind me in two hours" from a message
//! that waited in the inbox through a restart. The channel and the sender
//! let it answer in kind (short on a phone, and never mistaking a contact
//! or another agent for the owner). Times are in the owner's zone
//! (`[owner] timezone`, else the system's), the zone reminders are read in.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::history::Speaker;

/// The line a stored user message starts with, like `[Wed 2026-11-25 19:40
/// CET · telegram · from Ann, your owner]`.
pub fn message_header(
    at_ms: i64,
    zone: &TimeZone,
    channel: &str,
    speaker: &Speaker,
    owner: Option<&str>,
) -> String {
    let when = Timestamp::from_millisecond(at_ms)
        .map(|t| {
            t.to_zoned(zone.clone())
                .strftime("%a %Y-%m-%d %H:%M %Z")
                .to_string()
        })
        .unwrap_or_else(|_| "unknown time".into());
    let from = match speaker {
        Speaker::Owner => match owner {
            Some(name) => format!("from {name}, your owner"),
            None => "from your owner".into(),
        },
        Speaker::Contact(name) => format!("from {name}, a contact"),
        Speaker::Agent(_, name) => format!("from the agent {name}"),
        Speaker::Scheduler => "from the scheduler".into(),
    };
    format!("[{when} · {channel} · {from}]")
}

/// The date, time and zone of `now`, like `Saturday 2026-11-21 14:05 (CET,
/// UTC+01:00)`.
pub fn local_time(now: Timestamp, zone: &TimeZone) -> String {
    now.to_zoned(zone.clone())
        .strftime("%A %Y-%m-%d %H:%M (%Z, UTC%:z)")
        .to_string()
}

/// The owner's zone: the configured one, else the system's, else UTC.
pub fn owner_zone(configured: Option<&str>) -> TimeZone {
    let name = hearth_base::schedule::owner_zone(configured);
    TimeZone::get(&name).unwrap_or(TimeZone::UTC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_name_time_channel_and_sender() {
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        // 2026-11-25 18:40 UTC is 19:40 in Berlin (CET); in July, CEST.
        let winter = 1_795_629_600_000 + 40 * 60_000;
        let summer = 1_783_000_000_000;
        let cases = [
            (
                winter,
                Speaker::Owner,
                Some("Ann"),
                "[Wed 2026-11-25 19:40 CET · telegram · from Ann, your owner]",
            ),
            (
                winter,
                Speaker::Owner,
                None,
                "[Wed 2026-11-25 19:40 CET · telegram · from your owner]",
            ),
            (
                winter,
                Speaker::Contact("Bob".into()),
                Some("Ann"),
                "[Wed 2026-11-25 19:40 CET · telegram · from Bob, a contact]",
            ),
            (
                winter,
                Speaker::Agent(2, "scout".into()),
                None,
                "[Wed 2026-11-25 19:40 CET · telegram · from the agent scout]",
            ),
            (
                summer,
                Speaker::Scheduler,
                None,
                "[Thu 2026-07-02 15:46 CEST · telegram · from the scheduler]",
            ),
        ];
        for (at, speaker, owner, want) in cases {
            assert_eq!(
                message_header(at, &berlin, "telegram", &speaker, owner),
                want
            );
        }
    }

    #[test]
    fn the_prompt_time_is_in_the_given_zone() {
        let at = Timestamp::from_millisecond(1_795_629_600_000).unwrap();
        let cases = [
            (
                "Europe/Berlin",
                "Wednesday 2026-11-25 19:00 (CET, UTC+01:00)",
            ),
            (
                "America/New_York",
                "Wednesday 2026-11-25 13:00 (EST, UTC-05:00)",
            ),
            ("UTC", "Wednesday 2026-11-25 18:00 (UTC, UTC+00:00)"),
        ];
        for (zone, want) in cases {
            assert_eq!(local_time(at, &TimeZone::get(zone).unwrap()), want);
        }
    }
}
