//! `hearth service install | uninstall [--user]`: hearth as a systemd
//! service.
//!
//! `install` fills in `config/hearth.service` (the development unit, the
//! template built into the binary) with this binary's absolute path, the
//! config file and `$HEARTH_HOME`, adds the production drop-in
//! `config/hearth-production.conf` when the config's mode is production,
//! writes them to systemd's unit directory, runs `systemctl daemon-reload`,
//! and prints the command that enables and starts the service. `uninstall`
//! stops and disables the service, removes the files and reloads.
//! `--unit-dir` writes elsewhere (for packagers and the tests); systemctl
//! is still run. docs/operations.md ("Running as a service") is the guide.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};

use hearth_base::config::{Config, Mode};

/// The development unit, a template (its comments list the placeholders).
const UNIT: &str = include_str!("../../../config/hearth.service");
/// The production drop-in.
const PRODUCTION: &str = include_str!("../../../config/hearth-production.conf");
/// The unit's file name.
const UNIT_NAME: &str = "hearth.service";
/// The drop-in's place beside the unit.
const DROP_IN: &str = "hearth.service.d/production.conf";
/// Marks the template's lines that only a system unit has.
const SYSTEM_ONLY: &str = "@SYSTEM@";

/// Which service manager: the system's, or the owner's own (`--user`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `/etc/systemd/system`, run as the owner's user.
    System,
    /// `~/.config/systemd/user`.
    User,
}

/// Where and for whom.
pub struct Target {
    /// System or user unit.
    pub scope: Scope,
    /// `--unit-dir`, else systemd's directory for the scope.
    pub unit_dir: Option<PathBuf>,
    /// `--owner`: the user a system unit runs as.
    pub owner: Option<String>,
}

/// `hearth service install`.
pub fn install(config: &Config, target: &Target) -> anyhow::Result<ExitCode> {
    let Some(config_file) = &config.source else {
        bail!(
            "hearth runs on built-in defaults here: a service needs a config file; write \
             $HEARTH_HOME/hearth.toml (config/hearth.example.toml shows every key) or pass --config"
        );
    };
    let binary = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find this hearth binary's path")?;
    let config_file = std::path::absolute(config_file)
        .with_context(|| format!("cannot resolve {}", config_file.display()))?;
    let home = std::path::absolute(&config.home)
        .with_context(|| format!("cannot resolve {}", config.home.display()))?;
    // The sandbox makes $HEARTH_HOME writable, which it can only do to a
    // directory that exists when the service starts.
    if !home.is_dir() {
        // SAFETY: getuid cannot fail.
        if target.scope == Scope::System && unsafe { libc::getuid() } == 0 {
            bail!(
                "{} does not exist: create it as the owner first (`hearth check` does), so \
                 that it is theirs and not root's",
                home.display()
            );
        }
        crate::runtime::create_home(&home)?;
    }
    let env_file = env_file(target.scope)?;
    let owner = match target.scope {
        Scope::System => Some(owner(target.owner.as_deref())?),
        Scope::User => None,
    };
    let mut unit = fill(&Paths {
        binary: &binary,
        config: &config_file,
        home: &home,
        env_file: &env_file,
        owner: owner.as_deref(),
    })?;
    // A mode chosen by HEARTH_MODE here is the service's too, so that the
    // daemon runs in the mode its sandbox was chosen for.
    if std::env::var_os("HEARTH_MODE").is_some_and(|m| !m.is_empty()) {
        let home_line = format!("Environment=HEARTH_HOME={}\n", unit_path(&home)?);
        unit = unit.replacen(
            &home_line,
            &format!(
                "{home_line}Environment=HEARTH_MODE={}\n",
                config.mode.name()
            ),
            1,
        );
    }
    let dir = unit_dir(target)?;
    let unit_path = dir.join(UNIT_NAME);
    let drop_in = dir.join(DROP_IN);
    write(&unit_path, &unit)?;
    if config.mode == Mode::Production {
        write(&drop_in, PRODUCTION)?;
    } else {
        remove_drop_in(&drop_in)?;
    }
    systemctl(target.scope, &["daemon-reload"])?;

    let user = if target.scope == Scope::User {
        " --user"
    } else {
        ""
    };
    outln!("wrote {}", unit_path.display());
    if config.mode == Mode::Production {
        outln!(
            "wrote {} (production mode: the sandbox is lifted)",
            drop_in.display()
        );
    }
    outln!(
        "secrets (the model's API key, channel tokens): VARIABLE=value lines in {} (mode 0600)",
        env_file.display()
    );
    if target.scope == Scope::User {
        outln!("to keep it running after you log out: loginctl enable-linger");
    }
    outln!("next: systemctl{user} enable --now {UNIT_NAME}");
    Ok(ExitCode::SUCCESS)
}

/// `hearth service uninstall`.
pub fn uninstall(target: &Target) -> anyhow::Result<ExitCode> {
    let dir = unit_dir(target)?;
    let unit_path = dir.join(UNIT_NAME);
    if !unit_path.exists() {
        bail!(
            "there is no hearth unit at {}: nothing to uninstall",
            unit_path.display()
        );
    }
    systemctl(target.scope, &["disable", "--now", UNIT_NAME])?;
    std::fs::remove_file(&unit_path)
        .with_context(|| format!("cannot remove {}", unit_path.display()))?;
    remove_drop_in(&dir.join(DROP_IN))?;
    systemctl(target.scope, &["daemon-reload"])?;
    outln!("stopped, disabled and removed {}", unit_path.display());
    Ok(ExitCode::SUCCESS)
}

