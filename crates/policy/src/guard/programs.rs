//! Commands that are not interpreters but run code, write files or stop
//! processes through their options: `sed` (`e`, `w`), `tar`
//! (`--to-command`, `--checkpoint-action`, `--remove-files`, `-C`), `git`
//! (`-c alias.x=!...`, config that names programs), editors (`-c '!...'`,
//! `+cmd`), `sqlite3` (`.shell`), debuggers, `make --eval`, `mapfile -C`,
//! `hash -p`, `fuser -k`, `start-stop-daemon`, `rsync --delete`, `ssh`
//! back into this machine, containers given the host's files.

use std::path::PathBuf;

use super::options::{self, Parsed};
use super::paths::{Facts, absolute};
use super::words::Arg;
use super::{Ctx, Guard, grammars, sed};

/// The verdict on `base`, when it is one of these commands: `Some(None)`
/// when it runs, `Some(Some(why))` when it asks; `None` when `base` is
/// not one of them.
pub fn judge(
    guard: &Guard,
    base: &str,
    args: &[Arg],
    ctx: &Ctx,
    facts: &Facts,
) -> Option<Option<String>> {
    let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    Some(match base {
        "sed" | "gsed" => sed_command(guard, base, args, ctx, facts),
        "tar" | "gtar" | "bsdtar" => tar(guard, args, ctx, facts),
        "git" => git(&texts),
        "ex" | "vi" | "vim" | "nvim" | "view" | "vimdiff" | "nvimdiff" | "gvim" | "rvim"
        | "rview" | "evim" | "vim.basic" | "vim.tiny" | "ed" | "red" | "emacs" | "emacsclient" => {
            editor(base, &texts, ctx)
        }
        "sqlite3" | "sqlite" => sqlite(guard, &texts, ctx, facts),
        "gdb" | "lldb" | "cgdb" | "gdb-multiarch" => debugger(base, &texts),
        "make" | "gmake" => make(&texts),
        "mapfile" | "readarray" => texts
            .iter()
            .any(|a| *a == "-C" || (a.starts_with('-') && !a.starts_with("--") && a.contains('C')))
            .then(|| format!("`{base} -C` runs a callback as it reads")),
        "hash" => texts
            .iter()
            .any(|a| a.starts_with('-') && a.contains('p'))
            .then(|| "`hash -p` makes a command name run another program".into()),
        "fuser" => fuser(&texts),
        "start-stop-daemon" => Some("`start-stop-daemon` starts or stops system daemons".into()),
        "killall5" | "killproc" | "tkill" => {
            Some(format!("`{base}` signals processes hearth did not start"))
        }
        "loginctl" => texts
            .iter()
            .any(|a| a.starts_with("kill-") || a.starts_with("terminate-"))
            .then(|| "`loginctl` ends sessions hearth did not start".into()),
        "tmux" => texts
            .iter()
            .any(|a| {
                a.starts_with("kill-")
                    || matches!(
                        *a,
                        "run-shell"
                            | "run"
                            | "send-keys"
                            | "send"
                            | "pipe-pane"
                            | "if-shell"
                            | "respawn-pane"
                            | "respawn-window"
                    )
            })
            .then(|| "`tmux` runs commands in, or ends, sessions hearth did not start".into()),
        "rsync" => rsync(guard, args, ctx, facts),
        "ssh" => ssh(&texts),
        "docker" | "podman" | "nerdctl" => containers(base, &texts),
        _ => return None,
    })
}

