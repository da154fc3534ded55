//! The helper every integration test is written through.
//!
//! A [`Hearth`] is a throwaway `$HEARTH_HOME` with a config file in it. Its
//! methods run the real `hearth` binary (`cmd`) or start it as a daemon
//! (`daemon`), so each test reads as the few lines that matter. Paths to the
//! built plugins and C fixtures come from here too.
//!
//! The binaries must be built first: the README's test command runs
//! `cargo build --workspace` before `cargo test`.

pub mod audio;
pub mod bench;
pub mod browser;
pub mod canvas;
pub mod control;
pub mod crash;
pub mod documents;
pub mod fake_discord;
pub mod fake_embeddings;
pub mod fake_llm;
pub mod fake_mail;
pub mod fake_matrix;
pub mod fake_search;
pub mod fake_signal;
pub mod fake_speech;
pub mod fake_telegram;
pub mod groups;
mod http_server;
pub mod images;
pub mod procs;
pub mod prompt_cache;
pub mod pty;
pub mod scenarios;
pub mod small_fs;
pub mod soak;
pub mod telegram_home;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The directory that holds the `hearth` binary and the bundled plugins.
pub fn target_dir() -> PathBuf {
    // The test binary is <target>/<profile>/deps/<name>-<hash>.
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary lives in <profile>/deps")
        .to_owned()
}

/// The `hearth` binary.
pub fn bin() -> PathBuf {
    let path = target_dir().join("hearth");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` before the tests",
        path.display()
    );
    path
}

/// A bundled plugin by crate suffix: `plugin("echo")` is
/// `libhearth_plugin_echo.so`.
pub fn plugin(name: &str) -> PathBuf {
    built(&format!("libhearth_plugin_{name}.so"))
}

/// The probe test plugin.
pub fn probe() -> PathBuf {
    built("libhearth_test_probe.so")
}

/// A C fixture library built by `tests/build.rs`.
pub fn fixture(file: &str) -> PathBuf {
    PathBuf::from(env!("HEARTH_FIXTURES_DIR")).join(file)
}

fn built(file: &str) -> PathBuf {
    let path = target_dir().join(file);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` before the tests",
        path.display()
    );
    path
}

