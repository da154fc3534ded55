//! Shells and language interpreters: whether one is handed code rather
//! than a script file.
//!
//! Code comes on the command line (`-c`, `-e`, also after other options:
//! `bash -o errexit -c`, `python3 -W ignore -c`), through a module or
//! library loaded first (`perl '-M5;...'`, `node -r`, `python3 -m
//! timeit`), or from standard input, named or not (`| bash`, `| bash
//! /dev/stdin`, `| sh /proc/self/fd/0`). Each family's options that take
//! an argument are known, so the code flag is found wherever it stands.
//! A script file the interpreter is given is run, not read: its contents
//! are the agent's own, and not inspected.

use super::{Ctx, Guard};

/// One family of interpreters.
struct Family {
    /// Short options (letters) whose argument may be the next word.
    valued_short: &'static str,
    /// Long options whose argument may be the next word.
    valued_long: &'static [&'static str],
    /// Short options that hand it code (or load code named by their
    /// argument) on the command line.
    code_short: &'static str,
    /// Long options that do.
    code_long: &'static [&'static str],
}

const SHELL: Family = Family {
    valued_short: "oO",
    valued_long: &["--rcfile", "--init-file"],
    code_short: "cs",
    code_long: &["--command", "--init-command"],
};
const FISH: Family = Family {
    valued_short: "dDlo",
    valued_long: &["--debug", "--features", "--profile"],
    code_short: "cC",
    code_long: &["--command", "--init-command"],
};
const PYTHON: Family = Family {
    valued_short: "WXQ",
    valued_long: &["--check-hash-based-pycs"],
    code_short: "c",
    code_long: &[],
};
const PERL: Family = Family {
    valued_short: "",
    valued_long: &[],
    code_short: "eE",
    code_long: &[],
};
const RUBY: Family = Family {
    valued_short: "ICEFrW",
    valued_long: &["--encoding", "--external-encoding", "--internal-encoding"],
    code_short: "e",
    code_long: &[],
};
const NODE: Family = Family {
    valued_short: "C",
    valued_long: &["--conditions", "--input-type", "--title", "--stack-size"],
    code_short: "epr",
    code_long: &[
        "--eval",
        "--print",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--env-file",
        "--env-file-if-exists",
    ],
};
const PHP: Family = Family {
    valued_short: "cztf",
    valued_long: &[],
    code_short: "rBREFda",
    code_long: &[],
};
const LUA: Family = Family {
    valued_short: "l",
    valued_long: &[],
    code_short: "e",
    code_long: &[],
};
const OTHER: Family = Family {
    valued_short: "",
    valued_long: &[],
    code_short: "",
    code_long: &[],
};

/// The family of `base`, if it is a shell or interpreter the guard knows.
fn family(base: &str) -> Option<&'static Family> {
    let trimmed = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match trimmed {
        "sh" | "bash" | "rbash" | "dash" | "ash" | "zsh" | "ksh" | "mksh" | "pdksh" | "yash"
        | "posh" | "csh" | "tcsh" | "oksh" | "loksh" => &SHELL,
        "fish" => &FISH,
        "python" | "pypy" | "python3-dbg" => &PYTHON,
        "perl" => &PERL,
        "ruby" | "jruby" => &RUBY,
        "node" | "nodejs" | "bun" => &NODE,
        "php" | "php-cli" => &PHP,
        "lua" | "luajit" => &LUA,
        "tclsh" | "wish" | "expect" | "Rscript" | "julia" | "pwsh" | "guile" | "racket"
        | "sbcl" | "osascript" | "deno" | "irb" | "jshell" => &OTHER,
        _ => return None,
    })
}

/// Extra code flags for the families grouped under `OTHER`.
fn other_code_flags(base: &str) -> &'static [&'static str] {
    match base {
        "expect" => &["-c"],
        "Rscript" => &["-e"],
        "julia" => &["-e", "-E", "--eval", "--print"],
        "pwsh" => &["-c", "-Command", "-EncodedCommand", "-e", "-ec"],
        "guile" => &["-c", "-e", "-l"],
        "racket" => &["-e", "-r", "-l"],
        "sbcl" => &["--eval", "--load"],
        _ => &[],
    }
}

/// Python modules that run as a plain program over the files they are
/// given, and read no code from their arguments.
const PLAIN_MODULES: &[&str] = &[
    "venv",
    "pip",
    "ensurepip",
    "pytest",
    "unittest",
    "http.server",
    "json.tool",
    "compileall",
    "py_compile",
    "site",
    "black",
    "mypy",
    "ruff",
    "flake8",
    "pylint",
    "isort",
    "build",
    "pydoc",
    "tabnanny",
    "calendar",
    "uuid",
    "sysconfig",
    "platform",
];

/// Names the running process's standard input as a file.
fn is_stdin_file(text: &str) -> bool {
    matches!(
        text,
        "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "/proc/thread-self/fd/0"
    ) || (text.starts_with("/proc/") && text.ends_with("/fd/0"))
}

