//! The rig: the daemon with every bundled plugin, its throwaway home and
//! the fakes it talks to. It is started and waited on until every tool is
//! offered, so the load meets no half-started daemon, and stopped with
//! SIGTERM, so the soak judges the exit a service manager would see.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::mpsc::channel;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::model::{Model, TOOLS};
use super::watch::{Problems, read_log};
use crate::Hearth;
use crate::fake_llm::FakeLlm;
use crate::fake_signal::FakeSignal;
use crate::fake_telegram::FakeTelegram;

/// Telegram chats the messages rotate over, all the owner's.
pub(super) const CHATS: i64 = 8;
pub(super) const FIRST_CHAT: i64 = 1001;
/// Control-socket conversations the messages rotate over.
pub(super) const CONTROL_CHATS: usize = 4;
const TELEGRAM_TOKEN: &str = "4242:soak-token";
const SIGNAL_ACCOUNT: &str = "+15550000001";
pub(super) const SIGNAL_OWNER: &str = "+15550000002";

/// The daemon, its home and the fakes it talks to.
pub(super) struct Rig {
    pub(super) home: Hearth,
    child: Child,
    pub(super) telegram: Arc<FakeTelegram>,
    pub(super) signal: Arc<FakeSignal>,
    pub(super) model: Model,
    pub(super) problems: Arc<Problems>,
    log: Option<JoinHandle<()>>,
}

impl Rig {
    pub(super) fn start() -> Rig {
        let telegram = Arc::new(FakeTelegram::start(TELEGRAM_TOKEN));
        let signal = Arc::new(FakeSignal::start(SIGNAL_ACCOUNT));
        let llm = FakeLlm::start();
        let canvas_port = free_port();
        let notes = tempfile::NamedTempFile::new().expect("a notes file");
        std::fs::write(notes.path(), "soak notes\n".repeat(50)).expect("write the notes");
        let model = Model::new(llm, notes, canvas_port);
        let chats: Vec<String> = (FIRST_CHAT..FIRST_CHAT + CHATS)
            .map(|c| c.to_string())
            .collect();
        // The soak calls the example plugins' tools (echo, hello).
        let config = format!(
            "examples = true\n[plugins.canvas]\nlisten = \"127.0.0.1:{canvas_port}\"\n\
             [plugins.web]\nallow_hosts = [\"127.0.0.1:{canvas_port}\"]\n\
             [plugins.telegram]\ntoken = {TELEGRAM_TOKEN:?}\napi_url = {tg:?}\n\
             allowed_chat_ids = [{chats}]\npoll_timeout_s = 10\npace_chat_ms = 0\npace_global_per_s = 1000\n\
             [plugins.signal]\nurl = {sig:?}\naccount = {SIGNAL_ACCOUNT:?}\nallowed_numbers = [{SIGNAL_OWNER:?}]\n\
             [plugins.mcp.servers.soak]\ncommand = \"node\"\nargs = [{mcp:?}]\nrisk = \"read\"\nstart = \"eager\"\n\
             [scripts]\nbundled_dir = {scripts:?}\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = {llm:?}\n\
             api_key_env = \"HEARTH_SOAK_KEY\"\n",
            tg = telegram.url(),
            chats = chats.join(", "),
            sig = signal.url(),
            mcp = mcp_server().display().to_string(),
            scripts = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scripts")
                .display()
                .to_string(),
            llm = model.url(),
        );
        let home = Hearth::new(&config);
        let mut child = home
            .command(&["--log-format", "json", "--log-level", "info", "run"])
            .env("HEARTH_SOAK_KEY", "soak-key")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start hearth run");
        let problems = Arc::new(Problems::default());
        let (ready_tx, ready) = channel();
        let stderr = child.stderr.take().expect("piped stderr");
        let log = {
            let problems = Arc::clone(&problems);
            thread::Builder::new()
                .name("soak-log".into())
                .spawn(move || read_log(stderr, &ready_tx, &problems))
                .expect("spawn the log reader")
        };
        if ready.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = child.kill();
            panic!(
                "the daemon did not get ready; its warnings: {:?}",
                problems.summary().at_start
            );
        }
        let rig = Rig {
            home,
            child,
            telegram,
            signal,
            model,
            problems,
            log: Some(log),
        };
        rig.wait_for_tools();
        assert!(
            rig.signal.wait_for_streams(1, Duration::from_secs(30)),
            "the Signal plugin opened no event stream"
        );
        rig
    }

    pub(super) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until every tool the model will ask for is offered (the MCP
    /// server's come once it has started).
    fn wait_for_tools(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let run = self.home.cmd(&["tools", "--json"]);
            let listed = if run.status.success() {
                run.stdout.as_str()
            } else {
                ""
            };
            let missing: Vec<&str> = TOOLS
                .iter()
                .copied()
                .filter(|t| !listed.contains(&format!("\"{t}\"")))
                .collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "tools never offered: {missing:?}\n{}{}",
                run.stdout,
                run.stderr
            );
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM, then the exit status (or why there was none).
    pub(super) fn stop(mut self) -> String {
        // SAFETY: kill(2) on the child we spawned and have not reaped.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        let exit = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    break status
                        .code()
                        .map_or_else(|| format!("{status}"), |c| c.to_string());
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break "still running 30 s after SIGTERM".into();
                }
                Err(e) => break format!("cannot wait: {e}"),
            }
        };
        if let Some(log) = self.log.take() {
            let _ = log.join();
        }
        exit
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The MCP plugin's scriptable test server.
fn mcp_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/mcp/tests/fixtures/script_server.mjs")
}

/// A port nobody listens on now, for the canvas (the web plugin's allow
/// list must name it before the daemon starts).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}