fn parse<'a>(base: &str, args: &'a [&'a str]) -> Result<Parsed<'a>, String> {
    let grammar = grammars::grammar(base).ok_or_else(|| format!("`{base}` has no grammar"))?;
    options::parse(grammar, args).map_err(|why| format!("`{base}`: {why}, so it cannot be read"))
}

fn sed_command(
    guard: &Guard,
    base: &str,
    args: &[Arg],
    ctx: &Ctx,
    facts: &Facts,
) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    let parsed = match parse("sed", &texts) {
        Ok(p) => p,
        Err(why) => return Some(why),
    };
    if parsed.has("f") {
        return Some(format!(
            "`{base} -f` reads its program from a file the guard does not read"
        ));
    }
    let mut programs: Vec<&str> = parsed.values("e").collect();
    let mut files = parsed.operands.clone();
    if programs.is_empty() {
        if files.is_empty() {
            return None;
        }
        programs.push(texts[files.remove(0)]);
    }
    let sandbox = parsed.has("sandbox");
    for program in programs {
        match sed::effects(program) {
            Err(why) => return Some(format!("`{base}`: {why}")),
            Ok(found) => {
                if found.runs && !sandbox {
                    return Some(format!(
                        "`{base}` runs shell commands from its program ({program:?})"
                    ));
                }
                for file in found.writes {
                    if let Some(why) =
                        guard.write_target(&Arg::plain(file), ctx.cwd.as_deref(), facts)
                    {
                        return Some(format!("`{base}` {why}"));
                    }
                }
            }
        }
    }
    if parsed.has("i") {
        for &i in &files {
            if let Some(why) = guard.write_target(&args[i], ctx.cwd.as_deref(), facts) {
                return Some(format!("`{base} -i` {why}"));
            }
        }
    }
    None
}

/// Compressors `tar -I` may name.
const COMPRESSORS: &[&str] = &[
    "gzip", "gunzip", "bzip2", "xz", "zstd", "unzstd", "pigz", "pbzip2", "lz4", "lzip", "lzop",
    "brotli", "plzip", "pixz",
];

