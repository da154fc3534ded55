//! What a secret's name and value may be.
//!
//! Names are shown to the model and written into scripts as
//! `{{secret:NAME}}`, so they are kept to one unambiguous shape (the shape of
//! an environment variable): an upper-case letter, then up to 63 upper-case
//! letters, digits and underscores. Values are bounded so the file stays
//! small and a header or URL can carry them.

use super::SecretsError;

/// The rule a name must follow, as the errors state it.
pub const NAME_RULE: &str = "a secret name is 1-64 characters: an upper-case letter A-Z first, \
then upper-case letters, digits 0-9 and `_` (like GITHUB_TOKEN)";
/// The longest name, in characters.
pub const MAX_NAME: usize = 64;
/// The largest value, in bytes.
pub const MAX_VALUE: usize = 16 * 1024;

/// Checks `name` against [`NAME_RULE`]; the error says what is wrong with it.
pub fn check_name(name: &str) -> Result<(), SecretsError> {
    let bad = |why: String| SecretsError::BadName {
        name: name.to_owned(),
        why,
    };
    let Some(first) = name.chars().next() else {
        return Err(bad("it is empty".into()));
    };
    if name.chars().count() > MAX_NAME {
        return Err(bad(format!(
            "it is {} characters long, over {MAX_NAME}",
            name.chars().count()
        )));
    }
    if !first.is_ascii_uppercase() {
        return Err(bad(format!(
            "it starts with {first:?}, not with an upper-case letter A-Z"
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_'))
    {
        let hint = if c.is_ascii_lowercase() {
            " (names are upper-case)"
        } else {
            ""
        };
        return Err(bad(format!("it contains {c:?}{hint}")));
    }
    Ok(())
}

/// Checks a value and returns it as it is stored: one trailing newline (as
/// a terminal or `echo` adds) is dropped first.
pub fn clean_value(raw: &[u8]) -> Result<String, SecretsError> {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if raw.is_empty() {
        return Err(SecretsError::EmptyValue);
    }
    if raw.len() > MAX_VALUE {
        return Err(SecretsError::ValueTooLong { len: raw.len() });
    }
    if raw.contains(&0) {
        return Err(SecretsError::ValueHasNul);
    }
    String::from_utf8(raw.to_vec()).map_err(|_| SecretsError::ValueNotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule_and_errors_say_why() {
        for good in ["A", "API_TOKEN", "GITHUB_TOKEN_2", "X9", &"A".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let long = "A".repeat(65);
        let cases = [
            ("", "it is empty"),
            ("lower", "starts with 'l'"),
            ("Api", "contains 'p' (names are upper-case)"),
            ("1ABC", "starts with '1'"),
            ("_A", "starts with '_'"),
            ("A-B", "contains '-'"),
            ("A B", "contains ' '"),
            ("ÄPI", "starts with 'Ä'"),
            ("APÍ", "contains 'Í'"),
            ("A{B}", "contains '{'"),
            (long.as_str(), "65 characters long, over 64"),
        ];
        for (name, why) in cases {
            let err = check_name(name).unwrap_err().to_string();
            assert!(err.contains(why), "{name:?}: {err}");
            assert!(err.contains(NAME_RULE), "{name:?}: {err}");
        }
    }

    #[test]
    fn values_are_trimmed_of_one_newline_and_bounded() {
        let cases: [(&[u8], Result<&str, &str>); 8] = [
            (b"s3cret-value", Ok("s3cret-value")),
            (b"s3cret-value\n", Ok("s3cret-value")),
            (b"s3cret-value\r\n", Ok("s3cret-value")),
            (b"two\nlines\n", Ok("two\nlines")),
            (b"", Err("empty")),
            (b"\n", Err("empty")),
            (b"a\0b", Err("NUL")),
            (b"\xff\xfe", Err("UTF-8")),
        ];
        for (raw, expected) in cases {
            match (clean_value(raw), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{e}"),
                (got, want) => panic!("{raw:?}: got {got:?}, want {want:?}"),
            }
        }
        assert!(clean_value(&vec![b'x'; MAX_VALUE]).is_ok());
        let err = clean_value(&vec![b'x'; MAX_VALUE + 1]).unwrap_err();
        assert!(err.to_string().contains("16384"), "{err}");
    }
}
