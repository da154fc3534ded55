//! Long replies as several Signal messages.
//!
//! signal-cli puts at most 2000 UTF-8 bytes in a message body
//! (`ServiceConfig.MAX_MESSAGE_SIZE_BYTES`); a longer text is cut there and
//! the whole text goes along as a "long text" attachment, which phones show
//! behind "Read more" and which drops the styles past the cut. So a reply
//! longer than that is sent as several messages instead, each within the
//! limit, cut where a reader would pause: at a blank line, else a line
//! break, else a space, else (one very long word) anywhere between
//! characters. The whitespace at a cut is dropped; styles are clipped to
//! each part and rebased to its start.

use crate::styles::{Style, utf16_len};

/// The most UTF-8 bytes signal-cli sends as a plain message body.
pub const MAX_BODY_BYTES: usize = 2000;

/// One message of a split reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// Its text, at most the limit in UTF-8 bytes.
    pub text: String,
    /// Its styles, in UTF-16 units from the part's start.
    pub styles: Vec<Style>,
}

/// Splits `text` (with `styles` over it) into parts of at most `max`
/// UTF-8 bytes. Blank parts are left out: Signal refuses empty messages.
pub fn split(text: &str, styles: &[Style], max: usize) -> Vec<Part> {
    let max = max.max(4);
    let mut parts = Vec::new();
    let mut start = 0;
    // `start` in UTF-16 units, counted as the cuts advance: counting from
    // the text's beginning for every part made a long text with a small
    // limit quadratic (found by fuzzing).
    let mut start_units = 0;
    while start < text.len() {
        let (end, next) = if text.len() - start <= max {
            (text.len(), text.len())
        } else {
            let (cut, skip) = cut(&text[start..floor_boundary(text, start + max)], max / 2);
            (start + cut, start + skip)
        };
        let part = &text[start..end];
        let end_units = start_units + utf16_len(part);
        if !part.trim().is_empty() {
            parts.push(Part {
                text: part.to_owned(),
                styles: clip(styles, start_units, end_units),
            });
        }
        start_units = end_units + utf16_len(&text[end..next]);
        start = next;
    }
    parts
}

/// Where to cut `window` (a prefix of the rest of the text, as long as a
/// part may be): the end of this part and the start of the next, relative
/// to the window. A cut earlier than `min` bytes would waste too much of
/// the part, so a weaker boundary further on is preferred to it.
fn cut(window: &str, min: usize) -> (usize, usize) {
    for separator in ["\n\n", "\n", " "] {
        if let Some(at) = window.rfind(separator).filter(|&at| at >= min) {
            return (at, at + separator.len());
        }
    }
    (window.len(), window.len())
}

/// The largest char boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The parts of `styles` within `[from, to)` (UTF-16 units), rebased to `from`.
fn clip(styles: &[Style], from: usize, to: usize) -> Vec<Style> {
    styles
        .iter()
        .filter_map(|s| {
            let start = s.start.max(from);
            let end = (s.start + s.length).min(to);
            // `then`, not `then_some`: the lengths may only be computed
            // for a style that overlaps the part (found by fuzzing: one
            // wholly before it underflowed).
            (start < end).then(|| Style {
                start: start - from,
                length: end - start,
                kind: s.kind,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::styles::{Kind, convert};

    fn texts(parts: &[Part]) -> Vec<&str> {
        parts.iter().map(|p| p.text.as_str()).collect()
    }

    #[test]
    fn short_text_is_one_part() {
        let (text, styles) = convert("**hi**");
        assert_eq!(
            split(&text, &styles, MAX_BODY_BYTES),
            vec![Part {
                text: "hi".into(),
                styles: styles.clone()
            }]
        );
        assert!(split("", &[], MAX_BODY_BYTES).is_empty());
    }

    #[test]
    fn cuts_prefer_paragraphs_then_lines_then_spaces() {
        let cases: &[(&str, usize, &[&str])] = &[
            ("aaaa bbbb\n\ncccc dddd", 14, &["aaaa bbbb", "cccc dddd"]),
            ("aaaa\nbbbb cccc dddd", 14, &["aaaa\nbbbb", "cccc dddd"]),
            ("aaaa bbbb cccc dddd", 12, &["aaaa bbbb", "cccc dddd"]),
            ("abcdefghijkl", 5, &["abcde", "fghij", "kl"]),
            ("ab\n\ncdefghijklmnop", 10, &["ab\n\ncdefgh", "ijklmnop"]),
        ];
        for (text, max, want) in cases {
            assert_eq!(texts(&split(text, &[], *max)), *want, "{text:?} by {max}");
        }
    }

    #[test]
    fn a_style_wholly_in_an_earlier_part_stays_there() {
        let (text, styles) = convert("**aaaa** bbbb");
        let parts = split(&text, &styles, 5);
        assert_eq!(texts(&parts), ["aaaa", "bbbb"]);
        assert_eq!(parts[0].styles, styles);
        assert!(parts[1].styles.is_empty());
    }

    #[test]
    fn multibyte_text_is_cut_between_characters() {
        let text = "🦀".repeat(10);
        let parts = split(&text, &[], 10);
        assert!(parts.iter().all(|p| p.text.len() <= 10));
        assert_eq!(texts(&parts).concat(), text);
    }

    #[test]
    fn styles_are_clipped_and_rebased() {
        let text = "aaaa bbbb cccc";
        let styles = [Style {
            start: 2,
            length: 10,
            kind: Kind::Bold,
        }];
        let parts = split(text, &styles, 10);
        assert_eq!(texts(&parts), ["aaaa bbbb", "cccc"]);
        assert_eq!(parts[0].styles[0].wire(), "2:7:BOLD");
        assert_eq!(parts[1].styles[0].wire(), "0:2:BOLD");
    }

    #[test]
    fn a_long_reply_rejoins_exactly() {
        let text: String = (0..400)
            .map(|i| format!("line {i:04}: 🦀 some words to fill the line up"))
            .collect::<Vec<_>>()
            .join("\n");
        let parts = split(&text, &[], MAX_BODY_BYTES);
        assert!(parts.len() > 5);
        assert!(parts.iter().all(|p| p.text.len() <= MAX_BODY_BYTES));
        assert_eq!(texts(&parts).join("\n"), text);
    }
}
