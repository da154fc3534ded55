//! Starting Chromium: its flags, its two protocol pipes, its sandbox, and
//! stopping it.
//!
//! The browser is a program hearth runs, so it runs as the owner's
//! unapproved programs do: in a session of its own, under the confined
//! seccomp filter, and under a Landlock floor on which everything is
//! read-only but its profile, the downloads folder and `/tmp`, and the
//! owner's credentials cannot be read at all. Its environment is cleared
//! (the daemon's may hold API keys) but for what a browser needs.
//!
//! Every request it makes goes through the plugin's proxy (`proxy`), the
//! loopback included (`<-loopback>` removes Chromium's own exception), and
//! WebRTC may not send UDP around it, so the network rules hold for every
//! request a page makes, not just the ones the agent asked for.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth_sdk::floor::Cache;
use hearth_sdk::protocol::Floor;
use hearth_sdk::sandbox::{self, Reach};

use crate::cdp::{Connection, Event};

/// The variables of the daemon's environment the browser keeps.
const KEPT_ENV: [&str; 7] = [
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
];

/// The last lines of the browser's own error output kept, for the message
/// when it fails to start or dies.
const KEPT_LINES: usize = 20;

/// How one browser is started.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The Chromium executable.
    pub executable: PathBuf,
    /// Its profile: cookies and logins live here between starts.
    pub profile: PathBuf,
    /// Where downloads land.
    pub downloads: PathBuf,
    /// The proxy every request goes through, `127.0.0.1:PORT`.
    pub proxy: String,
    /// Without a window (the agent's browser), or with one (the owner
    /// logging in by hand).
    pub headless: bool,
    /// The owner's credentials, which the browser may not read.
    pub hidden: Vec<String>,
    /// The first page.
    pub url: String,
}

/// A running browser process and its protocol connection.
pub struct Process {
    child: Child,
    /// The protocol connection over the pipes.
    pub connection: Connection,
    stderr: Arc<Mutex<Vec<String>>>,
}

/// Why the browser did not start.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A folder it needs could not be made.
    #[error("cannot make {path}: {source}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The sandbox could not be prepared (fails closed: no browser).
    #[error("cannot sandbox the browser: {0}")]
    Sandbox(String),
    /// The executable did not start.
    #[error("cannot start {executable}: {source}")]
    Spawn {
        /// The executable.
        executable: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It started but never answered on its pipe.
    #[error("the browser started but did not answer ({0}){1}")]
    NoAnswer(String, String),
}

