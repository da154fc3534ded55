//! Fuzzing the submission JSON a plugin's `submit` callback hands the
//! host: the corpus of real submissions, mutated as bytes and as JSON
//! trees. Properties: no panic; a refusal says what was wrong and where
//! (the byte limit, the line and column of bad syntax, the field of a
//! wrong value); what is
//! accepted is what the host checks for (the plugin's own channel, a key
//! and a sender within bounds) and reads back the same when written again.

use hearth_fuzz::{Rng, Target};
use hearth_sdk::protocol::Submission;

use super::{check_message, read_submission};

const CHANNEL: &str = "probe";

#[test]
fn submissions_are_read_or_refused_with_a_reason() {
    Target::new("submission")
        .json()
        .tokens(&[
            "\"type\":\"message\"",
            "\"type\":\"confirmation\"",
            "\"type\":\"channel_status\"",
            "\"channel\":\"probe\"",
            "\"idempotency_key\":\"\"",
            "\"sender\":",
            "\"attachments\":[{}]",
            "\"size\":-1",
            "\\u0000",
            "\\ud800",
        ])
        .run(check);
}

fn check(json: &[u8], _: &mut Rng) {
    let submission = match read_submission(json) {
        Ok(submission) => submission,
        Err(why) => {
            assert!(
                why.contains("byte limit") || why.contains(" line ") || why.contains("field `"),
                "the refusal does not say where: {why}"
            );
            return;
        }
    };
    let again = serde_json::to_vec(&submission).expect("a submission serializes");
    assert_eq!(
        read_submission(&again).as_ref(),
        Ok(&submission),
        "written again, it reads differently"
    );
    let Submission::Message(message) = submission else {
        return;
    };
    match check_message(&message, Some(&CHANNEL.to_owned())) {
        Ok(()) => {
            assert_eq!(message.channel, CHANNEL);
            for value in [&message.idempotency_key, &message.sender] {
                assert!(!value.is_empty() && value.len() <= 256, "{message:?}");
            }
        }
        Err(why) => assert!(why.starts_with("field `"), "no field named: {why}"),
    }
}

#[test]
fn a_wrong_value_is_refused_naming_its_field() {
    let json = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/fuzz/regressions/submission/sender_not_a_string.json"
    ))
    .expect("the regression is kept");
    let why = read_submission(&json).expect_err("a sender must be a string");
    assert!(why.contains("field `sender`"), "{why}");
    let why = read_submission(br#"{"type":"message","channel":"probe","idempotency_key":"k","sender":"7","text":"hi","attachments":[{"id":"a","name":"n","mime":"m","size":-1,"path":"/p"}]}"#)
        .expect_err("a size is not negative");
    assert!(why.contains("field `attachments[0].size`"), "{why}");
}
