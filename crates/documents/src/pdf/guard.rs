//! Checks on a PDF's raw bytes before lopdf parses them, for what lopdf
//! would do unbounded while loading: decrypting (refused: an encrypted
//! PDF is reported as such) and inflating the cross-reference streams,
//! which it does before any of its hooks see an object. Every other
//! stream is checked by the load filter in `mod.rs`, where its filters
//! are known exactly.

use crate::document::Caps;
use crate::error::DocumentError;
use crate::sniff::find;

use super::decode::{Probe, probe};

/// The most cross-reference sections followed through `/Prev` links.
const MAX_SECTIONS: usize = 64;

/// The most a cross-reference stream may inflate to: 16 MiB is a million
/// objects, more than any real PDF has.
const XREF_CAP: usize = 16 << 20;

/// Fails for an encrypted PDF, or one whose cross-reference streams
/// would inflate past the cap.
pub(crate) fn check(bytes: &[u8], caps: &Caps) -> Result<(), DocumentError> {
    if names(bytes).any(|(name, _)| name == b"Encrypt") {
        return Err(DocumentError::Encrypted { format: "PDF" });
    }
    // lopdf counts every offset from its header.
    let buf = &bytes[find(bytes, b"%PDF-").unwrap_or(0)..];
    let Some(start) = xref_start(buf) else {
        return Ok(()); // lopdf will refuse it: nothing to inflate.
    };
    let cap = XREF_CAP.min(caps.max_bytes.max(1 << 20));
    let mut work = 4 * cap;
    let mut queue = vec![start];
    let mut seen = Vec::new();
    while let Some(offset) = queue.pop() {
        if seen.contains(&offset) || offset >= buf.len() {
            continue;
        }
        if seen.len() >= MAX_SECTIONS {
            return Err(too_large("it has over 64 cross-reference sections"));
        }
        seen.push(offset);
        let section = &buf[offset..];
        let dict = if section.trim_ascii_start().starts_with(b"xref") {
            // A classic table: its trailer's links matter, nothing inflates.
            let at = find(section, b"trailer").unwrap_or(section.len());
            let end = find(&section[at..], b"startxref").map_or(section.len(), |e| at + e);
            &section[at..end]
        } else {
            // A stream: every `stream` keyword in the object could be the
            // one lopdf takes (one inside a string of the dictionary
            // would fool a single look), so each body is probed.
            let end = find(section, b"endobj").unwrap_or(section.len());
            let object = &section[..end];
            let mut dict_end = object.len();
            let mut from = 0;
            let mut bodies = 0;
            while let Some(i) = find(&object[from..], b"stream") {
                let at = from + i;
                from = at + 6;
                let Some(body) = body_start(section, at) else {
                    continue;
                };
                dict_end = dict_end.min(at);
                bodies += 1;
                if bodies > 16 || probe(&section[body..], cap, &mut work, 0) == Probe::Over {
                    return Err(too_large(&format!(
                        "its cross-reference stream unpacks to more than {} MiB",
                        cap >> 20
                    )));
                }
            }
            &object[..dict_end]
        };
        for (name, value) in names(dict) {
            if name == b"Prev" || name == b"XRefStm" {
                if let Some(offset) = value {
                    queue.push(offset);
                }
            }
        }
    }
    Ok(())
}

fn too_large(what: &str) -> DocumentError {
    DocumentError::TooLarge {
        format: "PDF",
        what: what.to_owned(),
    }
}

/// Where a stream's data starts after the `stream` keyword at `at`: past
/// its end of line (CR LF, LF, or a lone CR, which lopdf also takes).
fn body_start(buf: &[u8], at: usize) -> Option<usize> {
    if at > 0 && buf[at - 1] == b'd' {
        return None; // `endstream`
    }
    match buf.get(at + 6..at + 8) {
        Some([b'\r', b'\n']) => Some(at + 8),
        Some([b'\n', _]) | Some([b'\r', _]) => Some(at + 7),
        _ => match buf.get(at + 6) {
            Some(b'\n' | b'\r') => Some(at + 7),
            _ => None,
        },
    }
}

/// The offset of the last cross-reference section, found the way lopdf
/// finds it: `startxref` just before the last `%%EOF` in the final 512
/// bytes.
fn xref_start(buf: &[u8]) -> Option<usize> {
    let tail = buf.len().saturating_sub(512);
    let eof = tail + rfind(&buf[tail..], b"%%EOF")?;
    let from = eof.checked_sub(25)?;
    let at = from + rfind(&buf[from..eof], b"startxref")?;
    let digits = buf[at + 9..eof].trim_ascii();
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// Every name in `bytes` (`#xx` escapes decoded, as lopdf decodes them)
/// with the integer that follows it, if one does.
fn names(bytes: &[u8]) -> impl Iterator<Item = (Vec<u8>, Option<usize>)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            if bytes[i] != b'/' {
                i += 1;
                continue;
            }
            i += 1;
            let mut name = Vec::new();
            while i < bytes.len() && is_regular(bytes[i]) {
                if bytes[i] == b'#' {
                    let hex = bytes
                        .get(i + 1..i + 3)
                        .and_then(|h| std::str::from_utf8(h).ok());
                    if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                        name.push(b);
                        i += 3;
                        continue;
                    }
                }
                name.push(bytes[i]);
                i += 1;
            }
            let mut j = i;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            let digits_end = bytes[j..]
                .iter()
                .position(|b| !b.is_ascii_digit())
                .map_or(bytes.len(), |n| j + n);
            let value = std::str::from_utf8(&bytes[j..digits_end])
                .ok()
                .and_then(|d| d.parse().ok());
            return Some((name, value));
        }
        None
    })
}

/// Whether `b` can be part of a name: not white space, not a delimiter.
fn is_regular(b: u8) -> bool {
    !b.is_ascii_whitespace()
        && !matches!(
            b,
            b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%' | 0
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_decoded_and_carry_their_numbers() {
        let got: Vec<(Vec<u8>, Option<usize>)> =
            names(b"<</Type/XRef /Pr#65v 123/Size 5>>").collect();
        assert_eq!(
            got,
            [
                (b"Type".to_vec(), None),
                (b"XRef".to_vec(), None),
                (b"Prev".to_vec(), Some(123)),
                (b"Size".to_vec(), Some(5)),
            ]
        );
    }

    #[test]
    fn an_escaped_encrypt_key_is_still_seen() {
        let pdf = b"%PDF-1.4\ntrailer << /Root 1 0 R /Encr#79pt 5 0 R >>\n%%EOF";
        assert_eq!(
            check(pdf, &Caps::default()),
            Err(DocumentError::Encrypted { format: "PDF" })
        );
        assert!(check(b"%PDF-1.4\n/EncryptMetadata false\n%%EOF", &Caps::default()).is_ok());
    }

    #[test]
    fn the_xref_offset_is_found_like_lopdf_finds_it() {
        assert_eq!(
            xref_start(b"%PDF-1.4\n....\nstartxref\n1234\n%%EOF\n"),
            Some(1234)
        );
        assert_eq!(xref_start(b"startxref\r\n  77 \r\n%%EOF"), None); // too near the start
        let mut long = vec![b' '; 100];
        long.extend_from_slice(b"startxref\r\n77\r\n%%EOF");
        assert_eq!(xref_start(&long), Some(77));
    }
}
