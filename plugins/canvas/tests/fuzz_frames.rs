//! Fuzzing what a browser sends the canvas over its WebSocket: the text
//! frames (`send`, `confirm`, `ping`), real ones mutated as bytes and as
//! JSON trees. Properties: no panic; a frame is either read into one of
//! the three with every bound checked (a valid id, the text and
//! attachment limits, `always` only with an approval), or answered with
//! an `error` frame that says what was wrong.

use hearth_canvas::elements::valid_id;
use hearth_canvas::ws::{Frame, MAX_ATTACHMENTS, MAX_TEXT, read_frame};
use hearth_fuzz::{Rng, Target};

#[test]
fn a_frame_is_read_within_its_bounds_or_answered_with_an_error() {
    Target::new("canvas_frames")
        .json()
        .tokens(&[
            "\"type\":\"send\"",
            "\"type\":\"confirm\"",
            "\"type\":\"ping\"",
            "\"type\":\"view\"",
            "\"source\":\"browser\"",
            "\"input\":{\"kind\":\"click\",\"x\":",
            "\"kind\":\"text\"",
            "\"id\":\"",
            "\"approve\":",
            "\"always\":true",
            "\"attachments\":[",
            "\"text\":\"",
        ])
        .run(|input, _: &mut Rng| {
            let text = String::from_utf8_lossy(input);
            match read_frame(&text) {
                Ok(Frame::Ping) => {}
                Ok(Frame::Send {
                    id,
                    text,
                    attachments,
                }) => {
                    assert!(valid_id(&id), "{id:?}");
                    assert!(text.len() <= MAX_TEXT);
                    assert!(attachments.len() <= MAX_ATTACHMENTS);
                    assert!(!text.trim().is_empty() || !attachments.is_empty());
                }
                Ok(Frame::Confirm {
                    id,
                    approve,
                    always,
                    reason,
                }) => {
                    assert!(id.len() <= 64, "{id:?}");
                    assert!(approve || !always, "`always` without an approval");
                    assert!(
                        reason.is_none_or(|r| !approve && r.chars().count() <= 2000),
                        "a reason with an approval, or too long"
                    );
                }
                Ok(Frame::View(request)) => {
                    assert!(request.source.len() <= 64, "{:?}", request.source);
                }
                Err(error) => {
                    assert_eq!(error["type"], "error", "{error}");
                    let message = error["message"].as_str().unwrap_or_default();
                    assert!(!message.is_empty(), "an error frame says nothing: {error}");
                }
            }
        });
}
