//! hearth as a systemd service: the units pass `systemd-analyze verify`
//! and the development unit scores at most 3.0 in `systemd-analyze
//! security`; `hearth service install` and `uninstall` write the right
//! unit and drive systemctl (a fake on PATH that records its arguments);
//! the watchdog is fed from the main loop and stops when the loop is
//! wedged (seen on an sd_notify socket the test binds); and under
//! systemd the log goes to the journal as structured entries, secrets
//! redacted (seen on a journal socket the test binds).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth_tests::{Hearth, bin, plugin, probe};
use serde_json::{Value, json};

/// `systemd-analyze ARGS`, failing clearly when it is not installed.
fn systemd_analyze(args: &[&str]) -> std::process::Output {
    Command::new("systemd-analyze")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run systemd-analyze ({e}): these tests need it; install the `systemd` \
                 package (.ci/run does)"
            )
        })
}

/// A directory holding a fake `systemctl` that appends its arguments to
/// `calls` and exits with `exit`, writing `stderr` to standard error.
struct FakeSystemctl {
    dir: tempfile::TempDir,
}

impl FakeSystemctl {
    fn new(exit: i32, stderr: &str) -> FakeSystemctl {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        let script = dir.path().join("systemctl");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\necho '{stderr}' >&2\nexit {exit}\n",
                calls.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeSystemctl { dir }
    }

    /// Each call's arguments, in order.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `hearth service ARGS` with this systemctl first on PATH.
    fn run(&self, h: &Hearth, args: &[&str]) -> hearth_tests::Run {
        self.run_with(h, args, &[])
    }

    /// As [`FakeSystemctl::run`], with more environment.
    fn run_with(&self, h: &Hearth, args: &[&str], env: &[(&str, &str)]) -> hearth_tests::Run {
        let path = format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = h.command(args);
        command
            .env("PATH", path)
            .env("XDG_CONFIG_HOME", h.home().join("xdg"))
            .env_remove("SUDO_USER")
            .envs(env.iter().copied());
        hearth_tests::Run::from(command.output().unwrap())
    }
}

/// The lines of a unit that are not comments.
fn settings(unit: &str) -> Vec<&str> {
    unit.lines().filter(|l| !l.starts_with('#')).collect()
}

/// Installs the unit of `h`'s config (system or `--user`) into
/// `root/etc/systemd/system`, checks it with `systemd-analyze verify`,
/// and returns its security score (offline, as a system unit).
fn install_verify_and_score(h: &Hearth, root: &Path, user: bool) -> f64 {
    let fake = FakeSystemctl::new(0, "");
    let dir = root.join("etc/systemd/system");
    let dir_text = dir.to_str().unwrap();
    let mut args = vec!["service", "install", "--unit-dir", dir_text];
    if user {
        args.push("--user");
    }
    fake.run(h, &args).ok();
    let unit = dir.join("hearth.service");
    let verify = systemd_analyze(&["verify", unit.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert!(
        verify.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify {}: {}\n{stderr}",
        unit.display(),
        verify.status
    );
    let security = systemd_analyze(&[
        "security",
        "--offline=true",
        &format!("--root={}", root.display()),
        "hearth.service",
    ]);
    let out = String::from_utf8_lossy(&security.stdout);
    let line = out
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_else(|| {
            panic!(
                "no score from systemd-analyze security:\n{out}\n{}",
                String::from_utf8_lossy(&security.stderr)
            )
        });
    let score = line
        .split(':')
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("cannot read the score in {line:?}"));
    println!("{}: {line}", unit.display());
    score
}

#[test]
fn the_units_verify_and_the_development_unit_scores_at_most_3() {
    let development = Hearth::new("mode = \"development\"\n");
    for user in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let score = install_verify_and_score(&development, root.path(), user);
        let kind = if user { "user" } else { "system" };
        println!("development {kind} unit: {score}");
        assert!(
            score <= 3.0,
            "the development {kind} unit scores {score}, over 3.0"
        );
    }
    // Production lifts the sandbox on purpose: its score is printed (and
    // recorded in docs/operations.md), and it must be the drop-in that
    // lifted it.
    let production = Hearth::new("mode = \"production\"\n");
    let root = tempfile::tempdir().unwrap();
    let score = install_verify_and_score(&production, root.path(), false);
    println!("production system unit: {score}");
    assert!(
        root.path()
            .join("etc/systemd/system/hearth.service.d/production.conf")
            .is_file()
    );
    assert!(score > 3.0, "production scores {score}");
}

