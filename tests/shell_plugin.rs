//! The shell plugin through the real `.so`, the host's registry and its
//! policy (production mode unless a test says otherwise): command results,
//! the output cap and its log (read back with the fs plugin), the timeout,
//! malformed and hostile arguments, background processes, their status
//! across a real daemon restart, the exit notice reaching the agent's
//! inbox, and development mode's Landlock confinement end to end.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hearth::runtime::Runtime;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::{Hearth, call_err as fails, call_ok as ok, plugin, probe};
use serde_json::{Value, json};

fn start(extra: &str) -> (Hearth, Runtime) {
    let h = Hearth::with_plugins(&[plugin("shell"), plugin("fs")], extra);
    let rt = h.runtime();
    (h, rt)
}

/// Whether `pid` is a live process (not a zombie).
fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.rfind(')')?;
            s[after + 1..].split_whitespace().next().map(|st| st != "Z")
        })
        .unwrap_or(false)
}

fn eventually(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Kills what a test started, whatever happened to the test.
struct Cleanup(Vec<i64>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for pid in &self.0 {
            // SAFETY: kill(2) on process groups this test started.
            unsafe { libc::kill(-(*pid as i32), libc::SIGKILL) };
        }
    }
}

/// A home whose model is `fake`, for daemon tests.
fn with_model(fake: &FakeLlm, plugins: &[PathBuf], extra: &str) -> Hearth {
    Hearth::with_plugins(
        plugins,
        &format!(
            "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n{extra}",
            fake.url()
        ),
    )
}

fn daemon(h: &Hearth) -> hearth_tests::Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

/// What the model was told in request `n`: the messages, as JSON text.
fn told(fake: &FakeLlm, n: usize) -> String {
    fake.requests()[n].body["messages"].to_string()
}

