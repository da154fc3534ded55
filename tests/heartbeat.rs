//! The heartbeat end to end: the real daemon with `[heartbeat]` on, its
//! clock moved with `HEARTH_FAKE_NOW` to just before the heartbeat's
//! morning, the fake model answering and the fake Bot API as the channel
//! it speaks on. What the model saw is read from the fake model's requests,
//! what reached the owner from the fake Bot API.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::anthropic_text;
use hearth_tests::telegram_home::{OWNER, TelegramHome};
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

/// A Telegram home in Berlin with `[heartbeat]` set to `heartbeat`.
fn home(heartbeat: &str) -> TelegramHome {
    let s = TelegramHome::new("", &format!("[heartbeat]\n{heartbeat}"));
    let config = std::fs::read_to_string(s.home.config()).unwrap();
    s.home
        .write_config(&config.replace("[owner]\n", "[owner]\ntimezone = \"Europe/Berlin\"\n"));
    s
}

/// Starts the daemon with its clock at `now` (RFC 3339), or the real one.
fn start_at(h: &Hearth, now: Option<&str>) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        if let Some(now) = now {
            cmd.env("HEARTH_FAKE_NOW", now);
        }
    })
}

/// The jobs `manage_schedule` lists, through the running daemon.
fn jobs(h: &Hearth) -> Vec<Value> {
    let list = h
        .cmd(&["tool", "call", "manage_schedule", r#"{"action": "list"}"#])
        .json();
    list["jobs"].as_array().unwrap().clone()
}

/// Heartbeat turns finished.
fn done_turns(h: &Hearth) -> i64 {
    h.db()
        .query_row(
            "SELECT count(*) FROM inbox WHERE source = 'scheduler' AND status = 'done'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn the_heartbeat_fires_on_schedule_and_speaks_only_when_something_needs_the_owner() {
    let s = home("enabled = true\nschedule = \"0 8 * * *\"\n");
    s.home.write(
        "HEARTBEAT.md",
        "- Check whether the backup disk is nearly full.\n",
    );
    // 07:59:57 in Berlin (summer time): the heartbeat is due in 3 s.
    let _daemon = start_at(&s.home, Some("2026-07-01T05:59:57Z"));
    let listed = jobs(&s.home);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let beat = &listed[0];
    assert_eq!(beat["kind"], "heartbeat");
    assert_eq!(beat["cron"], "0 8 * * *");
    assert_eq!(beat["zone"], "Europe/Berlin");
    let id = beat["id"].as_i64().unwrap();

    // A quiet morning: the model answers [silent] and nothing is sent.
    s.llm.push(anthropic_text("[silent]"));
    wait_until("the first heartbeat's turn", || done_turns(&s.home) == 1);
    let asked = s.llm.requests()[0].body.to_string();
    assert!(asked.contains(&format!("Heartbeat (job {id}")), "{asked}");
    assert!(asked.contains("08:00"), "{asked}");
    assert!(asked.contains("backup disk is nearly full"), "{asked}");
    assert!(asked.contains("[silent]"), "{asked}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(s.sent_to(OWNER).is_empty(), "{:#?}", s.telegram.sent());
    let after = &jobs(&s.home)[0];
    assert!(
        after["next_run"]
            .as_str()
            .unwrap()
            .starts_with("2026-07-02 08:00"),
        "{after:#?}"
    );

    // The model may not edit the heartbeat away; the owner's config owns it.
    for action in ["remove", "disable", "update"] {
        let err = s
            .home
            .cmd(&[
                "tool",
                "call",
                "manage_schedule",
                &json!({"action": action, "id": id, "text": "x"}).to_string(),
            ])
            .fails();
        assert!(err.contains("is the heartbeat"), "{action}: {err}");
    }
    let err = s
        .home
        .cmd(&[
            "tool",
            "call",
            "manage_schedule",
            r#"{"action": "add", "kind": "heartbeat", "in": "1h", "text": "x"}"#,
        ])
        .fails();
    assert!(
        err.contains("kind") && err.contains("\"heartbeat\""),
        "{err}"
    );

    // Something needs the owner: the answer reaches their chat.
    s.llm.push(anthropic_text(
        "The backup disk is 95% full; time to prune.",
    ));
    s.home
        .cmd(&[
            "tool",
            "call",
            "manage_schedule",
            &json!({"action": "run_now", "id": id}).to_string(),
        ])
        .json();
    let sent = s.wait_sent_to(OWNER, 1);
    assert!(sent[0].text.contains("95% full"), "{sent:#?}");
    assert_eq!(s.sent_to(OWNER).len(), 1);
}

#[test]
fn a_heartbeat_with_no_checklist_says_so_and_speaks_in_its_own_chat() {
    let s = home("enabled = true\nchannel = \"telegram\"\nchat = \"2002\"\n");
    let _daemon = start_at(&s.home, None);
    let id = jobs(&s.home)[0]["id"].as_i64().unwrap();
    s.llm.push(anthropic_text(
        "There is no checklist yet; write HEARTBEAT.md.",
    ));
    s.home
        .cmd(&[
            "tool",
            "call",
            "manage_schedule",
            &json!({"action": "run_now", "id": id}).to_string(),
        ])
        .json();
    let sent = s.wait_sent_to(2002, 1);
    assert!(sent[0].text.contains("no checklist yet"), "{sent:#?}");
    let asked = s.llm.requests()[0].body.to_string();
    assert!(asked.contains("there is no checklist"), "{asked}");
    assert!(asked.contains("HEARTBEAT.md does not exist"), "{asked}");
    assert!(s.sent_to(OWNER).is_empty(), "{:#?}", s.telegram.sent());
}

#[test]
fn the_heartbeat_is_off_by_default_and_turning_it_off_removes_its_job() {
    let h = Hearth::new("");
    {
        let _daemon = h.daemon();
        assert!(jobs(&h).is_empty());
    }
    h.write_config("[heartbeat]\nenabled = true\nschedule = \"@daily\"\n");
    {
        let _daemon = h.daemon();
        let listed = jobs(&h);
        assert_eq!(listed.len(), 1, "{listed:#?}");
        assert_eq!(listed[0]["kind"], "heartbeat");
    }
    // A restart with the same config keeps the same job.
    let id = {
        let _daemon = h.daemon();
        let listed = jobs(&h);
        assert_eq!(listed.len(), 1, "{listed:#?}");
        listed[0]["id"].as_i64().unwrap()
    };
    h.write_config("[heartbeat]\nenabled = false\n");
    let _daemon = h.daemon();
    assert!(jobs(&h).is_empty(), "job {id} outlived [heartbeat]");
}

#[test]
fn a_bad_heartbeat_value_is_refused_naming_the_key() {
    let h = Hearth::new("");
    for (table, key, why) in [
        ("schedule = \"61 8 * * *\"", "heartbeat.schedule", "cron"),
        ("channel = \"telegram\"", "heartbeat.chat", "required"),
        ("chat = \"1001\"", "heartbeat.channel", "required"),
        (
            "channel = \"scheduler\"\nchat = \"x\"",
            "heartbeat.channel",
            "pseudo-channel",
        ),
        ("checklist = \"\"", "heartbeat.checklist", "empty"),
        ("enabled = \"yes\"", "enabled", "bool"),
        ("every = \"day\"", "every", "unknown field"),
    ] {
        h.write_config(&format!("[heartbeat]\n{table}\n"));
        let err = h.cmd(&["schedule", "list"]).fails();
        assert!(err.contains(key), "{table}: {err}");
        assert!(err.to_lowercase().contains(why), "{table}: {err}");
    }
}
