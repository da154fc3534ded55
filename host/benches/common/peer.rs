//! What the start-up bench measures of a daemon, hearth or its peer: the
//! time from the spawn to its first HTTP answer, its idle memory alone and
//! with every process it started, its threads, its stripped size; and the
//! peer itself, NullClaw (a Zig agent daemon, built by
//! `scripts/build-nullclaw`), whose gateway and web channel run from a
//! generated config with a fake provider key in a fresh `$HOME`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon may take to answer HTTP before the bench fails.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between connection attempts while a daemon starts.
const POLL: Duration = Duration::from_micros(200);

/// Connects to `127.0.0.1:port` and sends `GET path` until a status line
/// comes back; returns the time since `start`.
pub fn first_http_answer(child: &mut Child, port: u16, path: &str, start: Instant) -> Duration {
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    loop {
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
            if stream.write_all(request.as_bytes()).is_ok() && status_line(&mut stream) {
                return start.elapsed();
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("daemon exited with {status} before answering HTTP");
        }
        assert!(
            start.elapsed() < ANSWER_TIMEOUT,
            "no HTTP answer on port {port}"
        );
        std::thread::sleep(POLL);
    }
}

/// Whether a whole `HTTP/1.x NNN ...` line arrives before the stream ends.
fn status_line(stream: &mut TcpStream) -> bool {
    let _ = stream.set_read_timeout(Some(ANSWER_TIMEOUT));
    let (mut got, mut buf) = (Vec::new(), [0u8; 256]);
    while !got.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got.starts_with(b"HTTP/")
}

/// `N` distinct ports free on 127.0.0.1 (all bound at once, then released).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let listeners = [(); N].map(|()| TcpListener::bind("127.0.0.1:0").expect("free port"));
    listeners.map(|l| l.local_addr().expect("port").port())
}

/// One idle sample: KiB of VmRSS and PSS, the daemon's own and with all
/// its descendants added, how many descendants, and the daemon's threads.
#[derive(Clone, Copy)]
pub struct Idle {
    pub rss: u64,
    pub pss: u64,
    pub tree_rss: u64,
    pub tree_pss: u64,
    pub descendants: u64,
    pub threads: u64,
}

impl Idle {
    pub fn of(pid: u32) -> Idle {
        let own = |file, key| proc_value(pid, file, key).unwrap_or_else(|| panic!("{pid}: {key}"));
        let (rss, pss) = (own("status", "VmRSS:"), own("smaps_rollup", "Pss:"));
        let others = descendants(pid);
        // A process that ended between the listing and the reading adds 0.
        let sum = |file, key| -> u64 {
            others
                .iter()
                .map(|&p| proc_value(p, file, key).unwrap_or(0))
                .sum()
        };
        Idle {
            rss,
            pss,
            tree_rss: rss + sum("status", "VmRSS:"),
            tree_pss: pss + sum("smaps_rollup", "Pss:"),
            descendants: others.len() as u64,
            threads: own("status", "Threads:"),
        }
    }

    /// Each field's median over `samples`.
    pub fn median(samples: &[Idle]) -> Idle {
        let mid = |key: fn(&Idle) -> u64| {
            let mut values: Vec<u64> = samples.iter().map(key).collect();
            values.sort_unstable();
            values[values.len() / 2]
        };
        Idle {
            rss: mid(|s| s.rss),
            pss: mid(|s| s.pss),
            tree_rss: mid(|s| s.tree_rss),
            tree_pss: mid(|s| s.tree_pss),
            descendants: mid(|s| s.descendants),
            threads: mid(|s| s.threads),
        }
    }
}

/// Every process `pid` started, and those they started: the children of
/// each of its threads (hearth starts Lua workers from a thread of its own,
/// so the main thread's children are not all).
fn descendants(pid: u32) -> Vec<u32> {
    let (mut found, mut queue) = (Vec::new(), vec![pid]);
    while let Some(parent) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// The number after `key` in `/proc/PID/file` (`kB` dropped).
fn proc_value(pid: u32, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    let value = text.lines().find_map(|l| l.strip_prefix(key))?;
    value.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Bytes of `bin` once stripped (a copy is stripped, in a temp file).
pub fn stripped_size(bin: &Path) -> u64 {
    let copy = tempfile::NamedTempFile::new().expect("temp file");
    let status = Command::new("strip")
        .arg("-o")
        .arg(copy.path())
        .arg(bin)
        .status()
        .expect("run strip");
    assert!(status.success(), "strip {}: {status}", bin.display());
    std::fs::metadata(copy.path()).expect("stat").len()
}

/// A path from the environment, relative ones taken from the workspace's
/// root (cargo runs benches in the package's directory).
pub fn env_path(var: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os(var)?);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

/// NullClaw's binary, named by `HEARTH_BENCH_NULLCLAW`.
pub struct NullClaw {
    pub bin: PathBuf,
}

/// A NullClaw gateway started for one run, in its own `$HOME`.
pub struct Peer {
    child: Child,
    pub first_http: Duration,
    _home: tempfile::TempDir,
}

impl NullClaw {
    pub const HOW: &str = "set HEARTH_BENCH_NULLCLAW to a NullClaw binary to measure it beside \
         hearth (scripts/build-nullclaw builds target/nullclaw/bin/nullclaw)";

    pub fn from_env() -> Option<NullClaw> {
        let bin = env_path("HEARTH_BENCH_NULLCLAW")?;
        assert!(bin.is_file(), "HEARTH_BENCH_NULLCLAW: no {}", bin.display());
        Some(NullClaw { bin })
    }

    /// Starts `nullclaw gateway` with its web channel, both on free ports,
    /// and waits for the gateway's `GET /health` to be answered.
    pub fn start(&self) -> Peer {
        let home = tempfile::tempdir().expect("temp dir");
        let [gateway, web] = free_ports();
        let config = format!(
            r#"{{
  "models": {{"providers": {{"openrouter": {{"api_key": "sk-or-fake-benchmark"}}}}}},
  "agents": {{"defaults": {{"model": {{"primary": "openrouter/anthropic/claude-sonnet-4"}}}}}},
  "channels": {{"web": {{"accounts": {{"default": {{"transport": "local", "listen": "127.0.0.1", "port": {web}, "path": "/ws"}}}}}}}},
  "gateway": {{"port": {gateway}}}
}}"#
        );
        std::fs::create_dir(home.path().join(".nullclaw")).expect("config dir");
        std::fs::write(home.path().join(".nullclaw/config.json"), config).expect("config");
        let start = Instant::now();
        let mut child = Command::new(&self.bin)
            .args([
                "gateway",
                "--host",
                "127.0.0.1",
                "--port",
                &gateway.to_string(),
            ])
            .env("HOME", home.path())
            .current_dir(home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nullclaw");
        let first_http = first_http_answer(&mut child, gateway, "/health", start);
        Peer {
            child,
            first_http,
            _home: home,
        }
    }
}

impl Peer {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, which NullClaw leaves to its default action.
    pub fn stop(mut self) {
        // SAFETY: kill(2) on the child we spawned.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().expect("wait");
        assert!(
            status.success() || status.signal() == Some(libc::SIGTERM),
            "nullclaw exited with {status}"
        );
    }
}