#[test]
fn shell_exec_returns_stdout_stderr_and_the_exit_code() {
    let (h, rt) = start("");
    let got = ok(
        &rt,
        "shell_exec",
        json!({"command": "echo hi; echo warn >&2; exit 2"}),
    );
    assert_eq!(got["stdout"], "hi\n");
    assert_eq!(got["stderr"], "warn\n");
    assert_eq!(got["exit_code"], 2);
    assert_eq!(got["signal"], Value::Null);
    assert_eq!(got["timed_out"], false);
    assert_eq!(got["truncated"], false);
    let home = h.home().canonicalize().unwrap();
    let pwd = ok(
        &rt,
        "shell_exec",
        json!({"command": "pwd; printenv HEARTH_HOME"}),
    );
    assert_eq!(pwd["stdout"], format!("{0}\n{0}\n", home.display()));
    let env = ok(
        &rt,
        "shell_exec",
        json!({"command": "printenv A B", "env": {"A": "1", "B": "two"}, "timeout_s": 5}),
    );
    assert_eq!(env["stdout"], "1\ntwo\n");
    // The tools are listed with their risk tiers and targets.
    let specs: Vec<Value> = rt
        .tools
        .list()
        .into_iter()
        .map(|l| l.spec)
        .filter(|s| s.name.starts_with("shell") || s.name.starts_with("process"))
        .map(|s| json!([s.name, s.risk, s.targets]))
        .collect();
    let targets =
        json!({"command": "command", "cwd": "cwd", "floor": true, "escalate": "outside_roots"});
    assert_eq!(
        specs,
        [
            json!(["process_logs", "read", {}]),
            json!(["process_start", "exec", targets]),
            json!(["process_status", "read", {}]),
            json!(["process_stop", "write", {}]),
            json!(["shell_exec", "exec", targets]),
        ]
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn output_over_the_cap_gives_head_and_tail_and_a_log_the_agent_can_read() {
    let (h, rt) = start("");
    let got = ok(
        &rt,
        "shell_exec",
        json!({"command": "seq 1 100000; echo done >&2"}),
    );
    assert_eq!(got["truncated"], true);
    let stdout = got["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("1\n2\n3\n"), "{stdout}");
    assert!(
        stdout.contains("\n50\n… 99850 lines omitted; the whole output is in the log …\n99901\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with("\n100000\n"));
    assert_eq!(got["stderr"], "done\n");
    let log = got["log"].as_str().unwrap();
    let logs = h.home().canonicalize().unwrap().join("logs");
    assert!(PathBuf::from(log).starts_with(&logs), "{log}");
    // The log holds everything, and read_file reaches any part of it.
    let text = std::fs::read_to_string(log).unwrap();
    assert_eq!(text.lines().count(), 100_001);
    let middle = ok(
        &rt,
        "read_file",
        json!({"path": log, "offset_line": 54321, "limit_lines": 2}),
    );
    assert_eq!(middle["content"], "54321\n54322\n");
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn the_timeout_kills_the_whole_process_group() {
    let (_h, rt) = start("");
    let started = Instant::now();
    let got = ok(
        &rt,
        "shell_exec",
        json!({"command": "sleep 60 & jobs -p; sleep 60", "timeout_s": 1}),
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(got["timed_out"], true);
    assert_eq!(got["signal"], "SIGKILL");
    assert_eq!(got["exit_code"], Value::Null);
    let background: i64 = got["stdout"].as_str().unwrap().trim().parse().unwrap();
    eventually(
        Duration::from_secs(5),
        "the background sleep to die",
        || !alive(background),
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn malformed_and_hostile_arguments_are_refused_with_the_field_named() {
    let (_h, rt) = start("");
    let cases = [
        (json!({}), "args.command"),
        (json!({"command": 5}), "args.command: expected string"),
        (json!({"command": ""}), "args.command"),
        (json!({"command": ["ls"]}), "args.command"),
        (json!({"command": "true", "timeout_s": 0}), "args.timeout_s"),
        (
            json!({"command": "true", "timeout_s": 601}),
            "args.timeout_s",
        ),
        (
            json!({"command": "true", "timeout_s": "5"}),
            "args.timeout_s",
        ),
        (json!({"command": "true", "env": {"A": 1}}), "args.env.A"),
        (json!({"command": "true", "env": "A=1"}), "args.env"),
        (json!({"command": "true", "cwd": 7}), "args.cwd"),
        (json!({"command": "true", "shell": "zsh"}), "args.shell"),
        (
            json!({"command": "true", "cwd": "no/such/dir"}),
            "field `cwd`: ",
        ),
        (
            json!({"command": "true", "cwd": "no/such/dir"}),
            "no/such/dir does not exist",
        ),
        (
            json!({"command": "true", "cwd": "a\u{0}b"}),
            "field `cwd`: must not contain a NUL",
        ),
        (
            json!({"command": "true", "env": {"X": "a\u{0}b"}}),
            "field `env`: the value of \"X\" contains a NUL",
        ),
        (
            json!({"command": "true", "env": {"BASH_ENV": "/tmp/x"}}),
            // The command would run confined, so the plugin's own check
            // refuses it rather than the guard.
            "BASH_ENV changes what the shell runs",
        ),
        (
            json!({"command": "true", "env": {"LD_PRELOAD": "/tmp/x.so"}}),
            "LD_PRELOAD changes what the shell runs",
        ),
    ];
    for (args, expected) in cases {
        let err = fails(&rt, "shell_exec", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
    // A NUL inside the command line never reaches a shell.
    let err = fails(&rt, "shell_exec", json!({"command": "echo a\u{0}b"}));
    assert!(err.contains("NUL") || err.contains("approval"), "{err}");
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_background_process_starts_reports_logs_and_stops() {
    let (h, rt) = start("");
    let started = ok(
        &rt,
        "process_start",
        json!({"command": "echo ready; exec sleep 60", "name": "server"}),
    );
    let pid = started["pid"].as_i64().unwrap();
    let _cleanup = Cleanup(vec![pid]);
    assert_eq!(started["id"], "proc-1");
    assert_eq!(started["status"], "running");
    let dir = h.home().canonicalize().unwrap().join("processes/proc-1");
    assert!(dir.join("meta.json").is_file());
    eventually(Duration::from_secs(5), "its output", || {
        ok(&rt, "process_logs", json!({"id": "proc-1"}))["text"] == "ready\n"
    });
    let listed = ok(&rt, "process_status", json!({}));
    assert_eq!(listed["processes"][0]["alive"], true);
    assert_eq!(listed["processes"][0]["name"], "server");
    let stopped = ok(&rt, "process_stop", json!({"id": "proc-1"}));
    assert_eq!(stopped["status"], "stopped");
    assert_eq!(stopped["ended_by"], "terminated");
    assert!(!alive(pid));
    let cases = [
        (
            "process_stop",
            json!({"id": "proc-1"}),
            "proc-1 is not running",
        ),
        ("process_stop", json!({"id": "../x"}), "field `id`"),
        (
            "process_logs",
            json!({"id": "proc-1", "stream": "both"}),
            "args.stream",
        ),
        (
            "process_logs",
            json!({"id": "proc-1", "lines": 5000}),
            "args.lines",
        ),
        (
            "process_status",
            json!({"id": "proc-2"}),
            "there is no process proc-2",
        ),
        (
            "process_start",
            json!({"command": "true", "name": ""}),
            "args.name",
        ),
    ];
    for (tool, args, expected) in cases {
        let err = fails(&rt, tool, args.clone());
        assert!(
            err.contains(expected),
            "{tool} {args}: expected {expected:?} in {err}"
        );
    }
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn one_shot_commands_start_a_process_that_outlives_them() {
    let h = Hearth::with_plugins(&[plugin("shell")], "");
    let out = h.cmd(&[
        "tool",
        "call",
        "process_start",
        r#"{"command": "exec sleep 60"}"#,
    ]);
    let started = out.json();
    let pid = started["pid"].as_i64().unwrap();
    let _cleanup = Cleanup(vec![pid]);
    // The one-shot hearth has exited; its child lives on.
    assert!(alive(pid));
    let status = h
        .cmd(&["tool", "call", "process_status", r#"{"id": "proc-1"}"#])
        .json();
    assert_eq!(status["alive"], true);
    assert_eq!(status["status"], "running");
    let stopped = h
        .cmd(&["tool", "call", "process_stop", r#"{"id": "proc-1"}"#])
        .json();
    assert_eq!(stopped["ended_by"], "terminated");
    eventually(Duration::from_secs(5), "the process to end", || !alive(pid));
}

#[test]
fn a_background_process_outlives_a_daemon_restart_and_status_sees_it() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "process_start",
        &json!({"command": "exec sleep 60", "name": "survivor"}),
    ));
    fake.push(anthropic_text("started"));
    let h = with_model(&fake, &[plugin("shell")], "");
    let mut first = daemon(&h);
    assert_eq!(h.chat("start it").ok().trim(), "started");
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(h.home().join("processes/proc-1/meta.json")).unwrap(),
    )
    .unwrap();
    let pid = record["pid"].as_i64().unwrap();
    let _cleanup = Cleanup(vec![pid]);
    assert!(told(&fake, 1).contains("\\\"status\\\":\\\"running\\\""));

    // A graceful stop shuts the plugin down; the process is not touched.
    first.signal(libc::SIGTERM);
    let (status, _) = first.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{status}");
    assert!(alive(pid));

    fake.push(anthropic_tool_use(
        None,
        "t2",
        "process_status",
        &json!({"id": "proc-1"}),
    ));
    fake.push(anthropic_text("still there"));
    let _second = daemon(&h);
    assert_eq!(h.chat("is it up?").ok().trim(), "still there");
    let answer = told(&fake, 3);
    assert!(answer.contains("\\\"alive\\\":true"), "{answer}");
    assert!(answer.contains(&format!("\\\"pid\\\":{pid}")), "{answer}");
}

#[test]
fn a_failing_background_process_is_reported_to_the_agent() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "process_start",
        &json!({"command": "sleep 0.5; echo 'fatal: disk on fire' >&2; exit 4", "name": "job"}),
    ));
    fake.push(anthropic_text("started"));
    // The agent's turn for the notice.
    fake.push(anthropic_text("I saw it fail"));
    let h = with_model(&fake, &[plugin("shell")], "");
    let _daemon = daemon(&h);
    assert_eq!(h.chat("run the job").ok().trim(), "started");
    let notice = || -> Option<(String, String)> {
        h.db()
            .query_row(
                "SELECT text, status FROM inbox WHERE sender = 'hearth'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok()
    };
    eventually(Duration::from_secs(10), "the notice in the inbox", || {
        notice().is_some()
    });
    let (text, _) = notice().unwrap();
    assert!(
        text.contains("Background process proc-1 (\"job\") exited with code 4"),
        "{text}"
    );
    assert!(text.contains("fatal: disk on fire"), "{text}");
    assert!(text.contains("Command: sleep 0.5;"), "{text}");
    // The agent is woken with it.
    assert!(fake.wait_for_requests(3, Duration::from_secs(10)));
    assert!(told(&fake, 2).contains("fatal: disk on fire"));
    eventually(
        Duration::from_secs(10),
        "the notice's turn to finish",
        || notice().is_some_and(|(_, status)| status == "done"),
    );
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(h.home().join("processes/proc-1/meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["status"], "exited");
    assert_eq!(record["exit_code"], 4);
}

#[test]
fn development_mode_confines_what_commands_write_with_landlock() {
    // landlock_create_ruleset(NULL, 0, VERSION): the ABI version, or an
    // error when the kernel has no Landlock.
    // SAFETY: with a null attribute and size 0 the syscall only returns a
    // number.
    if !hearth_sdk::landlock::required_for_tests(1) {
        return;
    }
    // Outside both roots ($HEARTH_HOME and /tmp), and writable to this user.
    let outside = hearth_tests::outside_roots();
    let target = outside.path().join("x");
    // Inside /tmp; a folder, since this test's home lies in /tmp too and
    // nothing can be made directly beside the home's credentials.
    let inside = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "shell_exec",
        &json!({"command": format!("touch {}; touch {1}/ok-$$ && rm {1}/ok-$$ && echo tmp-ok", target.display(), inside.path().display())}),
    ));
    fake.push(anthropic_text("tried"));
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events");
    let h = with_model(
        &fake,
        &[plugin("shell"), probe()],
        &format!(
            "[plugins.probe]\nevents = {events:?}\nconfirm = \"approve\"\n\
             [owner.identities]\nprobe = [\"owner\"]\n"
        ),
    )
    .in_mode("development");
    let _daemon = daemon(&h);
    assert_eq!(h.chat("try writing").ok().trim(), "tried");
    let result = told(&fake, 1);
    // The owner approved it (development mode asks before every command),
    // and it still ran confined to the writable roots.
    assert!(result.contains("\\\"floor\\\":\\\"landlock"), "{result}");
    assert!(result.contains("Permission denied"), "{result}");
    assert!(result.contains("tmp-ok"), "{result}");
    assert!(!target.exists());
}
