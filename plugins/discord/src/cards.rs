//! Approval cards: a confirmation request as a Discord message with
//! Approve, Deny and Always allow buttons, each bound to the request's id
//! (`custom_id` `hearth:<id>:<choice>`), and the card's text once the
//! request is decided. The host takes an answer only from the owner and
//! only for the exact call the id names; a press from anyone else changes
//! nothing.

use hearth_sdk::protocol::{ConfirmationRequest, ConfirmationState};
use serde_json::{Value, json};

/// What every button's `custom_id` starts with.
const PREFIX: &str = "hearth:";
/// The longest command or argument text a card shows.
const MAX_SHOWN: usize = 1200;

/// The owner's choice on a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Approve this once.
    Approve,
    /// Deny.
    Deny,
    /// Approve, and this exact call from now on.
    Always,
}

/// The card's text.
pub fn text(request: &ConfirmationRequest) -> String {
    let what = match &request.command {
        Some(command) => command.clone(),
        None => serde_json::to_string_pretty(&request.args).unwrap_or_default(),
    };
    let (shown, cut) = cut(&what, MAX_SHOWN);
    let mut text = format!(
        "**Approve `{}`?**\n```\n{}\n```",
        request.tool,
        shown.replace("```", "`\u{200b}``")
    );
    if cut {
        text.push_str(&format!(
            "(cut: {} characters in all)\n",
            what.chars().count()
        ));
    }
    if let Some(cwd) = &request.cwd {
        text.push_str(&format!("in `{cwd}`\n"));
    }
    if !request.reason.is_empty() {
        text.push_str(&format!("{}\n", request.reason));
    }
    text.push_str(&format!(
        "Expires <t:{}:R> · `{}`",
        request.expires_at_ms / 1000,
        &request
            .fingerprint
            .get(..12)
            .unwrap_or(&request.fingerprint)
    ));
    text
}

/// The card's buttons: one action row.
pub fn buttons(id: &str) -> Value {
    let button = |label: &str, style: u8, choice: &str| json!({ "type": 2, "style": style, "label": label, "custom_id": format!("{PREFIX}{id}:{choice}") });
    json!([{ "type": 1, "components": [
        button("Approve", 3, "y"),
        button("Deny", 4, "n"),
        button("Always allow", 2, "a"),
    ]}])
}

/// The request id and choice a button's `custom_id` carries.
pub fn read(custom_id: &str) -> Option<(String, Choice)> {
    let rest = custom_id.strip_prefix(PREFIX)?;
    let (id, choice) = rest.rsplit_once(':')?;
    let choice = match choice {
        "y" => Choice::Approve,
        "n" => Choice::Deny,
        "a" => Choice::Always,
        _ => return None,
    };
    (!id.is_empty() && id.len() <= 64).then(|| (id.to_owned(), choice))
}

/// The line a decided card gets, or `None` for a state that is no
/// decision.
pub fn outcome(state: ConfirmationState, by: &str) -> Option<String> {
    Some(match state {
        ConfirmationState::Approved => "✅ Approved".to_owned(),
        ConfirmationState::Denied => "❌ Denied".to_owned(),
        ConfirmationState::Expired if by == "stop" => {
            "⏹ Withdrawn: the turn was stopped".to_owned()
        }
        ConfirmationState::Expired if by == "withdrawn" => {
            "⏹ Withdrawn: whoever asked went away".to_owned()
        }
        ConfirmationState::Expired => "⌛ Expired: nobody answered, so it was denied".to_owned(),
        _ => return None,
    })
}

fn cut(text: &str, most: usize) -> (String, bool) {
    if text.chars().count() <= most {
        return (text.to_owned(), false);
    }
    (text.chars().take(most).collect(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(command: Option<&str>) -> ConfirmationRequest {
        ConfirmationRequest {
            id: "c-7".into(),
            tool: "shell_exec".into(),
            args: json!({ "command": "rm -rf x" }),
            command: command.map(str::to_owned),
            cwd: Some("/home/anna".into()),
            mode: Some("production".into()),
            reason: "deletes recursively".into(),
            fingerprint: "0123456789abcdef0123".into(),
            at_ms: 0,
            expires_at_ms: 1_700_000_060_000,
        }
    }

    #[test]
    fn a_card_shows_the_exact_call_and_its_buttons_name_it() {
        let text = text(&request(Some("rm -rf x ```; evil")));
        assert!(
            text.contains("`shell_exec`") && text.contains("rm -rf x"),
            "{text}"
        );
        assert_eq!(
            text.matches("```").count(),
            2,
            "a fence in the command cannot end the block: {text}"
        );
        assert!(text.contains("<t:1700000060:R>") && text.contains("0123456789ab"));
        let buttons = buttons("c-7");
        let ids: Vec<&str> = buttons[0]["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["custom_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["hearth:c-7:y", "hearth:c-7:n", "hearth:c-7:a"]);
        for (id, read_as) in [
            ("hearth:c-7:y", Some(("c-7".to_owned(), Choice::Approve))),
            ("hearth:c-7:n", Some(("c-7".to_owned(), Choice::Deny))),
            ("hearth:c:7:a", Some(("c:7".to_owned(), Choice::Always))),
            ("hearth:c-7:x", None),
            ("hearth::y", None),
            ("other:c-7:y", None),
        ] {
            assert_eq!(read(id), read_as, "{id}");
        }
    }

    #[test]
    fn long_arguments_are_cut_and_say_so_and_outcomes_read_plainly() {
        let mut long = request(None);
        long.args = json!({ "text": "x".repeat(5000) });
        let text = text(&long);
        assert!(
            text.chars().count() < 2000 && text.contains("(cut:"),
            "{}",
            text.len()
        );
        assert_eq!(
            outcome(ConfirmationState::Approved, "owner").as_deref(),
            Some("✅ Approved")
        );
        assert!(
            outcome(ConfirmationState::Expired, "stop")
                .unwrap()
                .contains("stopped")
        );
        assert!(
            outcome(ConfirmationState::Expired, "timeout")
                .unwrap()
                .contains("denied")
        );
        assert_eq!(outcome(ConfirmationState::Pending, "owner"), None);
    }
}
