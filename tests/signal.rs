//! The Signal channel end to end: the real `hearth` binary, the real
//! plugin library, a fake signal-cli daemon and a fake model. Messages go
//! in through the event stream and replies come out through JSON-RPC, with
//! confirmations, failures, a hung daemon and a killed hearth on the way.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{
    FakeLlm, Reply, anthropic_text, anthropic_text_paced, anthropic_tool_use,
};
use hearth_tests::fake_signal::{FakeSignal, Sent};
use hearth_tests::{Daemon, Hearth, plugin, probe};
use serde_json::json;

const ACCOUNT: &str = "+15550000001";
const OWNER: &str = "+15550000002";
const STRANGER: &str = "+15559999999";
const GROUP: &str = "R3JvdXBPbmVHcm91cE9uZUdyb3VwT25lR3JvdXBPbmU=";
const WAIT: Duration = Duration::from_secs(30);

/// A home loading the Signal plugin (pointed at `signal`) and the probe,
/// with `[plugins.signal]` extended by `signal_extra` and the config by
/// `extra`.
fn home(llm: &FakeLlm, signal: &FakeSignal, signal_extra: &str, extra: &str) -> Hearth {
    Hearth::with_plugins(
        &[plugin("signal"), probe()],
        &format!(
            "[plugins.signal]\nurl = \"{}\"\naccount = \"{ACCOUNT}\"\n\
             allowed_numbers = [\"{OWNER}\"]\n{signal_extra}\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n{extra}",
            signal.url(),
            llm.url()
        ),
    )
}

/// Starts the daemon and waits for the plugin's event stream.
fn start(h: &Hearth, signal: &FakeSignal) -> Daemon {
    let before = signal.streams_opened();
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    assert!(
        signal.wait_for_streams(before + 1, WAIT),
        "no event stream opened; log:\n{}",
        daemon.logs().join("\n")
    );
    daemon
}