impl Launch {
    /// The command line, without the sandbox.
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            "--remote-debugging-pipe",
            "--no-first-run",
            "--no-default-browser-check",
            // No traffic of the browser's own (updates, sync, metrics,
            // safe-browsing lists): only the pages the agent opens.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-breakpad",
            "--metrics-recording-only",
            "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
            "--disable-quic",
            "--disable-dev-shm-usage",
            "--password-store=basic",
            "--use-mock-keychain",
            "--mute-audio",
            "--hide-scrollbars",
            "--window-size=1280,900",
            "--proxy-bypass-list=<-loopback>",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        ]
        .map(str::to_owned)
        .into();
        args.push(format!("--proxy-server=http://{}", self.proxy));
        args.push(format!("--user-data-dir={}", self.profile.display()));
        if self.headless {
            args.push("--headless=new".into());
        }
        // Chromium's own sandbox cannot start as root; hearth's (seccomp
        // and Landlock) still holds.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            args.push("--no-sandbox".into());
        }
        args.push(self.url.clone());
        args
    }

    /// The browser's temporary folder, beside its profile.
    pub fn tmp(&self) -> PathBuf {
        self.profile.with_file_name("tmp")
    }

    /// The floor the browser runs under.
    pub fn floor(&self) -> Floor {
        let mut writable: Vec<String> = [&self.profile, &self.downloads, &self.tmp()]
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        writable.extend(["/dev/shm", "/dev/null", "/dev/zero"].map(str::to_owned));
        // The profile is a credential to every other program; the browser
        // is the one that uses it.
        let hidden = self
            .hidden
            .iter()
            .filter(|h| !Path::new(h).starts_with(&self.profile))
            .cloned()
            .collect();
        Floor {
            protect: vec!["/".into()],
            writable,
            hidden,
        }
    }

    /// Starts the browser; `on_event` sees its protocol events.
    pub fn start(
        &self,
        floors: &Cache,
        on_event: impl Fn(&Connection, Event) + Send + 'static,
    ) -> Result<Process, LaunchError> {
        for path in [&self.profile, &self.downloads, &self.tmp()] {
            std::fs::create_dir_all(path).map_err(|source| LaunchError::Folder {
                path: path.clone(),
                source,
            })?;
        }
        // Chromium makes each download's first bytes in `$HOME/Downloads`
        // whatever `Browser.setDownloadBehavior` says; pointed at the
        // downloads folder, they start where they may be written.
        if let Some(home) = self.profile.parent() {
            let link = home.join("Downloads");
            if std::fs::read_link(&link).ok().as_deref() != Some(self.downloads.as_path()) {
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(&self.downloads, &link).map_err(|source| {
                    LaunchError::Folder {
                        path: link.clone(),
                        source,
                    }
                })?;
            }
        }
        let (commands_read, commands_write) = pipe().map_err(|source| self.spawn_error(source))?;
        let (answers_read, answers_write) = pipe().map_err(|source| self.spawn_error(source))?;
        let mut command = Command::new(&self.executable);
        command
            .args(self.args())
            .env_clear()
            .envs(
                KEPT_ENV
                    .iter()
                    .filter_map(|k| Some((k, std::env::var_os(k)?))),
            )
            // Its certificate store and caches go beside the profile,
            // not into the owner's home.
            .env("HOME", self.profile.parent().unwrap_or(&self.profile))
            // A temporary folder of its own: `/tmp` may hold hearth's home
            // (and so its credentials), where no entry can be made.
            .env("TMPDIR", self.tmp())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let (from_us, to_us) = (commands_read.as_raw_fd(), answers_write.as_raw_fd());
        // SAFETY: only fcntl and dup2 on descriptors open in the parent:
        // async-signal-safe, no allocation.
        unsafe {
            command.pre_exec(move || {
                // Moved above 10 first, so neither lands on the other's
                // target; dup2 clears close-on-exec on 3 and 4.
                let a = libc::fcntl(from_us, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(to_us, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let floor = self.floor();
        let landlock = match floors.prepare(&floor) {
            Ok(prepared) => Some(prepared),
            Err(hearth_sdk::floor::FloorError::Unavailable(_)) => None,
            Err(e) => return Err(LaunchError::Sandbox(e.to_string())),
        };
        sandbox::apply(&mut command, Reach::Confined, landlock)
            .map_err(|e| LaunchError::Sandbox(e.to_string()))?;
        let mut child = command.spawn().map_err(|source| self.spawn_error(source))?;
        // The child holds its own copies now.
        drop((commands_read, answers_write));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(err) = child.stderr.take() {
            let kept = stderr.clone();
            let _ = std::thread::Builder::new()
                .name("hearth-browser-stderr".into())
                .spawn(move || keep_last_lines(err, &kept));
        }
        let connection = match Connection::start(commands_write, answers_read, on_event) {
            Ok(c) => c,
            Err(source) => {
                kill_group(&mut child);
                return Err(self.spawn_error(source));
            }
        };
        let process = Process {
            child,
            connection,
            stderr,
        };
        match process.connection.call(
            None,
            "Browser.getVersion",
            serde_json::json!({}),
            Duration::from_secs(20),
        ) {
            Ok(_) => Ok(process),
            Err(e) => {
                let tail = process.stderr_tail();
                let mut process = process;
                process.stop(Duration::ZERO);
                Err(LaunchError::NoAnswer(e.to_string(), tail))
            }
        }
    }

    fn spawn_error(&self, source: std::io::Error) -> LaunchError {
        LaunchError::Spawn {
            executable: self.executable.clone(),
            source,
        }
    }
}

impl Process {
    /// The browser's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still there and its pipe open.
    pub fn is_alive(&mut self) -> bool {
        !self.connection.is_closed() && matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines the browser wrote to its error output, as "; it
    /// said: ..." for a message, or nothing.
    pub fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        if lines.is_empty() {
            String::new()
        } else {
            format!("; it said: {}", lines.join(" | "))
        }
    }

    /// Asks the browser to close, waits at most `grace`, then kills its
    /// whole process group (renderers and helpers included).
    pub fn stop(&mut self, grace: Duration) {
        if !grace.is_zero() {
            let _ = self
                .connection
                .call(None, "Browser.close", serde_json::json!({}), grace);
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        kill_group(&mut self.child);
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// Kills the browser's process group (it leads one: `setsid`) and reaps
/// the browser.
fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill has no memory preconditions; the group is the
        // browser's own, made by setsid in its sandbox.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn keep_last_lines(from: impl std::io::Read, kept: &Mutex<Vec<String>>) {
    for line in BufReader::new(from).lines() {
        let Ok(line) = line else { break };
        let line: String = line.chars().take(300).collect();
        let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() == KEPT_LINES {
            kept.remove(0);
        }
        kept.push(line);
    }
}

fn pipe() -> std::io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe {
        (
            File::from(OwnedFd::from_raw_fd(fds[0])),
            File::from(OwnedFd::from_raw_fd(fds[1])),
        )
    })
}

/// Where Chromium is: `configured` if given (a name is looked up on
/// PATH), else the first of Debian's and Google's names on PATH.
pub fn find_executable(configured: Option<&str>) -> Result<PathBuf, String> {
    let names: Vec<&str> = match configured {
        Some(name) => vec![name],
        None => vec![
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ],
    };
    for name in &names {
        let path = Path::new(name);
        if path.is_absolute() {
            if path.is_file() {
                return Ok(path.to_owned());
            }
            continue;
        }
        if let Some(found) = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
        {
            return Ok(found);
        }
    }
    Err(match configured {
        Some(name) => format!("[plugins.browser] executable {name:?} is not a file or not on PATH"),
        None => {
            "no Chromium on PATH (chromium, chromium-browser, google-chrome); install Debian's \
                 `chromium` package or set [plugins.browser] executable"
                .to_owned()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_writes_only_its_own_folders_and_never_reads_a_credential() {
        let launch = Launch {
            executable: "/usr/bin/chromium".into(),
            profile: "/h/browser/profile".into(),
            downloads: "/h/downloads".into(),
            proxy: "127.0.0.1:1".into(),
            headless: true,
            hidden: vec!["/h/secrets.json".into(), "/h/browser/profile".into()],
            url: "about:blank".into(),
        };
        let floor = launch.floor();
        assert_eq!(floor.protect, ["/"]);
        assert_eq!(floor.hidden, ["/h/secrets.json"]);
        for place in ["/h/browser/profile", "/h/downloads", "/dev/shm"] {
            assert!(
                floor.writable.iter().any(|w| w == place),
                "{place}: {:?}",
                floor.writable
            );
        }
        assert!(
            !floor.writable.iter().any(|w| w == "/h"),
            "{:?}",
            floor.writable
        );
        let args = launch.args();
        for flag in [
            "--remote-debugging-pipe",
            "--proxy-server=http://127.0.0.1:1",
            "--proxy-bypass-list=<-loopback>",
        ] {
            assert!(args.iter().any(|a| a == flag), "{flag}: {args:?}");
        }
        assert!(
            !args
                .iter()
                .any(|a| a.starts_with("--remote-debugging-port")),
            "{args:?}"
        );
    }
}