/// What the template's placeholders become.
struct Paths<'a> {
    binary: &'a Path,
    config: &'a Path,
    home: &'a Path,
    env_file: &'a Path,
    /// The user of a system unit; `None` for a user unit.
    owner: Option<&'a str>,
}

/// The unit's text for `paths`.
fn fill(paths: &Paths<'_>) -> anyhow::Result<String> {
    let mut values = vec![
        ("@HEARTH@", unit_path(paths.binary)?),
        ("@CONFIG@", unit_path(paths.config)?),
        ("@HEARTH_HOME@", unit_path(paths.home)?),
        ("@ENV_FILE@", unit_path(paths.env_file)?),
    ];
    values.push((
        "@WANTED_BY@",
        match paths.owner {
            Some(_) => "multi-user.target".into(),
            None => "default.target".into(),
        },
    ));
    if let Some(owner) = paths.owner {
        values.push(("@USER@", owner.to_owned()));
    }
    let mut out = String::with_capacity(UNIT.len());
    out.push_str("# Written by `hearth service install`; run it again after moving hearth.\n");
    for line in UNIT.lines() {
        let line = match line.strip_prefix(SYSTEM_ONLY) {
            Some(rest) if paths.owner.is_some() => rest,
            Some(_) => continue,
            None => line,
        };
        // The comments name the placeholders: they stay as written.
        let mut line = line.to_owned();
        if !line.starts_with('#') {
            for (placeholder, value) in &values {
                line = line.replace(placeholder, value);
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// A path as a unit file may hold it unquoted: systemd splits words at
/// white space, expands `%` specifiers and `$` variables, and reads
/// quotes and backslashes.
fn unit_path(path: &Path) -> anyhow::Result<String> {
    let text = path
        .to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))?;
    if let Some(c) = text
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "%$\\\"';".contains(*c))
    {
        bail!(
            "{text} holds {c:?}, which a systemd unit cannot take unquoted: move it to a path \
             without spaces, quotes, `%`, `$`, `\\` or `;`"
        );
    }
    Ok(text.to_owned())
}

/// Where the secrets' variables live: root's for a system unit (hearth
/// never reads it; systemd does), the owner's config for a user unit.
fn env_file(scope: Scope) -> anyhow::Result<PathBuf> {
    Ok(match scope {
        Scope::System => PathBuf::from("/etc/hearth/hearth.env"),
        Scope::User => config_home()?.join("hearth/hearth.env"),
    })
}

fn unit_dir(target: &Target) -> anyhow::Result<PathBuf> {
    Ok(match (&target.unit_dir, target.scope) {
        (Some(dir), _) => std::path::absolute(dir)?,
        (None, Scope::System) => PathBuf::from("/etc/systemd/system"),
        (None, Scope::User) => config_home()?.join("systemd/user"),
    })
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn config_home() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".config"))
        .context("cannot find the user's config directory: HOME is not set")
}

/// The user a system unit runs as: `--owner`, else the user who ran sudo,
/// else the current user.
fn owner(flag: Option<&str>) -> anyhow::Result<String> {
    if let Some(name) = flag {
        return Ok(name.to_owned());
    }
    if let Some(name) = std::env::var("SUDO_USER").ok().filter(|n| !n.is_empty()) {
        return Ok(name);
    }
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let name = user_name(uid).with_context(|| format!("cannot find the name of user {uid}"))?;
    if uid == 0 {
        eprintln!(
            "warning: the system unit runs hearth as root; pass --owner USER to run it as the owner"
        );
    }
    Ok(name)
}

fn user_name(uid: libc::uid_t) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: a zeroed passwd is valid; getpwuid_r writes into `pwd` and
    // `buf` (whose length it is given) and sets `result` to `pwd` or null.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result = std::ptr::null_mut();
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: on success pw_name points at a NUL-terminated string in `buf`.
    let name = unsafe { CStr::from_ptr(pwd.pw_name) };
    name.to_str().ok().map(str::to_owned)
}

/// Writes `text` to `path` through a temporary file and a rename, creating
/// the directory.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("a unit path has a directory")?;
    let hint = "a system unit needs root: run it with sudo, or install a user unit with --user";
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the unit directory {} ({hint})",
            dir.display()
        )
    })?;
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("cannot write {} ({hint})", path.display()))
}

/// Removes the production drop-in and its directory when empty.
fn remove_drop_in(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
    if let Some(dir) = path.parent() {
        // Another drop-in (the owner's `systemctl edit`) keeps it.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// Runs `systemctl [--user] ARGS`, failing with its exit status and
/// standard error.
fn systemctl(scope: Scope, args: &[&str]) -> anyhow::Result<()> {
    let mut command = Command::new("systemctl");
    if scope == Scope::User {
        command.arg("--user");
    }
    command.args(args);
    let shown = format!(
        "systemctl{} {}",
        if scope == Scope::User { " --user" } else { "" },
        args.join(" ")
    );
    let output = command
        .output()
        .with_context(|| format!("cannot run `{shown}` (is systemd installed?)"))?;
    if !output.status.success() {
        bail!(
            "`{shown}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
