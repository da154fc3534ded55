//! The Matrix channel against the fake homeserver and the fake model: the
//! owner's message is answered with Matrix HTML; strangers get silence and
//! their invites are not taken, the owner's are; a card is answered by a
//! reaction or a reply, and only the owner's counts; the sync token
//! survives a kill, so nothing is lost or answered twice; a rate-limited
//! send waits; an encrypted room is told once that it cannot be read.

use std::time::{Duration, Instant};

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::fake_matrix::FakeMatrix;
use serde_json::json;

const TOKEN: &str = "matrix-test-token";
const OWNER: &str = "@anna:fake.example";
const STRANGER: &str = "@eve:evil.example";
const ROOM: &str = "!home:fake.example";
const WAIT: Duration = Duration::from_secs(20);

struct Setup {
    matrix: FakeMatrix,
    llm: FakeLlm,
    home: Hearth,
}

fn setup(exec_log: Option<&std::path::Path>) -> Setup {
    let matrix = FakeMatrix::start(TOKEN);
    let llm = FakeLlm::start();
    let config = format!(
        "[plugins.matrix]\nhomeserver = {:?}\ntoken = {TOKEN:?}\nallowed_user_ids = [{OWNER:?}]\n\
         [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\n",
        matrix.url,
        llm.url()
    );
    let home = match exec_log {
        Some(log) => Hearth::with_plugins(
            &[hearth_tests::plugin("matrix"), hearth_tests::probe()],
            &format!("{config}[plugins.probe]\nexec_log = {log:?}\n"),
        ),
        None => Hearth::new(&config),
    };
    Setup { matrix, llm, home }
}

fn daemon(s: &Setup) -> hearth_tests::Daemon {
    s.home.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "test-key");
    })
}

/// Starts the daemon and waits until it syncs live (past its first sync).
fn started(s: &Setup) -> hearth_tests::Daemon {
    let daemon = daemon(s);
    assert!(s.matrix.wait_syncs(2, WAIT), "the bot did not sync");
    daemon
}

#[test]
fn the_owner_is_answered_in_matrix_html_and_strangers_get_silence() {
    let s = setup(None);
    // Before the bot's first sync: history, not the owner talking now.
    s.matrix.say(ROOM, OWNER, "an old message");
    s.llm.push(anthropic_text("**Done.**"));
    let _daemon = started(&s);
    s.matrix.say(ROOM, STRANGER, "let me in");
    s.matrix.say(ROOM, OWNER, "hello");
    let sent = s.matrix.wait_sent(1, WAIT);
    assert_eq!(sent[0].room, ROOM);
    assert_eq!(sent[0].content["body"], "**Done.**");
    assert_eq!(sent[0].content["format"], "org.matrix.custom.html");
    assert_eq!(
        sent[0].content["formatted_body"],
        "<p><strong>Done.</strong></p>"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.matrix.wait_sent(2, Duration::from_millis(10)).len(), 1);
    let asked: Vec<String> = s
        .llm
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("hello"));
    assert!(!asked[0].contains("let me in") && !asked[0].contains("an old message"));
}

#[test]
fn only_the_owners_invite_is_joined() {
    let s = setup(None);
    let _daemon = started(&s);
    s.matrix.invite("!spam:evil.example", STRANGER);
    s.matrix.invite("!new:fake.example", OWNER);
    let deadline = Instant::now() + WAIT;
    while s.matrix.joined().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the owner's invite was not taken"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.matrix.joined(), ["!new:fake.example"]);
}

