//! The owner in control of a running turn, end to end through the daemon:
//! `/stop` ends the running tool too (a `shell_exec` process group is
//! killed, a pending confirmation withdrawn, a Lua tool in an endless loop
//! killed, a plugin call told `tool.cancel`), the reply says what was cut,
//! and the session stays whole for the next turn. Live tool output reaches
//! the turn's channel while the tool runs, paced and bounded whatever the
//! plugin sends, and a plugin cannot show output for a call it is not
//! running. A C plugin built before any of this keeps working.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth::scope::{self, CallScope};
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::procs::{group_gone, wait_for_descendant};
use hearth_tests::{Daemon, Hearth, plugin, probe};
use serde_json::{Value, json};

/// A home whose model is `fake`, loading `plugins`.
fn home(fake: &FakeLlm, plugins: &[PathBuf], extra: &str) -> Hearth {
    Hearth::with_plugins(
        plugins,
        &format!(
            "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n{extra}",
            fake.url()
        ),
    )
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

/// `hearth chat -m text`, not waited for.
fn ask(h: &Hearth, text: &str) -> Child {
    h.command(&["chat", "-m", text, "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hearth chat")
}

/// The reply `ask` got.
fn reply(chat: Child) -> String {
    let out = chat.wait_with_output().expect("wait for hearth chat");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn eventually(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The audit row of the last call of `tool`: `(outcome, detail)`.
fn audited(h: &Hearth, tool: &str) -> (String, Option<String>) {
    let mut row = None;
    eventually(Duration::from_secs(10), "the audit row", || {
        row = h
            .db()
            .query_row(
                "SELECT outcome, detail FROM audit WHERE tool = ?1 ORDER BY id DESC LIMIT 1",
                [tool],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok();
        row.is_some()
    });
    row.expect("a row")
}

/// The channel events the probe recorded, parsed.
fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn stop_kills_a_running_shell_command_within_a_second_and_the_reply_says_so() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "shell_exec",
        &json!({ "command": "sleep 600", "timeout_s": 600 }),
    ));
    let h = home(&fake, &[plugin("shell")], "");
    let daemon = start(&h);
    let waiting = ask(&h, "wait ten minutes");
    let sleeper = wait_for_descendant(daemon.pid(), &["sleep", "600"], Duration::from_secs(20));
    assert!(!group_gone(sleeper.pgid));
    let asked = Instant::now();
    let stop = ask(&h, "/stop");
    while !group_gone(sleeper.pgid) {
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "the process group outlived /stop by a second"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(
        reply(waiting),
        "Stopped. Cut short: shell_exec (`sleep 600`)."
    );
    assert!(reply(stop).contains("Stopped"));
    let (outcome, _) = audited(&h, "shell_exec");
    assert_eq!(outcome, "cancelled");

    // The session is whole: the next turn's request carries a result for
    // the call that was cut.
    fake.push(anthropic_text("Ready when you are."));
    assert_eq!(h.chat("and now?").ok().trim(), "Ready when you are.");
    let last = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("\"tool_use_id\":\"t1\"") && last.contains("The owner stopped this call"),
        "{last}"
    );
}

#[test]
fn stop_withdraws_a_pending_confirmation_and_the_call_never_runs() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "probe_exec",
        &json!({ "marker": "m1" }),
    ));
    let dir = tempfile::tempdir().unwrap();
    let (log, exec_log) = (dir.path().join("events"), dir.path().join("exec"));
    let h = home(
        &fake,
        &[probe()],
        &format!(
            "[plugins.probe]\nevents = {log:?}\nexec_log = {exec_log:?}\n\
             [owner.identities]\nprobe = [\"owner\"]\n"
        ),
    )
    .in_mode("development");
    let _daemon = start(&h);
    let waiting = ask(&h, "run it");
    eventually(Duration::from_secs(20), "the confirmation card", || {
        events(&log).iter().any(|e| e["kind"] == "confirmation")
    });
    let stop = ask(&h, "/stop");
    assert_eq!(
        reply(waiting),
        "Stopped. Cut short: probe_exec, its approval request was withdrawn."
    );
    reply(stop);
    assert!(!exec_log.exists(), "the withdrawn call ran");
    let (state, by): (String, String) = h
        .db()
        .query_row("SELECT state, decided_by FROM confirmations", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((state.as_str(), by.as_str()), ("expired", "stop"));
    let decided = events(&log)
        .into_iter()
        .find(|e| e["kind"] == "confirmation_decided")
        .expect("the card was taken down");
    assert_eq!(decided["decided_by"], "stop");
    // The audit thread writes the row; the reply may come first.
    let audited = || -> Option<(String, String)> {
        h.db()
            .query_row(
                "SELECT outcome, approval FROM audit WHERE tool = 'probe_exec'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok()
    };
    eventually(Duration::from_secs(10), "the audit row", || {
        audited().is_some()
    });
    assert_eq!(
        audited(),
        Some(("cancelled".to_owned(), "cancelled".to_owned()))
    );
}

#[test]
fn stop_kills_a_lua_tool_stuck_in_a_loop() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(None, "t1", "spin", &json!({})));
    let h = home(&fake, &[], "[scripts]\nmax_deadline_ms = 60000\n");
    h.write(
        "tools/spin.lua",
        "return {\n  name = \"spin\",\n  description = \"Spins.\",\n  deadline_ms = 60000,\n  \
         run = function(args, ctx)\n    while true do end\n  end,\n}\n",
    );
    let _daemon = start(&h);
    let waiting = ask(&h, "spin");
    eventually(Duration::from_secs(20), "the model's call", || {
        !fake.requests().is_empty()
    });
    // The worker has the script by now, or gets it and is killed at once.
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let stop = ask(&h, "/stop");
    assert_eq!(reply(waiting), "Stopped. Cut short: spin.");
    assert!(asked.elapsed() < Duration::from_secs(10));
    reply(stop);
    let (outcome, detail) = audited(&h, "spin");
    assert_eq!(outcome, "cancelled");
    let detail = detail.unwrap_or_default();
    assert!(detail.contains("the owner stopped the turn"), "{detail}");
    // The pool goes on: the next call of a Lua tool runs.
    fake.push(anthropic_tool_use(
        None,
        "t2",
        "convert_units",
        &json!({ "value": 1, "from": "km", "to": "m" }),
    ));
    fake.push(anthropic_text("1000 m."));
    assert_eq!(h.chat("convert").ok().trim(), "1000 m.");
}