/// Why running `base` with `args` runs code that is not a script file,
/// if it does.
pub fn judge(guard: &Guard, base: &str, args: &[&str], ctx: &Ctx) -> Option<String> {
    let configured = guard.rules.interpreters.get(base).or_else(|| {
        let trimmed = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        guard.rules.interpreters.get(trimmed)
    });
    let family = family(base);
    if family.is_none() && configured.is_none() {
        return None;
    }
    let family = family.unwrap_or(&OTHER);
    let configured: &[String] = configured.map_or(&[], Vec::as_slice);
    let code_flag = |arg: &str| -> bool {
        configured
            .iter()
            .any(|f| super::flag_given(arg, f) || f == arg)
            || other_code_flags(base).contains(&arg)
    };
    let mut i = 0;
    let mut script = None;
    while i < args.len() {
        let a = args[i];
        if a == "--" {
            script = args.get(i + 1).copied();
            break;
        }
        if code_flag(a) {
            return Some(format!(
                "`{base}` runs code given on its command line ({a})"
            ));
        }
        if let Some(long) = a.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            let full = format!("--{name}");
            if family.code_long.contains(&full.as_str()) {
                return Some(format!(
                    "`{base}` runs or loads code named on its command line ({a})"
                ));
            }
            if family.valued_long.contains(&full.as_str()) && !long.contains('=') {
                i += 1;
            }
            i += 1;
            continue;
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            if family_is_perl(base) {
                if let Some(why) = perl_option(base, a) {
                    return Some(why);
                }
                if matches!(a, "-I" | "-M" | "-m") {
                    i += 1;
                }
                i += 1;
                continue;
            }
            let cluster = &a[1..];
            for (at, letter) in cluster.char_indices() {
                if family.code_short.contains(letter) && a.starts_with('-') {
                    return Some(format!(
                        "`{base}` runs code given on its command line ({a})"
                    ));
                }
                if letter == 'm' && std::ptr::eq(family, &PYTHON) {
                    let attached = &cluster[at + 1..];
                    let module = if attached.is_empty() {
                        args.get(i + 1).copied().unwrap_or_default()
                    } else {
                        attached
                    };
                    // `python3 -m` may end the line (found by fuzzing:
                    // slicing past it panicked).
                    let rest = args
                        .get(i + 1 + usize::from(attached.is_empty())..)
                        .unwrap_or_default();
                    return python_module(guard, module, rest);
                }
                if family.valued_short.contains(letter) {
                    if cluster[at + letter.len_utf8()..].is_empty() {
                        i += 1;
                    }
                    break;
                }
            }
            i += 1;
            continue;
        }
        script = Some(a);
        break;
    }
    match script {
        Some(s) if is_stdin_file(s) => {
            Some(format!("`{base}` runs its standard input as code ({s})"))
        }
        Some(_) => None,
        None if ctx.stdin_fed => Some(format!("`{base}` runs the code piped into it")),
        None => None,
    }
}

fn family_is_perl(base: &str) -> bool {
    base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.') == "perl"
}

/// Why one perl option (a cluster) runs code, if it does: `-e`/`-E`
/// anywhere in a cluster before an option that takes the rest, and a
/// module (`-M`, `-m`, `-d:`) named with more than a plain name.
fn perl_option(base: &str, a: &str) -> Option<String> {
    let cluster = a.strip_prefix('-')?;
    for (at, letter) in cluster.char_indices() {
        // Past the whole letter: an option cluster may hold any character
        // (found by fuzzing: slicing one byte on panicked inside `Ś`).
        let rest = &cluster[at + letter.len_utf8()..];
        match letter {
            'e' | 'E' => {
                return Some(format!(
                    "`{base}` runs code given on its command line ({a})"
                ));
            }
            'M' | 'm' | 'd' => {
                let plain = rest
                    .trim_start_matches(':')
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == ':' || c == '_' || c == '-');
                if !plain || (letter == 'd' && !rest.is_empty()) {
                    return Some(format!(
                        "`{base}` loads code named on its command line ({a})"
                    ));
                }
                return None;
            }
            // These take the rest of the cluster as their argument.
            'I' | 'x' | 'i' | 'l' | '0' | 'C' | 'F' | 'D' | 'V' => return None,
            _ => {}
        }
    }
    None
}

/// `python -m MODULE ARGS`: a module known to be a plain program runs
/// (`pip` is then checked as `pip` itself); any other asks.
fn python_module(guard: &Guard, module: &str, rest: &[&str]) -> Option<String> {
    if !PLAIN_MODULES.contains(&module) {
        return Some(format!(
            "`python -m {module}` runs a module that may run code from its arguments"
        ));
    }
    if module == "pip" {
        for rule in &guard.rules.rules {
            if rule.commands.iter().any(|c| c == "pip") && rule.applies(rest) {
                return Some(format!("`python -m pip`: {}", rule.reason));
            }
        }
    }
    None
}
