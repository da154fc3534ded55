//! Fuzzing what the Signal channel formats and parses: markdown → text
//! and style ranges (and the split of long replies), over the markdown
//! corpus the Telegram formatter shares, and signal-cli's event stream.
//! Properties: style ranges are never empty, lie within the text's UTF-16
//! length and never cut a surrogate pair; every part of a split is within
//! the byte limit with its styles inside it, and the parts keep all the
//! text but the whitespace at the cuts; the event stream cut into random
//! chunks gives the same events as in one piece.

use hearth_fuzz::{Rng, Target, chunks};
use hearth_signal::split::{MAX_BODY_BYTES, split};
use hearth_signal::sse::Parser;
use hearth_signal::styles::{Style, convert, utf16_len};

#[test]
fn styles_stay_within_the_text_and_splits_keep_it() {
    Target::new("markdown")
        .tokens(&[
            "**",
            "*",
            "_",
            "~~",
            "||",
            "`",
            "```\n",
            "\n```\n",
            "> ",
            "- ",
            "1. ",
            "# ",
            "\n\n",
            "[",
            "](https://e.org)",
            "<b>",
            "&amp;",
            "😀",
            "👨\u{200D}👩\u{200D}👧",
            "\u{202E}",
            "e\u{301}",
            "𝔘",
        ])
        .run(|input, rng: &mut Rng| {
            let markdown = String::from_utf8_lossy(input);
            let (text, styles) = convert(&markdown);
            check_styles(&text, &styles);
            let max = match rng.one_in(2) {
                true => MAX_BODY_BYTES,
                false => rng.between(1, 300),
            };
            let parts = split(&text, &styles, max);
            let mut kept = String::new();
            for part in &parts {
                assert!(
                    part.text.len() <= max.max(4),
                    "{part:?} is over {max} bytes"
                );
                assert!(!part.text.trim().is_empty(), "a blank part");
                check_styles(&part.text, &part.styles);
                kept.push_str(&part.text);
            }
            let visible = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            assert_eq!(visible(&kept), visible(&text), "the split lost text");
        });
}

#[test]
fn any_chunking_of_the_event_stream_gives_the_same_events() {
    Target::new("sse").run(|stream, rng: &mut Rng| {
        let whole = Parser::new().feed(stream);
        let mut parser = Parser::new();
        let mut pieces = Vec::new();
        for chunk in chunks(stream, &rng.cuts(stream.len())) {
            pieces.extend(parser.feed(chunk).expect("lines stay short"));
        }
        assert_eq!(Ok(pieces), whole);
    });
}

/// Each style is within `text`, not empty, and starts and ends between
/// characters (never inside a surrogate pair).
fn check_styles(text: &str, styles: &[Style]) {
    let len = utf16_len(text);
    let mut boundaries = vec![false; len + 1];
    let mut at = 0;
    for c in text.chars() {
        boundaries[at] = true;
        at += c.len_utf16();
    }
    boundaries[len] = true;
    for style in styles {
        let end = style.start + style.length;
        assert!(style.length > 0, "an empty style {style:?} in {text:?}");
        assert!(end <= len, "{style:?} ends past {len} units of {text:?}");
        assert!(
            boundaries[style.start] && boundaries[end],
            "{style:?} cuts a character of {text:?}"
        );
    }
    assert!(
        styles.is_sorted_by_key(|s| s.start),
        "styles out of order: {styles:?}"
    );
}