/// Waits until `done` holds, failing with `what` after `timeout`.
fn wait_until(timeout: Duration, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Waits for exactly `n` sends, then a moment longer to see no more come.
fn exactly_sent(signal: &FakeSignal, n: usize) -> Vec<Sent> {
    let sent = signal.wait_for_sent(n, WAIT);
    assert!(sent.len() >= n, "only {} of {n} sent: {sent:?}", sent.len());
    let later = signal.wait_for_sent(n + 1, Duration::from_millis(1500));
    assert_eq!(later.len(), n, "more was sent: {later:?}");
    later
}

/// The rows of the inbox: idempotency key, status and text.
fn inbox(h: &Hearth) -> Vec<(String, String, String)> {
    let db = h.db();
    let mut query = db
        .prepare("SELECT idempotency_key, status, text FROM inbox ORDER BY id")
        .unwrap();
    query
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Everything the model was shown, as one string.
fn model_input(llm: &FakeLlm) -> String {
    llm.requests()
        .iter()
        .map(|r| r.body["messages"].to_string())
        .collect()
}

#[test]
fn an_owners_message_is_answered_with_signal_styles() {
    let llm = FakeLlm::start();
    // Streamed over a few hundred milliseconds: a turn over before the
    // typing thread first looks needs no indicator, and shows none.
    llm.push(anthropic_text_paced(
        &["Hello **there**, ", "`code` 🦀 ", "*you*"],
        Duration::from_millis(150),
    ));
    let signal = FakeSignal::start(ACCOUNT);
    let h = home(&llm, &signal, "", "");
    let _daemon = start(&h, &signal);

    let timestamp = signal.push_message(OWNER, "hi, agent");
    let sent = exactly_sent(&signal, 1);
    assert_eq!(sent[0].recipients, [OWNER]);
    assert_eq!(sent[0].message, "Hello there, code 🦀 you");
    assert_eq!(
        sent[0].text_styles,
        ["6:5:BOLD", "13:4:MONOSPACE", "21:3:ITALIC"]
    );
    assert!(model_input(&llm).contains("hi, agent"));
    let key = format!("{OWNER}:{timestamp}");
    assert_eq!(
        inbox(&h),
        [(key, "done".to_owned(), "hi, agent".to_owned())]
    );
    // "typing…" while the agent worked, cleared when it was done.
    assert!(signal.wait_for_requests(WAIT, |requests| {
        requests
            .iter()
            .any(|r| r.method == "sendTyping" && r.params["stop"] == true)
    }));
    let first_typing = &signal.requests_for("sendTyping")[0];
    assert_eq!(first_typing.params["recipient"], json!([OWNER]));
    assert_eq!(first_typing.params["account"], ACCOUNT);
}

#[test]
fn a_tool_confirmation_is_answered_from_signal() {
    for (answer, approve) in [("yes", true), ("No", false)] {
        let llm = FakeLlm::start();
        llm.push(anthropic_tool_use(
            None,
            "t1",
            "probe_exec",
            &json!({ "marker": "m1" }),
        ));
        llm.push(anthropic_text("finished"));
        let signal = FakeSignal::start(ACCOUNT);
        let dir = tempfile::tempdir().unwrap();
        let exec_log = dir.path().join("exec");
        let h = home(
            &llm,
            &signal,
            "",
            &format!(
                "[plugins.probe]\nexec_log = {exec_log:?}\n[policy]\nconfirm_timeout_ms = 60000"
            ),
        )
        .in_mode("development");
        let _daemon = start(&h, &signal);

        signal.push_message(OWNER, "run it");
        let card = signal.wait_for_sent(1, WAIT)[0].message.clone();
        assert!(
            card.contains("Approval needed") && card.contains("probe_exec") && card.contains("m1"),
            "{card}"
        );
        let code = card
            .rsplit("Reply yes ")
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned();
        // A stranger's answer is dropped before it reaches the host.
        signal.push_message(STRANGER, &format!("yes {code}"));
        signal.push_message(OWNER, &format!("{answer} {}", code.to_lowercase()));

        let sent = exactly_sent(&signal, 3);
        let outcome = if approve { "Approved" } else { "Denied" };
        assert!(sent[1].message.starts_with(outcome), "{sent:?}");
        assert_eq!(sent[2].message, "finished");
        assert_eq!(exec_log.exists(), approve, "{answer}: did the tool run?");
        let (state, by): (String, String) = h
            .db()
            .query_row("SELECT state, decided_by FROM confirmations", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let state_wanted = if approve { "approved" } else { "denied" };
        assert_eq!((state.as_str(), by.as_str()), (state_wanted, OWNER));
        assert_eq!(inbox(&h).len(), 1, "answers are not chat messages");
    }
}

#[test]
fn a_failed_send_is_retried_and_arrives_once() {
    let llm = FakeLlm::start();
    llm.push(anthropic_text("the answer"));
    let signal = FakeSignal::start(ACCOUNT);
    signal.fail_next_send(-3, "Failed to send message: network down (IOException)");
    signal.fail_next_send(-5, "Failed to send message due to rate limiting");
    let h = home(&llm, &signal, "", "");
    let _daemon = start(&h, &signal);

    signal.push_message(OWNER, "question");
    assert!(signal.wait_for_requests(WAIT, |r| r.iter().any(|r| r.method == "send")));
    wait_until(WAIT, "the failure recorded in the outbox", || {
        let error: Option<String> = h
            .db()
            .query_row(
                "SELECT last_error FROM outbox WHERE status = 'pending'",
                [],
                |r| r.get(0),
            )
            .ok()
            .flatten();
        error.is_some_and(|e| e.contains("signal-cli error -3"))
    });
    let sent = exactly_sent(&signal, 1);
    assert_eq!(sent[0].message, "the answer");
    assert_eq!(signal.requests_for("send").len(), 3);
    let (status, attempts): (String, i64) = h
        .db()
        .query_row("SELECT status, attempts FROM outbox", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((status.as_str(), attempts), ("delivered", 3));
}

#[test]
fn a_hung_daemon_is_detected_and_the_stream_reopened() {
    let llm = FakeLlm::start();
    llm.push(anthropic_text("still here"));
    let signal = FakeSignal::start(ACCOUNT);
    signal.keepalive_every(Duration::from_millis(300));
    let h = home(&llm, &signal, "keepalive_timeout_s = 2", "");
    let mut daemon = start(&h, &signal);

    signal.hang(true);
    assert!(
        signal.wait_for_streams(2, Duration::from_secs(2 + 5)),
        "no new stream within keepalive_timeout + 5 s"
    );
    daemon.wait_for_log(
        |l| l.contains("signal event stream down") && l.contains("not even a keep-alive"),
        WAIT,
    );
    signal.hang(false);
    signal.push_message(OWNER, "are you there?");
    assert_eq!(exactly_sent(&signal, 1)[0].message, "still here");

    // A stream that is silent does not hold up shutdown.
    signal.hang(true);
    daemon.signal(libc::SIGTERM);
    let (status, took) = daemon.wait_exit(WAIT);
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
}

#[test]
fn one_shot_commands_open_no_stream() {
    let llm = FakeLlm::start();
    let signal = FakeSignal::start(ACCOUNT);
    let h = home(&llm, &signal, "", "");
    let listed = h.cmd(&["plugins"]).ok().to_owned();
    assert!(listed.contains("channel signal"), "{listed}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(signal.streams_opened(), 0);
    assert!(signal.requests().is_empty());
}

#[test]
fn kill_9_loses_nothing_and_answers_each_message_once() {
    let llm = FakeLlm::start();
    llm.push(Reply::Hang);
    for n in 0..8 {
        llm.push(anthropic_text(&format!("reply {n}")));
    }
    let signal = FakeSignal::start(ACCOUNT);
    let h = home(&llm, &signal, "", "");
    let mut daemon = start(&h, &signal);

    let first = signal.push_message(OWNER, "message 1");
    signal.push_message(OWNER, "message 2");
    signal.push_message(OWNER, "message 3");
    assert!(llm.wait_for_requests(1, WAIT), "the model was never asked");
    wait_until(WAIT, "three messages stored", || inbox(&h).len() == 3);
    daemon.kill9();

    signal.push_message(OWNER, "message 4");
    signal.push_message(OWNER, "message 5");
    let _daemon = start(&h, &signal);
    // signal-cli delivering the first message again: stored once.
    let mut again = hearth_tests::fake_signal::envelope(OWNER, first);
    again["dataMessage"] = json!({"timestamp": first, "message": "message 1"});
    signal.push_envelope(again);

    let sent = exactly_sent(&signal, 5);
    assert!(sent.iter().all(|s| s.recipients == [OWNER]));
    let rows = inbox(&h);
    let texts: Vec<&str> = rows.iter().map(|(_, _, text)| text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "message 1",
            "message 2",
            "message 3",
            "message 4",
            "message 5"
        ]
    );
    assert!(
        rows.iter().all(|(_, status, _)| status == "done"),
        "{rows:?}"
    );
    // One request hung when hearth died, then one per message.
    assert_eq!(llm.requests().len(), 6);
}

#[test]
fn a_long_reply_is_split_into_valid_messages() {
    let mut lines = Vec::new();
    while lines
        .iter()
        .map(|l: &String| l.chars().count() + 1)
        .sum::<usize>()
        < 10_001
    {
        let n = lines.len();
        lines.push(format!(
            "Line {n:03} of a long answer, with a crab 🦀 now and then."
        ));
    }
    let text = lines.join("\n");
    assert!((10_000..10_100).contains(&text.chars().count()));
    let llm = FakeLlm::start();
    llm.push(anthropic_text(&text));
    let signal = FakeSignal::start(ACCOUNT);
    // The third part fails once: the retry must not resend the first two.
    signal.fail_send_after(2, -3, "Failed to send message: timeout (IOException)");
    let h = home(&llm, &signal, "", "");
    let _daemon = start(&h, &signal);

    signal.push_message(OWNER, "tell me everything");
    wait_until(WAIT, "the reply delivered", || {
        h.db()
            .query_row("SELECT status FROM outbox", [], |r| r.get::<_, String>(0))
            .is_ok_and(|s| s == "delivered")
    });
    let sent = signal.sent();
    assert!(sent.len() >= 6, "{} parts", sent.len());
    for part in &sent {
        assert!(part.message.len() <= 2000, "{} bytes", part.message.len());
        assert!(!part.message.trim().is_empty());
        assert_eq!(part.recipients, [OWNER]);
    }
    let parts: Vec<&str> = sent.iter().map(|s| s.message.as_str()).collect();
    // Cut at line breaks, each dropped once: nothing lost, nothing twice.
    assert_eq!(parts.join("\n"), text);
}

#[test]
fn strangers_and_unconfigured_groups_get_nothing() {
    let llm = FakeLlm::start();
    llm.push(anthropic_text("hello group"));
    let signal = FakeSignal::start(ACCOUNT);
    let h = home(&llm, &signal, &format!("groups = [\"{GROUP}\"]"), "");
    let daemon = start(&h, &signal);

    signal.push_message(STRANGER, "let me in");
    signal.push_message(STRANGER, "please");
    signal.push_group_message(OWNER, "T3RoZXJHcm91cA==", "other group");
    signal.push_group_message(STRANGER, GROUP, "stranger in our group");
    signal.push_group_message(OWNER, GROUP, "owner in our group");

    let sent = exactly_sent(&signal, 1);
    assert_eq!(sent[0].group_id.as_deref(), Some(GROUP));
    assert!(sent[0].recipients.is_empty());
    assert_eq!(llm.requests().len(), 1);
    let seen = model_input(&llm);
    assert!(seen.contains("owner in our group"), "{seen}");
    for dropped in [
        "let me in",
        "please",
        "other group",
        "stranger in our group",
    ] {
        assert!(!seen.contains(dropped), "{dropped} reached the model");
    }
    assert_eq!(inbox(&h).len(), 1);
    let logged = daemon
        .logs()
        .iter()
        .filter(|l| l.contains("signal message dropped") && l.contains(STRANGER))
        .count();
    assert_eq!(logged, 1, "a stranger is logged once an hour");
}

#[test]
fn attachments_and_quotes_reach_the_agent() {
    let llm = FakeLlm::start();
    llm.push(anthropic_text("got it"));
    let signal = FakeSignal::start(ACCOUNT);
    let small = signal.add_attachment(b"grocery list: eggs", "text/plain", "list.txt");
    let big = signal.add_attachment(&[7u8; 500], "image/png", "big.png");
    let h = home(&llm, &signal, "max_attachment_bytes = 100", "");
    let _daemon = start(&h, &signal);

    signal.push_data_message(
        OWNER,
        json!({
            "message": "see these",
            "attachments": [small, big],
            "quote": {"id": 1, "author": ACCOUNT, "authorNumber": ACCOUNT, "text": "what to buy?", "attachments": []},
        }),
    );
    exactly_sent(&signal, 1);
    let (_, _, text) = inbox(&h).remove(0);
    assert!(text.starts_with("> what to buy?\nsee these"), "{text}");
    assert!(
        text.contains("big.png not saved: 500 bytes, over the 100-byte limit"),
        "{text}"
    );
    let saved = std::fs::read_dir(h.home().join("attachments/signal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect::<Vec<_>>();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(std::fs::read(&saved[0]).unwrap(), b"grocery list: eggs");
    assert!(model_input(&llm).contains("list.txt"));
}

#[test]
fn bad_config_is_refused_naming_the_key() {
    let cases = [
        ("alowed_numbers = []", "unknown key `alowed_numbers`"),
        (
            "allowed_numbers = [\"+15550000002\", \"+12\"]",
            "allowed_numbers[1]: \"+12\" is not an E.164 number",
        ),
        (
            "keepalive_timeout_s = 0",
            "keepalive_timeout_s: expected an integer",
        ),
    ];
    for (line, message) in cases {
        let h = Hearth::with_plugins(
            &[plugin("signal")],
            &format!("[plugins.signal]\nrequired = true\naccount = \"{ACCOUNT}\"\n{line}\n"),
        );
        let out = h.cmd(&["check"]).fails();
        assert!(out.contains(message), "{line}: {out}");
    }
    // An empty table is "not configured": fine, and no channel.
    let h = Hearth::with_plugins(&[plugin("signal")], "[plugins.signal]\n");
    h.cmd(&["check"]).ok();
}

#[test]
fn files_attached_by_the_agent_follow_the_text() {
    let llm = FakeLlm::start();
    let signal = FakeSignal::start(ACCOUNT);
    let h = home(&llm, &signal, "", "");
    let chart = h.write("out/chart.png", "not really a png");
    let report = h.write("out/q3; final.pdf", "%PDF-1.4 report");
    for (id, path) in [("t1", &chart), ("t2", &report)] {
        llm.push(anthropic_tool_use(
            None,
            id,
            "attach_file",
            &json!({ "path": path.display().to_string() }),
        ));
    }
    llm.push(anthropic_text("Here they are."));
    let _daemon = start(&h, &signal);

    signal.push_message(OWNER, "send me the files");
    let sent = exactly_sent(&signal, 3);
    assert_eq!(sent[0].message, "Here they are.");
    assert!(sent[0].attachments.is_empty());
    let files: Vec<_> = sent[1..].iter().map(|s| s.attachments.clone()).collect();
    assert_eq!(
        files,
        [
            vec![("chart.png".to_owned(), "image/png".to_owned(), 16)],
            vec![("q3; final.pdf".to_owned(), "application/pdf".to_owned(), 15)],
        ]
    );
    assert!(sent.iter().all(|s| s.recipients == [OWNER]));
}
