//! Each channel's health and last activity as `hearth status`, the status
//! JSON and `hearth doctor` show them, from a real daemon with the real
//! Telegram plugin against the fake Bot API: after the owner's message
//! and its reply the channel is up with a last message in and out; with a
//! token Telegram refuses, it is down with the reason, from the start, in
//! the log at error level, in the status and as a doctor failure.

use std::time::{Duration, Instant};

use hearth_tests::control::Control;
use hearth_tests::fake_llm::anthropic_text;
use hearth_tests::telegram_home::{OWNER, TelegramHome};
use hearth_tests::{Hearth, Run};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

/// The words the Telegram plugin uses for a refused token.
const REFUSED: &str = "Telegram refused the bot token";

/// `hearth status` until its text satisfies `pred`; the last text.
fn status_until(h: &Hearth, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = h.cmd(&["status"]).ok().to_owned();
        if pred(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "never {what}:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The Telegram channel's entry in the daemon's status JSON.
fn telegram_json(h: &Hearth) -> Value {
    let answer = Control::open(h.home()).ask(&serde_json::json!({ "op": "status" }));
    answer["status"]["channels"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["plugin"] == "telegram"))
        .cloned()
        .unwrap_or_else(|| panic!("no telegram channel in {answer:#}"))
}

/// `hearth doctor --json` against the running daemon, with no systemd
/// unit to find; the `channel telegram` finding.
fn doctor_channel(h: &Hearth) -> (Run, Value) {
    let units = tempfile::tempdir().expect("a units directory");
    let out = h
        .command(&["doctor", "--json"])
        .env("XDG_CONFIG_HOME", units.path())
        .env("HEARTH_TEST_API_KEY", "sk-test")
        .output()
        .expect("run hearth doctor");
    let run = Run::from(out);
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", run.stdout, run.stderr));
    let finding = report["findings"]
        .as_array()
        .and_then(|all| all.iter().find(|f| f["check"] == "channel telegram"))
        .cloned()
        .unwrap_or_else(|| panic!("no channel finding in {report:#}"));
    (run, finding)
}

/// The line of `text` that names the Telegram channel.
fn telegram_line(text: &str) -> &str {
    text.lines()
        .find(|l| l.trim_start().starts_with("telegram "))
        .unwrap_or_else(|| panic!("no telegram line in:\n{text}"))
}

#[test]
fn after_the_owners_message_and_reply_status_shows_the_channel_up_with_last_in_and_out() {
    let t = TelegramHome::new("", "");
    t.llm.push(anthropic_text("hello back"));
    let _daemon = t.start();
    // Up as soon as Telegram has taken the token, before the first long
    // poll answers; nothing has come in or gone out yet.
    let before = status_until(&t.home, "up", |s| s.contains("telegram up (long polling)"));
    assert!(
        telegram_line(&before).ends_with("last in never, last out never"),
        "{before}"
    );
    t.telegram.push_message(OWNER, OWNER, "hi");
    assert_eq!(t.wait_sent_to(OWNER, 1)[0].text, "hello back");
    // The send is noted once the plugin's `channel.send` returns, a
    // moment after the fake has the message.
    let after = status_until(&t.home, "a last out", |s| !s.contains("last out never"));
    let line = telegram_line(&after);
    assert!(
        line.starts_with("  telegram up (long polling) for "),
        "{after}"
    );
    assert!(
        line.contains(" s ago, last out ") && line.ends_with(" s ago"),
        "{after}"
    );
    let json = telegram_json(&t.home);
    assert_eq!(json["state"], "up", "{json:#}");
    let (since, last_in, last_out) = (
        json["since_ms"].as_i64(),
        json["last_in_ms"].as_i64(),
        json["last_out_ms"].as_i64(),
    );
    let (Some(since), Some(last_in), Some(last_out)) = (since, last_in, last_out) else {
        panic!("times missing: {json:#}");
    };
    // Up first, then the message in, then its reply out.
    assert!(since <= last_in && last_in <= last_out, "{json:#}");
    let (run, finding) = doctor_channel(&t.home);
    assert!(run.status.success(), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(finding["level"], "ok", "{finding:#}");
    let detail = finding["detail"].as_str().unwrap_or_default();
    assert!(detail.starts_with("up (long polling) for "), "{detail}");
    assert!(
        detail.contains("; last in ") && !detail.contains("never"),
        "{detail}"
    );
}

#[test]
fn a_refused_token_is_down_with_the_reason_from_the_start_in_the_log_status_and_doctor() {
    let t = TelegramHome::with_token("4242:wrong-token", "", "");
    let daemon = t.start();
    // The daemon's own log says so, at error level, with the reason.
    let line = daemon.wait_for_log(
        |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| {
                v["level"] == "ERROR"
                    && v["fields"]["plugin"] == "telegram"
                    && v["fields"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(REFUSED))
            })
        },
        WAIT,
    );
    assert!(line.contains("channel down"), "{line}");
    let text = status_until(&t.home, "down", |s| s.contains("telegram down ("));
    let telegram = telegram_line(&text);
    assert!(telegram.contains(REFUSED), "{text}");
    assert!(
        telegram.ends_with("last in never, last out never"),
        "{text}"
    );
    let json = telegram_json(&t.home);
    assert_eq!(json["state"], "down", "{json:#}");
    assert!(
        json["detail"].as_str().is_some_and(|d| d.contains(REFUSED)),
        "{json:#}"
    );
    assert!(json["since_ms"].is_i64(), "{json:#}");
    assert!(
        json["last_in_ms"].is_null() && json["last_out_ms"].is_null(),
        "{json:#}"
    );
    let (run, finding) = doctor_channel(&t.home);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(finding["level"], "fail", "{finding:#}");
    let detail = finding["detail"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with("down (") && detail.contains(REFUSED),
        "{detail}"
    );
    assert!(
        detail.ends_with("last in never, last out never"),
        "{detail}"
    );
    // The text form names it too, with the fix under it.
    let text = t
        .home
        .command(&["doctor"])
        .output()
        .expect("run hearth doctor");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("FAIL")
            && l.contains("channel telegram")
            && l.contains(REFUSED)),
        "{text}"
    );
}

#[test]
fn a_reply_telegram_refuses_for_good_is_not_sent_again() {
    let t = TelegramHome::new("", "");
    t.llm.push(anthropic_text("you will not see this"));
    let _daemon = t.start();
    t.telegram
        .fail_next("sendMessage", 403, "Forbidden: bot was blocked by the user");
    t.telegram.push_message(OWNER, OWNER, "hi");
    let why = t.home.wait_failed_reply(WAIT);
    assert!(why.contains("blocked by the user"), "{why}");
    // A send that may pass later is tried again after 2 s; this one is not.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(t.telegram.requests_for("sendMessage").len(), 1);
    assert!(t.telegram.sent().is_empty());
}
