//! Commands that run another command: `env`, `timeout`, `nice`, `xargs`,
//! `flock`, `strace`, `unshare`, `find -exec`, ... Each is read through
//! its own option grammar to find exactly where the command it runs
//! starts, and how it runs it (another directory, more variables, extra
//! arguments only known at run time). That command is then checked in
//! turn.
//!
//! A wrapper given an option the guard does not know asks: guessing where
//! the inner command starts is how `timeout -vs KILL 5 rm -rf /` once got
//! through.

use super::options::{self, Parsed};
use super::paths::{Facts, absolute};
use super::words::Arg;
use super::{Ctx, Guard, UNKNOWN_PATH, grammars};

/// What a wrapper runs.
pub enum Inner {
    /// Nothing (it only prints, or acts on no command).
    Nothing,
    /// This command, run this way.
    Run(Vec<Arg>, Ctx),
    /// The wrapper's own form asks.
    Ask(String),
}

/// Commands that run another command in ways the guard does not model.
const UNMODELED: &[&str] = &[
    "bwrap",
    "nsenter",
    "firejail",
    "proxychains",
    "proxychains4",
    "systemd-run",
    "sg",
    "newgrp",
    "parallel",
    "prlimit",
    "chpst",
    "setuidgid",
    "envdir",
    "softlimit",
    "ssh-agent",
    "dtach",
    "abduco",
    "daemonize",
    "fakeroot",
    "fakechroot",
    "proot",
    "schroot",
    "machinectl",
    "flatpak-spawn",
    "toolbox",
    "distrobox",
    "batch",
];

/// Wrappers with no options of their own.
const BARE: &[&str] = &[
    "eatmydata",
    "nocache",
    "catchsegv",
    "dbus-run-session",
    "torsocks",
];

/// What `base` runs, when it is a wrapper (`None` when it is not).
pub fn unwrap(guard: &Guard, base: &str, args: &[Arg], ctx: &Ctx) -> Option<Inner> {
    if UNMODELED.contains(&base) {
        return Some(Inner::Ask(format!(
            "`{base}` runs another command in a way the guard does not read"
        )));
    }
    if BARE.contains(&base) {
        return Some(match args.first() {
            None => Inner::Nothing,
            Some(a) if a.text.starts_with('-') => Inner::Ask(format!(
                "`{base}` is given {:?}, an option the guard does not know",
                a.text
            )),
            Some(_) => Inner::Run(args.to_vec(), deeper(ctx)),
        });
    }
    if base == "valgrind" {
        return Some(valgrind(args, ctx));
    }
    let grammar = grammars::grammar(base)?;
    if !is_wrapper(base) {
        return None;
    }
    let parsed = match options::parse(grammar, args) {
        Ok(p) => p,
        Err(why) => {
            return Some(Inner::Ask(format!(
                "`{base}`: {why}, so where the command it runs starts is unknown"
            )));
        }
    };
    Some(wrapper(guard, base, args, &parsed, ctx))
}

fn is_wrapper(base: &str) -> bool {
    matches!(
        base,
        "timeout"
            | "env"
            | "nice"
            | "nohup"
            | "ionice"
            | "chrt"
            | "flock"
            | "stdbuf"
            | "strace"
            | "ltrace"
            | "xargs"
            | "runuser"
            | "setpriv"
            | "unshare"
            | "chroot"
            | "setsid"
            | "taskset"
            | "time"
            | "command"
            | "exec"
            | "builtin"
            | "busybox"
            | "unbuffer"
    )
}

fn deeper(ctx: &Ctx) -> Ctx {
    let mut inner = ctx.clone();
    inner.depth += 1;
    inner
}

fn ask(text: String) -> Inner {
    Inner::Ask(text)
}

