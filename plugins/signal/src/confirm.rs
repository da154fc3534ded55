//! Confirmations over Signal: a text card per request, answered by a reply.
//!
//! Signal has no buttons a bot can attach, so each pending request gets a
//! short code and the owner answers `yes CODE` or `no CODE`. The code is
//! derived from the request id (so a re-sent card shows the same one) and
//! lengthened until no other pending request has it. Codes use capitals
//! and digits without look-alikes (no I, L, O, 0, 1) and are matched
//! without regard to case, since phones capitalise the first word.

use std::collections::HashMap;
use std::sync::Mutex;

use hearth_sdk::protocol::{ConfirmationRequest, ConfirmationState};

use crate::styles::{Kind, Style, utf16_len};

/// The pending requests this channel showed, by code.
#[derive(Default)]
pub struct Confirmations {
    pending: Mutex<HashMap<String, Pending>>,
}

/// An owner's answer to a pending request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The request's id.
    pub id: String,
    /// `yes` (true) or `no`.
    pub approve: bool,
}

/// The longest arguments shown on a card; more is cut with an ellipsis.
pub const MAX_SHOWN: usize = 1200;

impl Confirmations {
    /// Remembers `request` and returns its code (the same code when the
    /// same request comes again).
    pub fn register(&self, request: &ConfirmationRequest) -> String {
        let mut pending = self.lock();
        if let Some((code, _)) = pending.iter().find(|(_, p)| p.id == request.id) {
            return code.clone();
        }
        if pending.len() >= MAX_PENDING {
            let oldest = pending
                .iter()
                .min_by_key(|(_, p)| p.at_ms)
                .map(|(code, _)| code.clone());
            if let Some(code) = oldest {
                pending.remove(&code);
            }
        }
        let code = (0u32..)
            .flat_map(|salt| (4..=6).map(move |len| code_for(&request.id, salt, len)))
            .find(|code| !pending.contains_key(code))
            .unwrap_or_default();
        pending.insert(
            code.clone(),
            Pending {
                id: request.id.clone(),
                tool: request.tool.clone(),
                at_ms: request.at_ms,
            },
        );
        code
    }

    /// The answer `text` gives, if it is exactly `yes CODE` or `no CODE`
    /// for a pending code. Anything else is ordinary text.
    pub fn answer(&self, text: &str) -> Option<Answer> {
        let mut words = text.split_whitespace();
        let (verb, code) = (words.next()?, words.next()?);
        if words.next().is_some() {
            return None;
        }
        let approve = if verb.eq_ignore_ascii_case("yes") {
            true
        } else if verb.eq_ignore_ascii_case("no") {
            false
        } else {
            return None;
        };
        let pending = self.lock();
        let request = pending.get(&code.to_ascii_uppercase())?;
        Some(Answer {
            id: request.id.clone(),
            approve,
        })
    }