#[test]
fn install_writes_the_paths_reloads_and_uninstall_removes() {
    let h = Hearth::new("mode = \"development\"\n");
    let fake = FakeSystemctl::new(0, "");
    let units = h.home().join("units");
    let units_text = units.to_str().unwrap();

    // A system unit.
    let out = fake.run(&h, &["service", "install", "--unit-dir", units_text]);
    let printed = out.ok();
    assert!(
        printed.contains("next: systemctl enable --now hearth.service"),
        "{printed}"
    );
    assert_eq!(fake.calls(), ["daemon-reload"]);
    let unit = std::fs::read_to_string(units.join("hearth.service")).unwrap();
    let lines = settings(&unit);
    let binary = std::fs::canonicalize(bin()).unwrap();
    let expected = [
        format!(
            "ExecStart={} --config {} run",
            binary.display(),
            h.config().display()
        ),
        format!("Environment=HEARTH_HOME={}", h.home().display()),
        format!("ReadWritePaths={}", h.home().display()),
        "Type=notify".into(),
        "ExecReload=kill -HUP $MAINPID".into(),
        "Restart=on-failure".into(),
        "WantedBy=multi-user.target".into(),
    ];
    for line in &expected {
        assert!(lines.contains(&line.as_str()), "no {line:?} in\n{unit}");
    }
    assert!(lines.iter().any(|l| l.starts_with("User=")), "{unit}");
    assert!(
        lines.iter().any(|l| l.starts_with("WatchdogSec=")),
        "{unit}"
    );
    assert!(
        lines.iter().all(|l| !l.contains('@')
            || l.contains("@system-service")
            || l.contains("~@privileged")),
        "a placeholder is left:\n{unit}"
    );
    assert!(
        !units.join("hearth.service.d").exists(),
        "no drop-in in development"
    );

    // Uninstall: stopped and disabled, removed, reloaded.
    let out = fake.run(&h, &["service", "uninstall", "--unit-dir", units_text]);
    assert!(out.ok().contains("removed"), "{}", out.stdout);
    assert_eq!(
        fake.calls(),
        [
            "daemon-reload",
            "disable --now hearth.service",
            "daemon-reload"
        ]
    );
    assert!(!units.join("hearth.service").exists());
    let again = fake.run(&h, &["service", "uninstall", "--unit-dir", units_text]);
    assert!(again.fails().contains("no hearth unit"), "{}", again.stderr);

    // A user unit: systemctl --user, no User=, the user's default target.
    let fake = FakeSystemctl::new(0, "");
    let out = fake.run(
        &h,
        &["service", "install", "--user", "--unit-dir", units_text],
    );
    assert!(
        out.ok()
            .contains("next: systemctl --user enable --now hearth.service"),
        "{}",
        out.stdout
    );
    assert_eq!(fake.calls(), ["--user daemon-reload"]);
    let unit = std::fs::read_to_string(units.join("hearth.service")).unwrap();
    let lines = settings(&unit);
    assert!(lines.contains(&"WantedBy=default.target"), "{unit}");
    assert!(!lines.iter().any(|l| l.starts_with("User=")), "{unit}");
    let env_file = h.home().join("xdg/hearth/hearth.env");
    assert!(
        lines.contains(&format!("EnvironmentFile=-{}", env_file.display()).as_str()),
        "{unit}"
    );

    // Production mode: the drop-in comes, and goes when the mode does.
    let production = Hearth::new("");
    let out = fake.run(
        &production,
        &["service", "install", "--unit-dir", units_text],
    );
    out.ok();
    let drop_in = units.join("hearth.service.d/production.conf");
    assert!(drop_in.is_file());
    fake.run(&h, &["service", "install", "--unit-dir", units_text])
        .ok();
    assert!(!drop_in.exists());
    // A mode HEARTH_MODE chose at install is the service's mode too.
    fake.run_with(
        &h,
        &["service", "install", "--unit-dir", units_text],
        &[("HEARTH_MODE", "production")],
    )
    .ok();
    assert!(drop_in.is_file());
    let unit = std::fs::read_to_string(units.join("hearth.service")).unwrap();
    assert!(
        settings(&unit).contains(&"Environment=HEARTH_MODE=production"),
        "{unit}"
    );
}