/// The command `base` runs, its options read as `parsed`.
fn wrapper(guard: &Guard, base: &str, args: &[Arg], parsed: &Parsed, ctx: &Ctx) -> Inner {
    let mut ctx = deeper(ctx);
    let mut start = parsed.rest;
    let cwd = ctx.cwd.clone();
    let write =
        |text: &str| guard.write_target(&Arg::plain(text), cwd.as_deref(), &Facts::default());
    match base {
        "env" => {
            if parsed.has("S") {
                return ask("`env -S` splits a string into a command line".into());
            }
            for dir in parsed.values("C") {
                match ctx
                    .cwd
                    .as_deref()
                    .map(|c| absolute(dir, Some(c), &guard.home))
                {
                    Some(Ok(d)) => ctx.cwd = Some(d),
                    _ => match absolute(dir, None, &guard.home) {
                        Ok(d) => ctx.cwd = Some(d),
                        Err(_) => ctx.cwd = None,
                    },
                }
            }
            while let Some(a) = args.get(start)
                && let Some((name, value)) = a.text.split_once('=')
                && !name.is_empty()
                && !name.starts_with('-')
            {
                ctx.env.push((name.to_owned(), value.to_owned()));
                start += 1;
            }
            if start >= args.len() {
                // With only assignments, `env` prints them; judge them as
                // set for no particular command.
                for (name, value) in &ctx.env {
                    if let Some(why) = super::env::injection(name, value, Some("env")) {
                        return ask(format!("`env` {why}"));
                    }
                }
                return Inner::Nothing;
            }
        }
        "command" if parsed.has("v") || parsed.has("V") => return Inner::Nothing,
        "ionice" if ["p", "P", "u"].iter().any(|o| parsed.has(o)) => return Inner::Nothing,
        "chrt" if parsed.has("p") || parsed.has("m") => return Inner::Nothing,
        "chrt" | "timeout" => start += 1,
        "taskset" if parsed.has("p") => return Inner::Nothing,
        "taskset" => start += 1,
        "flock" => {
            if parsed.has("c") {
                return ask("`flock -c` runs a shell command line".into());
            }
            start += 1;
            if matches!(
                args.get(start).map(|a| a.text.as_str()),
                Some("-c" | "--command")
            ) || args
                .get(start)
                .is_some_and(|a| a.text.starts_with("--command=") || a.text.starts_with("-c"))
            {
                return ask("`flock FILE -c` runs a shell command line".into());
            }
        }
        "strace" | "ltrace" => {
            if parsed.has("p") {
                return ask(format!(
                    "`{base} -p` attaches to a process it did not start"
                ));
            }
            let tampers = parsed.has("inject")
                || parsed.has("fault")
                || parsed
                    .values("e")
                    .any(|v| v.starts_with("inject") || v.starts_with("fault"));
            if tampers {
                return ask(format!("`{base}` injects faults or signals"));
            }
            for file in parsed.values("o") {
                if let Some(why) = write(file) {
                    return ask(format!("`{base} -o` {why}"));
                }
            }
        }
        "time" => {
            for file in parsed.values("o") {
                if let Some(why) = write(file) {
                    return ask(format!("`time -o` {why}"));
                }
            }
        }
        "runuser" => {
            if parsed.has("c") || parsed.has("session-command") {
                return ask("`runuser -c` runs a shell command line as another user".into());
            }
            if !parsed.has("u") {
                return ask("`runuser USER` starts a login shell as another user".into());
            }
        }
        "unshare" => {
            if parsed.has("R") {
                return ask("`unshare --root` runs a command under another root".into());
            }
            for dir in parsed.values("w") {
                ctx.cwd = ctx
                    .cwd
                    .as_deref()
                    .and_then(|c| absolute(dir, Some(c), &guard.home).ok())
                    .or_else(|| absolute(dir, None, &guard.home).ok());
            }
        }
        "chroot" => {
            let root = args.get(start).map(|a| a.text.as_str());
            let resolved = root.map(|r| absolute(r, ctx.cwd.as_deref(), &guard.home));
            match resolved {
                Some(Ok(r)) if r == std::path::Path::new("/") => start += 1,
                Some(_) => return ask("`chroot` runs a command under another root".into()),
                None => return Inner::Nothing,
            }
        }
        "xargs" => {
            let replace = parsed
                .options
                .iter()
                .find(|o| o.name == "I" || o.name == "i")
                .map(|o| o.value.unwrap_or("{}"));
            let mut inner: Vec<Arg> = args[start.min(args.len())..]
                .iter()
                .map(|a| match replace {
                    Some(r) if a.text.contains(r) => Arg {
                        text: a.text.replace(r, UNKNOWN_PATH),
                        glob_at: Some(a.text.find(r).unwrap_or(0) + 1),
                    },
                    _ => a.clone(),
                })
                .collect();
            if inner.is_empty() {
                return Inner::Nothing;
            }
            if replace.is_none() {
                inner.push(Arg {
                    text: UNKNOWN_PATH.into(),
                    glob_at: Some(1),
                });
            }
            ctx.stdin_fed = false;
            return Inner::Run(inner, ctx);
        }
        _ => {}
    }
    if start >= args.len() {
        return match base {
            "unshare" | "chroot" | "runuser" | "setpriv" if ctx.stdin_fed => ask(format!(
                "`{base}` starts a shell that runs the input piped into it"
            )),
            _ => Inner::Nothing,
        };
    }
    if args[start].text.starts_with('-') {
        return ask(format!(
            "`{base}` would run {:?}, which reads as an option, not a command",
            args[start].text
        ));
    }
    Inner::Run(args[start..].to_vec(), ctx)
}

