//! Replacing every known secret value by `[secret:NAME]` in text and JSON.
//!
//! This is the one redaction the host applies wherever a value could
//! surface: tool results and errors, the HTTP responses a script gets back,
//! the audit and the log. A value is matched in the forms it can take
//! there: as written, escaped inside a JSON string, and percent-encoded (as
//! a URL carries it). Values shorter than [`MIN_REDACTED_LEN`] bytes are not
//! matched: they would also match ordinary words.

use std::borrow::Cow;

use serde_json::Value;

/// Values shorter than this (in bytes) are not redacted.
pub const MIN_REDACTED_LEN: usize = 8;

/// The replacement for secret `name`'s value.
pub fn marker(name: &str) -> String {
    format!("[secret:{name}]")
}

/// A set of secret values to hide, longest form first, so a value that
/// holds another is replaced whole.
#[derive(Default)]
pub struct Redactor {
    /// `(form of a value, its marker)`.
    forms: Vec<(String, String)>,
}

impl Redactor {
    /// A redactor for `(name, value)` pairs.
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Redactor {
        let mut forms: Vec<(String, String)> = Vec::new();
        for (name, value) in secrets {
            if value.len() < MIN_REDACTED_LEN {
                continue;
            }
            let json = serde_json::to_string(value).unwrap_or_default();
            let json = json
                .strip_prefix('"')
                .and_then(|j| j.strip_suffix('"'))
                .unwrap_or(value)
                .to_owned();
            let encoded = super::placeholder::percent_encode(value);
            for form in [value.to_owned(), json, encoded] {
                if !forms.iter().any(|(f, _)| *f == form) {
                    forms.push((form, marker(name)));
                }
            }
        }
        forms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Redactor { forms }
    }

    /// Whether there is nothing to hide.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `text` with every value replaced; borrowed when it holds none.
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for (form, marker) in &self.forms {
            if text.contains(form.as_str()) {
                text = Cow::Owned(text.replace(form.as_str(), marker));
            }
        }
        text
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

    fn mentions(&self, value: &Value) -> bool {
        let in_text = |s: &str| self.forms.iter().any(|(f, _)| s.contains(f.as_str()));
        match value {
            Value::String(s) => in_text(s),
            Value::Array(items) => items.iter().any(|v| self.mentions(v)),
            Value::Object(map) => map.iter().any(|(k, v)| in_text(k) || self.mentions(v)),
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
                let keys_clean = map
                    .keys()
                    .all(|k| matches!(self.redact_text(k), Cow::Borrowed(_)));
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
        ];
        for (input, expected) in cases {
            assert_eq!(r.redact_text(input), expected, "{input}");
        }
        assert!(matches!(r.redact_text("clean"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_is_redacted_in_strings_and_keys_and_clean_json_is_not_copied() {
        let r = redactor();
        let dirty = json!({
            "body": "echo: tok-12345678",
            "headers": {"x-echo": ["tok-12345678", 5, null]},
            "tok-12345678": true,
        });
        let expected = json!({
            "body": "echo: [secret:TOKEN]",
            "headers": {"x-echo": ["[secret:TOKEN]", 5, null]},
            "[secret:TOKEN]": true,
        });
        assert_eq!(r.redacted(&dirty), Some(expected.clone()));
        assert_eq!(r.redact_json(dirty), expected);
        let clean = json!({"body": "fine", "n": [1, 2]});
        assert_eq!(r.redacted(&clean), None);
        assert_eq!(Redactor::default().redacted(&json!("tok-12345678")), None);
    }
}