#[test]
fn install_refuses_an_unwritable_unit_dir_and_a_failing_systemctl() {
    let h = Hearth::new("mode = \"development\"\n");
    // A directory under a file cannot be made, even by root.
    let blocker = h.write("blocker", "a file");
    let under_file = blocker.join("units");
    let fake = FakeSystemctl::new(0, "");
    let out = fake.run(
        &h,
        &[
            "service",
            "install",
            "--unit-dir",
            under_file.to_str().unwrap(),
        ],
    );
    let err = out.fails();
    assert!(
        err.contains("cannot create the unit directory") && err.contains("--user"),
        "{err}"
    );
    assert!(fake.calls().is_empty(), "systemctl ran: {:?}", fake.calls());

    let failing = FakeSystemctl::new(1, "Access denied");
    let units = h.home().join("units");
    let out = failing.run(
        &h,
        &["service", "install", "--unit-dir", units.to_str().unwrap()],
    );
    let err = out.fails();
    assert!(
        err.contains("`systemctl daemon-reload` failed") && err.contains("Access denied"),
        "{err}"
    );
    let out = failing.run(
        &h,
        &[
            "service",
            "uninstall",
            "--unit-dir",
            units.to_str().unwrap(),
        ],
    );
    let err = out.fails();
    assert!(
        err.contains("`systemctl disable --now hearth.service` failed"),
        "{err}"
    );
    assert!(
        units.join("hearth.service").exists(),
        "a failed uninstall keeps the unit"
    );
}

/// Sends `request` after the hello on a new control connection; the
/// answer is read on a thread (a wedge answers only when it ends).
fn control_request(h: &Hearth, request: Value) -> std::thread::JoinHandle<Value> {
    let mut stream = UnixStream::connect(h.home().join("hearth.sock")).unwrap();
    stream
        .write_all(format!("{}\n{request}\n", hearth_tests::control::hello(h.home())).as_bytes())
        .unwrap();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stream).lines();
        let hello = lines.next().unwrap().unwrap();
        assert!(hello.contains("\"hello\""), "{hello}");
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    })
}

/// Every datagram on `socket`, with when it came, until `until` passes.
fn datagrams(socket: &UnixDatagram, until: Duration) -> Vec<(Instant, String)> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while start.elapsed() < until {
        socket
            .set_read_timeout(Some(
                until
                    .saturating_sub(start.elapsed())
                    .max(Duration::from_millis(1)),
            ))
            .unwrap();
        if let Ok(n) = socket.recv(&mut buf) {
            got.push((
                Instant::now(),
                String::from_utf8_lossy(&buf[..n]).trim_end().to_owned(),
            ));
        }
    }
    got
}

#[test]
fn the_watchdog_is_fed_by_the_main_loop_and_stops_when_it_is_wedged() {
    let h = Hearth::with_plugins(&[plugin("echo")], "");
    let socket_path = h.home().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    // 400 ms: a ping every 200 ms.
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("NOTIFY_SOCKET", &socket_path)
            .env("WATCHDOG_USEC", "400000")
            .env("HEARTH_TEST_WEDGE", "1");
    });
    let before = datagrams(&socket, Duration::from_secs(2));
    let texts: Vec<&str> = before.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts.first(), Some(&"READY=1"), "{texts:?}");
    let pings = texts.iter().filter(|t| **t == "WATCHDOG=1").count();
    assert!(pings >= 4, "{pings} pings in 2 s: {texts:?}");

    let answer = control_request(&h, json!({"op": "test_wedge", "seconds": 4}));
    let during = datagrams(&socket, Duration::from_secs(6));
    let answer = answer.join().unwrap();
    assert_eq!(answer["op"], "test_wedge", "{answer}");
    // The pings stop for the wedge (allowing one already on its way), then
    // come back when it ends.
    let times: Vec<Instant> = before
        .iter()
        .chain(&during)
        .filter(|(_, t)| t == "WATCHDOG=1")
        .map(|(at, _)| *at)
        .collect();
    let longest_gap = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    assert!(
        longest_gap >= Duration::from_secs(3),
        "the pings went on while the runtime was wedged (longest gap {longest_gap:?})"
    );
    assert!(
        times
            .last()
            .is_some_and(|t| t.elapsed() < Duration::from_secs(2)),
        "the pings did not come back after the wedge"
    );
}

#[test]
fn a_normal_daemon_refuses_the_wedge_and_pings_only_for_its_own_pid() {
    let h = Hearth::with_plugins(&[plugin("echo")], "");
    let socket_path = h.home().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    // WATCHDOG_PID names another process: the watchdog is not ours.
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("NOTIFY_SOCKET", &socket_path)
            .env("WATCHDOG_USEC", "200000")
            .env("WATCHDOG_PID", "1");
    });
    let answer = control_request(&h, json!({"op": "test_wedge", "seconds": 5}))
        .join()
        .unwrap();
    assert_eq!(answer["op"], "error", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("HEARTH_TEST_WEDGE=1"),
        "{answer}"
    );
    let texts: Vec<String> = datagrams(&socket, Duration::from_secs(1))
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(texts, ["READY=1"]);
}

/// A Lua tool that logs its argument.
const LOG_IT: &str = r#"return {
  name = "log_it",
  description = "Logs a text",
  parameters = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  run = function(args, ctx)
    hearth.log("log_it got " .. args.text)
    return { ok = true }
  end,
}
"#;

