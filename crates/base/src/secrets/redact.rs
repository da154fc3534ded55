//! Replacing every known secret value by its marker (`[secret:NAME]`, or
//! `[redacted]` for the daemon's own) in text and JSON.
//!
//! This is the one redaction the host applies wherever a value could
//! surface: tool results and errors, the HTTP responses a script gets back,
//! the audit and the log. A program the agent runs can transform what it
//! prints, so a value is matched in the forms it takes after the common
//! transformations, not only as written:
//!
//! - in any ASCII letter case (`tr A-Z a-z`, a host name a URL parser
//!   lower-cased in its error);
//! - escaped inside a JSON string;
//! - hex, lower or upper case (`xxd -p`, `od`, a hash tool's input echo);
//! - base64, standard and URL-safe, padded or not, and at each of the
//!   three byte alignments, so a value inside a longer base64 stream
//!   (`base64 secrets.json`) is caught too: only the characters that
//!   depend on the value's bytes alone are matched, and replaced;
//! - percent-encoded, fully or in part, `+` standing for a space: matched
//!   in a decoded view of the text whose matches are mapped back.
//!
//! All forms of all values are found in one pass of an Aho-Corasick
//! automaton (ASCII case-insensitive, leftmost-longest, so a value that
//! holds another is replaced whole), plus a second pass over the decoded
//! view when the text holds a `%` (or a `+`, when some value has a space).
//! Overlapping matches are merged, so no part of a value is left between
//! two markers. Values shorter than [`MIN_REDACTED_LEN`] bytes are not
//! matched: they would also match ordinary words.

use crate::hex::hex;
use std::borrow::Cow;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde_json::Value;

/// Values shorter than this (in bytes) are not redacted.
pub const MIN_REDACTED_LEN: usize = 8;

/// What replaces the whole text when the matcher could not be built:
/// hiding everything is the only safe answer left.
const UNMATCHABLE: &str = "[redacted: the secret matcher could not be built]";

/// The replacement for secret `name`'s value.
pub fn marker(name: &str) -> String {
    format!("[secret:{name}]")
}

/// A set of secret values to hide, in every form they may take.
#[derive(Default)]
pub struct Redactor {
    matcher: Matcher,
    /// The marker of each pattern, by the pattern's index.
    markers: Vec<usize>,
    /// The distinct markers.
    texts: Vec<String>,
    /// Some value holds a space, so a `+` in a URL may stand for it.
    plus_is_space: bool,
}

#[derive(Default)]
enum Matcher {
    /// Nothing to hide.
    #[default]
    Nothing,
    /// Finds every form of every value.
    Ready(AhoCorasick),
    /// The automaton could not be built (it cannot, for the sizes
    /// secrets are limited to; were it to happen, every text is hidden
    /// rather than none).
    Broken,
}

/// One stretch of the original text to replace.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    end: usize,
    marker: usize,
}

impl Redactor {
    /// A redactor for the owner's `(name, value)` pairs, each replaced by
    /// `[secret:NAME]`.
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Redactor {
        Redactor::with_markers(
            secrets
                .into_iter()
                .map(|(name, value)| (value, marker(name))),
        )
    }

