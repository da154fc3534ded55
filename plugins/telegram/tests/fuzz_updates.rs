//! Fuzzing what Telegram sends: webhook bodies read as updates, and the
//! gate that classifies them, over real updates mutated as bytes and as
//! JSON trees (huge ids, wrong types, duplicate keys, deep nesting,
//! entities at odd UTF-16 offsets). Properties: no panic, and the gate's
//! promises hold: only allowed chats' messages get through, with text or
//! a file, keyed by their `update_id`; only the owner's button presses
//! count as answers.

use hearth_fuzz::{Rng, Target};
use hearth_telegram::inbound::{Action, Gate};
use hearth_telegram::webhook::read_update;

const OWNER: i64 = 7;
const GROUP: i64 = -100;

#[test]
fn the_gate_keeps_its_promises_on_any_update() {
    let gate = Gate {
        allowed: vec![OWNER, GROUP],
        username: Some("hearth_bot".into()),
        bot_id: 42,
    };
    Target::new("telegram_updates")
        .json()
        .tokens(&[
            "\"update_id\":",
            "\"message\":",
            "\"callback_query\":",
            "\"chat\":{\"id\":-100,\"type\":\"group\"}",
            "\"from\":{\"id\":7}",
            "\"data\":\"hc:x:y\"",
            "\"entities\":[{\"offset\":3,\"length\":1,\"type\":\"bold\"}]",
            "@hearth_bot",
            "\"photo\":[]",
            "\"file_id\":\"\"",
            "\"reply_to_message\":",
        ])
        .run(move |body, _: &mut Rng| check(&gate, body));
}

fn check(gate: &Gate, body: &[u8]) {
    let Ok(update) = read_update(body) else {
        return;
    };
    let action = gate.classify(&update);
    assert_eq!(
        action,
        gate.classify(&update),
        "the gate is not deterministic"
    );
    match action {
        Action::Message(m) => {
            assert!(
                gate.allowed.contains(&m.chat),
                "{m:?} is from a chat not allowed"
            );
            assert!(!m.text.is_empty() || !m.files.is_empty(), "{m:?} is empty");
            assert_eq!(Some(m.update_id), update["update_id"].as_i64());
            assert!(m.files.iter().all(|f| !f.file_id.is_empty()), "{m:?}");
            assert!(
                m.from_name.as_ref().is_none_or(|n| n.chars().count() <= 80),
                "{m:?}"
            );
        }
        Action::Answer { from, .. } => {
            assert!(
                from > 0 && gate.allowed.contains(&from),
                "{from} is not the owner"
            );
            assert!(update.get("callback_query").is_some());
        }
        Action::Stranger { .. } | Action::Ignore => {}
    }
}