/// Calls `tool` through `rt`'s registry and returns its result; panics,
/// naming the call, if it fails.
pub fn call_ok(
    rt: &hearth::runtime::Runtime,
    tool: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    rt.tools
        .call(tool, args.clone())
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

/// Calls `tool` through `rt`'s registry and returns its error message;
/// panics, naming the call, if it succeeds.
pub fn call_err(rt: &hearth::runtime::Runtime, tool: &str, args: serde_json::Value) -> String {
    match rt.tools.call(tool, args.clone()) {
        Ok(v) => panic!("{tool} {args} should fail, got {v}"),
        Err(e) => e.to_string(),
    }
}

/// The lines of a guard corpus in `tests/fixtures/guards/`, without blank
/// lines and `#` comments.
pub fn guard_corpus(file: &str) -> Vec<String> {
    corpus("guards", file)
}

/// The lines of a corpus in `tests/fixtures/<dir>/`, without blank lines
/// and `#` comments.
pub fn corpus(dir: &str, file: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(dir)
        .join(file);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// A scratch directory outside development mode's roots (`/tmp` and any
/// test's `$HEARTH_HOME`): in `/var/tmp`, else in `$HOME`. Not under the
/// target directory, which may itself sit in `/tmp` (a CI clone).
pub fn outside_roots() -> tempfile::TempDir {
    let candidates = [
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    for base in candidates.into_iter().flatten() {
        if base.starts_with("/tmp") {
            continue;
        }
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("hearth-outside")
            .tempdir_in(&base)
        {
            return dir;
        }
    }
    panic!("no writable directory outside /tmp (tried /var/tmp and $HOME)");
}

/// A config that loads exactly the plugin files `paths`, then `extra`.
fn plugins_config(paths: &[PathBuf], extra: &str) -> String {
    let list: Vec<String> = paths
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    format!(
        "[plugins]\nexe_dir = false\npaths = [{}]\n{extra}",
        list.join(", ")
    )
}

/// `config` with production mode chosen, unless it chooses a mode itself.
fn with_mode(config: &str) -> String {
    let sets_mode = config.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("mode ") || l.starts_with("mode=")
    });
    if sets_mode {
        config.to_owned()
    } else {
        format!("{PRODUCTION}{config}")
    }
}

/// The first line of every test config that does not choose a mode.
const PRODUCTION: &str = "mode = \"production\"\n";

/// A throwaway hearth home with a config file.
pub struct Hearth {
    home: tempfile::TempDir,
}

/// The outcome of one command.
pub struct Run {
    /// Exit status.
    pub status: ExitStatus,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Hearth {
    /// A home whose config is `config` (TOML). Tests run in production
    /// mode, where only guarded actions ask, unless `config` sets a `mode`
    /// or the test calls [`Hearth::in_mode`].
    pub fn new(config: &str) -> Hearth {
        Hearth::exact(&with_mode(config))
    }

    /// As [`Hearth::with_plugins`], with the home made inside `parent`
    /// (for tests whose paths must not fall under `/tmp`).
    pub fn with_plugins_in(parent: &Path, paths: &[PathBuf], extra: &str) -> Hearth {
        let home = tempfile::tempdir_in(parent).expect("temp dir");
        Hearth::in_dir(home, &with_mode(&plugins_config(paths, extra)))
    }

    /// A home whose config is exactly `config`, byte for byte (for tests
    /// of the config parser's line numbers).
    pub fn exact(config: &str) -> Hearth {
        Hearth::in_dir(tempfile::tempdir().expect("temp dir"), config)
    }

    /// A home written elsewhere (by `hearth restore`, say), whose config
    /// is the `hearth.toml` already in it.
    pub fn at(home: tempfile::TempDir) -> Hearth {
        Hearth { home }
    }

    fn in_dir(home: tempfile::TempDir, config: &str) -> Hearth {
        std::fs::write(home.path().join("hearth.toml"), config).expect("write config");
        Hearth { home }
    }

    /// Stores an "always allow" grant for exactly `tool` with `args`, as
    /// the owner's answer would.
    pub fn grant(&self, tool: &str, args: &serde_json::Value) {
        let fingerprint = hearth::policy::confirm::fingerprint(tool, args);
        self.db()
            .execute(
                "INSERT INTO grants (tool, fingerprint, args, granted_by, created_at_ms) \
                 VALUES (?1, ?2, ?3, 'owner', 0)",
                rusqlite::params![tool, fingerprint, args.to_string()],
            )
            .expect("store a grant");
    }

    /// Switches the config to `mode` (`development` or `production`).
    pub fn in_mode(self, mode: &str) -> Hearth {
        let text = std::fs::read_to_string(self.config()).expect("read config");
        let rest = text
            .strip_prefix(PRODUCTION)
            .expect("a config written by Hearth::new");
        self.write_config(&format!("mode = {mode:?}\n{rest}"));
        self
    }

    /// A home whose config loads exactly these plugin files, in order.
    pub fn with_plugins(paths: &[PathBuf], extra: &str) -> Hearth {
        Hearth::new(&plugins_config(paths, extra))
    }

    /// `$HEARTH_HOME`.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The config file.
    pub fn config(&self) -> PathBuf {
        self.home().join("hearth.toml")
    }

    /// Replaces the config file.
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.config(), text).expect("write config");
    }

    /// A `hearth` command with this home and config.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.arg("--config")
            .arg(self.config())
            .args(args)
            .env("HEARTH_HOME", self.home())
            .env_remove("HEARTH_CONFIG")
            .env_remove("HEARTH_MODE")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("WATCHDOG_PID")
            .env_remove("RUST_BACKTRACE");
        cmd
    }

    /// Runs `hearth <args>` to completion.
    pub fn cmd(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("run hearth"))
    }

    /// Runs `hearth <args>` with `input` on stdin (for arguments too large
    /// for the command line).
    pub fn cmd_with_input(&self, args: &[&str], input: &str) -> Run {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hearth");
        let mut stdin = child.stdin.take().expect("piped stdin");
        let input = input.to_owned();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let output = child.wait_with_output().expect("wait for hearth");
        writer.join().expect("stdin writer").expect("write stdin");
        Run::from(output)
    }

    /// Starts `hearth run` for a benchmark: info-level logs, discarded (the
    /// measurement is of hearth, not of a log written to a pipe), with
    /// `HEARTH_BENCH_KEY` set for the fake model. The caller waits for
    /// what readiness means to it.
    pub fn bench_daemon(&self) -> Child {
        self.command(&["run"])
            .env("HEARTH_BENCH_KEY", "bench-key")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start hearth run")
    }

    /// Starts `hearth run` with JSON logs and waits until it is ready.
    pub fn daemon(&self) -> Daemon {
        self.daemon_with(|_| {})
    }

    /// Like [`Hearth::daemon`], after `setup` adjusts the command.
    pub fn daemon_with(&self, setup: impl FnOnce(&mut Command)) -> Daemon {
        let cmd = self.command(&["--log-format", "json", "--log-level", "debug", "run"]);
        self.start_daemon(cmd, setup)
    }

    /// Like [`Hearth::daemon`], run with the config file `config` instead
    /// of the home's.
    pub fn daemon_with_config(&self, config: &Path) -> Daemon {
        let mut cmd = Command::new(bin());
        cmd.arg("--config")
            .arg(config)
            .args(["--log-format", "json", "--log-level", "debug", "run"])
            .env("HEARTH_HOME", self.home())
            .env_remove("HEARTH_CONFIG")
            .env_remove("NOTIFY_SOCKET");
        self.start_daemon(cmd, |_| {})
    }

    fn start_daemon(&self, mut cmd: Command, setup: impl FnOnce(&mut Command)) -> Daemon {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        setup(&mut cmd);
        let mut child = cmd.spawn().expect("start hearth run");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().expect("log lock").push(line);
            }
        });
        let daemon = Daemon { child, lines };
        daemon.wait_for_log(
            |l| l.contains("\"message\":\"ready\""),
            Duration::from_secs(20),
        );
        daemon
    }

    /// Starts hearth in this process (plugins, scripts, registry) with this
    /// home and config, for tests that call tools many times.
    pub fn runtime(&self) -> hearth::runtime::Runtime {
        let config = hearth::config::load(Some(&self.config())).expect("valid config");
        let config = hearth::config::Config {
            home: self.home().to_owned(),
            ..config
        };
        hearth::runtime::Runtime::start(config).expect("start hearth")
    }

    /// Writes a file under the home, creating folders.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.home().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }

    /// `hearth chat -m TEXT`, waiting at most 60 s for the reply.
    pub fn chat(&self, text: &str) -> Run {
        self.cmd(&["chat", "-m", text, "--timeout", "60"])
    }

    /// Connects to the daemon's control socket and listens to the
    /// terminal chat's replies.
    pub fn listen(&self) -> Listener {
        let stream = std::os::unix::net::UnixStream::connect(self.home().join("hearth.sock"))
            .expect("connect to the control socket");
        let mut writer = stream.try_clone().expect("clone the socket");
        let hello = control::hello(self.home());
        std::io::Write::write_all(
            &mut writer,
            format!("{hello}\n{{\"op\":\"subscribe\",\"chat\":\"terminal\"}}\n").as_bytes(),
        )
        .expect("subscribe");
        let replies = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&replies);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                    if v["op"] == "reply" {
                        sink.lock().expect("replies lock").push(v);
                    }
                }
            }
        });
        Listener {
            replies,
            _writer: writer,
        }
    }

    /// Opens the daemon's database.
    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.home().join("hearth.db")).expect("open hearth.db")
    }

    /// Waits up to `wait` until the outbox has given a reply up (`failed`);
    /// the error it kept. Panics if none was given up by then.
    pub fn wait_failed_reply(&self, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            let failed = self.db().query_row(
                "SELECT last_error FROM outbox WHERE status = 'failed'",
                [],
                |r| r.get(0),
            );
            if let Ok(why) = failed {
                return why;
            }
            assert!(Instant::now() < deadline, "the reply was never given up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert!(
            self.status.success(),
            "expected success, got {}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        &self.stdout
    }

    /// Asserts failure and returns stdout followed by stderr.
    pub fn fails(&self) -> String {
        assert!(
            !self.status.success(),
            "expected failure\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Stdout parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// A control-socket client collecting replies.
pub struct Listener {
    replies: Arc<Mutex<Vec<serde_json::Value>>>,
    _writer: std::os::unix::net::UnixStream,
}

impl Listener {
    /// Waits until `n` replies have come, then returns them all.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<serde_json::Value> {
        let start = Instant::now();
        loop {
            let got = self.replies.lock().expect("replies lock").clone();
            if got.len() >= n || start.elapsed() > timeout {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A running `hearth run`, killed when dropped.
pub struct Daemon {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Daemon {
    /// The process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Every log line so far.
    pub fn logs(&self) -> Vec<String> {
        self.lines.lock().expect("log lock").clone()
    }

    /// Waits for a log line matching `pred`, panicking with the log on timeout.
    pub fn wait_for_log(&self, pred: impl Fn(&str) -> bool, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            if let Some(line) = self.logs().into_iter().find(|l| pred(l)) {
                return line;
            }
            if start.elapsed() > timeout {
                panic!(
                    "timed out waiting for a log line; log so far:\n{}",
                    self.logs().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the daemon with SIGKILL and waits for it to be gone.
    pub fn kill9(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }

    /// Sends a signal.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) with a pid we spawned.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill failed");
    }

    /// Waits for the process to exit, at most `timeout`; returns its status
    /// and how long it took.
    pub fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Let the reader thread collect the last lines.
                std::thread::sleep(Duration::from_millis(50));
                return (status, start.elapsed());
            }
            if start.elapsed() > timeout {
                let _ = self.child.kill();
                panic!(
                    "daemon did not exit within {timeout:?}; log:\n{}",
                    self.logs().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The messages of JSON log lines, in order.
pub fn messages(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["fields"]["message"].as_str().map(str::to_owned))
        .collect()
}