fn tar(guard: &Guard, args: &[Arg], ctx: &Ctx, facts: &Facts) -> Option<String> {
    // Old style: `tar czf out.tgz dir`, each letter taking its argument
    // from the words that follow, in order.
    let mut words: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
    if let Some(first) = words.first()
        && !first.starts_with('-')
        && !first.is_empty()
        && first.chars().all(|c| c.is_ascii_alphabetic())
    {
        let letters: Vec<char> = first.chars().collect();
        let mut expanded = Vec::new();
        let mut next = 1;
        for l in letters {
            expanded.push(format!("-{l}"));
            if matches!(
                l,
                'f' | 'C' | 'b' | 'F' | 'g' | 'H' | 'I' | 'K' | 'L' | 'N' | 'T' | 'V' | 'X'
            ) {
                match words.get(next) {
                    Some(v) => expanded.push(v.clone()),
                    None => return Some(format!("`tar {first}` is missing an argument")),
                }
                next += 1;
            }
        }
        expanded.extend(words.drain(next.min(words.len())..));
        words = expanded;
    }
    let texts: Vec<&str> = words.iter().map(String::as_str).collect();
    let parsed = match parse("tar", &texts) {
        Ok(p) => p,
        Err(why) => return Some(why),
    };
    for runs in [
        "to-command",
        "checkpoint-action",
        "rsh-command",
        "rmt-command",
        "F",
    ] {
        if parsed.has(runs) {
            return Some(format!("`tar --{runs}` runs a command"));
        }
    }
    for program in parsed.values("I") {
        let name = program.split_whitespace().next().unwrap_or_default();
        let plain = COMPRESSORS.contains(&name)
            && program.split_whitespace().skip(1).all(|a| {
                a.starts_with('-') && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        if !plain {
            return Some(format!("`tar -I` runs the program {program:?}"));
        }
    }
    let cwd = ctx.cwd.as_deref();
    let write = |text: &str| guard.write_target(&Arg::plain(text), cwd, facts);
    for file in parsed
        .values("g")
        .chain(parsed.values("index-file"))
        .chain(parsed.values("volno-file"))
    {
        if let Some(why) = write(file) {
            return Some(format!("`tar` {why}"));
        }
    }
    let creates = ["c", "r", "u", "A", "delete"].iter().any(|m| parsed.has(m));
    let extracts = parsed.has("x");
    for archive in parsed.values("f") {
        let host = archive.split_once(':').map(|(h, _)| h);
        if host.is_some_and(|h| !h.contains('/') && !h.is_empty()) && !parsed.has("force-local") {
            return Some(format!(
                "`tar -f {archive}` names a remote archive, reached by running a remote shell"
            ));
        }
        if creates
            && archive != "-"
            && let Some(why) = write(archive)
        {
            return Some(format!("`tar` {why}"));
        }
    }
    // Where tar's own paths start: `-C` dirs, one after the other.
    let mut dir: Option<PathBuf> = cwd.map(PathBuf::from);
    let mut roots: Vec<Option<PathBuf>> = Vec::new();
    for d in parsed.values("C") {
        dir = absolute(d, dir.as_deref(), &guard.home).ok();
        roots.push(dir.clone());
    }
    if roots.is_empty() {
        roots.push(dir.clone());
    }
    if extracts && !parsed.has("O") {
        if parsed.has("P") {
            return Some("`tar -xP` unpacks absolute paths anywhere".into());
        }
        for root in &roots {
            let Some(root) = root else {
                return Some("`tar -x` unpacks into a directory the line makes unknown".into());
            };
            if let Some(why) = guard.write_tree(root, facts) {
                return Some(format!("`tar -x` {why}"));
            }
        }
    }
    if parsed.has("remove-files") {
        let last = roots.last().cloned().flatten();
        for &i in &parsed.operands {
            let member = Arg {
                text: texts[i].to_owned(),
                glob_at: args
                    .iter()
                    .find(|a| a.text == texts[i])
                    .and_then(|a| a.glob_at),
            };
            if let Some(why) = guard.delete_target(&member, last.as_deref(), facts) {
                return Some(format!("`tar --remove-files` {why}"));
            }
        }
    }
    None
}

/// Config keys `git -c` and `git config` may set without asking: none of
/// them names a program, a hook, or another config.
fn safe_git_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let prefixes = [
        "user.",
        "author.",
        "committer.",
        "color.",
        "advice.",
        "i18n.",
        "log.",
        "status.",
        "format.pretty",
        "column.",
    ];
    let exact = [
        "init.defaultbranch",
        "core.quotepath",
        "core.autocrlf",
        "core.safecrlf",
        "core.filemode",
        "core.ignorecase",
        "core.abbrev",
        "commit.gpgsign",
        "tag.gpgsign",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "push.autosetupremote",
        "fetch.prune",
        "merge.conflictstyle",
        "diff.algorithm",
        "diff.renames",
        "diff.noprefix",
        "diff.mnemonicprefix",
        "diff.colormoved",
        "safe.directory",
        "protocol.version",
        "gc.auto",
        "rerere.enabled",
        "http.sslverify",
        "http.postbuffer",
        "rebase.autosquash",
        "rebase.autostash",
        "branch.autosetuprebase",
        "commit.verbose",
        "help.autocorrect",
    ];
    prefixes.iter().any(|p| key.starts_with(p)) || exact.contains(&key.as_str())
}

fn git_key_asks(setting: &str) -> Option<String> {
    let key = setting.split('=').next().unwrap_or(setting);
    (!safe_git_key(key))
        .then(|| format!("`git` sets the config {key}, which can name a program git runs"))
}

fn git(args: &[&str]) -> Option<String> {
    let parsed = match parse("git", args) {
        Ok(p) => p,
        Err(why) => return Some(why),
    };
    if parsed.has("config-env") {
        return Some("`git --config-env` sets config from the environment".into());
    }
    if parsed
        .options
        .iter()
        .any(|o| o.name == "exec-path" && o.value.is_some())
    {
        return Some("`git --exec-path=` makes git run its helpers from elsewhere".into());
    }
    for setting in parsed.values("c") {
        if let Some(why) = git_key_asks(setting) {
            return Some(why);
        }
    }
    let &sub = args.get(parsed.rest)?;
    let rest = &args[parsed.rest + 1..];
    let has = |prefixes: &[&str]| {
        rest.iter()
            .find(|a| prefixes.iter().any(|p| a.starts_with(p)))
            .copied()
    };
    let runs = |what: &str| Some(format!("`git {sub}` {what}"));
    match sub {
        "config" => git_config(rest),
        "clone" | "fetch" | "pull" | "ls-remote" | "push" | "archive" | "submodule" => {
            if let Some(a) = has(&[
                "--upload-pack",
                "--receive-pack",
                "--exec",
                "--template",
                "-u",
            ]) {
                return runs(&format!("runs a program it is given ({a})"));
            }
            let mut i = 0;
            while i < rest.len() {
                let a = rest[i];
                let setting = if a == "-c" || a == "--config" {
                    i += 1;
                    rest.get(i).copied()
                } else {
                    a.strip_prefix("--config=")
                        .or_else(|| a.strip_prefix("-c").filter(|s| !s.is_empty()))
                };
                if let Some(setting) = setting
                    && let Some(why) = git_key_asks(setting)
                {
                    return Some(why);
                }
                i += 1;
            }
            if sub == "submodule" && rest.contains(&"foreach") {
                return runs("runs a command in every submodule");
            }
            None
        }
        "rebase" => has(&["-x", "--exec"]).and_then(|_| runs("runs a command after each commit")),
        "bisect" => rest
            .first()
            .filter(|a| **a == "run")
            .and_then(|_| runs("runs a command")),
        "filter-branch" | "filter-repo" | "instaweb" => runs("runs commands it is given"),
        "difftool" | "mergetool" => has(&["-x", "--extcmd", "-t", "--tool"])
            .and_then(|a| runs(&format!("runs a tool it is given ({a})"))),
        "grep" => {
            has(&["-O", "--open-files-in-pager"]).and_then(|_| runs("opens a pager it is given"))
        }
        "hook" => runs("runs hooks"),
        _ => None,
    }
}

/// `git config ...`: setting a key that is not known to be safe asks.
fn git_config(args: &[&str]) -> Option<String> {
    let mut operands = Vec::new();
    let mut reading = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        match a {
            "-e" | "--edit" | "edit" if operands.is_empty() => {
                return Some("`git config --edit` opens an editor on the config".into());
            }
            "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "-l" | "--list"
            | "--unset" | "--unset-all" | "--remove-section" | "--rename-section"
            | "--get-color" | "--get-colorbool" => reading = true,
            "-f" | "--file" | "--blob" | "--type" | "--default" | "--comment" => i += 1,
            _ if a.starts_with('-') => {}
            _ => operands.push(a),
        }
        i += 1;
    }
    if reading {
        return None;
    }
    let key = match operands.as_slice() {
        [
            "get" | "list" | "unset" | "remove-section" | "rename-section",
            ..,
        ] => return None,
        ["set", key, ..] => key,
        [key, _value, ..] => key,
        _ => return None,
    };
    git_key_asks(key)
}

