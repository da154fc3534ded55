//! `[policy]`: how the confirmation gate behaves, and where programs the
//! owner did not approve may write (the writable roots).

use serde::Deserialize;

/// `[policy]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// How long a confirmation waits for the owner before it is denied.
    pub confirm_timeout_ms: u64,
    /// Folders added to the mode's writable roots (`~/` is the owner's
    /// home): where unapproved programs and tools may create, change,
    /// rename and remove. The mode's own roots always count: development
    /// `$HEARTH_HOME` and `/tmp`; production the owner's home as well.
    pub writable_roots: Vec<String>,
    /// Whether every write and exec tool asks the owner even inside the
    /// roots. `None` takes the mode's choice: development asks, production
    /// lets the kernel's confinement stand in for the question. Without
    /// Landlock, commands ask in development mode whatever this says.
    pub ask_inside_roots: Option<bool>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            confirm_timeout_ms: 60_000,
            writable_roots: Vec::new(),
            ask_inside_roots: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse;

    #[test]
    fn bad_writable_roots_and_settings_name_the_key() {
        let cases = [
            (
                "writable_roots = [\"projects\"]",
                "policy.writable_roots[0]",
                "absolute",
            ),
            (
                "writable_roots = [\"/srv/a\", \"/srv/../etc\"]",
                "policy.writable_roots[1]",
                "..",
            ),
            (
                "writable_roots = [\"/\"]",
                "policy.writable_roots[0]",
                "whole machine",
            ),
            ("writable_roots = \"/srv\"", "writable_roots", "sequence"),
            ("ask_inside_roots = \"no\"", "ask_inside_roots", "bool"),
            ("writeable_roots = []", "writeable_roots", "unknown field"),
        ];
        for (line, key, says) in cases {
            let text = format!("home = \"/nonexistent-hearth-test\"\n[policy]\n{line}\n");
            let err = parse(&text, None).unwrap_err().to_string();
            assert!(err.contains(key) && err.contains(says), "{line}: {err}");
        }
        let text = "home = \"/nonexistent-hearth-test\"\n[policy]\n\
                    writable_roots = [\"~/projects\", \"/srv/app\"]\nask_inside_roots = false\n";
        let config = parse(text, None).unwrap();
        assert_eq!(config.policy.writable_roots, ["~/projects", "/srv/app"]);
        assert_eq!(config.policy.ask_inside_roots, Some(false));
    }
}
