//! What the crate's tests share: a `Shell` on a throwaway home, built as
//! the plugin's `init` builds it but with the exit notices collected in a
//! list instead of sent to a host.

// Each test file compiles this module on its own and uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth_sdk::protocol::{Floor, Notice, ToolOutput};
use hearth_shell::{Config, Setup, Shell};
use serde_json::Value;

/// A shell plugin instance and what it has told the agent.
pub struct Fixture {
    pub home: tempfile::TempDir,
    pub shell: Shell,
    pub notices: Arc<Mutex<Vec<Notice>>>,
    /// The confinement every call carries; `None`: as if approved.
    pub floor: Option<Floor>,
}

impl Fixture {
    /// An instance whose calls run unconfined, as calls the owner approved.
    pub fn new() -> Fixture {
        Fixture::with(Config::default(), |_| None)
    }

    /// An instance with `config` whose calls carry the floor
    /// `confine(home)`.
    pub fn with(config: Config, confine: impl FnOnce(&Path) -> Option<Floor>) -> Fixture {
        let home = tempfile::tempdir().expect("temp home");
        let floor = confine(&home.path().canonicalize().expect("canonical home"));
        let (shell, notices) = instance(home.path(), config);
        Fixture {
            home,
            shell,
            notices,
            floor,
        }
    }

    /// `$HEARTH_HOME`, canonical.
    pub fn home(&self) -> PathBuf {
        self.home.path().canonicalize().expect("canonical home")
    }

    /// Calls a tool that must succeed.
    pub fn ok(&self, tool: &str, args: Value) -> Value {
        self.shell
            .call_floored(tool, &args, self.floor.as_ref())
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
    }

    /// Calls a tool that must fail; its message.
    pub fn fails(&self, tool: &str, args: Value) -> String {
        match self.shell.call_floored(tool, &args, self.floor.as_ref()) {
            Ok(v) => panic!("{tool} {args} should fail, got {v}"),
            Err(e) => e.to_string(),
        }
    }
}

/// The floor the host sends with an unapproved call: writes only beneath
/// `roots` (and the null devices), nothing of `hidden` read or written.
pub fn roots_floor(roots: &[&Path], hidden: &[&Path]) -> Floor {
    let text = |p: &&Path| p.display().to_string();
    Floor {
        protect: vec!["/".into()],
        writable: roots
            .iter()
            .map(text)
            .chain(["/dev/null".into(), "/dev/pts".into(), "/dev/ptmx".into()])
            .collect(),
        hidden: hidden.iter().map(text).collect(),
    }
}

/// A fresh instance on `home`, as after a daemon restart.
pub fn instance(home: &Path, config: Config) -> (Shell, Arc<Mutex<Vec<Notice>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let shell = Shell::new(Setup {
        home: home.to_owned(),
        config,
        notify: Box::new(move |notice: &Notice| {
            sink.lock().unwrap().push(notice.clone());
            Ok(())
        }),
        live: None,
        summarize: None,
    })
    .expect("shell plugin");
    (shell, notices)
}

/// Waits up to `limit` for `done`, panicking with `what` on timeout.
pub fn eventually(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: i32) -> bool {
    hearth_shell::meta::proc_stat(pid).is_ok_and(|s| s.state != 'Z')
}

/// Kills a whole process group, ignoring errors: test clean-up.
pub fn kill_group(pgid: i32) {
    // SAFETY: kill(2) on a group this test started.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// What an instance showed live, with when each piece came.
pub type Shown = Arc<Mutex<Vec<(Instant, ToolOutput)>>>;

/// An unconfined instance (production mode) whose live output is recorded
/// instead of sent to a host.
pub fn watched() -> (tempfile::TempDir, Shell, Shown) {
    let home = tempfile::tempdir().expect("temp home");
    let shown: Shown = Arc::default();
    let sink = Arc::clone(&shown);
    let shell = Shell::new(Setup {
        home: home.path().to_owned(),
        config: Config::default(),
        notify: Box::new(|_: &Notice| Ok(())),
        live: Some(Box::new(move |piece: &ToolOutput| {
            sink.lock().unwrap().push((Instant::now(), piece.clone()));
            Ok(())
        })),
        summarize: None,
    })
    .expect("shell plugin");
    (home, shell, shown)
}

/// Whether the process group `pgid` is gone (kill(-pgid, 0) says ESRCH).
pub fn group_gone(pgid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; it only asks whether the group exists.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}