fn editor(base: &str, args: &[&str], ctx: &Ctx) -> Option<String> {
    if ctx.stdin_fed {
        return Some(format!(
            "`{base}` reads commands from the input piped into it"
        ));
    }
    for (i, a) in args.iter().enumerate() {
        if let Some(cmd) = a.strip_prefix('+')
            && !cmd.is_empty()
            && !cmd.bytes().all(|b| b.is_ascii_digit())
            && !cmd.starts_with(['/', '?'])
        {
            return Some(format!("`{base}` runs the editor command {a:?}"));
        }
        let runs = matches!(
            *a,
            "-c" | "--cmd"
                | "-S"
                | "-s"
                | "-u"
                | "-U"
                | "-W"
                | "-w"
                | "--eval"
                | "-l"
                | "--load"
                | "-f"
                | "--funcall"
                | "--script"
                | "-x"
                | "--batch"
                | "-batch"
        ) || a.starts_with("--remote")
            || a.starts_with("--eval=")
            || a.starts_with("--load=")
            || a.starts_with("--funcall=")
            || a.starts_with("--script=")
            || a.starts_with("--init-directory");
        if runs {
            let payload = args.get(i + 1).copied().unwrap_or_default();
            return Some(format!("`{base} {a}` runs editor commands ({payload:?})"));
        }
    }
    None
}