    /// Forgets a decided request; returns its code and tool when it was
    /// one this channel showed.
    pub fn decided(&self, id: &str) -> Option<(String, String)> {
        let mut pending = self.lock();
        let code = pending.iter().find(|(_, p)| p.id == id)?.0.clone();
        pending.remove(&code).map(|p| (code, p.tool))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The card for `request` with `code`: its text and styles (the command
/// or arguments in monospace, the answer line in bold).
pub fn card(request: &ConfirmationRequest, code: &str) -> (String, Vec<Style>) {
    let mut text = String::new();
    let mut styles = Vec::new();
    let mut styled = |text: &mut String, value: &str, kind: Kind| {
        let start = utf16_len(text);
        text.push_str(value);
        styles.push(Style {
            start,
            length: utf16_len(value),
            kind,
        });
    };
    styled(&mut text, &format!("Approval needed [{code}]"), Kind::Bold);
    text.push_str(&format!("\nTool: {}\n", request.tool));
    match &request.command {
        Some(command) => {
            text.push_str("Command: ");
            styled(&mut text, &shorten(command), Kind::Monospace);
        }
        None => {
            text.push_str("Args: ");
            styled(
                &mut text,
                &shorten(&request.args.to_string()),
                Kind::Monospace,
            );
        }
    }
    if let Some(cwd) = &request.cwd {
        text.push_str(&format!("\nCwd: {cwd}"));
    }
    if let Some(mode) = &request.mode {
        text.push_str(&format!("\nMode: {mode}"));
    }
    text.push_str(&format!("\nReason: {}\n\n", request.reason));
    styled(
        &mut text,
        &format!("Reply yes {code} or no {code}"),
        Kind::Bold,
    );
    (text, styles)
}

/// The line sent once a request is decided (by `by`).
pub fn outcome(state: ConfirmationState, by: &str, tool: &str, code: &str) -> String {
    if state.withdrawn(by) {
        return format!("Withdrawn: {tool} [{code}] (not run; the request was taken back)");
    }
    match state {
        ConfirmationState::Approved => format!("Approved: {tool} [{code}]"),
        ConfirmationState::Denied => format!("Denied: {tool} [{code}]"),
        ConfirmationState::Expired => format!("Expired: {tool} [{code}] (nobody answered in time)"),
        ConfirmationState::Pending => format!("Pending: {tool} [{code}]"),
    }
}

/// The most requests remembered: far more than can be pending at once
/// (each holds a tool call), so only forgotten ones are ever dropped.
const MAX_PENDING: usize = 256;

const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

#[derive(Clone, Debug)]
struct Pending {
    id: String,
    tool: String,
    at_ms: i64,
}

/// A code of `len` characters for `id`: FNV-1a of the id (and a salt when
/// the unsalted codes are taken), written in [`ALPHABET`].
fn code_for(id: &str, salt: u32, len: usize) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes().chain(salt.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let base = ALPHABET.len() as u64;
    (0..len)
        .map(|_| {
            // The remainder is below the alphabet's length, so the index is valid.
            let digit = ALPHABET[(hash % base) as usize];
            hash /= base;
            char::from(digit)
        })
        .collect()
}

fn shorten(text: &str) -> String {
    if text.len() <= MAX_SHOWN {
        return text.to_owned();
    }
    let mut end = MAX_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(id: &str) -> ConfirmationRequest {
        ConfirmationRequest {
            id: id.into(),
            tool: "shell_exec".into(),
            args: json!({"command": "rm -rf build"}),
            command: Some("rm -rf build".into()),
            cwd: Some("/home/me".into()),
            mode: Some("development".into()),
            reason: "deletes files".into(),
            fingerprint: "f".into(),
            at_ms: 1,
            expires_at_ms: 2,
        }
    }

    #[test]
    fn codes_are_stable_short_and_unique_among_pending() {
        let confirmations = Confirmations::default();
        let code = confirmations.register(&request("c1"));
        assert_eq!(code.len(), 4);
        assert_eq!(
            confirmations.register(&request("c1")),
            code,
            "same request, same code"
        );
        let codes: std::collections::HashSet<String> = (0..200)
            .map(|i| confirmations.register(&request(&format!("r{i}"))))
            .collect();
        assert_eq!(codes.len(), 200);
        assert!(!codes.contains(&code));
        assert!(codes.iter().all(|c| (4..=6).contains(&c.len())));
    }

    #[test]
    fn only_exact_answers_for_pending_codes_count() {
        let confirmations = Confirmations::default();
        let code = confirmations.register(&request("c1"));
        let lower = code.to_lowercase();
        let yes = Some(Answer {
            id: "c1".into(),
            approve: true,
        });
        assert_eq!(confirmations.answer(&format!("yes {code}")), yes);
        assert_eq!(confirmations.answer(&format!("  Yes {lower} \n")), yes);
        assert_eq!(
            confirmations.answer(&format!("NO {code}")),
            Some(Answer {
                id: "c1".into(),
                approve: false
            })
        );
        for other in [
            format!("yes {code} please"),
            format!("ok {code}"),
            "yes".to_owned(),
            "yes ZZZZ".to_owned(),
            format!("yes, {code}"),
        ] {
            assert_eq!(confirmations.answer(&other), None, "{other:?}");
        }
        assert_eq!(
            confirmations.decided("c1"),
            Some((code.clone(), "shell_exec".into()))
        );
        assert_eq!(
            confirmations.answer(&format!("yes {code}")),
            None,
            "decided"
        );
    }

    #[test]
    fn the_card_shows_the_call_and_how_to_answer() {
        let (text, styles) = card(&request("c1"), "ABCD");
        assert_eq!(
            text,
            "Approval needed [ABCD]\nTool: shell_exec\nCommand: rm -rf build\nCwd: /home/me\n\
             Mode: development\nReason: deletes files\n\nReply yes ABCD or no ABCD"
        );
        let wire: Vec<String> = styles.iter().map(Style::wire).collect();
        assert_eq!(wire, ["0:22:BOLD", "49:12:MONOSPACE", "117:25:BOLD"]);
        let mut without_command = request("c2");
        without_command.command = None;
        assert!(
            card(&without_command, "X")
                .0
                .contains("Args: {\"command\":\"rm -rf build\"}")
        );
    }
}
