//! The Matrix channel against the fake homeserver and the fake model: the
//! owner's message is answered with Matrix HTML; strangers get silence and
//! their invites are not taken, the owner's are; a card is answered by a
//! reaction or a reply, and only the owner's counts; the sync token
//! survives a kill, so nothing is lost or answered twice; a rate-limited
//! send waits; an encrypted room is told once that it cannot be read.
//! Files: an image the owner sends reaches the model as an image, one over
//! the cap is named with why, a voice message is known as one and an older
//! server's media route is used when the new one is unknown; files the
//! agent attaches follow the text as `m.image` and `m.file` with their
//! bytes, and one the server refuses is named in their place.

use std::time::{Duration, Instant};

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::fake_matrix::FakeMatrix;
use hearth_tests::images::{images_in, jpeg};
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
    setup_with(exec_log, "")
}

/// A setup with `extra` lines in `[plugins.matrix]`.
fn setup_with(exec_log: Option<&std::path::Path>, extra: &str) -> Setup {
    let matrix = FakeMatrix::start(TOKEN);
    let llm = FakeLlm::start();
    let config = format!(
        "[plugins.matrix]\nhomeserver = {:?}\ntoken = {TOKEN:?}\nallowed_user_ids = [{OWNER:?}]\n{extra}\
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
fn an_image_reaches_the_model_and_a_file_over_the_cap_is_named_with_why() {
    let s = setup_with(None, "max_file_bytes = 20000\n");
    s.llm.push(anthropic_text("A gradient."));
    s.llm.push(anthropic_text("Too big."));
    s.llm.push(anthropic_text("Still too big."));
    let _daemon = started(&s);
    s.matrix.say_file(
        ROOM,
        OWNER,
        "m.image",
        "stripes.jpg",
        "image/jpeg",
        &jpeg(96, 64),
    );
    assert_eq!(
        s.matrix.wait_sent(1, WAIT)[0].content["body"],
        "A gradient."
    );
    let images = images_in(&s.llm.requests()[0].body);
    assert_eq!(images.len(), 1, "the image did not reach the model");
    assert_eq!(images[0].size(), (96, 64));
    assert_eq!(
        s.matrix.downloads(),
        ["/_matrix/client/v1/media/download/fake.example/media1"]
    );
    let saved = s.home.home().join("attachments/matrix");
    let files: Vec<_> = std::fs::read_dir(&saved).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "saved under {}", saved.display());
    assert!(
        files[0]
            .file_name()
            .to_string_lossy()
            .ends_with("stripes.jpg"),
        "{files:?}"
    );
    // Said to be over the cap: not fetched at all, but the message gets in.
    s.matrix.say_file(
        ROOM,
        OWNER,
        "m.file",
        "huge.bin",
        "application/octet-stream",
        &[7; 30_000],
    );
    assert_eq!(s.matrix.wait_sent(2, WAIT)[1].content["body"], "Too big.");
    let asked = s.llm.requests()[1].body.to_string();
    assert!(
        asked.contains("huge.bin was not downloaded")
            && asked.contains("over the 20000-byte limit"),
        "{asked}"
    );
    assert_eq!(s.matrix.downloads().len(), 1);
    // Said to be small, but not: the download stops at the cap.
    let url = s
        .matrix
        .store_media("liar.bin", "application/octet-stream", &[7; 30_000]);
    s.matrix.say_content(
        ROOM,
        OWNER,
        json!({ "msgtype": "m.file", "body": "liar.bin", "url": url, "info": { "size": 10 } }),
    );
    assert_eq!(
        s.matrix.wait_sent(3, WAIT)[2].content["body"],
        "Still too big."
    );
    let asked = s.llm.requests()[2].body.to_string();
    assert!(
        asked.contains("liar.bin was not downloaded") && asked.contains("limit"),
        "{asked}"
    );
    assert_eq!(std::fs::read_dir(&saved).unwrap().count(), 1);
}

#[test]
fn a_voice_message_is_known_as_one_and_an_older_server_gives_it_by_the_old_route() {
    let s = setup(None);
    s.matrix.legacy_media();
    s.llm.push(anthropic_text("I got a recording."));
    let _daemon = started(&s);
    let url = s
        .matrix
        .store_media("Voice message.ogg", "audio/ogg", b"OggS not really");
    s.matrix.say_content(
        ROOM,
        OWNER,
        json!({ "msgtype": "m.audio", "body": "Voice message.ogg", "url": url,
            "info": { "mimetype": "audio/ogg", "size": 15, "duration": 2000 },
            "org.matrix.msc1767.audio": { "duration": 2000 }, "org.matrix.msc3245.voice": {} }),
    );
    // No speech-to-text here: the owner is told their voice message (not
    // "audio file") was not heard, and the agent still answers.
    let sent = s.matrix.wait_sent(2, WAIT);
    let bodies: Vec<&str> = sent
        .iter()
        .map(|m| m.content["body"].as_str().unwrap_or(""))
        .collect();
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("Your voice message (Voice message.ogg)")),
        "{bodies:?}"
    );
    assert!(bodies.contains(&"I got a recording."), "{bodies:?}");
    assert_eq!(
        s.matrix.downloads(),
        ["/_matrix/media/v3/download/fake.example/media1"]
    );
}

#[test]
fn files_the_agent_attaches_follow_the_text_with_their_bytes() {
    let s = setup(None);
    let chart = s.home.write("out/chart.png", "not really a png");
    let report = s.home.write("out/q3 report.pdf", "%PDF-1.4 report");
    let big = s.home.write("out/big.csv", &"1,2,3\n".repeat(400));
    for (id, path) in [("t1", &chart), ("t2", &report), ("t3", &big)] {
        s.llm.push(anthropic_tool_use(
            None,
            id,
            "attach_file",
            &json!({ "path": path.display().to_string() }),
        ));
    }
    s.llm.push(anthropic_text("Here they are."));
    let _daemon = started(&s);
    s.matrix.max_upload(1000);
    s.matrix.say(ROOM, OWNER, "send me the files");
    let sent = s.matrix.wait_sent(4, WAIT);
    let shape: Vec<(&str, &str)> = sent
        .iter()
        .map(|m| {
            (
                m.content["msgtype"].as_str().unwrap_or(""),
                m.content["body"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        &shape[..3],
        [
            ("m.text", "Here they are."),
            ("m.image", "chart.png"),
            ("m.file", "q3 report.pdf"),
        ]
    );
    let pdf = &sent[2].content;
    assert_eq!(pdf["info"]["mimetype"], "application/pdf");
    assert_eq!(pdf["info"]["size"], 15);
    let media = s
        .matrix
        .media(pdf["url"].as_str().unwrap())
        .expect("the file was uploaded");
    assert_eq!(media.bytes, b"%PDF-1.4 report");
    assert_eq!(media.name.as_deref(), Some("q3 report.pdf"));
    assert_eq!(media.mime, "application/pdf");
    // Over the server's limit: named in its place, and the reply is done.
    assert_eq!(shape[3].0, "m.notice");
    assert!(
        shape[3].1.contains("big.csv could not be sent"),
        "{shape:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.matrix.wait_sent(5, Duration::from_millis(10)).len(), 4);
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
