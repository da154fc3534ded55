//! Fuzzing the shell guard: its parser and the whole check behind it.
//!
//! Two properties. Any line (the corpora of `tests/fixtures/guards`,
//! mutated, nested deep, full of odd characters) is judged, in bounded
//! time, and a line judged harmless stays guarded when a delete of `/` is
//! added after it. And a deleting `rm` of a protected path, however it is
//! spelled (quoted, escaped, `$'\x72m'`, a variable the tool's `env`
//! sets, through wrappers, `sh -c`, `eval`, inside pipelines, groups,
//! loops and substitutions), never runs without asking.

use std::path::Path;

use hearth_fuzz::{Target, shell};

use super::rules::Rules;
use super::{Guard, MAX_COMMAND_BYTES, Verdict};

const CWD: &str = "/home/owner/project";

fn guard() -> Guard {
    Guard::new(
        Rules::defaults(),
        Path::new("/home/owner"),
        Path::new("/home/owner/.hearth"),
    )
}

#[test]
fn any_line_is_judged_and_a_delete_after_it_is_caught() {
    let guard = guard();
    Target::new("guard")
        .seed_lines("guards/ask.txt")
        .seed_lines("guards/harmless.txt")
        .max_len(MAX_COMMAND_BYTES + 16)
        .tokens(&[
            "rm -rf /",
            "$(",
            "`",
            "${",
            "$'\\x72m'",
            "<<EOF\n",
            "'",
            "\"",
            "\\",
            ";",
            "&&",
            "||",
            "|",
            "&",
            "(",
            ")",
            "{ ",
            "; }",
            "if true; then ",
            "; fi",
            "for i in 1; do ",
            "; done",
            "case x in x) ",
            ";; esac",
            "sh -c ",
            "eval ",
            "env ",
            "xargs ",
            "find . -exec ",
            "sudo ",
            "> /etc/passwd",
            "<(",
            "2>&1",
            "~",
            "*",
            "?",
            "[a-z]",
            "!",
            "#",
        ])
        .run(move |input, _| {
            let line = String::from_utf8_lossy(input);
            let cwd = Path::new(CWD);
            if guard.check(&line, cwd) != Verdict::Allow || !separable(&line) {
                return;
            }
            let extended = format!("{line}\nrm -rf /");
            assert_ne!(
                guard.check(&extended, cwd),
                Verdict::Allow,
                "{line:?} is harmless, but a delete of / after it is let through"
            );
        });
}

#[test]
fn a_deleting_rm_of_a_protected_path_always_asks() {
    let guard = guard();
    Target::new("guard_rm")
        .generator(|rng| shell::deleting_rm(rng, "/home/owner").into_bytes())
        .run(move |input, _| {
            let command = String::from_utf8_lossy(input);
            // The tool's `env` argument sets `RM`, as a model could.
            let env = [("RM".to_owned(), "rm".to_owned())];
            assert_ne!(
                guard.check_in(&command, Path::new(CWD), &env),
                Verdict::Allow,
                "this deletes a protected path without asking"
            );
        });
}

/// Whether a line added after `line` runs as a command of its own:
/// not when `line` leaves a here-document, a comment or a continuation
/// open, which would swallow it.
fn separable(line: &str) -> bool {
    !line.contains("<<") && !line.contains('#') && !line.ends_with('\\')
}

#[test]
fn deep_nesting_asks_instead_of_overflowing_the_stack() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fuzz/regressions/guard");
    let guard = guard();
    for name in [
        "nested_substitutions.txt",
        "nested_quoted_substitutions.txt",
        "nested_loops.txt",
        "nested_case.txt",
        "negations_in_a_test.txt",
        "nested_old_arithmetic.txt",
    ] {
        let line = std::fs::read_to_string(dir.join(name)).expect("the regression is kept");
        match guard.check(&line, Path::new(CWD)) {
            Verdict::Ask(why) => assert!(why.contains("levels deep"), "{name}: {why}"),
            Verdict::Allow => panic!("{name} was allowed"),
        }
    }
}

#[test]
fn a_line_the_shell_parser_panics_on_asks() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fuzz/regressions/guard");
    for name in ["io_number_too_large.txt", "tilde_number_too_large.txt"] {
        let line = std::fs::read_to_string(dir.join(name)).expect("the regression is kept");
        assert_eq!(
            guard().check(&line, Path::new(CWD)),
            Verdict::Ask("cannot check it fully: the shell parser failed on it".into()),
            "{name}"
        );
    }
}

#[test]
fn unclosed_parentheses_in_a_row_ask_at_once() {
    let line = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/fuzz/regressions/guard/unclosed_parentheses_in_a_row.txt"),
    )
    .expect("the regression is kept");
    match guard().check(&line, Path::new(CWD)) {
        Verdict::Ask(why) => assert!(why.contains("parentheses in a row"), "{why}"),
        Verdict::Allow => panic!("allowed"),
    }
}
