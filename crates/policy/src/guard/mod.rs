//! The shell guard: whether a command line may run without asking.
//!
//! `Guard::check` parses the line with a real shell parser (`words`) into
//! a tree, resolves every word statically, and walks the tree (`walk`)
//! keeping the working directory and exported environment of every
//! command, through `cd`, `pushd`, subshells, groups and pipelines. Each
//! simple command is then read the way it would read itself:
//!
//! - its options through the command's own grammar (`options`,
//!   `grammars`): bundles, long-option prefixes, option arguments, `--`;
//! - wrappers (`wrappers`: `env`, `timeout`, `xargs`, `find -exec`, ...)
//!   are unwrapped and the command they run is checked in turn;
//! - commands that run code from their arguments, stdin or environment
//!   (`programs`, `interpreters`, `sed`, `env`) ask unless their payload
//!   is read completely and found harmless;
//! - deletes outside `$HEARTH_HOME` and `/tmp`, and writes into protected
//!   paths, ask, with every path resolved through the real filesystem's
//!   symbolic links (`paths`);
//! - the owner's lists in `guards.toml` (`rules`) apply on top.
//!
//! Architecture invariant: the guard fails closed. It answers `Allow` only
//! for a command it has read completely and found no rule for; every doubt
//! (a parse error, an expansion, an option a wrapper is not known to take,
//! a relative path after an unknowable `cd`) is `Ask`.

mod env;
#[cfg(test)]
mod fuzz;
mod grammars;
mod interpreters;
mod options;
mod paths;
mod programs;
pub mod rules;
mod sed;
mod walk;
mod words;
mod wrappers;

use std::path::{Path, PathBuf};

use paths::{Facts, absolute, goes_through, normalize, real, under};
use rules::{Rules, flag_given};
use words::{Arg, Unresolved};

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
    hearth_home: PathBuf,
    /// Where deleting is fine: `$HEARTH_HOME` and `/tmp`, as written and
    /// as the filesystem resolves them.
    roots: Vec<PathBuf>,
    /// Protected paths, as written and as resolved.
    protected: Vec<PathBuf>,
    writable: Vec<PathBuf>,
}

/// How closely the guard reads a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// The guard is the only line: whatever it cannot see into asks.
    Strict,
    /// The command runs confined by the kernel: only recognised harm asks.
    Seatbelt,
}