#[test]
fn a_plugin_call_is_told_to_stop_and_one_that_cannot_is_left_behind() {
    for cannot in [false, true] {
        let fake = FakeLlm::start();
        fake.push(anthropic_tool_use(
            None,
            "t1",
            "probe_wait",
            &json!({ "ms": 20_000 }),
        ));
        let dir = tempfile::tempdir().unwrap();
        let exec_log = dir.path().join("exec");
        let h = home(
            &fake,
            &[probe()],
            &format!("[plugins.probe]\nexec_log = {exec_log:?}\ncannot_cancel = {cannot}\n"),
        );
        let _daemon = start(&h);
        let waiting = ask(&h, "wait");
        eventually(Duration::from_secs(20), "the model's call", || {
            !fake.requests().is_empty()
        });
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        let stop = ask(&h, "/stop");
        let said = reply(waiting);
        reply(stop);
        if cannot {
            assert_eq!(
                said,
                "Stopped. Cut short: probe_wait, which did not stop in time and was left to \
                 finish; its result is ignored."
            );
            assert!(!exec_log.exists(), "it cannot have ended yet");
        } else {
            assert_eq!(said, "Stopped. Cut short: probe_wait.");
            assert!(asked.elapsed() < Duration::from_secs(5));
            let ended = std::fs::read_to_string(&exec_log).unwrap();
            assert!(ended.starts_with("cancelled call-"), "{ended}");
        }
    }
}

