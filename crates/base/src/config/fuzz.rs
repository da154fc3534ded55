//! Fuzzing the config parser with the example config (every key of it
//! uncommented too) and the corpus, mutated. Properties: no panic, and
//! every error names the file and says where: a syntax or type error its
//! line, a bad value its key.

use std::path::Path;

use hearth_fuzz::{Rng, Target};

use super::{ConfigError, parse};

const EXAMPLE: &str = include_str!("../../../../config/hearth.example.toml");
const FILE: &str = "/srv/fuzz/hearth.toml";

#[test]
fn every_config_error_says_where() {
    Target::new("config")
        .seed(EXAMPLE)
        .seed(uncommented(EXAMPLE))
        .seed_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/hearth.toml"
        ))
        .tokens(&[
            "[llm]\n",
            "[llm.cheap]\n",
            "[agent]\n",
            "[[agent.agents]]\n",
            "[plugins.telegram]\n",
            "[scheduler]\n",
            "[stt]\n",
            "[prices]\n",
            "[owner]\n",
            "[policy]\n",
            "[daemon]\n",
            "mode = \"production\"\n",
            "queue_capacity = 0\n",
            "timezone = \"Mars/Olympus\"\n",
            " = ",
            "\"\"\"",
            "'''",
            "{ a = { b = { c = 1 } } }",
            "[[[[",
            "1979-05-27T07:32:00Z",
            "inf",
            "nan",
            "0x7fffffffffffffff",
            "\\u0000",
            "\\uD800",
        ])
        .run(check);
}

fn check(input: &[u8], _: &mut Rng) {
    let text = String::from_utf8_lossy(input);
    let Err(error) = parse(&text, Some(Path::new(FILE))) else {
        return;
    };
    let shown = error.to_string();
    match &error {
        ConfigError::Parse { detail, .. } => {
            assert!(detail.contains("line "), "no line in {shown:?}");
        }
        ConfigError::Invalid { key, message, .. } => {
            assert!(
                !key.trim().is_empty() && !message.trim().is_empty(),
                "{shown:?}"
            );
        }
        ConfigError::Read { .. } => panic!("parse read a file: {shown}"),
        ConfigError::NoHome => return,
    }
    assert!(shown.contains(FILE), "the file is not named in {shown:?}");
}

/// `text` with its commented-out settings (`# key = value`) set.
fn uncommented(text: &str) -> String {
    text.lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if rest.contains(" = ") || rest.starts_with('[') => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_key_of_too_many_parts_is_reported_at_its_line() {
    let text =
        include_str!("../../../../tests/fixtures/fuzz/regressions/config/dotted_key_too_deep.toml");
    let error = parse(text, Some(Path::new(FILE))).expect_err("the key is too deep");
    let shown = error.to_string();
    assert!(
        shown.contains("line 2: recursion limit: a key of 91 dotted parts"),
        "{shown}"
    );
}
