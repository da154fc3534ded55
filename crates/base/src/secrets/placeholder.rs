//! `{{secret:NAME}}` placeholders: finding them in a script's text and
//! putting the values in, on the host side.
//!
//! A script names a secret; only the host ever holds its value. The HTTP
//! host call uses these functions to fill a request's header values and
//! URL after the URL passed the egress checks.

use std::ops::Range;

use super::{SecretsError, name};

/// How a placeholder opens.
pub const OPEN: &str = "{{secret:";
/// How a placeholder closes.
pub const CLOSE: &str = "}}";

/// One placeholder found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// Where it stands, `{{` to `}}` inclusive.
    pub span: Range<usize>,
    /// The secret it names.
    pub name: String,
}

/// Every placeholder in `text`, in order; an unclosed one or a bad name is
/// an error that says where and why.
pub fn find(text: &str) -> Result<Vec<Placeholder>, SecretsError> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(OPEN).map(|i| i + from) {
        let name_start = at + OPEN.len();
        let Some(len) = text[name_start..].find(CLOSE) else {
            return Err(SecretsError::BadPlaceholder {
                at,
                why: format!("`{OPEN}` is not closed by `{CLOSE}`"),
            });
        };
        let name = &text[name_start..name_start + len];
        name::check_name(name).map_err(|e| SecretsError::BadPlaceholder {
            at,
            why: e.to_string(),
        })?;
        let end = name_start + len + CLOSE.len();
        found.push(Placeholder {
            span: at..end,
            name: name.to_owned(),
        });
        from = end;
    }
    Ok(found)
}

/// `text` with each placeholder replaced by `value(name)`; the first name
/// `value` has no answer for is the error.
pub fn fill(
    text: &str,
    mut value: impl FnMut(&str) -> Result<String, SecretsError>,
) -> Result<String, SecretsError> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for p in find(text)? {
        out.push_str(&text[last..p.span.start]);
        out.push_str(&value(&p.name)?);
        last = p.span.end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}

/// Percent-encodes every byte but the unreserved ones (`A-Z a-z 0-9 - . _
/// ~`), so a value stays one piece of a URL's path or query.
pub fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_or_refused_with_the_reason() {
        let names = |text: &str| -> Result<Vec<String>, String> {
            find(text)
                .map(|ps| ps.into_iter().map(|p| p.name).collect())
                .map_err(|e| e.to_string())
        };
        let cases: [(&str, Result<Vec<&str>, &str>); 9] = [
            ("Bearer {{secret:API_TOKEN}}", Ok(vec!["API_TOKEN"])),
            ("{{secret:A}}:{{secret:B_2}}", Ok(vec!["A", "B_2"])),
            ("no placeholder {{here}}", Ok(vec![])),
            ("{{secret:A}", Err("at byte 0: `{{secret:` is not closed")),
            (
                "x {{secret:lower}}",
                Err("at byte 2: secret name \"lower\""),
            ),
            ("{{secret:}}", Err("it is empty")),
            ("{{secret:A B}}", Err("contains ' '")),
            ("{{secret:1A}}", Err("starts with '1'")),
            ("{{secret:A-B}}", Err("contains '-'")),
        ];
        for (text, expected) in cases {
            match (names(text), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{text}: {got}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn fill_puts_values_in_and_names_the_unknown_one() {
        let value = |name: &str| match name {
            "A" => Ok("1".to_owned()),
            _ => Err(SecretsError::Unknown {
                name: name.to_owned(),
                known: vec!["A".into()],
            }),
        };
        assert_eq!(fill("x{{secret:A}}y{{secret:A}}", value).unwrap(), "x1y1");
        assert_eq!(fill("plain", value).unwrap(), "plain");
        let err = fill("{{secret:B}}", value).unwrap_err().to_string();
        assert!(err.contains("no secret named B"), "{err}");
    }

    #[test]
    fn percent_encoding_keeps_only_unreserved_bytes() {
        assert_eq!(percent_encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(percent_encode("a b/c?d&e=f"), "a%20b%2Fc%3Fd%26e%3Df");
        assert_eq!(percent_encode("é"), "%C3%A9");
    }
}