#[test]
fn live_output_reaches_the_turns_channel_while_the_tool_runs() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "shell_exec",
        &json!({ "command": "echo first; sleep 1; echo second" }),
    ));
    fake.push(anthropic_text("Done."));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let h = home(
        &fake,
        &[plugin("shell"), probe()],
        &format!(
            "[plugins.probe]\nevents = {log:?}\ntool_output = true\ninject = [\"go\"]\n\
             [owner.identities]\nprobe = [\"owner\"]\n"
        ),
    );
    let _daemon = start(&h);
    let first_seen = {
        let start = Instant::now();
        loop {
            let seen = events(&log)
                .into_iter()
                .find(|e| e["kind"] == "tool_output");
            if let Some(seen) = seen {
                break seen;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no tool output");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    assert_eq!(first_seen["text"], "first\n");
    assert_eq!(first_seen["tool"], "shell_exec");
    assert_eq!(first_seen["call"], "t1");
    assert_eq!(first_seen["turn"], "inject-0");
    assert_eq!(first_seen["command"], "echo first; sleep 1; echo second");
    // Seen while the command still ran: its second line had not come.
    let so_far = events(&log);
    assert!(
        !so_far.iter().any(|e| e["text"] == "second\n"),
        "the first line was shown only at the end"
    );
    eventually(Duration::from_secs(20), "the call's end", || {
        events(&log).iter().any(|e| e["ended"] == "ok")
    });
    let shown: String = events(&log)
        .iter()
        .filter(|e| e["kind"] == "tool_output")
        .map(|e| e["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(shown, "first\nsecond\n");
}

#[test]
fn a_plugins_output_flood_is_paced_and_bounded_by_the_host() {
    const FLOOD: usize = 8 * 1024 * 1024;
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "probe_wait",
        &json!({ "ms": 1500, "output": ["hello"], "flood": FLOOD }),
    ));
    fake.push(anthropic_text("Flooded."));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let h = home(
        &fake,
        &[probe()],
        &format!(
            "[plugins.probe]\nevents = {log:?}\ntool_output = true\ninject = [\"go\"]\n\
             [owner.identities]\nprobe = [\"owner\"]\n"
        ),
    );
    let _daemon = start(&h);
    eventually(Duration::from_secs(30), "the call's end", || {
        events(&log).iter().any(|e| e["ended"].is_string())
    });
    let shown: Vec<Value> = events(&log)
        .into_iter()
        .filter(|e| e["kind"] == "tool_output")
        .collect();
    let text: usize = shown
        .iter()
        .map(|e| e["text"].as_str().unwrap().len())
        .sum();
    let skipped: u64 = shown
        .iter()
        .map(|e| e["skipped"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(text as u64 + skipped, (FLOOD + "hello\n".len()) as u64);
    assert!(text <= 1024 * 1024, "{text} bytes shown");
    assert!(
        shown
            .iter()
            .all(|e| e["text"].as_str().unwrap().len() <= 16 * 1024),
        "an event over 16 KiB"
    );
    // Over about 1.5 s, a batch at most every 250 ms, and the end.
    assert!(shown.len() <= 12, "{} events", shown.len());
    assert!(shown[0]["text"].as_str().unwrap().starts_with("hello\n"));
}

#[test]
fn a_plugin_cannot_show_output_for_a_call_it_is_not_running() {
    let h = Hearth::with_plugins(&[probe()], "");
    let _daemon = h.daemon();
    let cases = [
        (
            json!({ "call_id": "call-999", "stream": "stdout", "text": "hi" }),
            r#"no call "call-999" of plugin probe is running"#,
        ),
        (
            json!({ "call_id": "call-1", "stream": "sideways", "text": "hi" }),
            "unknown variant",
        ),
        (
            json!({ "call_id": "call-1", "stream": "stdout", "text": "x".repeat(300 * 1024) }),
            "over the 262144-byte limit",
        ),
        (
            json!({ "call_id": "call-1", "stream": "stdout", "text": "x".repeat(100 * 1024) }),
            "over the 65536-byte limit",
        ),
    ];
    for (request, expected) in cases {
        let args = json!({ "service": "tool.output", "request": request });
        let answer = h
            .cmd_with_input(&["tool", "call", "probe_host", "-"], &args.to_string())
            .json();
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(expected), "{expected}: {answer}");
    }
    // The daemon still serves.
    let info = h
        .cmd(&["tool", "call", "probe_host", r#"{"service":"host.info"}"#])
        .json();
    assert_eq!(info["answer"]["abi_major"], 1);
}

#[test]
fn an_older_c_plugin_takes_a_call_id_it_ignores_and_refuses_a_cancel_it_does_not_know() {
    let h = Hearth::with_plugins(&[plugin("hello_c")], "");
    let rt = h.runtime();
    // In a turn, the call carries a call_id; the C plugin's reader skips it.
    let scope = Arc::new(CallScope::new("t1", "hello", None));
    let hello = scope::within(Arc::clone(&scope), || {
        rt.tools.call("hello", json!({"name": "turn"}))
    })
    .unwrap();
    assert_eq!(hello, json!({ "greeting": "hello, turn" }));
    let c = rt
        .plugins
        .active()
        .iter()
        .find(|p| p.name == "hello-c")
        .cloned()
        .expect("hello-c is loaded");
    let payload = json!({ "call_id": "call-1" }).to_string();
    let refused = c.invoke("tool.cancel", payload.as_bytes()).unwrap_err();
    assert!(
        refused.to_string().contains("only answers tool.call"),
        "{refused}"
    );
    // Asked as /stop asks it: logged, nothing more.
    c.cancel_call("call-1");
    assert!(c.fault().is_none());
    assert_eq!(
        rt.tools.call("hello", json!({"name": "again"})).unwrap(),
        json!({ "greeting": "hello, again" })
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}
