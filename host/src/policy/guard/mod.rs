//! The shell guard: whether a command line may run without asking.
//!
//! `Guard::check` parses the line with a real shell parser (`words`),
//! resolves every word statically, and checks each simple command against
//! the rules of `guards.toml` (`rules`): commands that always ask,
//! interpreters fed code, wrappers (`env`, `nohup`, `xargs`, `find -exec`,
//! ...) whose inner command is checked in turn, recursive or forced
//! deletes outside `$HEARTH_HOME` and `/tmp`, and writes into protected
//! paths. What the parser cannot fully resolve asks.
//!
//! Architecture invariant: the guard fails closed. It answers `Allow` only
//! for a command it has read completely and found no rule for; every doubt
//! (a parse error, an expansion, an unknown wrapper form) is `Ask`.

pub mod rules;
mod words;

use std::path::{Component, Path, PathBuf};

use rules::{Rules, flag_given};
use words::{Arg, DANGEROUS_ASSIGNMENTS, Invocation, Unresolved, invocations};

/// The longest command line the guard reads; longer ones ask.
pub const MAX_COMMAND_BYTES: usize = 4096;
/// How deep wrappers may nest (`env nice timeout 5 rm ...`).
const MAX_DEPTH: usize = 8;
/// Stands for arguments only known at run time (what `xargs` or
/// `find -exec` adds): the worst case, any file at all. Its glob makes
/// every path check treat it as "anything under /".
const UNKNOWN_PATH: &str = "/*";

/// The decision on one command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No rule applies.
    Allow,
    /// Ask the owner; the reason is shown on the card.
    Ask(String),
}

/// The rules, with the paths they refer to resolved.
pub struct Guard {
    rules: Rules,
    home: PathBuf,
    roots: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    writable: Vec<PathBuf>,
}

