//! Tool names: the rule every name follows, and the form a model sees.
//!
//! Registry names may use `.` as a separator (`mcp.files.read_file`), but
//! the model APIs accept only `^[a-zA-Z0-9_-]{1,64}$`. A model is therefore
//! sent each name with every `.` written as `__` (`mcp__files__read_file`,
//! the convention other MCP clients use too), and a name the model calls
//! is read back the same way. For that to be reversible a dotted name may
//! not also hold `__`, and its wire form must fit the APIs' 64 characters.

use std::borrow::Cow;

/// The longest name, in registry and wire form alike.
pub const MAX_NAME: usize = 64;

/// Whether `name` may name a tool, and why not.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid_bytes = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-'));
    if name.is_empty() || !valid_bytes {
        return Err(format!(
            "tool name {name:?} is invalid: use 1-{MAX_NAME} characters of a-z, 0-9, `_`, `.` and `-`"
        ));
    }
    if name.contains('.') {
        if name.starts_with('.') || name.ends_with('.') || name.contains("..") {
            return Err(format!(
                "tool name {name:?} is invalid: `.` separates words and cannot start, end or repeat"
            ));
        }
        if name.contains("__") {
            return Err(format!(
                "tool name {name:?} is invalid: a name with `.` cannot also hold `__` (models see `.` as `__`)"
            ));
        }
    }
    let wire = wire_name(name).len();
    if wire > MAX_NAME {
        return Err(format!(
            "tool name {name:?} is invalid: it is {wire} characters as a model sees it (each `.` is `__`), over {MAX_NAME}"
        ));
    }
    Ok(())
}

/// `name` as a model is sent it.
pub fn wire_name(name: &str) -> Cow<'_, str> {
    if name.contains('.') {
        Cow::Owned(name.replace('.', "__"))
    } else {
        Cow::Borrowed(name)
    }
}

/// The registry name a model meant by `wire`, when `wire` is the wire form
/// of a dotted name; `None` when it names no dotted tool.
pub fn from_wire(wire: &str) -> Option<String> {
    wire.contains("__").then(|| wire.replace("__", "."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        let cases: &[(&str, Option<&str>)] = &[
            ("echo", None),
            ("mcp.files.read_file", None),
            ("process-start", None),
            ("a__b", None),
            ("", Some("invalid: use 1-64")),
            ("Echo", Some("invalid: use 1-64")),
            ("a/b", Some("invalid: use 1-64")),
            (&"x".repeat(65), Some("over 64")),
            (".a", Some("cannot start, end or repeat")),
            ("a.", Some("cannot start, end or repeat")),
            ("a..b", Some("cannot start, end or repeat")),
            ("mcp.x.a__b", Some("cannot also hold `__`")),
            (
                "mcp.server.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                Some("each `.` is `__`"),
            ),
        ];
        for (name, error) in cases {
            match (check_name(name), error) {
                (Ok(()), None) => {}
                (Err(e), Some(part)) => assert!(e.contains(part), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn wire_names_round_trip() {
        for name in ["mcp.files.read_file", "echo", "mcp.e.get-env"] {
            let wire = wire_name(name);
            assert!(
                wire.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
            match from_wire(&wire) {
                Some(back) => assert_eq!(back, name),
                None => assert_eq!(wire, name),
            }
        }
        assert_eq!(wire_name("mcp.files.read_file"), "mcp__files__read_file");
        assert_eq!(from_wire("plain"), None);
    }
}