fn sqlite(guard: &Guard, args: &[&str], ctx: &Ctx, facts: &Facts) -> Option<String> {
    let mut operands = Vec::new();
    let mut safe = false;
    let mut readonly = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].trim_start_matches('-');
        if args[i].starts_with('-') {
            match a {
                "cmd" | "init" => return Some(format!("`sqlite3 -{a}` runs commands it is given")),
                "safe" => safe = true,
                "readonly" => readonly = true,
                "separator" | "newline" | "nullvalue" | "vfs" | "mmap" | "lookaside"
                | "pagecache" | "heap" | "maxsize" | "escape" => i += 1,
                _ => {}
            }
        } else {
            operands.push(args[i]);
        }
        i += 1;
    }
    let mut operands = operands.into_iter();
    if let Some(db) = operands.next()
        && !readonly
        && let Some(why) = guard.write_target(&Arg::plain(db), ctx.cwd.as_deref(), facts)
    {
        return Some(format!("`sqlite3` {why}"));
    }
    let sql: Vec<&str> = operands.collect();
    if sql.is_empty() {
        return (ctx.stdin_fed && !safe)
            .then(|| "`sqlite3` reads commands (`.shell` among them) from its input".into());
    }
    if safe {
        return None;
    }
    for statement in sql {
        let lower = statement.to_ascii_lowercase();
        let dot_runs = lower.lines().map(str::trim_start).any(|l| {
            [
                ".shell", ".system", ".load", ".output", ".once", ".excel", ".open", ".read",
                ".backup", ".save", ".log", ".trace", ".cd", ".import",
            ]
            .iter()
            .any(|d| l.starts_with(d))
        });
        let sql_runs = [
            "load_extension",
            "writefile",
            "edit(",
            "attach",
            "vacuum into",
            "fts3_tokenizer",
        ]
        .iter()
        .any(|f| lower.contains(f));
        if dot_runs || sql_runs {
            return Some(format!(
                "`sqlite3` runs commands or writes files beyond its database ({statement:?})"
            ));
        }
    }
    None
}

fn debugger(base: &str, args: &[&str]) -> Option<String> {
    let harmless = args
        .iter()
        .all(|a| matches!(*a, "--version" | "-v" | "--help" | "-h"));
    (!harmless).then(|| format!("`{base}` can attach to processes and run any command"))
}

fn make(args: &[&str]) -> Option<String> {
    let parsed = match parse("make", args) {
        Ok(p) => p,
        Err(why) => return Some(why),
    };
    if parsed.has("E") {
        return Some("`make --eval` runs make code from the command line".into());
    }
    if parsed
        .values("f")
        .any(|f| f == "-" || f.starts_with("/dev/") || f.starts_with("/proc/"))
    {
        return Some("`make -f` reads its makefile from its input".into());
    }
    for &i in &parsed.operands {
        if let Some((name, value)) = args[i].split_once('=') {
            let name = name.trim_end_matches([':', '+', '?', '!']);
            let special = matches!(
                name,
                "SHELL" | ".SHELLFLAGS" | "MAKESHELL" | "MAKEFLAGS" | "MAKEFILES" | "MFLAGS"
            );
            // A value becomes part of recipe command lines: more than one
            // word (outside a *FLAGS variable) or any shell syntax asks.
            let words = !name.ends_with("FLAGS") && value.contains(char::is_whitespace);
            if special
                || words
                || value.contains([
                    ';', '&', '|', '<', '>', '`', '$', '(', ')', '\n', '"', '\'', '\\',
                ])
            {
                return Some(format!(
                    "`make` is given {name}, which changes the commands it runs"
                ));
            }
        }
    }
    None
}

fn fuser(args: &[&str]) -> Option<String> {
    match parse("fuser", args) {
        Ok(p) if p.has("k") => Some("`fuser -k` kills the processes using a file".into()),
        Ok(_) => None,
        Err(why) => Some(why),
    }
}

