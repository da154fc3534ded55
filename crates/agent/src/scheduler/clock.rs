//! The scheduler's clock: the system's wall clock, optionally moved by a
//! fixed offset so tests can put the daemon in a DST week, a month-end or
//! the far side of a downtime without sleeping.
//!
//! `HEARTH_FAKE_NOW=2026-03-29T00:59:50Z` starts the clock at that instant;
//! it then runs at the real rate. Every time the scheduler reads or stores
//! goes through one `Clock`, so the offset moves all of them together.

use jiff::{SignedDuration, Timestamp};

/// The environment variable that sets the clock's start.
pub const FAKE_NOW_ENV: &str = "HEARTH_FAKE_NOW";

/// The wall clock, plus an offset (zero outside tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    offset: SignedDuration,
}

impl Clock {
    /// The real wall clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// The clock `HEARTH_FAKE_NOW` asks for, or the real one when it is
    /// unset; an unreadable value is an error naming the variable.
    pub fn from_env() -> Result<Clock, String> {
        match std::env::var(FAKE_NOW_ENV) {
            Ok(text) if !text.trim().is_empty() => {
                let at: Timestamp = text.trim().parse().map_err(|e| {
                    format!("{FAKE_NOW_ENV}={text:?} is not an RFC 3339 instant: {e}")
                })?;
                Ok(Clock::starting_at(at))
            }
            _ => Ok(Clock::system()),
        }
    }

    /// A clock that reads `at` now and runs on from there.
    pub fn starting_at(at: Timestamp) -> Clock {
        Clock {
            offset: at.duration_since(Timestamp::now()),
        }
    }

    /// Whether this clock differs from the system's.
    pub fn is_fake(&self) -> bool {
        !self.offset.is_zero()
    }

    /// Now, by this clock.
    pub fn now(&self) -> Timestamp {
        Timestamp::now()
            .checked_add(self.offset)
            .unwrap_or_else(|_| Timestamp::now())
    }

    /// Now, in milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        self.now().as_millisecond()
    }

    /// The system's wall-clock reading at which this clock reads `ms`.
    pub fn to_system_ms(&self, ms: i64) -> i64 {
        ms.saturating_sub(self.offset.as_millis() as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_clock_starts_where_asked_and_maps_back_to_the_system_clock() {
        let at: Timestamp = "2026-03-29T00:59:50Z".parse().unwrap();
        let clock = Clock::starting_at(at);
        assert!(clock.is_fake());
        let drift = clock.now().duration_since(at).abs();
        assert!(drift < SignedDuration::from_secs(1), "{drift:?}");
        let system = clock.to_system_ms(at.as_millisecond());
        assert!((system - Timestamp::now().as_millisecond()).abs() < 1_000);
        assert!(!Clock::system().is_fake());
    }
}
