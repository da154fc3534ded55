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

use hearth_fuzz::{Rng, Target};

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
        .generator(|rng| deleting_rm(rng).into_bytes())
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

/// A command line that deletes a protected path, spelled at random.
fn deleting_rm(rng: &mut Rng) -> String {
    const NAMES: &[&str] = &[
        "rm",
        "\\rm",
        "r\\m",
        "'rm'",
        "\"rm\"",
        "r''m",
        "r\"\"m",
        "'r'm",
        "\"r\"m",
        "r'm'",
        "$'rm'",
        "$'\\x72m'",
        "$'\\162m'",
        "$'\\x72\\x6d'",
        "$'\\u0072m'",
        "/bin/rm",
        "/usr/bin/rm",
        "\"/bin/rm\"",
        "//bin//rm",
        "/bin/../bin/rm",
        "/usr/bin/../../bin/rm",
        "$RM",
        "${RM}",
        "\"$RM\"",
    ];
    const WRAPPERS: &[&str] = &[
        "",
        "",
        "",
        "command ",
        "exec ",
        "env ",
        "env -i ",
        "env X=1 ",
        "X=1 ",
        "nice ",
        "nice -n 5 ",
        "nohup ",
        "timeout 5 ",
        "time ",
        "sudo ",
        "stdbuf -o0 ",
        "ionice -c3 ",
        "command -p ",
        "builtin command ",
        "env -- ",
        "sudo -u root ",
        "setsid ",
        "chrt -i 0 ",
    ];
    // Each deletes: recursively, by force, or both.
    const FLAGS: &[&str] = &[
        "-r",
        "-f",
        "-rf",
        "-fr",
        "-Rf",
        "-r -f",
        "--recursive",
        "--force",
        "-v -rf",
        "--no-preserve-root -rf",
        "-rfv",
        "-rf --",
        "-I -r",
        "--interactive=never -r",
        "-rf -i",
        "--recursive --force --",
        "-dr",
        "-f -d",
        "--recur",
        "--forc",
    ];
    const PATHS: &[&str] = &[
        "/",
        "/*",
        "/etc",
        "/etc/passwd",
        "/usr",
        "/home/owner",
        "~",
        "~/",
        "~/Documents",
        "$HOME",
        "\"$HOME\"",
        "${HOME}",
        "/home/owner/.ssh",
        "~/.bashrc",
        "~/.ssh/id_ed25519",
        "/home/owner/.hearth/../Documents",
        "/tmp/../etc",
        "../..",
        "..",
        "'/'",
        "\"/\"",
        "\\/",
        "/.",
        "//",
        "/etc/",
        "/home/owner/.",
        "/boot",
        "/var",
        "/home/*",
        "/home/owner/project/../../owner",
        "~/.config",
        "/e't'c",
    ];
    // Protected files: deleting one asks even without a flag.
    const FILES: &[&str] = &[
        "/etc/passwd",
        "~/.bashrc",
        "~/.ssh/id_ed25519",
        "/home/owner/.ssh/authorized_keys",
        "'/etc/shadow'",
        "~/.profile",
        "/home/owner/.hearth/../.bashrc",
    ];
    let name = rng.choose(NAMES);
    let wrapper = rng.choose(WRAPPERS);
    let (flags, path) = match rng.one_in(4) {
        true => (rng.choose(&["", "-v", "-i", "--"]), rng.choose(FILES)),
        false => (rng.choose(FLAGS), rng.choose(PATHS)),
    };
    let gap = rng.choose(&[" ", "  ", "\t", " \\\n"]);
    let mut rm = format!("{wrapper}{name}{gap}{flags}{gap}{path}").replace("  ", " ");
    if rng.one_in(3) {
        rm = format!(
            "{rm} {}",
            rng.choose(&["/tmp/x", "a.txt", "/home/owner/.hearth/x"])
        );
    }
    if !rm.contains('\'') && rng.one_in(4) {
        let shell = rng.choose(&[
            "sh -c",
            "bash -c",
            "eval",
            "bash -lc",
            "dash -c",
            "env sh -c",
        ]);
        rm = format!("{shell} '{rm}'");
    }
    if rng.one_in(6) {
        rm = format!("echo {path} | xargs {name} {flags}");
    }
    let context = rng.choose(&[
        "{}",
        "{}",
        "true; {}",
        "true && {}",
        "false || {}",
        "ls | {}",
        "({})",
        "{ {}; }",
        "if true; then {}; fi",
        "for i in 1; do {}; done",
        "while false; do :; done; {}",
        "echo hi\n{}",
        "{} &",
        "{} 2>/dev/null",
        "{} # bye",
        "cd /tmp && {}",
        "! {}",
        "{} | cat",
        "x=$({})",
        "echo $({})",
        "echo \"$({})\"",
        "{} > /dev/null 2>&1",
        "case a in a) {};; esac",
        "until {}; do :; done",
        "cat <(  {} )",
        "( ( {} ) )",
        "f() { {}; }; f",
        "export A=1; {}",
        "{}; echo done",
        "[ -d / ] && {}",
    ]);
    context.replace("{}", &rm)
}

#[test]
fn deep_nesting_asks_instead_of_overflowing_the_stack() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/fuzz/regressions/guard");
    let guard = guard();
    for name in [
        "nested_substitutions.txt",
        "nested_quoted_substitutions.txt",
        "nested_loops.txt",
        "nested_case.txt",
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
    let line = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/fuzz/regressions/guard/io_number_too_large.txt"),
    )
    .expect("the regression is kept");
    assert_eq!(
        guard().check(&line, Path::new(CWD)),
        Verdict::Ask("cannot check it fully: the shell parser failed on it".into())
    );
}
