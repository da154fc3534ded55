//! The confirmation gate, end to end, through the probe plugin as the
//! channel that shows the request and answers it: a tool with risk `exec`
//! runs only once the owner approves it.

use std::time::Duration;

use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::{Hearth, probe};
use serde_json::json;

/// A home with the probe as a channel; `probe_settings` go in its table.
fn home(fake: &FakeLlm, probe_settings: &str, extra: &str) -> Hearth {
    Hearth::with_plugins(
        &[probe()],
        &format!(
            "[plugins.probe]\n{probe_settings}\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n\
             [owner.identities]\nprobe = [\"owner\"]\n{extra}",
            fake.url()
        ),
    )
    .in_mode("development")
}

/// A model that calls `probe_exec` with marker `m1`, then answers `then`.
fn model_calling_probe_exec(then: &str) -> FakeLlm {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "probe_exec",
        &json!({ "marker": "m1" }),
    ));
    fake.push(anthropic_text(then));
    fake
}

fn start(h: &Hearth) -> hearth_tests::Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

#[test]
fn exec_tools_run_only_with_the_owners_approval() {
    // (probe's answer, whether the tool ran, the outcome, what the model is told)
    let cases = [
        (Some("approve"), true, "approved", "{\\\"ran\\\":true}"),
        (
            Some("deny"),
            false,
            "denied",
            "the owner denied running probe_exec",
        ),
        (
            Some("stranger"),
            false,
            "expired",
            "did not answer within 1 s",
        ),
        (None, false, "expired", "did not answer within 1 s"),
    ];
    for (answer, ran, outcome, told) in cases {
        let fake = model_calling_probe_exec("finished");
        let dir = tempfile::tempdir().unwrap();
        let (events, exec_log) = (dir.path().join("events"), dir.path().join("exec"));
        let confirm = answer.map_or(String::new(), |a| format!("confirm = \"{a}\""));
        let h = home(
            &fake,
            &format!("events = {events:?}\nexec_log = {exec_log:?}\n{confirm}"),
            "[policy]\nconfirm_timeout_ms = 1500",
        );
        let _daemon = start(&h);

        assert_eq!(h.chat("run it").ok().trim(), "finished", "{answer:?}");
        assert_eq!(exec_log.exists(), ran, "{answer:?}: did the tool run?");
        let told_model = fake.requests()[1].body["messages"].to_string();
        assert!(told_model.contains(told), "{answer:?}: {told_model}");

        let (state, by): (String, String) = h
            .db()
            .query_row("SELECT state, decided_by FROM confirmations", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(state, outcome, "{answer:?}");
        let expected_by = match answer {
            Some("approve" | "deny") => "owner",
            _ => "timeout",
        };
        assert_eq!(by, expected_by, "{answer:?}");

        // The channel saw the request, with the exact arguments, and then
        // its outcome.
        let shown = std::fs::read_to_string(&events).unwrap();
        let request = shown
            .lines()
            .find(|l| l.contains("\"kind\":\"confirmation\""))
            .expect("a confirmation event");
        assert!(
            request.contains("\"tool\":\"probe_exec\"") && request.contains("\"marker\":\"m1\""),
            "{request}"
        );
        // The card says when it expires: the timeout after it was asked.
        let card: serde_json::Value = serde_json::from_str(request).unwrap();
        let card = card.get("request").unwrap_or(&card);
        let (asked, expires) = (card["at_ms"].as_i64(), card["expires_at_ms"].as_i64());
        assert_eq!(
            expires.zip(asked).map(|(e, a)| e - a),
            Some(1500),
            "{request}"
        );
        assert!(
            shown.contains(&format!("\"state\":\"{outcome}\"")),
            "{shown}"
        );
    }
}

#[test]
fn without_a_channel_that_can_ask_an_exec_tool_is_refused_at_once() {
    let fake = model_calling_probe_exec("could not");
    let dir = tempfile::tempdir().unwrap();
    let exec_log = dir.path().join("exec");
    let h = home(&fake, &format!("exec_log = {exec_log:?}"), "");
    let _daemon = start(&h);
    assert_eq!(h.chat("run it").ok().trim(), "could not");
    assert!(!exec_log.exists());
    let told_model = fake.requests()[1].body["messages"].to_string();
    assert!(
        told_model.contains("no channel that can ask the owner"),
        "{told_model}"
    );
}

#[test]
fn a_one_shot_tool_call_cannot_ask_and_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (events, exec_log) = (dir.path().join("events"), dir.path().join("exec"));
    let h = Hearth::with_plugins(
        &[probe()],
        &format!(
            "[plugins.probe]\nevents = {events:?}\nexec_log = {exec_log:?}\nconfirm = \"approve\""
        ),
    )
    .in_mode("development");
    let out = h.cmd(&["tool", "call", "probe_exec", r#"{"marker":"x"}"#]);
    let error = out.fails();
    assert!(error.contains("needs the owner's approval"), "{error}");
    assert!(!exec_log.exists());
}

#[test]
fn streamed_text_and_status_reach_a_channel_that_takes_events() {
    let fake = FakeLlm::start();
    fake.push(anthropic_text("Hello from the fake model."));
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events");
    let h = home(
        &fake,
        &format!("events = {events:?}\ninject = [\"hi\"]"),
        "",
    );
    let _daemon = start(&h);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let shown = loop {
        let shown = std::fs::read_to_string(&events).unwrap_or_default();
        if shown.contains("\"busy\":false") && shown.contains("\"kind\":\"delta\"") {
            let after_turn = shown.matches("\"busy\":false").count() >= 2;
            if after_turn {
                break shown;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "events so far: {shown}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let text: String = shown
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == "delta" && e["turn"] == "inject-0")
        .map(|e| e["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(text, "Hello from the fake model.");
    assert!(
        shown.contains("\"kind\":\"status\",\"busy\":true,\"model\":\"fake-model\""),
        "{shown}"
    );
}
