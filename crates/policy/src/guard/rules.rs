//! The guard's rules, as `guards.toml` spells them.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The defaults, compiled in: `config/guards.toml`.
pub const DEFAULT: &str = include_str!("../../../../config/guards.toml");

/// Every list in `guards.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Commands that always ask.
    pub always: Vec<String>,
    /// Command-name prefixes that always ask.
    #[serde(default)]
    pub always_prefixes: Vec<String>,
    /// Interpreters and the flags that hand them code.
    #[serde(default)]
    pub interpreters: BTreeMap<String, Vec<String>>,
    /// Conditional rules.
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
    /// Paths that writes ask for.
    #[serde(default)]
    pub protected_paths: Vec<String>,
    /// Device files that are fine to write.
    #[serde(default)]
    pub writable_devices: Vec<String>,
    /// Commands whose path arguments are writes.
    #[serde(default)]
    pub writers: Vec<String>,
    /// Commands that write only with one of the given flags.
    #[serde(default)]
    pub in_place_writers: BTreeMap<String, Vec<String>>,
    /// Commands that delete, guarded when recursive or forced.
    #[serde(default)]
    pub delete_commands: Vec<String>,
}

/// One conditional rule.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// What the card says.
    pub reason: String,
    /// The commands it covers.
    pub commands: Vec<String>,
    /// Applies when one of these is an argument.
    #[serde(default)]
    pub words: Vec<String>,
    /// Applies when one of these flags is given.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Applies when an argument starts with one of these.
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Applies unless the first argument is one of these.
    #[serde(default)]
    pub unless_first_word: Vec<String>,
}

impl Rules {
    /// Parses `text`; the error names the line and key.
    pub fn parse(text: &str) -> Result<Rules, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())
    }

    /// The compiled-in defaults.
    pub fn defaults() -> Rules {
        // The defaults are tested to parse (`defaults_parse`), so this
        // cannot fail in a built binary.
        Rules::parse(DEFAULT).unwrap_or_else(|e| panic!("config/guards.toml is invalid: {e}"))
    }
}

impl Rule {
    /// Whether the rule applies to `args` (the arguments after the name).
    pub fn applies(&self, args: &[&str]) -> bool {
        let conditional = !(self.words.is_empty()
            && self.flags.is_empty()
            && self.prefixes.is_empty()
            && self.unless_first_word.is_empty());
        if !conditional {
            return true;
        }
        if !self.unless_first_word.is_empty() {
            let first = args.iter().find(|a| !a.starts_with('-'));
            if first.is_none_or(|f| !self.unless_first_word.iter().any(|w| w == f)) {
                return true;
            }
        }
        args.iter().any(|a| {
            self.words.iter().any(|w| w == a)
                || self.prefixes.iter().any(|p| a.starts_with(p.as_str()))
                || self.flags.iter().any(|f| flag_given(a, f))
        })
    }
}

/// Whether `arg` gives `flag`: equal, `--flag=value`, or a one-letter flag
/// inside a cluster (`-Rns` gives `-R`).
pub fn flag_given(arg: &str, flag: &str) -> bool {
    if arg == flag {
        return true;
    }
    if let Some(long) = flag.strip_prefix("--") {
        return arg
            .strip_prefix("--")
            .is_some_and(|a| a.split('=').next() == Some(long));
    }
    let Some(letter) = flag.strip_prefix('-').filter(|l| l.chars().count() == 1) else {
        return false;
    };
    arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(letter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse() {
        let rules = Rules::defaults();
        assert!(rules.always.iter().any(|c| c == "kill"));
        assert!(!rules.rules.is_empty());
    }

    #[test]
    fn flags_are_found_in_clusters_and_long_forms() {
        let cases = [
            ("-Rf", "-R", true),
            ("-rf", "-R", false),
            ("--recursive", "--recursive", true),
            ("--remove=x", "--remove", true),
            ("--removed", "--remove", false),
            ("-x", "--remove", false),
        ];
        for (arg, flag, expected) in cases {
            assert_eq!(flag_given(arg, flag), expected, "{arg} {flag}");
        }
    }
}