/// Where and how one command runs, as far as the line tells.
#[derive(Clone, Debug)]
struct Ctx {
    /// Whether what the guard cannot see into asks ([`Reading::Strict`]).
    strict: bool,
    /// Its working directory; `None` when the line made it unknowable.
    cwd: Option<PathBuf>,
    /// Variables set for it (inline, exported earlier in the line, or by
    /// the tool's `env` argument).
    env: Vec<(String, String)>,
    /// Whether its standard input is fed by the line.
    stdin_fed: bool,
    /// How many wrappers it is inside.
    depth: usize,
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
        let with_real = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
            let facts = Facts::default();
            let mut out = paths.clone();
            for p in paths {
                let r = real(&normalize(&p), true, &facts);
                if !out.contains(&r) {
                    out.push(r);
                }
            }
            out
        };
        Guard {
            protected: with_real(
                rules
                    .protected_paths
                    .iter()
                    .map(|p| normalize(&expand(p)))
                    .collect(),
            ),
            writable: rules.writable_devices.iter().map(expand).collect(),
            roots: with_real(vec![normalize(hearth_home), PathBuf::from("/tmp")]),
            home: normalize(home),
            hearth_home: normalize(hearth_home),
            rules,
        }
    }

    /// Checks `command` as it would run in `cwd`.
    pub fn check(&self, command: &str, cwd: &Path) -> Verdict {
        self.check_in(command, cwd, &[])
    }

    /// Checks `command` as it would run in `cwd` with the variables `env`
    /// set (a tool's `env` argument).
    pub fn check_in(&self, command: &str, cwd: &Path, env: &[(String, String)]) -> Verdict {
        self.check_as(command, cwd, env, Reading::Strict)
    }

    /// Checks `command` as [`Guard::check_in`] does, reading it as
    /// `reading` says: a command that will run confined by the kernel is
    /// read as a seatbelt, where only what the guard recognises as harm
    /// asks (deletes, force pushes, services, packages, protected writes,
    /// kills) and what it merely cannot see into (variables, code given to
    /// an interpreter, odd characters) runs, confined.
    pub fn check_as(
        &self,
        command: &str,
        cwd: &Path,
        env: &[(String, String)],
        reading: Reading,
    ) -> Verdict {
        let strict = reading == Reading::Strict;
        // What the guard cannot read asks while the guard is the only line,
        // and runs, confined, when the kernel is.
        let unreadable = |why: String| {
            if strict {
                Verdict::Ask(why)
            } else {
                Verdict::Allow
            }
        };
        if command.len() > MAX_COMMAND_BYTES {
            return unreadable(format!(
                "the command is {} bytes, over the {MAX_COMMAND_BYTES}-byte limit the guard reads",
                command.len()
            ));
        }
        if strict
            && let Some(c) = command
                .chars()
                .find(|c| (c.is_control() && *c != '\n' && *c != '\t') || is_invisible(*c))
        {
            return Verdict::Ask(format!(
                "the command contains the control or invisible character U+{:04X}",
                c as u32
            ));
        }
        for (name, value) in env.iter().filter(|_| strict) {
            if let Some(why) = env::anywhere(name, value) {
                return Verdict::Ask(format!("the `env` argument: {why}"));
            }
        }
        let home = self.home.to_string_lossy();
        let tree = match words::parse(command, &home) {
            Ok(tree) => tree,
            Err(Unresolved(why)) => return unreadable(format!("cannot check it fully: {why}")),
        };
        match self.walk(&tree, cwd, env, strict) {
            Ok(()) => Verdict::Allow,
            Err(why) => Verdict::Ask(why),
        }
    }

    /// Checks a write of `path` (a file tool's target) as it would happen
    /// from `cwd`: writes into protected paths ask.
    pub fn check_write(&self, path: &str, cwd: &Path) -> Verdict {
        match self.write_target(&Arg::plain(path), Some(cwd), &Facts::default()) {
            Some(why) => Verdict::Ask(why),
            None => Verdict::Allow,
        }
    }

    /// Why one simple command (`argv`, run as `ctx` says) asks, if it
    /// does. `facts` learns what it does to the filesystem.
    fn argv(&self, argv: &[Arg], ctx: &Ctx, facts: &mut Facts) -> Option<String> {
        let first = argv.first()?;
        if ctx.depth > MAX_DEPTH {
            return Some("wrappers nest too deep to check".into());
        }
        let name = first.text.as_str();
        if ctx.strict && (name.is_empty() || !name.is_ascii()) {
            return Some(format!("the command name {name:?} is not plain ASCII"));
        }
        if ctx.strict && first.glob_at.is_some() {
            return Some(format!("the command name {name:?} is a file pattern"));
        }
        let base = name.rsplit('/').next().unwrap_or(name);
        for (var, value) in ctx.env.iter().filter(|_| ctx.strict) {
            if let Some(why) = env::injection(var, value, Some(base)) {
                return Some(why);
            }
        }
        let args: Vec<&str> = argv[1..].iter().map(|a| a.text.as_str()).collect();
        if let Some(inner) = wrappers::unwrap(self, base, &argv[1..], ctx) {
            return match inner {
                wrappers::Inner::Ask(why) => Some(why),
                wrappers::Inner::Nothing => None,
                wrappers::Inner::Run(rest, inner_ctx) => self.argv(&rest, &inner_ctx, facts),
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
        if let Some(verdict) = programs::judge(self, base, &argv[1..], ctx, facts) {
            return verdict;
        }
        if ctx.strict
            && let Some(why) = interpreters::judge(self, base, &args, ctx)
        {
            return Some(why);
        }
        if base == "find" {
            return wrappers::find(self, &argv[1..], ctx, facts);
        }
        if self.rules.delete_commands.iter().any(|c| c == base)
            && let Some(why) = self.delete(base, &argv[1..], ctx, facts)
        {
            return Some(why);
        }
        if self.writes_paths(base, &args) {
            for operand in self.written(base, &argv[1..]) {
                if let Some(why) = self.write_target(&operand, ctx.cwd.as_deref(), facts) {
                    return Some(format!("`{base}` {why}"));
                }
            }
        }
        // After the writes are judged: the links `ln` makes count for later
        // commands, not for its own destination.
        if let Some(why) = self.moves_and_links(base, &argv[1..], ctx, facts) {
            return Some(why);
        }
        if ctx.strict
            && matches!(base, "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk")
            && args.iter().any(|a| a.contains("system") || a.contains('|'))
        {
            return Some(format!("`{base}` runs commands from its program"));
        }
        None
    }

    /// Why a delete by `base` asks: recursive or forced outside the roots.
    fn delete(&self, base: &str, args: &[Arg], ctx: &Ctx, facts: &Facts) -> Option<String> {
        let (forced, operands): (bool, Vec<Arg>) = match grammars::grammar(base) {
            Some(grammar) => match options::parse(grammar, args) {
                Ok(parsed) => (
                    base == "shred" || ["r", "R", "f", "remove"].iter().any(|o| parsed.has(o)),
                    parsed.operands.iter().map(|&i| args[i].clone()).collect(),
                ),
                Err(why) => return Some(format!("`{base}`: {why}, so it cannot be read")),
            },
            None => (
                args.iter().any(|a| {
                    ["-r", "-R", "-f", "--recursive", "--force"]
                        .iter()
                        .any(|f| flag_given(&a.text, f))
                }),
                self.loose_operands(args).collect(),
            ),
        };
        if !forced {
            return None;
        }
        for target in &operands {
            if let Some(why) = self.delete_target(target, ctx.cwd.as_deref(), facts) {
                return Some(format!("`{base}` {why}"));
            }
        }
        None
    }

    /// Records what `mv` and `ln -s` do to later paths of the line, and
    /// asks for moving an allowed root itself.
    fn moves_and_links(
        &self,
        base: &str,
        args: &[Arg],
        ctx: &Ctx,
        facts: &mut Facts,
    ) -> Option<String> {
        if !matches!(base, "mv" | "ln" | "cp") {
            return None;
        }
        let grammar = grammars::grammar(base)?;
        let parsed = match options::parse(grammar, args) {
            Ok(p) => p,
            Err(why) => return Some(format!("`{base}`: {why}, so it cannot be read")),
        };
        // `cp -l` and `cp -s` make links, as `ln` does.
        let linking = base == "ln" || parsed.has("l") || parsed.has("s");
        if base == "cp" && !linking {
            return None;
        }
        let mut operands: Vec<&Arg> = parsed.operands.iter().map(|&i| &args[i]).collect();
        let target_dir = parsed.values("t").next().map(Arg::plain);
        let dest = match &target_dir {
            Some(t) => t.clone(),
            None => operands.pop()?.clone(),
        };
        let cwd = ctx.cwd.as_deref();
        let Ok(dest_path) = absolute(&dest.text, cwd, &self.home) else {
            return Some(format!(
                "`{base}` writes to {:?}, relative to a directory the line makes unknown",
                dest.text
            ));
        };
        let dest_real = real(&dest_path, false, facts);
        for source in operands {
            let Ok(source_path) = absolute(&source.text, cwd, &self.home) else {
                return Some(format!(
                    "`{base}` names {:?}, relative to a directory the line makes unknown",
                    source.text
                ));
            };
            if linking {
                let into_dir = target_dir.is_some()
                    || dest.text.ends_with('/')
                    || std::fs::metadata(&dest_real).is_ok_and(|m| m.is_dir());
                let link = if into_dir {
                    dest_real.join(source_path.file_name().unwrap_or_default())
                } else {
                    dest_real.clone()
                };
                // A symbolic link's relative target is relative to the
                // link's own directory; a hard link is the file itself.
                let target = match (parsed.has("s"), source.text.starts_with(['/', '~'])) {
                    (true, false) => normalize(&link.parent().unwrap_or(&link).join(&source.text)),
                    _ => source_path,
                };
                facts.links.push((link, target));
                continue;
            }
            let source_real = real(&source_path, false, facts);
            if self.roots.iter().any(|r| under(r, &source_real)) {
                return Some(format!(
                    "`mv` moves {} away, which holds an allowed root",
                    source_real.display()
                ));
            }
            if source.glob_at.is_some() || !self.inside_roots(&source_real) {
                let into_dir = target_dir.is_some()
                    || dest.text.ends_with('/')
                    || std::fs::metadata(&dest_real).is_ok_and(|m| m.is_dir());
                facts.moved_in.push(match source_path.file_name() {
                    Some(name) if into_dir && source.glob_at.is_none() => dest_real.join(name),
                    _ => dest_real.clone(),
                });
            }
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

    /// The arguments a writing command writes: for `cp`, `ln` and
    /// `install`, read through their grammar, only the destination (the
    /// sources are read); for others, every argument that may be a path.
    fn written(&self, base: &str, args: &[Arg]) -> Vec<Arg> {
        if matches!(base, "cp" | "ln" | "install")
            && let Some(grammar) = grammars::grammar(base)
            && let Ok(parsed) = options::parse(grammar, args)
        {
            let targets: Vec<Arg> = parsed.values("t").map(Arg::plain).collect();
            if !targets.is_empty() {
                return targets;
            }
            // `install -d a b` makes every operand a directory.
            if base == "install" && parsed.has("d") {
                return parsed.operands.iter().map(|&i| args[i].clone()).collect();
            }
            return parsed
                .operands
                .last()
                .map(|&i| args[i].clone())
                .into_iter()
                .collect();
        }
        self.loose_operands(args).collect()
    }

    /// The arguments of a command without a grammar that may be paths:
    /// every non-option (everything after `--`), and the value of every
    /// `--option=value`.
    fn loose_operands<'a>(&self, args: &'a [Arg]) -> impl Iterator<Item = Arg> + 'a {
        let mut after_dashes = false;
        args.iter().filter_map(move |a| {
            if after_dashes {
                return Some(a.clone());
            }
            if a.text == "--" {
                after_dashes = true;
                return None;
            }
            if let Some((_, value)) = a.text.split_once('=')
                && a.text.starts_with("--")
            {
                return Some(Arg::plain(value));
            }
            (!a.text.starts_with('-')).then(|| a.clone())
        })
    }

    /// Why writing `target` asks, if it does.
    fn write_target(&self, target: &Arg, cwd: Option<&Path>, facts: &Facts) -> Option<String> {
        if target.text.starts_with("of=") {
            return self.write_target(&Arg::plain(&target.text[3..]), cwd, facts);
        }
        let path = match absolute(&target.text, cwd, &self.home) {
            Ok(p) => p,
            Err(why) => return Some(format!("writes where it cannot be known: {why}")),
        };
        if self.writable.contains(&path) || path.starts_with("/dev/fd") {
            return None;
        }
        // A file pattern could match anything under its fixed part.
        let fixed = match target.glob_at {
            Some(at) => {
                let prefix = &target.text[..at];
                let dir = prefix.rsplit_once('/').map_or("", |(d, _)| d);
                let dir = if dir.is_empty() && prefix.starts_with('/') {
                    "/"
                } else {
                    dir
                };
                absolute(dir, cwd, &self.home).ok()
            }
            None => None,
        };
        let resolved = real(&path, true, facts);
        for protected in &self.protected {
            // A protected folder that holds the owner's own home (`/root`
            // when hearth runs as root) guards other users' files, not the
            // owner's: inside the home, only the home's own entries
            // (`~/.ssh`, `~/.bashrc`, ...) count.
            if under(&self.home, protected) && under(&path, &self.home) {
                continue;
            }
            let hit = under(&path, protected)
                || under(&resolved, protected)
                || fixed.as_ref().is_some_and(|f| under(protected, f));
            if hit {
                return Some(format!(
                    "writes to {} (a protected path)",
                    protected.display()
                ));
            }
        }
        None
    }

    /// Why writing anywhere under the directory `root` (an archive being
    /// unpacked) asks: it is protected, or holds a protected path. The
    /// protected files inside `$HEARTH_HOME` are left to the kernel floor
    /// there, so unpacking into `$HEARTH_HOME` runs.
    fn write_tree(&self, root: &Path, facts: &Facts) -> Option<String> {
        let resolved = real(root, true, facts);
        for protected in &self.protected {
            if under(&self.home, protected) && under(root, &self.home) {
                continue;
            }
            let inside = under(root, protected) || under(&resolved, protected);
            let holds = (under(protected, root) || under(protected, &resolved))
                && !under(protected, &self.hearth_home);
            if inside || holds {
                return Some(format!(
                    "writes files under {}, which reaches {} (a protected path)",
                    root.display(),
                    protected.display()
                ));
            }
        }
        None
    }

    /// Why deleting `target` recursively or by force asks, if it does.
    fn delete_target(&self, target: &Arg, cwd: Option<&Path>, facts: &Facts) -> Option<String> {
        let path = match absolute(&target.text, cwd, &self.home) {
            Ok(p) => p,
            Err(why) => return Some(format!("deletes where it cannot be known: {why}")),
        };
        let follow = target.glob_at.is_some() || goes_through(&target.text);
        let resolved = real(&path, follow, facts);
        let outside = |p: &Path| !self.inside_roots(p);
        if target.glob_at.is_some() {
            // `/tmp/x*` stays in /tmp; `/tm*` does not.
            let prefix = &target.text[..target.glob_at.unwrap_or(0)];
            let dir = prefix.rsplit_once('/').map_or(".", |(d, _)| d);
            let dir = if dir.is_empty() { "/" } else { dir };
            let fixed = absolute(dir, cwd, &self.home).unwrap_or_else(|_| PathBuf::from("/"));
            let fixed_real = real(&fixed, true, facts);
            // `..` in the pattern climbs out; `.*` matches `..` in older shells.
            let segment_start = prefix.rfind('/').map_or(0, |i| i + 1);
            let tail = &target.text[segment_start..];
            let climbs = tail.contains("..") || tail.split('/').any(|s| s.starts_with('.'));
            let root_level = |p: &Path| self.roots.iter().any(|r| under(p, r)) && !climbs;
            if !root_level(&fixed) || !root_level(&fixed_real) {
                return Some(format!(
                    "deletes recursively or by force outside $HEARTH_HOME and /tmp ({})",
                    target.text
                ));
            }
        } else if outside(&path) || outside(&resolved) {
            let through = if resolved != path && !outside(&path) {
                format!(", through a link to {}", resolved.display())
            } else {
                String::new()
            };
            return Some(format!(
                "deletes recursively or by force outside $HEARTH_HOME and /tmp ({}{through})",
                target.text
            ));
        }
        for moved in &facts.moved_in {
            if under(moved, &resolved) || under(&resolved, moved) {
                return Some(format!(
                    "deletes {}, where `mv` put what it brought in from outside $HEARTH_HOME and /tmp",
                    target.text
                ));
            }
        }
        None
    }

    fn inside_roots(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| under(path, r) && path != r)
    }
}

/// Characters that render as nothing and could hide what a word is.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}')
}
