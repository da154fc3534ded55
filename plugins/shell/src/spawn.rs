//! How a command line becomes a process: the shell, the environment, the
//! working directory, its session, and the sandbox applied in the child
//! (`hearth_sdk::sandbox`). `shell_exec` and `process_start` share it, so
//! both tools treat `cwd`, `env` and the confinement the same way.
//!
//! Every command runs in a session of its own, with no controlling
//! terminal of hearth's, under the seccomp filter that keeps it from
//! typing into terminals; a command the owner did not approve also runs
//! under the confinement the host sent with the call (Landlock: writes
//! only in the writable roots, the credentials hidden, signals scoped) and
//! cannot change other processes' limits or priorities.
//!
//! The environment starts from an allow-list, not the daemon's own: the
//! daemon holds the model's API key in its environment, and the agent must
//! never see a secret. `[plugins.shell] pass_env` adds names to the list.
//! The `env` argument may not set variables that change what the shell
//! runs (`BASH_ENV`, `LD_PRELOAD`, ...): the host's guard reads only the
//! command line, so such a change must be written there, where it is seen.

use std::ffi::OsString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;

use hearth_sdk::PluginError;
use hearth_sdk::floor::{Cache, Prepared};
use hearth_sdk::sandbox::{self, Reach};

use hearth_sdk::args::invalid;

/// Variables passed from the daemon's environment to every command.
pub const INHERITED_ENV: [&str; 11] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
];

/// Everything needed to start commands the same way each time.
#[derive(Debug)]
pub struct Launcher {
    /// `$HEARTH_HOME`, canonical: the default and base of `cwd`.
    pub home: PathBuf,
    /// `bash` if there is one, else `/bin/sh`.
    pub shell: PathBuf,
    /// The environment every command starts with.
    pub base_env: Vec<(OsString, OsString)>,
    /// The last confinement prepared, kept while it holds.
    pub floors: Cache,
}

impl Launcher {
    /// A launcher for `home`, passing `pass_env` on top of
    /// [`INHERITED_ENV`].
    pub fn new(home: &Path, pass_env: &[String]) -> Launcher {
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_owned());
        let mut base_env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(name, _)| {
                let name = name.to_string_lossy();
                INHERITED_ENV.contains(&name.as_ref())
                    || name.starts_with("LC_")
                    || pass_env.iter().any(|p| *p == name)
            })
            .collect();
        if !base_env.iter().any(|(name, _)| name == "PATH") {
            base_env.push(("PATH".into(), DEFAULT_PATH.into()));
        }
        base_env.retain(|(name, _)| name != "HEARTH_HOME");
        base_env.push(("HEARTH_HOME".into(), home.clone().into_os_string()));
        let path = base_env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        Launcher {
            shell: find_bash(&path).unwrap_or_else(|| PathBuf::from("/bin/sh")),
            home,
            base_env,
            floors: Cache::default(),
        }
    }

    /// The directory a command runs in: `raw` (absolute, `~/...`, or
    /// relative to `$HEARTH_HOME`) or `$HEARTH_HOME`, canonical and
    /// existing. Any directory will do: what the command may change there
    /// is the confinement's to say.
    pub fn resolve_cwd(&self, raw: Option<&str>) -> Result<PathBuf, PluginError> {
        let path = match raw {
            None => self.home.clone(),
            Some(raw) if raw == "~" || raw.starts_with("~/") => {
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .ok_or_else(|| {
                        invalid(
                            "cwd",
                            &format!("{raw:?} starts with ~ but $HOME is not set"),
                        )
                    })?;
                PathBuf::from(home).join(raw.trim_start_matches('~').trim_start_matches('/'))
            }
            Some(raw) => self.home.join(raw),
        };
        let dir = std::fs::canonicalize(&path)
            .map_err(|e| invalid("cwd", &format!("{} {}", path.display(), unresolved(&e))))?;
        if !dir.is_dir() {
            return Err(invalid(
                "cwd",
                &format!("{} is not a directory", dir.display()),
            ));
        }
        Ok(dir)
    }

    /// The command for `line`, not yet started: stdin is `/dev/null`, the
    /// caller sets stdout and stderr. It runs in a session of its own,
    /// under `floor` when given (confined), else with only the terminal
    /// filter (the owner approved it).
    pub fn command(
        &self,
        line: &str,
        cwd: &Path,
        env: &[(&str, &str)],
        floor: Option<Arc<Prepared>>,
    ) -> Result<Command, PluginError> {
        let mut command = Command::new(&self.shell);
        // `--` so that a command line starting with `-` is a command, not
        // an option of the shell.
        command
            .arg("-c")
            .arg("--")
            .arg(line)
            .current_dir(cwd)
            .env_clear()
            .envs(self.base_env.iter().map(|(k, v)| (k, v)))
            .envs(env.iter().copied())
            .stdin(Stdio::null());
        let reach = if floor.is_some() {
            Reach::Confined
        } else {
            Reach::Approved
        };
        sandbox::apply(&mut command, reach, floor)
            .map_err(|e| PluginError::failed(format!("the command was not run: {e}")))?;
        Ok(command)
    }
}