fn rsync(guard: &Guard, args: &[Arg], ctx: &Ctx, facts: &Facts) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    let parsed = match parse("rsync", &texts) {
        Ok(p) => p,
        Err(why) => return Some(why),
    };
    for program in parsed.values("e").chain(parsed.values("rsync-path")) {
        let first = program.split_whitespace().next().unwrap_or_default();
        let ssh = matches!(first.rsplit('/').next(), Some("ssh" | "rsync"));
        if !ssh || program.contains([';', '&', '|', '<', '>', '`', '$', '(', ')', '\n']) {
            return Some(format!("`rsync` runs the command line {program:?}"));
        }
    }
    let operands: Vec<&Arg> = parsed.operands.iter().map(|&i| &args[i]).collect();
    let (dest, sources) = operands.split_last()?;
    let cwd = ctx.cwd.as_deref();
    // `host:path` is remote; a `:` after a `/` is part of a local name.
    let local = |a: &Arg| a.text.split_once(':').is_none_or(|(h, _)| h.contains('/'));
    let deletes = parsed.options.iter().any(|o| o.name.starts_with("del"));
    if deletes && local(dest) {
        let tree = Arg {
            text: format!("{}/", dest.text.trim_end_matches('/')),
            glob_at: None,
        };
        if let Some(why) = guard.delete_target(&tree, cwd, facts) {
            return Some(format!("`rsync --delete` {why}"));
        }
    }
    if parsed.has("remove-source-files") {
        for source in sources.iter().filter(|s| local(s)) {
            if let Some(why) = guard.delete_target(source, cwd, facts) {
                return Some(format!("`rsync --remove-source-files` {why}"));
            }
        }
    }
    if local(dest)
        && let Some(why) = guard.write_target(dest, cwd, facts)
    {
        return Some(format!("`rsync` {why}"));
    }
    None
}

/// `ssh`: options that run a local command, and a command run on this
/// very machine (`ssh localhost rm -rf ~`).
fn ssh(args: &[&str]) -> Option<String> {
    const VALUED: &str = "BbcDEeFIiJLlmOoPpQRSWw";
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if *a == "--" {
            i += 1;
            break;
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        for (at, letter) in cluster.char_indices() {
            if VALUED.contains(letter) {
                let attached = &cluster[at + 1..];
                let value = if attached.is_empty() {
                    i += 1;
                    args.get(i).copied().unwrap_or_default()
                } else {
                    attached
                };
                let option = value.split(['=', ' ']).next().unwrap_or_default();
                let runs = [
                    "proxycommand",
                    "localcommand",
                    "knownhostscommand",
                    "permitlocalcommand",
                ];
                if letter == 'o' && runs.contains(&option.to_ascii_lowercase().as_str()) {
                    return Some(format!("`ssh -o {option}` runs a command on this machine"));
                }
                break;
            }
        }
        i += 1;
    }
    let destination = args.get(i)?;
    let host = destination
        .trim_start_matches("ssh://")
        .rsplit('@')
        .next()
        .unwrap_or_default()
        .split(':')
        .next()
        .unwrap_or_default();
    let local = matches!(
        host,
        "localhost" | "0.0.0.0" | "::1" | "[::1]" | "ip6-localhost"
    ) || host.starts_with("127.")
        || host.starts_with("localhost.");
    (local && args.len() > i + 1)
        .then(|| "`ssh` runs a command back on this machine, where the guard cannot read it".into())
}

/// Container commands: a container given the host's files, devices or
/// processes can do what root can; stopping containers stops processes
/// hearth did not start.
fn containers(base: &str, args: &[&str]) -> Option<String> {
    let sub = args.iter().find(|a| !a.starts_with('-'))?;
    match *sub {
        "run" | "create" => args
            .iter()
            .find(|a| {
                [
                    "-v",
                    "--volume",
                    "--mount",
                    "--privileged",
                    "--pid",
                    "--cap-add",
                    "--device",
                    "--userns",
                    "--security-opt",
                    "--ipc",
                ]
                .iter()
                .any(|o| a.starts_with(o))
            })
            .map(|a| {
                format!("`{base} {sub} {a}` gives a container this machine's files or powers")
            }),
        "kill" | "stop" | "restart" | "rm" | "rmi" | "prune" | "system" | "volume" | "pause" => {
            Some(format!(
                "`{base} {sub}` stops or removes containers hearth did not start"
            ))
        }
        _ => None,
    }
}