    /// A redactor for `(value, marker)` pairs: each value, in each of its
    /// forms, is replaced by its marker text.
    pub fn with_markers<'a>(values: impl IntoIterator<Item = (&'a str, String)>) -> Redactor {
        let mut texts: Vec<String> = Vec::new();
        let mut patterns: Vec<String> = Vec::new();
        let mut markers = Vec::new();
        // Matching ignores ASCII case, so forms equal but for case are one.
        let mut seen = std::collections::HashSet::new();
        let mut plus_is_space = false;
        for (value, text) in values {
            if value.len() < MIN_REDACTED_LEN {
                continue;
            }
            plus_is_space |= value.contains(' ');
            let marker = match texts.iter().position(|t| *t == text) {
                Some(at) => at,
                None => {
                    texts.push(text);
                    texts.len() - 1
                }
            };
            for form in forms(value) {
                if seen.insert(form.to_ascii_lowercase()) {
                    patterns.push(form);
                    markers.push(marker);
                }
            }
        }
        let matcher = if patterns.is_empty() {
            Matcher::Nothing
        } else {
            // A contiguous NFA, not the DFA the builder picks for few
            // patterns: the DFA's tables cost the idle daemon megabytes,
            // and redaction is not where a call's time goes.
            AhoCorasick::builder()
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .map_or(Matcher::Broken, Matcher::Ready)
        };
        Redactor {
            matcher,
            markers,
            texts,
            plus_is_space,
        }
    }

    /// Whether there is nothing to hide.
    pub fn is_empty(&self) -> bool {
        matches!(self.matcher, Matcher::Nothing)
    }

    /// `text` with every value replaced; borrowed when it holds none.
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let ac = match &self.matcher {
            Matcher::Nothing => return Cow::Borrowed(text),
            Matcher::Broken => return Cow::Owned(UNMATCHABLE.to_owned()),
            Matcher::Ready(ac) => ac,
        };
        let mut spans: Vec<Span> = ac
            .find_iter(text)
            .map(|m| Span {
                start: m.start(),
                end: m.end(),
                marker: self.markers[m.pattern().as_usize()],
            })
            .collect();
        if let Some(view) = Decoded::of(text, self.plus_is_space) {
            for m in ac.find_iter(&view.bytes) {
                let (start, end) = view.original(text, m.start(), m.end());
                spans.push(Span {
                    start,
                    end,
                    marker: self.markers[m.pattern().as_usize()],
                });
            }
            // The two passes' matches interleave; merged below in order.
            spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut spans = spans.into_iter().peekable();
        while let Some(mut span) = spans.next() {
            // A match that starts inside this one extends it: no byte of
            // either value is left between two markers.
            while let Some(next) = spans.next_if(|n| n.start < span.end) {
                span.end = span.end.max(next.end);
            }
            out.push_str(&text[last..span.start]);
            out.push_str(&self.texts[span.marker]);
            last = span.end;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// `value` with every value replaced in its strings and keys.
    pub fn redact_json(&self, mut value: Value) -> Value {
        if !self.is_empty() {
            self.redact_in_place(&mut value);
        }
        value
    }

    /// `value` redacted, or `None` when it holds no value: the common case,
    /// which then costs no copy.
    pub fn redacted(&self, value: &Value) -> Option<Value> {
        if self.is_empty() || !self.mentions(value) {
            return None;
        }
        Some(self.redact_json(value.clone()))
    }

    /// Whether `text` holds a value in any form.
    fn finds(&self, text: &str) -> bool {
        let ac = match &self.matcher {
            Matcher::Nothing => return false,
            Matcher::Broken => return true,
            Matcher::Ready(ac) => ac,
        };
        ac.is_match(text)
            || Decoded::of(text, self.plus_is_space).is_some_and(|view| ac.is_match(&view.bytes))
    }

    fn mentions(&self, value: &Value) -> bool {
        match value {
            Value::String(s) => self.finds(s),
            Value::Array(items) => items.iter().any(|v| self.mentions(v)),
            Value::Object(map) => map.iter().any(|(k, v)| self.finds(k) || self.mentions(v)),
            _ => false,
        }
    }

    fn redact_in_place(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(clean) = self.redact_text(s) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_in_place(v)),
            Value::Object(map) => {
                let keys_clean = map.keys().all(|k| !self.finds(k));
                if keys_clean {
                    map.values_mut().for_each(|v| self.redact_in_place(v));
                } else {
                    let old = std::mem::take(map);
                    for (k, mut v) in old {
                        self.redact_in_place(&mut v);
                        map.insert(self.redact_text(&k).into_owned(), v);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every form of `value` matched in the text as it is: itself, escaped in
/// a JSON string, hex, and base64 (see the module's comment). Letter case
/// is left to the matcher; percent-encoding to the decoded view.
fn forms(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_owned()];
    let json = serde_json::to_string(value).unwrap_or_default();
    if let Some(escaped) = json.strip_prefix('"').and_then(|j| j.strip_suffix('"')) {
        forms.push(escaped.to_owned());
    }
    forms.push(hex(value.as_bytes()));
    for engine in [STANDARD, URL_SAFE] {
        let whole = engine.encode(value);
        forms.push(whole.trim_end_matches('=').to_owned());
        forms.push(whole);
        forms.extend(base64_cores(&engine, value.as_bytes()));
    }
    forms
}

/// The base64 characters that `bytes` alone decide, when they start at
/// each of the three byte offsets of a longer stream: at offset `k`, the
/// value's bits run from bit `8k` to `8(k + len)`, and a character covers
/// six bits, so the characters from `ceil(8k / 6)` to `floor(8(k + len) / 6)`
/// hold nothing but the value. The bytes around it are zeros here; they
/// change only the characters left out.
fn base64_cores(engine: &impl Engine, bytes: &[u8]) -> Vec<String> {
    (0..3usize)
        .map(|k| {
            let mut padded = vec![0u8; k];
            padded.extend_from_slice(bytes);
            padded.extend_from_slice(&[0, 0]);
            let encoded = engine.encode(&padded);
            let first = (8 * k).div_ceil(6);
            let last = 8 * (k + bytes.len()) / 6;
            encoded[first..last].to_owned()
        })
        .collect()
}

/// A text with its percent-escapes (and, when asked, its `+`) decoded,
/// and where each decoded byte came from.
struct Decoded {
    bytes: Vec<u8>,
    /// The original offset of each decoded byte, then the text's length.
    from: Vec<usize>,
}

impl Decoded {
    /// The decoded view of `text`, or `None` when it has nothing to decode
    /// (the common case, which then costs one scan).
    fn of(text: &str, plus_is_space: bool) -> Option<Decoded> {
        let raw = text.as_bytes();
        let escape_at = |i: usize| {
            raw[i] == b'%'
                && raw.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && raw.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        };
        let decodes = |i: usize| escape_at(i) || (plus_is_space && raw[i] == b'+');
        // Found with `str::find`, which skips a word at a time: most texts
        // hold neither byte, and every text the host redacts comes here.
        let next = |byte: char| {
            let mut at = 0;
            while let Some(i) = text[at..].find(byte) {
                if decodes(at + i) {
                    return Some(at + i);
                }
                at += i + 1;
            }
            None
        };
        let first = match (next('%'), plus_is_space.then(|| next('+')).flatten()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        let mut bytes = Vec::with_capacity(raw.len());
        let mut from = Vec::with_capacity(raw.len() + 1);
        bytes.extend_from_slice(&raw[..first]);
        from.extend(0..first);
        let mut i = first;
        while i < raw.len() {
            from.push(i);
            if escape_at(i) {
                bytes.push(hex_value(raw[i + 1]) << 4 | hex_value(raw[i + 2]));
                i += 3;
            } else if plus_is_space && raw[i] == b'+' {
                bytes.push(b' ');
                i += 1;
            } else {
                bytes.push(raw[i]);
                i += 1;
            }
        }
        from.push(raw.len());
        Some(Decoded { bytes, from })
    }

    /// The stretch of `text` that decoded bytes `start..end` came from,
    /// widened to whole characters (a value cut inside a character cannot
    /// be replaced as text).
    fn original(&self, text: &str, start: usize, end: usize) -> (usize, usize) {
        let mut start = self.from[start];
        let mut end = self.from[end];
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        (start, end)
    }
}

/// The value of a hex digit (checked to be one by the caller).
fn hex_value(digit: u8) -> u8 {
    (digit as char).to_digit(16).map_or(0, |v| v as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor() -> Redactor {
        Redactor::new([
            ("TOKEN", "tok-12345678"),
            ("LONGER", "tok-12345678-and-more"),
            ("QUOTED", "pa\"ss wo/rd"),
            ("SHORT", "abc"),
        ])
    }

    #[test]
    fn every_form_of_a_value_is_replaced_longest_first() {
        let r = redactor();
        let cases = [
            ("Bearer tok-12345678", "Bearer [secret:TOKEN]"),
            ("x tok-12345678-and-more y", "x [secret:LONGER] y"),
            ("tok-12345678tok-12345678", "[secret:TOKEN][secret:TOKEN]"),
            // JSON-escaped, as a JSON log line carries it.
            (r#"{"v":"pa\"ss wo/rd"}"#, r#"{"v":"[secret:QUOTED]"}"#),
            // Percent-encoded, as a URL carries it.
            ("/q?k=pa%22ss%20wo%2Frd", "/q?k=[secret:QUOTED]"),
            // Too short to hide without hiding words.
            ("abc def", "abc def"),
            ("nothing here", "nothing here"),
            // A `%` or `+` that decodes to nothing secret changes nothing.
            ("50% off, 1+1=2, %zz", "50% off, 1+1=2, %zz"),
        ];
        for (input, expected) in cases {
            assert_eq!(r.redact_text(input), expected, "{input}");
        }
        assert!(matches!(r.redact_text("clean"), Cow::Borrowed(_)));
        assert!(matches!(r.redact_text("a %41 b+c"), Cow::Borrowed(_)));
    }

    /// A secret with letters of both cases, a space, and bytes that
    /// base64 and percent-encoding treat specially.
    const VALUE: &str = "Sk_Live-Ab/C+d e?9~";

    /// `(encoding, the value in it)`: every form the redactor must catch.
    fn encodings(value: &str) -> Vec<(&'static str, String)> {
        let b = value.as_bytes();
        let percent_all: String = b.iter().map(|c| format!("%{c:02X}")).collect();
        let form_encoded: String = b
            .iter()
            .map(|&c| match c {
                b' ' => "+".to_owned(),
                c if c.is_ascii_alphanumeric() || b"-._*".contains(&c) => (c as char).to_string(),
                c => format!("%{c:02x}"),
            })
            .collect();
        vec![
            ("as written", value.to_owned()),
            ("hex", hex(b)),
            ("base64", STANDARD.encode(b)),
            (
                "base64 unpadded",
                STANDARD.encode(b).trim_end_matches('=').to_owned(),
            ),
            ("base64 url-safe", URL_SAFE.encode(b)),
            (
                "percent, reserved only",
                super::super::placeholder::percent_encode(value),
            ),
            ("percent, every byte", percent_all),
            ("form-encoded, + for space", form_encoded),
        ]
    }

    #[test]
    fn each_encoding_in_each_letter_case_is_replaced() {
        let r = Redactor::new([("KEY", VALUE)]);
        type Change = fn(&str) -> String;
        let cases: [(&str, Change); 3] = [
            ("same case", str::to_owned),
            ("lower case", str::to_ascii_lowercase),
            ("upper case", str::to_ascii_uppercase),
        ];
        for (encoding, form) in encodings(VALUE) {
            for (case, change) in cases {
                let text = format!("before {} after", change(&form));
                let got = r.redact_text(&text);
                assert_eq!(
                    got, "before [secret:KEY] after",
                    "{encoding}, {case}: {text}"
                );
            }
        }
    }

    #[test]
    fn a_value_inside_a_longer_base64_stream_is_caught_at_each_alignment() {
        let r = Redactor::new([("KEY", VALUE)]);
        for engine in [STANDARD, URL_SAFE] {
            // Six prefixes and three suffixes: every alignment, and every
            // way the stream's end may fall.
            for (before, after) in (0..6).flat_map(|b| (0..3).map(move |a| (b, a))) {
                let mut stream = b"{\"KEY\":\""[..before].to_vec();
                stream.extend_from_slice(VALUE.as_bytes());
                stream.extend_from_slice(&b"\"}\n"[..after]);
                let encoded = engine.encode(&stream);
                for text in [encoded.clone(), encoded.to_ascii_lowercase()] {
                    let got = r.redact_text(&text);
                    assert!(got.contains("[secret:KEY]"), "{before}/{after}: {got}");
                    // Left around the marker: a character or two of the
                    // value's edges, never enough to decode it.
                    let replaced = text.len() + "[secret:KEY]".len() - got.len();
                    assert!(
                        replaced + 2 >= VALUE.len() * 4 / 3,
                        "{before}/{after}: {got}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_lower_cased_host_in_an_error_is_caught() {
        let r = Redactor::new([("HOST_TOKEN", "AbCdEf0123456789")]);
        let error =
            "error sending request for url (https://abcdef0123456789.example.com/): dns error";
        assert_eq!(
            r.redact_text(error),
            "error sending request for url (https://[secret:HOST_TOKEN].example.com/): dns error"
        );
    }

    #[test]
    fn matches_in_the_text_and_in_its_decoded_view_are_merged() {
        let r = Redactor::new([("A", "alpha-bravo-1"), ("B", "bravo-1-charlie")]);
        assert_eq!(
            r.redact_text("alpha-bravo-1 bravo%2D1-charlie alpha-bravo-1"),
            "[secret:A] [secret:B] [secret:A]"
        );
        // One value both as written and, overlapping, percent-decoded.
        assert_eq!(r.redact_text("alpha%2dbravo-1"), "[secret:A]");
    }

    #[test]
    fn fixed_markers_and_non_ascii_text_around_a_match() {
        let r = Redactor::with_markers([("daemon-key-123456", "[redacted]".to_owned())]);
        assert_eq!(
            r.redact_text("é daemon%2Dkey-123456 ü DAEMON-KEY-123456"),
            "é [redacted] ü [redacted]"
        );
    }

    #[test]
    fn stray_percent_signs_and_spaces_as_plus_are_read_past() {
        let r = redactor();
        // A `%` that starts no escape, before an escaped value.
        assert_eq!(
            r.redact_text("100% sure: tok%2D12345678"),
            "100% sure: [secret:TOKEN]"
        );
        // A value with a space, sent as a query (`+` for the space) with
        // no percent-escape at all.
        assert_eq!(r.redact_text("q=pa\"ss+wo/rd&x=1"), "q=[secret:QUOTED]&x=1");
    }

    #[test]
    fn a_value_of_the_shortest_redacted_length_is_redacted_and_a_shorter_is_not() {
        let exact = "x".repeat(MIN_REDACTED_LEN);
        let r = Redactor::new([("EXACT", exact.as_str())]);
        assert!(!r.is_empty());
        assert_eq!(r.redact_text(&exact), "[secret:EXACT]");
        let shorter = "y".repeat(MIN_REDACTED_LEN - 1);
        let r = Redactor::new([("SHORTER", shorter.as_str())]);
        assert!(r.is_empty(), "nothing long enough to hide");
        assert_eq!(r.redact_text(&shorter), shorter);
        assert!(Redactor::default().is_empty());
    }

    #[test]
    fn json_is_redacted_in_strings_and_keys_and_clean_json_is_not_copied() {
        let r = redactor();
        let dirty = json!({
            "body": "echo: tok-12345678",
            "headers": {"x-echo": ["TOK-12345678", 5, null]},
            "tok-12345678": true,
            "url": "https://x/?q=tok%2D12345678",
        });
        let expected = json!({
            "body": "echo: [secret:TOKEN]",
            "headers": {"x-echo": ["[secret:TOKEN]", 5, null]},
            "[secret:TOKEN]": true,
            "url": "https://x/?q=[secret:TOKEN]",
        });
        assert_eq!(r.redacted(&dirty), Some(expected.clone()));
        assert_eq!(r.redact_json(dirty), expected);
        // A value alone, in a list, or as a field's value is found too.
        for dirty in [
            json!("tok-12345678"),
            json!(["tok-12345678"]),
            json!({"body": "tok-12345678"}),
        ] {
            assert!(r.redacted(&dirty).is_some(), "{dirty}");
        }
        let clean = json!({"body": "fine", "n": [1, 2], "pct": "100%25"});
        assert_eq!(r.redacted(&clean), None);
        assert_eq!(Redactor::default().redacted(&json!("tok-12345678")), None);
    }
}