impl Guard {
    /// A guard for `rules`, with the owner's `home` directory and
    /// `hearth_home` (`$HEARTH_HOME`).
    pub fn new(rules: Rules, home: &Path, hearth_home: &Path) -> Guard {
        let expand = |p: &String| -> PathBuf {
            let p = p.replace("$HEARTH_HOME", &hearth_home.to_string_lossy());
            match p.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => PathBuf::from(p),
            }
        };
        Guard {
            protected: rules.protected_paths.iter().map(expand).collect(),
            writable: rules.writable_devices.iter().map(expand).collect(),
            roots: vec![normalize(hearth_home), PathBuf::from("/tmp")],
            home: home.to_owned(),
            rules,
        }
    }

    /// Checks `command` as it would run in `cwd`.
    pub fn check(&self, command: &str, cwd: &Path) -> Verdict {
        if command.len() > MAX_COMMAND_BYTES {
            return Verdict::Ask(format!(
                "the command is {} bytes, over the {MAX_COMMAND_BYTES}-byte limit the guard reads",
                command.len()
            ));
        }
        if let Some(c) = command
            .chars()
            .find(|c| (c.is_control() && *c != '\n' && *c != '\t') || is_invisible(*c))
        {
            return Verdict::Ask(format!(
                "the command contains the control or invisible character U+{:04X}",
                c as u32
            ));
        }
        let home = self.home.to_string_lossy();
        let found = match invocations(command, &home) {
            Ok(found) => found,
            Err(Unresolved(why)) => return Verdict::Ask(format!("cannot check it fully: {why}")),
        };
        for invocation in &found {
            if let Some(why) = self.invocation(invocation, cwd, 0) {
                return Verdict::Ask(why);
            }
        }
        Verdict::Allow
    }

    /// Checks a write of `path` (a file tool's target) as it would happen
    /// from `cwd`: writes into protected paths ask.
    pub fn check_write(&self, path: &str, cwd: &Path) -> Verdict {
        let target = Arg {
            text: path.to_owned(),
            glob_at: None,
        };
        match self.write_target(&target, cwd) {
            Some(why) => Verdict::Ask(why),
            None => Verdict::Allow,
        }
    }

    /// Why `inv` asks, if it does.
    fn invocation(&self, inv: &Invocation, cwd: &Path, depth: usize) -> Option<String> {
        for target in &inv.writes {
            if let Some(why) = self.write_target(target, cwd) {
                return Some(why);
            }
        }
        self.argv(&inv.argv, inv.stdin_fed, cwd, depth)
    }

    fn argv(&self, argv: &[Arg], stdin_fed: bool, cwd: &Path, depth: usize) -> Option<String> {
        let first = argv.first()?;
        if depth > MAX_DEPTH {
            return Some("wrappers nest too deep to check".into());
        }
        let name = first.text.as_str();
        if name.is_empty() || !name.is_ascii() {
            return Some(format!("the command name {name:?} is not plain ASCII"));
        }
        if first.glob_at.is_some() {
            return Some(format!("the command name {name:?} is a file pattern"));
        }
        let base = name.rsplit('/').next().unwrap_or(name);
        let args: Vec<&str> = argv[1..].iter().map(|a| a.text.as_str()).collect();
        if let Some(inner) = self.unwrap(base, &args) {
            return match inner {
                Inner::Ask(why) => Some(why),
                Inner::Run(start, extra) => {
                    let mut rest: Vec<Arg> = argv[1 + start..].to_vec();
                    rest.extend(extra.map(|t| Arg {
                        text: t.into(),
                        glob_at: Some(1),
                    }));
                    self.argv(&rest, stdin_fed, cwd, depth + 1)
                }
                Inner::Nothing => None,
            };
        }
        if self.rules.always.iter().any(|c| c == base)
            || self
                .rules
                .always_prefixes
                .iter()
                .any(|p| base.starts_with(p.as_str()))
        {
            return Some(format!("`{base}` always asks (guards.toml: always)"));
        }
        for rule in &self.rules.rules {
            if rule.commands.iter().any(|c| c == base) && rule.applies(&args) {
                return Some(format!("`{base}`: {}", rule.reason));
            }
        }
        if let Some(why) = self.interpreter(base, &args, stdin_fed) {
            return Some(why);
        }
        if base == "find" {
            return self.find(&argv[1..], cwd, depth);
        }
        if self.rules.delete_commands.iter().any(|c| c == base) {
            let forced = args.iter().any(|a| {
                ["-r", "-R", "-f", "--recursive", "--force"]
                    .iter()
                    .any(|f| flag_given(a, f))
            });
            if forced
                && let Some(path) = self
                    .operands(&argv[1..])
                    .find(|p| !self.inside_roots(p, cwd))
            {
                return Some(format!(
                    "`{base}` deletes recursively or by force outside $HEARTH_HOME and /tmp ({})",
                    path.text
                ));
            }
        }
        if self.writes_paths(base, &args) {
            for operand in self.operands(&argv[1..]) {
                if let Some(why) = self.write_target(operand, cwd) {
                    return Some(format!("`{base}` {why}"));
                }
            }
            for a in &argv[1..] {
                if let Some(value) = a.text.strip_prefix("of=") {
                    let target = Arg {
                        text: value.into(),
                        glob_at: None,
                    };
                    if let Some(why) = self.write_target(&target, cwd) {
                        return Some(format!("`{base}` {why}"));
                    }
                }
            }
        }
        if matches!(base, "awk" | "gawk" | "mawk" | "nawk")
            && args.iter().any(|a| a.contains("system") || a.contains('|'))
        {
            return Some(format!("`{base}` runs commands from its program"));
        }
        None
    }

    /// What a wrapper runs: `Some` when `base` is a wrapper.
    fn unwrap(&self, base: &str, args: &[&str]) -> Option<Inner> {
        // Flags of each wrapper that take a value (which is not the command).
        let valued: &[&str] = match base {
            "env" => &["-u", "--unset", "-C", "--chdir"],
            "nice" => &["-n", "--adjustment"],
            "ionice" => &["-c", "-n", "-p", "--class", "--classdata"],
            "timeout" => &["-s", "--signal", "-k", "--kill-after"],
            "stdbuf" => &["-i", "-o", "-e"],
            "xargs" => &[
                "-I",
                "-i",
                "-n",
                "-P",
                "-d",
                "-L",
                "-l",
                "-s",
                "-a",
                "-E",
                "-e",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
                "--replace",
            ],
            "flock" => &["-w", "--timeout", "-E", "--conflict-exit-code"],
            "chrt" | "taskset" | "setsid" | "nohup" | "time" | "unbuffer" | "command"
            | "builtin" | "exec" | "strace" | "ltrace" | "caffeinate" => &["-o", "-p", "-e", "-s"],
            _ => return None,
        };
        if matches!(base, "env")
            && args
                .iter()
                .any(|a| flag_given(a, "-S") || a.starts_with("--split-string"))
        {
            return Some(Inner::Ask(
                "`env -S` splits a string into a command line".into(),
            ));
        }
        if matches!(base, "command" | "builtin") && args.iter().any(|a| *a == "-v" || *a == "-V") {
            return Some(Inner::Nothing);
        }
        if base == "flock"
            && args
                .iter()
                .any(|a| flag_given(a, "-c") || a.starts_with("--command"))
        {
            return Some(Inner::Ask("`flock -c` runs a shell command line".into()));
        }
        let mut i = 0;
        while i < args.len() {
            let a = args[i];
            if a == "--" {
                i += 1;
                break;
            }
            if base == "env" && a.contains('=') && !a.starts_with('-') {
                let name = a.split('=').next().unwrap_or_default();
                if DANGEROUS_ASSIGNMENTS.contains(&name) {
                    return Some(Inner::Ask(format!(
                        "`env` sets {name}, which changes what runs"
                    )));
                }
                i += 1;
                continue;
            }
            if !a.starts_with('-') || a == "-" {
                break;
            }
            let takes_value = valued.contains(&a) && !a.contains('=');
            i += if takes_value { 2 } else { 1 };
        }
        // Positional arguments before the command.
        match base {
            "timeout" | "chrt" | "taskset" | "flock" => i += 1,
            _ => {}
        }
        if i >= args.len() {
            return Some(Inner::Nothing);
        }
        let extra = matches!(base, "xargs").then_some(UNKNOWN_PATH);
        Some(Inner::Run(i, extra))
    }

    fn interpreter(&self, base: &str, args: &[&str], stdin_fed: bool) -> Option<String> {
        let family = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        let flags = self
            .rules
            .interpreters
            .get(base)
            .or_else(|| self.rules.interpreters.get(family))?;
        let before_script = args
            .iter()
            .take_while(|a| a.starts_with('-') || flags.iter().any(|f| f == *a));
        for a in before_script {
            if *a == "-" || flags.iter().any(|f| flag_given(a, f) || f == a) {
                return Some(format!(
                    "`{base}` runs code given on its command line ({a})"
                ));
            }
        }
        let has_script = args.iter().any(|a| !a.starts_with('-'));
        if stdin_fed && !has_script {
            return Some(format!("`{base}` runs the code piped into it"));
        }
        None
    }

    fn find(&self, args: &[Arg], cwd: &Path, depth: usize) -> Option<String> {
        let starts: Vec<&Arg> = args
            .iter()
            .take_while(|a| !a.text.starts_with('-') && a.text != "(" && a.text != "!")
            .collect();
        let mut i = starts.len();
        while i < args.len() {
            match args[i].text.as_str() {
                "-delete" => {
                    let outside = starts.is_empty() && !self.inside_roots(&dot(), cwd)
                        || starts.iter().any(|s| !self.inside_roots(s, cwd));
                    if outside {
                        return Some("`find -delete` deletes outside $HEARTH_HOME and /tmp".into());
                    }
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let inner: Vec<Arg> = args[i + 1..]
                        .iter()
                        .take_while(|a| a.text != ";" && a.text != "+")
                        .map(|a| match a.text.find("{}") {
                            Some(at) => Arg {
                                text: a.text.replace("{}", UNKNOWN_PATH),
                                glob_at: Some(at + 1),
                            },
                            None => a.clone(),
                        })
                        .collect();
                    if let Some(why) = self.argv(&inner, false, cwd, depth + 1) {
                        return Some(format!("`find {}` runs {why}", args[i].text));
                    }
                    i += inner.len();
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(target) = args.get(i + 1)
                        && let Some(why) = self.write_target(target, cwd)
                    {
                        return Some(format!("`find` {why}"));
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    fn writes_paths(&self, base: &str, args: &[&str]) -> bool {
        self.rules.writers.iter().any(|w| w == base)
            || self.rules.in_place_writers.get(base).is_some_and(|flags| {
                args.iter()
                    .any(|a| flags.iter().any(|f| a.starts_with(f.as_str())))
            })
    }

    /// Arguments that are not flags (everything after `--`).
    fn operands<'a>(&self, args: &'a [Arg]) -> impl Iterator<Item = &'a Arg> {
        let mut after_dashes = false;
        args.iter().filter(move |a| {
            if after_dashes {
                return true;
            }
            if a.text == "--" {
                after_dashes = true;
                return false;
            }
            !a.text.starts_with('-')
        })
    }

    /// Why writing `target` asks, if it does.
    fn write_target(&self, target: &Arg, cwd: &Path) -> Option<String> {
        let path = resolve(&target.text, cwd, &self.home);
        if self.writable.contains(&path) || path.starts_with("/dev/fd") {
            return None;
        }
        // A file pattern could match anything under its fixed part.
        let fixed = match target.glob_at {
            Some(at) => {
                let prefix = &target.text[..at];
                let dir = prefix.rsplit_once('/').map_or("", |(d, _)| d);
                Some(resolve(
                    if dir.is_empty() && prefix.starts_with('/') {
                        "/"
                    } else {
                        dir
                    },
                    cwd,
                    &self.home,
                ))
            }
            None => None,
        };
        for protected in &self.protected {
            // A protected folder that holds the owner's own home (`/root`
            // when hearth runs as root) guards other users' files, not the
            // owner's: inside the home, only the home's own entries
            // (`~/.ssh`, `~/.bashrc`, ...) count.
            if self.home.starts_with(protected) && path.starts_with(&self.home) {
                continue;
            }
            let hit = path.starts_with(protected)
                || fixed.as_ref().is_some_and(|f| protected.starts_with(f));
            if hit {
                return Some(format!(
                    "writes to {} (a protected path)",
                    protected.display()
                ));
            }
        }
        None
    }

    fn inside_roots(&self, arg: &Arg, cwd: &Path) -> bool {
        let path = resolve(&arg.text, cwd, &self.home);
        self.roots.iter().any(|r| path.starts_with(r) && path != *r)
    }
}

/// What a wrapper runs.
enum Inner {
    /// Nothing (it only prints, or has no command).
    Nothing,
    /// The command starting at this argument index, plus an argument only
    /// known at run time.
    Run(usize, Option<&'static str>),
    /// The wrapper's own form asks.
    Ask(String),
}

fn dot() -> Arg {
    Arg {
        text: ".".into(),
        glob_at: None,
    }
}

/// `text` as an absolute path, `..` and `.` taken out, `~` expanded.
fn resolve(text: &str, cwd: &Path, home: &Path) -> PathBuf {
    let path = match text.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(text),
    };
    let absolute = if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    };
    normalize(&absolute)
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Characters that render as nothing and could hide what a word is.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}')
}
