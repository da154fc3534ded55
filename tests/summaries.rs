//! Long output summarized by the cheap model (`[llm.cheap]`): a
//! `shell_exec` over its cap returns the summary beside its head, tail and
//! log; a failed background process's notice carries a summary of its last
//! stderr lines; a cheap model that hangs costs at most its timeout; and
//! without one nothing changes. The fake model plays both models, the
//! cheap one picked out by its system prompt.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, Recorded, Reply, anthropic_text, system_prompt};
use hearth_tests::{Daemon, Hearth, plugin};
use serde_json::Value;

/// What the cheap model's requests, and no other, have in their system
/// prompt.
const CHEAP: &str = "You summarize long output";

/// A home with the shell plugin and both models on `fake`; `cheap` adds
/// the `[llm.cheap]` table with these keys.
fn home(fake: &FakeLlm, cheap: Option<&str>) -> Hearth {
    let cheap = cheap
        .map(|keys| format!("[llm.cheap]\nmodel = \"fake-cheap\"\n{keys}\n"))
        .unwrap_or_default();
    Hearth::with_plugins(
        &[plugin("shell"), plugin("mcp")],
        &format!(
            "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\nretry_base_ms = 10\nmax_retries = 0\n{cheap}",
            fake.url()
        ),
    )
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

/// The request the cheap model was sent.
fn summary_request(fake: &FakeLlm) -> Recorded {
    fake.requests()
        .into_iter()
        .find(|r| system_prompt(&r.body).contains(CHEAP))
        .expect("a summary request")
}

/// `shell_exec` through the running daemon, and how long it took.
fn exec(h: &Hearth, command: &str) -> (Value, Duration) {
    let args = serde_json::json!({ "command": command }).to_string();
    let started = Instant::now();
    let result = h.cmd(&["tool", "call", "shell_exec", &args]).json();
    (result, started.elapsed())
}

#[test]
fn ten_thousand_lines_come_back_summarized_with_head_tail_and_log() {
    let fake = FakeLlm::start();
    fake.push_for(
        CHEAP,
        anthropic_text("It counted from 1 to 10000; the last line is 10000. No errors."),
    );
    let h = home(&fake, Some("timeout_ms = 10000"));
    let _daemon = start(&h);
    let (result, _) = exec(&h, "seq 1 10000");
    assert_eq!(
        result["summary"],
        "It counted from 1 to 10000; the last line is 10000. No errors."
    );
    assert_eq!(result["truncated"], true);
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("1\n2\n"), "{stdout:.40}");
    assert!(stdout.trim_end().ends_with("10000"), "{stdout}");
    let log = result["log"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(log).unwrap().lines().count(),
        10_000
    );

    // The cheap model read what the command was and its output's ends.
    let summary = summary_request(&fake);
    assert_eq!(summary.body["model"], "fake-cheap");
    let question = summary.body["messages"].to_string();
    for part in [
        "`seq 1 10000`",
        "exited with code 0",
        "10000 lines",
        "\\n9999\\n10000",
    ] {
        assert!(question.contains(part), "{part}: {question:.600}");
    }
    // It counts as usage of its own kind (committed by the usage writer
    // within moments).
    let kinds = || -> Vec<String> {
        h.db()
            .prepare("SELECT kind FROM usage")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while kinds().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(kinds(), ["summary"]);
}

#[test]
fn an_oversized_mcp_answer_is_summarized_too() {
    let fake = FakeLlm::start();
    fake.push_for(
        CHEAP,
        anthropic_text("Two megabytes of x between HEAD and TAIL."),
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/mcp/tests/fixtures/script_server.mjs");
    let servers = format!(
        "timeout_ms = 10000\n[plugins.mcp.servers.script]\ncommand = \"node\"\n\
         args = [{script:?}]\nrisk = \"read\"\n"
    );
    let h = home(&fake, Some(&servers));
    let _daemon = start(&h);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !h.cmd(&["mcp", "list"]).ok().contains("mcp.script.big") {
        assert!(Instant::now() < deadline, "the server's tools never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    let args = r#"{"bytes": 2000000}"#;
    let result = h.cmd(&["tool", "call", "mcp.script.big", args]).json();
    assert_eq!(result["truncated"], true);
    assert_eq!(
        result["summary"],
        "Two megabytes of x between HEAD and TAIL."
    );
    let question = summary_request(&fake).body["messages"].to_string();
    assert!(
        question.contains(r#"the tool \"big\" of the MCP server \"script\""#),
        "{question:.300}"
    );
    assert!(
        question.contains("HEAD") && question.contains("TAIL"),
        "{question:.300}"
    );
}

#[test]
fn a_hanging_cheap_model_costs_at_most_its_timeout() {
    let fake = FakeLlm::start();
    fake.push_for(CHEAP, Reply::Hang);
    let h = home(&fake, Some("timeout_ms = 1000"));
    let _daemon = start(&h);
    let (result, took) = exec(&h, "seq 1 10000");
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert!(result.get("summary").is_none(), "{result}");
    let why = result["summary_error"].as_str().unwrap();
    assert!(why.contains("took longer than 1 s"), "{why}");
    assert!(result["log"].is_string());
    assert!(result["stdout"].as_str().unwrap().contains("10000"));
}

#[test]
fn without_a_cheap_model_a_long_result_is_head_tail_and_log() {
    let fake = FakeLlm::start();
    let h = home(&fake, None);
    let _daemon = start(&h);
    let (result, _) = exec(&h, "seq 1 10000");
    assert_eq!(result["truncated"], true);
    assert!(result.get("summary").is_none() && result.get("summary_error").is_none());
    assert!(fake.requests().is_empty());
    // A short result is never summarized, with or without.
    let (short, _) = exec(&h, "echo hi");
    assert_eq!(short["stdout"], "hi\n");
}

#[test]
fn a_failed_background_process_is_reported_with_a_summary_of_its_stderr() {
    let fake = FakeLlm::start();
    fake.push_for(
        CHEAP,
        anthropic_text("It failed: err 150 was the last error."),
    );
    // The agent's turn for the notice.
    fake.push(anthropic_text("noted"));
    let h = home(&fake, Some(""));
    let _daemon = start(&h);
    let args = r#"{"command": "seq -f 'err %g' 1 150 >&2; exit 3"}"#;
    h.cmd(&["tool", "call", "process_start", args]).json();
    let notice = || -> Option<String> {
        h.db()
            .query_row("SELECT text FROM inbox WHERE sender = 'hearth'", [], |r| {
                r.get(0)
            })
            .ok()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while notice().is_none() {
        assert!(Instant::now() < deadline, "no notice came");
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = notice().unwrap();
    assert!(text.contains("exited with code 3"), "{text}");
    assert!(
        text.contains(
            "Summary of its last 100 stderr lines (by the cheap model):\nIt failed: err 150 was the last error."
        ),
        "{text}"
    );
    // The cheap model read the last 100 lines, not more.
    let question = summary_request(&fake).body["messages"].to_string();
    assert!(question.contains("err 150"), "{question:.300}");
    assert!(question.contains("err 51\\n"), "{question:.300}");
    assert!(!question.contains("err 50\\n"), "{question:.300}");
}