/// `valgrind`: options are `--name=value`, or one of its plain flags.
fn valgrind(args: &[Arg], ctx: &Ctx) -> Inner {
    let mut start = 0;
    while let Some(a) = args.get(start) {
        let t = a.text.as_str();
        if t == "--" {
            start += 1;
            break;
        }
        if !t.starts_with('-') {
            break;
        }
        let known = (t.starts_with("--") && t.contains('='))
            || matches!(
                t,
                "-q" | "-v" | "-s" | "--quiet" | "--verbose" | "--version" | "--help"
            );
        if !known {
            return Inner::Ask(format!(
                "`valgrind` is given {t:?}, an option the guard does not read"
            ));
        }
        start += 1;
    }
    match args.get(start..) {
        Some(rest) if !rest.is_empty() => Inner::Run(rest.to_vec(), deeper(ctx)),
        _ => Inner::Nothing,
    }
}

/// `find`: what its actions delete, write and run.
pub fn find(guard: &Guard, args: &[Arg], ctx: &Ctx, facts: &mut Facts) -> Option<String> {
    let mut i = 0;
    // Options before the starting points.
    while let Some(a) = args.get(i) {
        match a.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" | "-O" => i += 2,
            t if t.starts_with("-O") || t.starts_with("-D") => i += 1,
            _ => break,
        }
    }
    let starts: Vec<&Arg> = args[i.min(args.len())..]
        .iter()
        .take_while(|a| !a.text.starts_with('-') && a.text != "(" && a.text != "!")
        .collect();
    let cwd = ctx.cwd.as_deref();
    i += starts.len();
    while i < args.len() {
        match args[i].text.as_str() {
            "-delete" => {
                let dot = Arg::plain(".");
                let points: Vec<&Arg> = if starts.is_empty() {
                    vec![&dot]
                } else {
                    starts.clone()
                };
                for s in points {
                    // `find x -delete` deletes what is under x, through
                    // a link only when told to follow (`x/`, `-L`).
                    if let Some(why) = guard.delete_target(s, cwd, facts) {
                        return Some(format!("`find -delete` {why}"));
                    }
                }
            }
            action @ ("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let body: Vec<&Arg> = args[i + 1..]
                    .iter()
                    .take_while(|a| a.text != ";" && a.text != "+")
                    .collect();
                if i + 1 + body.len() >= args.len() {
                    return Some(format!(
                        "`find {action}` has no `;` or `+` to end its command"
                    ));
                }
                let inner: Vec<Arg> = body
                    .iter()
                    .map(|a| match a.text.find("{}") {
                        Some(at) => Arg {
                            text: a.text.replace("{}", UNKNOWN_PATH),
                            glob_at: Some(at + 1),
                        },
                        None => (*a).clone(),
                    })
                    .collect();
                let mut inner_ctx = deeper(ctx);
                inner_ctx.stdin_fed = false;
                if action.ends_with("dir") {
                    // It runs in the directory of each file found.
                    inner_ctx.cwd = None;
                }
                if let Some(why) = guard.argv(&inner, &inner_ctx, facts) {
                    return Some(format!("`find {action}` runs {why}"));
                }
                i += body.len() + 1;
            }
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                if let Some(target) = args.get(i + 1)
                    && let Some(why) = guard.write_target(target, cwd, facts)
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
