//! Plain text and Markdown: decoded (UTF-8, lossily; UTF-16 when a byte
//! order mark says so) and passed on as they are, capped; and the test
//! the sniffer uses to tell text from binary data.

use crate::document::{Caps, Document, Kind};
use crate::out::{Meta, Out};

/// How much of the start of a file the text test looks at.
const SAMPLE: usize = 8 << 10;

/// Whether `bytes` look like text: a UTF-16 byte order mark, or no NUL
/// and hardly any other control bytes in the first few kilobytes. Text
/// in a legacy 8-bit encoding passes too (it is decoded lossily).
pub(crate) fn looks_like_text(bytes: &[u8]) -> bool {
    if utf16_order(bytes).is_some() {
        return true;
    }
    let sample = &bytes[..bytes.len().min(SAMPLE)];
    if sample.contains(&0) {
        return false;
    }
    let controls = sample
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
        .count();
    controls * 100 <= sample.len()
}

/// The text in `bytes`: without a byte order mark, line ends as `\n`.
pub(crate) fn decode(bytes: &[u8]) -> String {
    let text = match utf16_order(bytes) {
        Some(big_endian) => {
            let units = bytes[2..].chunks_exact(2).map(|pair| {
                if big_endian {
                    u16::from_be_bytes([pair[0], pair[1]])
                } else {
                    u16::from_le_bytes([pair[0], pair[1]])
                }
            });
            char::decode_utf16(units)
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect()
        }
        None => {
            let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
            String::from_utf8_lossy(bytes).into_owned()
        }
    };
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    }
}

/// `Some(true)` for a big-endian UTF-16 byte order mark, `Some(false)`
/// for a little-endian one.
fn utf16_order(bytes: &[u8]) -> Option<bool> {
    match bytes {
        [0xFE, 0xFF, ..] => Some(true),
        [0xFF, 0xFE, ..] => Some(false),
        _ => None,
    }
}

/// A text or Markdown file as one section.
pub(crate) fn read(bytes: &[u8], kind: Kind, caps: &Caps) -> Document {
    let text = decode(bytes);
    let title = match kind {
        Kind::Markdown => markdown_title(&text),
        _ => None,
    };
    let mut out = Out::new(caps);
    out.section(None, &text);
    out.finish(kind, bytes, Meta::single(title))
}

/// The first `# ` heading near the top of a Markdown file.
fn markdown_title(text: &str) -> Option<String> {
    text.lines()
        .take(40)
        .find_map(|line| line.strip_prefix("# "))
        .map(|t| t.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_told_from_binary() {
        assert!(looks_like_text(b"hello\tworld\r\n"));
        assert!(looks_like_text("héllo".as_bytes()));
        assert!(looks_like_text(b"caf\xe9 latin-1"));
        assert!(looks_like_text(b""));
        assert!(looks_like_text(b"\xFF\xFEh\0i\0"));
        assert!(!looks_like_text(b"\x7fELF\x02\x01\x01\0\0\0"));
        assert!(!looks_like_text(&[1, 2, 3, 4, 5, 6, 7, 8]));
    }

    #[test]
    fn decoding_drops_the_bom_and_mends_line_ends() {
        assert_eq!(decode(b"\xEF\xBB\xBFa\r\nb\rc"), "a\nb\nc");
        assert_eq!(decode(b"\xFF\xFEh\0i\0"), "hi");
        assert_eq!(decode(b"\xFE\xFF\0h\0i"), "hi");
        assert_eq!(decode(b"caf\xe9"), "caf\u{FFFD}");
    }

    #[test]
    fn markdown_keeps_its_text_and_gives_its_title() {
        let doc = read(
            b"intro\n# The Plan\n\nSteps.",
            Kind::Markdown,
            &Caps::default(),
        );
        assert_eq!(doc.title.as_deref(), Some("The Plan"));
        assert_eq!(doc.text(), "intro\n# The Plan\n\nSteps.");
        assert!(!doc.truncated);
    }

    #[test]
    fn long_text_is_cut_with_a_note() {
        let caps = Caps {
            max_chars: 100,
            ..Caps::default()
        };
        let doc = read("word ".repeat(100).as_bytes(), Kind::Text, &caps);
        assert!(doc.truncated);
        assert!(doc.sections[0].text.chars().count() <= 100);
        assert_eq!(doc.notes, ["the text was cut at 100 characters"]);
    }
}
