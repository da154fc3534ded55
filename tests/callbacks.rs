//! The host callbacks under load and under abuse: `submit` and `log` from
//! many threads, malformed submissions, and host service calls.

use hearth_tests::{Hearth, probe};
use serde_json::json;

#[test]
fn eight_threads_submit_and_log_100k_times_and_nothing_is_lost() {
    let wait_ms = 500;
    let h = Hearth::with_plugins(
        &[probe()],
        &format!(
            "[daemon]\nqueue_capacity = 256\nqueue_wait_ms = {wait_ms}\n\
             [owner.identities]\nprobe = [{}]\n",
            (0..8)
                .map(|t| format!("\"thread-{t}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let run = h.cmd(&[
        "--log-level",
        "info",
        "tool",
        "call",
        "probe_stress",
        r#"{"threads":8,"per_thread":12500}"#,
    ]);
    let stats = run.json();
    assert_eq!(stats["submitted"], 100_000, "{stats:#}");
    assert_eq!(stats["errors"], 0, "{stats:#}");
    assert_eq!(stats["logged"], 100_000, "{stats:#}");
    // A call waits at most for room in the queue and then for the commit,
    // each bounded by queue_wait_ms; allow scheduling slack on top.
    let bound_us = 2 * wait_ms * 1000 + 250_000;
    assert!(
        stats["max_submit_us"].as_u64().unwrap() <= bound_us,
        "{stats:#}"
    );
    assert!(
        stats["max_log_us"].as_u64().unwrap() <= wait_ms * 1000 + 250_000,
        "{stats:#}"
    );

    // Every message is stored exactly once...
    let db = h.db();
    let (rows, keys): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT idempotency_key) FROM inbox WHERE channel = 'probe'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((rows, keys), (100_000, 100_000));
    // ...and every log line reached the host's log.
    let logged = run
        .stderr
        .lines()
        .filter(|l| l.contains("stress log "))
        .count();
    assert_eq!(logged, 100_000);
}

#[test]
fn malformed_submissions_are_refused_and_good_ones_stored_once() {
    let h = Hearth::with_plugins(&[probe()], "[owner.identities]\nprobe = [\"+100\"]\n");
    let message = |channel: &str, key: &str, text: &str| {
        json!({"type": "message", "channel": channel, "idempotency_key": key,
               "sender": "+100", "text": text})
        .to_string()
    };
    let huge = message("probe", "big", &"x".repeat(2 << 20));
    let cases = [
        ("not json".to_owned(), "Err(Invalid)"),
        (r#"{"type":"message"}"#.to_owned(), "Err(Invalid)"),
        (r#"{"type":"unheard_of"}"#.to_owned(), "Err(Invalid)"),
        (message("telegram", "k1", "spoofed channel"), "Err(Invalid)"),
        (message("probe", "", "empty key"), "Err(Invalid)"),
        (
            message("probe", &"k".repeat(300), "long key"),
            "Err(Invalid)",
        ),
        (huge, "Err(Invalid)"),
        ("\u{0}\u{1}".to_owned(), "Err(Invalid)"),
        (message("probe", "k1", "first"), "Ok(())"),
        (message("probe", "k1", "resubmitted"), "Ok(())"),
        // A stranger is told nothing (acknowledged) and nothing is stored.
        (
            json!({"type": "message", "channel": "probe", "idempotency_key": "s1",
                "sender": "+999", "text": "let me in"})
            .to_string(),
            "Ok(())",
        ),
        (
            r#"{"type":"channel_status","state":"degraded","detail":"slow"}"#.to_owned(),
            "Ok(())",
        ),
    ];
    for (raw, expected) in cases {
        let args = json!({ "raw": raw }).to_string();
        let result = h
            .cmd_with_input(&["tool", "call", "probe_submit", "-"], &args)
            .json();
        assert_eq!(result["result"], expected, "submission {:.80}", raw);
    }
    let texts: Vec<String> = h
        .db()
        .prepare("SELECT text FROM inbox")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(texts, ["first"]);
}

#[test]
fn host_services_answer_and_unknown_ones_are_refused() {
    let h = Hearth::with_plugins(&[probe()], "");
    let info = h
        .cmd(&["tool", "call", "probe_host", r#"{"service":"host.info"}"#])
        .json();
    assert_eq!(info["answer"]["abi_major"], 1);
    assert_eq!(info["answer"]["abi_minor"], 1);
    assert_eq!(info["answer"]["home"], h.home().display().to_string());
    // A CLI command's log keeps warnings and errors only: the plugin it
    // loaded is told so, and hands nothing quieter over.
    assert_eq!(info["answer"]["log_level"], "warn", "{info}");
    let unknown = h
        .cmd(&["tool", "call", "probe_host", r#"{"service":"kv.nuke"}"#])
        .json();
    assert!(
        unknown["error"]
            .as_str()
            .unwrap()
            .contains("unknown host service"),
        "{unknown}"
    );
}

#[test]
fn agent_notify_stores_a_notice_once_and_refuses_bad_requests() {
    let h = Hearth::with_plugins(&[probe()], "");
    let rt = h.runtime();
    let notify = |request: serde_json::Value| {
        rt.tools
            .call(
                "probe_host",
                json!({ "service": "agent.notify", "request": request }),
            )
            .unwrap()
    };
    let long = "x".repeat(16 * 1024 + 1);
    let refusals = [
        (json!({ "text": "hi" }), "missing field `key`"),
        (json!({ "key": "", "text": "hi" }), "field `key`"),
        (
            json!({ "key": "k".repeat(300), "text": "hi" }),
            "field `key`",
        ),
        (json!({ "key": "k", "text": "  " }), "field `text`"),
        (json!({ "key": "k", "text": long }), "field `text`"),
        (json!({ "key": 5, "text": "hi" }), "invalid type"),
        (json!("just a string"), "agent.notify"),
    ];
    for (request, expected) in refusals {
        let answer = notify(request.clone());
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(expected), "{request}: {answer}");
    }
    for _ in 0..2 {
        let answer = notify(json!({ "key": "job-1", "text": "the job failed" }));
        assert_eq!(answer["answer"], json!({}), "{answer}");
    }
    rt.stop(std::time::Duration::from_secs(5)).unwrap();
    let stored: Vec<(String, String, String)> = h
        .db()
        .prepare("SELECT channel, sender, text FROM inbox")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        stored,
        [(
            "local".to_owned(),
            "hearth".to_owned(),
            "[notice from plugin probe] the job failed".to_owned()
        )],
        "stored once, from the host, in the owner's last conversation (none yet: local)"
    );
}
