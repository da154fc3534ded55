//! `[memory.capture]`: automatic memory capture. After a conversation
//! goes quiet, the cheap model (`[llm.cheap]`) reads what is new in it and
//! proposes durable facts about the owner and their world; they are kept
//! as memories marked captured, which `/memory` lists and drops
//! (docs/operations.md, "Automatic memory capture"). On by default when a
//! cheap model is configured, off without one; never for contacts'
//! conversations unless `contacts = true`.

use serde::Deserialize;

/// `[memory.capture]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureConfig {
    /// `enabled` as written; `None`: on when a cheap model is configured.
    pub enabled: Option<bool>,
    /// How long a conversation must be quiet before capture reads it.
    pub quiet_seconds: u64,
    /// The most memories captured from one conversation.
    pub max_per_conversation: usize,
    /// Whether contacts' conversations are read too.
    pub contacts: bool,
}

/// `quiet_seconds` when none is given: ten minutes.
pub const DEFAULT_QUIET_SECONDS: u64 = 600;
/// `max_per_conversation` when none is given.
pub const DEFAULT_MAX_PER_CONVERSATION: usize = 5;
/// The longest quiet a conversation may be asked to wait: a week.
const MAX_QUIET_SECONDS: u64 = 7 * 24 * 3600;
/// The highest cap per conversation.
const MAX_PER_CONVERSATION: usize = 50;

impl Default for CaptureConfig {
    fn default() -> Self {
        CaptureConfig {
            enabled: None,
            quiet_seconds: DEFAULT_QUIET_SECONDS,
            max_per_conversation: DEFAULT_MAX_PER_CONVERSATION,
            contacts: false,
        }
    }
}

impl CaptureConfig {
    /// Whether capture runs, given whether a cheap model is configured;
    /// when it does not, why (for `hearth doctor`, `/status` and the log).
    pub fn runs(&self, cheap_model: bool) -> Result<(), &'static str> {
        match (self.enabled, cheap_model) {
            (Some(false), _) => Err("off ([memory.capture] enabled = false)"),
            (_, false) => Err("off: no cheap model is configured ([llm.cheap])"),
            (_, true) => Ok(()),
        }
    }

    /// One line on what capture does, or why it does not.
    pub fn status(&self, cheap_model: bool) -> String {
        match self.runs(cheap_model) {
            Err(why) => why.to_owned(),
            Ok(()) => format!(
                "on: after {} of quiet, at most {} per conversation, {}",
                quiet_text(self.quiet_seconds),
                self.max_per_conversation,
                if self.contacts {
                    "contacts' conversations too"
                } else {
                    "the owner's conversations only"
                }
            ),
        }
    }
}

/// `600` as `10 min`, `90` as `90 s`.
fn quiet_text(seconds: u64) -> String {
    match seconds {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// `[memory.capture]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCapture {
    enabled: Option<bool>,
    quiet_seconds: Option<u64>,
    max_per_conversation: Option<usize>,
    contacts: Option<bool>,
}

/// Checks `[memory.capture]`; the error is `(key, message)`.
pub(super) fn build(raw: Option<RawCapture>) -> Result<CaptureConfig, (String, String)> {
    let raw = raw.unwrap_or_default();
    let key = |k: &str| format!("memory.capture.{k}");
    let quiet_seconds = raw.quiet_seconds.unwrap_or(DEFAULT_QUIET_SECONDS);
    if !(1..=MAX_QUIET_SECONDS).contains(&quiet_seconds) {
        return Err((
            key("quiet_seconds"),
            format!("must be 1 to {MAX_QUIET_SECONDS} (a week)"),
        ));
    }
    let max_per_conversation = raw
        .max_per_conversation
        .unwrap_or(DEFAULT_MAX_PER_CONVERSATION);
    if !(1..=MAX_PER_CONVERSATION).contains(&max_per_conversation) {
        return Err((
            key("max_per_conversation"),
            format!(
                "must be 1 to {MAX_PER_CONVERSATION} (to capture nothing, set enabled = false)"
            ),
        ));
    }
    Ok(CaptureConfig {
        enabled: raw.enabled,
        quiet_seconds,
        max_per_conversation,
        contacts: raw.contacts.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(toml: &str) -> Result<CaptureConfig, (String, String)> {
        build(Some(toml::from_str(toml).expect("valid TOML")))
    }

    #[test]
    fn on_with_a_cheap_model_unless_turned_off() {
        let c = capture("").unwrap();
        assert_eq!(c, CaptureConfig::default());
        assert_eq!(build(None).unwrap(), c);
        assert_eq!(c.runs(true), Ok(()));
        assert!(c.runs(false).unwrap_err().contains("[llm.cheap]"));
        assert_eq!(
            c.status(true),
            "on: after 10 min of quiet, at most 5 per conversation, the owner's conversations only"
        );
        let off = capture("enabled = false").unwrap();
        assert!(off.runs(true).unwrap_err().contains("enabled = false"));
        let on = capture("enabled = true\nquiet_seconds = 90\ncontacts = true").unwrap();
        assert!(on.runs(false).is_err(), "no cheap model, no capture");
        assert!(
            on.status(true).contains("after 90 s"),
            "{}",
            on.status(true)
        );
        assert!(on.status(true).contains("contacts' conversations too"));
    }

    #[test]
    fn bad_values_name_their_key() {
        for (toml, key, says) in [
            ("quiet_seconds = 0", "memory.capture.quiet_seconds", "1 to"),
            (
                "quiet_seconds = 9999999",
                "memory.capture.quiet_seconds",
                "a week",
            ),
            (
                "max_per_conversation = 0",
                "memory.capture.max_per_conversation",
                "enabled = false",
            ),
            (
                "max_per_conversation = 51",
                "memory.capture.max_per_conversation",
                "1 to 50",
            ),
        ] {
            let (k, message) = capture(toml).unwrap_err();
            assert_eq!(k, key, "{toml}");
            assert!(message.contains(says), "{toml}: {message}");
        }
    }
}