#[test]
fn a_card_is_answered_by_reaction_or_reply_and_only_the_owners_counts() {
    for (how, runs) in [("react", true), ("reply", false)] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("exec");
        let s = setup(Some(&log));
        let command = format!("rm -rf /srv/photos-{how}");
        s.llm.push(anthropic_tool_use(
            None,
            "t1",
            "probe_shell",
            &json!({ "command": command }),
        ));
        s.llm.push(anthropic_text("finished"));
        let _daemon = started(&s);
        s.matrix.say(ROOM, OWNER, "clean up");
        let card = s.matrix.wait_sent(1, WAIT).remove(0);
        let body = card.content["body"].as_str().unwrap().to_owned();
        assert!(
            body.contains(&command) && body.contains("React ✅"),
            "{body}"
        );
        // A stranger's answer changes nothing.
        s.matrix.react(ROOM, STRANGER, &card.event_id, "✅");
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(s.matrix.wait_sent(2, Duration::from_millis(10)).len(), 1);
        match how {
            "react" => s.matrix.react(ROOM, OWNER, &card.event_id, "✅"),
            _ => s.matrix.reply(ROOM, OWNER, &card.event_id, "no"),
        };
        let sent = s.matrix.wait_sent(3, WAIT);
        let bodies: Vec<&str> = sent
            .iter()
            .map(|m| m.content["body"].as_str().unwrap_or(""))
            .collect();
        let outcome = if runs { "Approved." } else { "Denied." };
        assert!(bodies.contains(&outcome), "{bodies:?}");
        assert!(bodies.contains(&"finished"), "{bodies:?}");
        let ran = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(ran.contains(&command), runs, "{how}: {ran}");
    }
}

#[test]
fn the_sync_token_survives_a_kill_and_nothing_is_lost_or_answered_twice() {
    let s = setup(None);
    s.llm.push(anthropic_text("One."));
    s.llm.push(anthropic_text("Two."));
    let mut daemon = started(&s);
    s.matrix.say(ROOM, OWNER, "first");
    assert_eq!(s.matrix.wait_sent(1, WAIT).len(), 1);
    std::thread::sleep(Duration::from_millis(300));
    daemon.kill9();
    s.matrix.say(ROOM, OWNER, "second, while you were away");
    let _daemon = daemon_again(&s);
    let sent = s.matrix.wait_sent(2, WAIT);
    assert_eq!(sent[1].content["body"], "Two.", "{sent:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.matrix.wait_sent(3, Duration::from_millis(10)).len(), 2);
    let asked: Vec<String> = s
        .llm
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(asked.len(), 2, "the first message was not answered again");
    assert!(asked[1].contains("while you were away"));
}

fn daemon_again(s: &Setup) -> hearth_tests::Daemon {
    daemon(s)
}

#[test]
fn a_rate_limited_send_waits_and_an_encrypted_room_is_told_once() {
    let s = setup(None);
    s.llm.push(anthropic_text("Patience."));
    let _daemon = started(&s);
    s.matrix.rate_limit_next(2);
    let asked = Instant::now();
    s.matrix.say(ROOM, OWNER, "hi");
    let sent = s.matrix.wait_sent(1, WAIT);
    assert_eq!(sent[0].content["body"], "Patience.");
    assert_eq!(s.matrix.limited(), 2);
    assert!(asked.elapsed() >= Duration::from_millis(600));
    // Two encrypted messages: one notice.
    for _ in 0..2 {
        s.matrix.say_encrypted("!secret:fake.example", OWNER);
    }
    let sent = s.matrix.wait_sent(2, WAIT);
    assert_eq!(sent[1].room, "!secret:fake.example");
    assert!(
        sent[1].content["body"]
            .as_str()
            .unwrap()
            .contains("unencrypted rooms")
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.matrix.wait_sent(3, Duration::from_millis(10)).len(), 2);
}

#[test]
fn a_bad_token_is_reported_down() {
    let matrix = FakeMatrix::start("another-token");
    let h = Hearth::new(&format!(
        "[plugins.matrix]\nhomeserver = {:?}\ntoken = \"wrong\"\nallowed_user_ids = [{OWNER:?}]\n",
        matrix.url
    ));
    let _daemon = h.daemon();
    let deadline = Instant::now() + WAIT;
    loop {
        let plugins = h.cmd(&["plugins"]).ok().to_owned();
        if plugins.contains("M_UNKNOWN_TOKEN") {
            assert!(plugins.contains("access token"), "{plugins}");
            break;
        }
        assert!(Instant::now() < deadline, "no word of the token: {plugins}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