/// Refuses `env` entries that are malformed or change what the shell runs.
pub fn check_env(env: &[(&str, &str)]) -> Result<(), PluginError> {
    for (name, _) in env {
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(invalid(
                "env",
                &format!(
                    "{name:?} is not a variable name (letters, digits and _, not starting with a digit)"
                ),
            ));
        }
        let upper = name.to_ascii_uppercase();
        if PROTECTED_ENV.contains(&upper.as_str())
            || PROTECTED_PREFIXES.iter().any(|p| upper.starts_with(p))
        {
            return Err(invalid(
                "env",
                &format!(
                    "{name} changes what the shell runs, so it cannot be set here; \
                     write it in the command line (`{name}=... command`) instead"
                ),
            ));
        }
    }
    Ok(())
}

/// How a process ended: its exit code, or the name of the signal that
/// killed it.
pub fn exit_fields(status: ExitStatus) -> (Option<i32>, Option<String>) {
    (status.code(), status.signal().map(signal_name))
}

/// `SIGTERM` for 15, and so on; `SIG<n>` for the rest.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.into()
}

/// Why a working directory could not be resolved, in plain words.
fn unresolved(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "does not exist".to_owned(),
        io::ErrorKind::PermissionDenied => "cannot be reached (permission denied)".to_owned(),
        _ => format!("cannot be resolved ({e})"),
    }
}

/// A descriptor that becomes readable when `pid` exits (`pidfd_open`), or
/// `None` on kernels older than 5.3.
pub fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0u32) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sends `signal` to every process in the group `pgid`. Errors other than
/// "no such group" are returned.
pub fn signal_group(pgid: i32, signal: i32) -> io::Result<bool> {
    // SAFETY: kill(2) with a negative pid addresses the process group.
    if unsafe { libc::kill(-pgid, signal) } == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::ESRCH) {
        Ok(false)
    } else {
        Err(error)
    }
}

/// `PATH` when the daemon has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Variables that change what a shell or the dynamic linker runs.
const PROTECTED_ENV: [&str; 13] = [
    "PATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "GLOBIGNORE",
    "CDPATH",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
];

/// Prefixes of such variables: the dynamic linker's, and exported bash
/// functions.
const PROTECTED_PREFIXES: [&str; 2] = ["LD_", "BASH_FUNC_"];

fn find_bash(path: &OsString) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("bash"))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwd_may_start_at_the_owners_home() {
        let home = tempfile::tempdir().unwrap();
        let launcher = Launcher::new(home.path(), &[]);
        let own_home = std::fs::canonicalize(std::env::var_os("HOME").unwrap()).unwrap();
        assert_eq!(launcher.resolve_cwd(Some("~")).unwrap(), own_home);
        assert_eq!(launcher.resolve_cwd(Some("~/")).unwrap(), own_home);
        let hearth_home = home.path().canonicalize().unwrap();
        assert_eq!(launcher.resolve_cwd(None).unwrap(), hearth_home);
        std::fs::create_dir(home.path().join("~x")).unwrap();
        assert_eq!(
            launcher.resolve_cwd(Some("~x")).unwrap(),
            hearth_home.join("~x")
        );
    }

    #[test]
    fn an_unresolved_cwd_says_why() {
        let cases = [
            (libc::ENOENT, "does not exist"),
            (libc::EACCES, "cannot be reached (permission denied)"),
            (
                libc::ELOOP,
                "cannot be resolved (Too many levels of symbolic links",
            ),
        ];
        for (errno, why) in cases {
            let text = unresolved(&io::Error::from_raw_os_error(errno));
            assert!(text.starts_with(why), "{errno}: {text}");
        }
    }

    #[test]
    fn a_pidfd_is_for_a_live_process_only() {
        assert!(pidfd(std::process::id()).is_some());
        // pid_max is at most 2^22: no process has this pid.
        assert!(pidfd(1 << 23).is_none());
    }

    #[test]
    fn signalling_a_group_tells_a_live_group_from_a_gone_one() {
        // SAFETY: getpgrp has no preconditions.
        let own = unsafe { libc::getpgrp() };
        assert!(signal_group(own, 0).unwrap());
        assert!(!signal_group(1 << 23, 0).unwrap());
    }

    #[test]
    fn bash_is_found_on_the_path_as_an_executable_file() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        assert!(is_executable(Path::new("/bin/sh")));
        assert!(!is_executable(&plain));
        assert!(!is_executable(dir.path()));
        assert!(!is_executable(&dir.path().join("missing")));
        let found = find_bash(&OsString::from("relative:/usr/bin:/bin")).unwrap();
        assert!(found.ends_with("bash") && found.is_absolute(), "{found:?}");
        assert_eq!(find_bash(&dir.path().as_os_str().to_owned()), None);
    }
}