/// A secret planted in a log line.
const PLANTED: &str = "journal-planted-27182818";

/// One journal entry's fields (a field may repeat).
type Entry = HashMap<String, Vec<String>>;

/// Parses a native-protocol datagram.
fn parse_entry(mut data: &[u8]) -> Entry {
    let mut entry = Entry::new();
    while let Some(end) = data.iter().position(|b| *b == b'\n') {
        let line = &data[..end];
        let (name, value, rest) = match line.iter().position(|b| *b == b'=') {
            Some(eq) => (&line[..eq], &line[eq + 1..], &data[end + 1..]),
            None => {
                let len = u64::from_le_bytes(data[end + 1..end + 9].try_into().unwrap()) as usize;
                let value = &data[end + 9..end + 9 + len];
                (line, value, &data[end + 10 + len..])
            }
        };
        entry
            .entry(String::from_utf8_lossy(name).into_owned())
            .or_default()
            .push(String::from_utf8_lossy(value).into_owned());
        data = rest;
    }
    entry
}

fn field<'a>(entry: &'a Entry, name: &str) -> Option<&'a str> {
    entry.get(name).and_then(|v| v.first()).map(String::as_str)
}

#[test]
fn under_systemd_the_log_goes_to_the_journal_with_fields_and_no_secrets() {
    let h = Hearth::with_plugins(&[plugin("echo"), probe()], "");
    h.write("tools/log_it.lua", LOG_IT);
    h.cmd_with_input(&["secret", "set", "PLANTED"], PLANTED)
        .ok();

    let journal_path = h.home().join("journal.sock");
    let journal = UnixDatagram::bind(&journal_path).unwrap();
    let raw: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let sink = Arc::clone(&raw);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = journal.recv(&mut buf) {
            sink.lock().unwrap().push(buf[..n].to_vec());
        }
    });
    // Standard error is a file; JOURNAL_STREAM names it, as systemd would.
    let stderr_path = h.home().join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let meta = stderr.metadata().unwrap();
    let mut daemon = h
        .command(&["run"])
        .env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()))
        .env("HEARTH_TEST_JOURNAL_SOCKET", &journal_path)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let entries = |raw: &Arc<Mutex<Vec<Vec<u8>>>>| -> Vec<Entry> {
        raw.lock().unwrap().iter().map(|d| parse_entry(d)).collect()
    };
    let wait_for = |what: &str, pred: &dyn Fn(&Entry) -> bool| -> Entry {
        let start = Instant::now();
        loop {
            if let Some(e) = entries(&raw).into_iter().find(|e| pred(e)) {
                return e;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no journal entry {what}; got {:#?}\nstderr: {}",
                entries(&raw),
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let message_starts =
        |e: &Entry, text: &str| field(e, "MESSAGE").is_some_and(|m| m.starts_with(text));

    let ready = wait_for("ready", &|e| message_starts(e, "ready "));
    assert_eq!(field(&ready, "PRIORITY"), Some("6"));
    assert_eq!(field(&ready, "SYSLOG_IDENTIFIER"), Some("hearth"));
    assert!(field(&ready, "STARTUP_MS").is_some(), "{ready:?}");
    let plugin = wait_for("from the probe plugin", &|e| {
        message_starts(e, "probe plugin started")
    });
    assert_eq!(field(&plugin, "PLUGIN"), Some("probe"), "{plugin:?}");
    // A sub-agent's runner starts with a line that names it.
    let args = json!({
        "action": "create", "name": "helper",
        "system_prompt": "You help.", "allowed_tools": [],
    });
    h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
        .ok();
    let agent = wait_for("from the sub-agent's runner", &|e| {
        message_starts(e, "agent runner started")
    });
    assert_eq!(field(&agent, "AGENT"), Some("helper"), "{agent:?}");

    let args = json!({ "text": format!("here: {PLANTED}") }).to_string();
    h.cmd(&["tool", "call", "log_it", &args]).ok();
    let logged = wait_for("from the Lua tool", &|e| {
        field(e, "MESSAGE").is_some_and(|m| m.contains("log_it got"))
    });
    assert!(
        field(&logged, "MESSAGE")
            .unwrap()
            .contains("log_it got here: [secret:PLANTED]"),
        "{logged:?}"
    );

    daemon.kill().unwrap();
    daemon.wait().unwrap();
    for datagram in raw.lock().unwrap().iter() {
        assert!(
            !String::from_utf8_lossy(datagram).contains(PLANTED),
            "the journal got the secret: {}",
            String::from_utf8_lossy(datagram)
        );
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(!stderr.contains(PLANTED), "{stderr}");
    assert!(
        !stderr.contains("ready"),
        "the log went to stderr too:\n{stderr}"
    );
}
