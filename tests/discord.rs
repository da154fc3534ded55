//! The Discord channel against the fake Discord (its Gateway and REST API
//! on 127.0.0.1) and the fake model: the owner's direct message is
//! answered, a long reply split at 2,000 characters; strangers, other
//! channels and unmentioned guild messages get silence; a dropped
//! connection resumes and replays what was missed, none of it twice; a
//! rate-limited send waits and goes through; a bad token says so; an
//! approval card's buttons answer it, and only the owner's press counts;
//! what the owner wrote while the daemon was killed is answered once after
//! it starts again; files the agent attaches follow the text as uploads,
//! and one too large to send is named in the text.

use std::time::{Duration, Instant};

use hearth_tests::Hearth;
use hearth_tests::fake_discord::FakeDiscord;
use hearth_tests::fake_discord::SentFile;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use serde_json::json;

/// The bot's token.
const TOKEN: &str = "discord-test-token";
/// The owner's Discord user id.
const OWNER: &str = "111111111111111111";
/// A stranger's.
const STRANGER: &str = "222222222222222222";
/// The guild channel the bot answers mentions in.
const CHANNEL: &str = "333333333333333333";
const WAIT: Duration = Duration::from_secs(20);

struct Setup {
    discord: FakeDiscord,
    llm: FakeLlm,
    home: Hearth,
}

fn setup(token: &str) -> Setup {
    setup_with(token, None)
}

/// As [`setup`]; with `exec_log`, the probe plugin too (its `probe_shell`
/// asks before a guarded command, and logs what it ran there).
fn setup_with(token: &str, exec_log: Option<&std::path::Path>) -> Setup {
    setup_full(token, exec_log, "")
}

/// As [`setup_with`], with `extra` lines in `[plugins.discord]`.
fn setup_full(token: &str, exec_log: Option<&std::path::Path>, extra: &str) -> Setup {
    let discord = FakeDiscord::start(TOKEN);
    let llm = FakeLlm::start();
    let config = format!(
        "[plugins.discord]\ntoken = {token:?}\napi_url = {:?}\ngateway_url = {:?}\n\
         allowed_user_ids = [{OWNER:?}]\nallowed_channel_ids = [{CHANNEL:?}]\n{extra}\
         [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\n",
        discord.api_url,
        discord.gateway_url,
        llm.url()
    );
    let home = match exec_log {
        // Only the files `paths` names load then: Discord's own too.
        Some(log) => Hearth::with_plugins(
            &[hearth_tests::plugin("discord"), hearth_tests::probe()],
            &format!("{config}[plugins.probe]\nexec_log = {log:?}\n"),
        ),
        None => Hearth::new(&config),
    };
    Setup { discord, llm, home }
}

fn daemon(s: &Setup) -> hearth_tests::Daemon {
    s.home.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "test-key");
    })
}

#[test]
fn the_owners_direct_message_is_answered_and_a_long_reply_is_split() {
    let s = setup(TOKEN);
    let reply = format!(
        "{}\n\n{}",
        "first part ".repeat(150).trim(),
        "second part ".repeat(150).trim()
    );
    s.llm.push(anthropic_text(&reply));
    let _daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT), "the bot connected");
    s.discord.dm(OWNER, "hello there");
    let sent = s.discord.wait_sent(2, WAIT);
    assert_eq!(sent.len(), 2, "{sent:?}");
    for piece in &sent {
        assert_eq!(piece.channel, format!("dm-{OWNER}"));
        assert!(piece.content.chars().count() <= 2000);
    }
    let joined: Vec<&str> = sent.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(joined.join("\n\n"), reply);
    let asked = s.llm.requests()[0].body.to_string();
    assert!(asked.contains("hello there"), "{asked}");
}

#[test]
fn strangers_other_channels_and_unmentioned_messages_get_silence() {
    let s = setup(TOKEN);
    s.llm.push(anthropic_text("Hi, owner."));
    s.llm.push(anthropic_text("Hi, channel."));
    let _daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT));
    s.discord.dm(STRANGER, "let me in");
    s.discord
        .say_in_guild(STRANGER, "444444444444444444", "over here", true);
    s.discord.say_in_guild(OWNER, CHANNEL, "no mention", false);
    s.discord.dm(OWNER, "it is me");
    let sent = s.discord.wait_sent(1, WAIT);
    let shown: Vec<(&str, &str)> = sent
        .iter()
        .map(|m| (m.channel.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(shown, [(format!("dm-{OWNER}").as_str(), "Hi, owner.")]);
    // A mention in the allowed channel gets through, and is answered there.
    s.discord.say_in_guild(OWNER, CHANNEL, "and here?", true);
    let sent = s.discord.wait_sent(2, WAIT);
    assert_eq!(sent[1].channel, CHANNEL);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.discord.wait_sent(3, Duration::from_millis(10)).len(), 2);
    for request in s.llm.requests() {
        let body = request.body.to_string();
        assert!(
            !body.contains("let me in") && !body.contains("over here"),
            "{body}"
        );
    }
}

#[test]
fn a_dropped_connection_resumes_and_what_it_missed_comes_once() {
    let s = setup(TOKEN);
    s.llm.push(anthropic_text("One."));
    s.llm.push(anthropic_text("Two."));
    let _daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT));
    s.discord.dm(OWNER, "first");
    assert_eq!(s.discord.wait_sent(1, WAIT).len(), 1);
    s.discord.drop_connection();
    // Written while the bot is away: Discord replays it on the resume.
    s.discord.dm(OWNER, "second");
    let sent = s.discord.wait_sent(2, WAIT);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].content, "Two.");
    let (identifies, resumes) = s.discord.sessions();
    assert_eq!(identifies, 1, "resumed, not identified again");
    assert_eq!(resumes.len(), 1, "{resumes:?}");
    assert!(
        resumes[0] >= 2,
        "resumed after the stored message: {resumes:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.llm.requests().len(), 2, "nothing handled twice");
    // The fake asks for one every 500 ms.
    let deadline = Instant::now() + WAIT;
    while s.discord.heartbeats() < 2 {
        assert!(Instant::now() < deadline, "no heartbeats");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_rate_limited_send_waits_its_turn_and_goes_through() {
    let s = setup(TOKEN);
    s.llm.push(anthropic_text("Patience."));
    let _daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT));
    s.discord.rate_limit_next(2);
    let asked = Instant::now();
    s.discord.dm(OWNER, "hi");
    let sent = s.discord.wait_sent(1, WAIT);
    assert_eq!(sent[0].content, "Patience.");
    assert_eq!(s.discord.limited(), 2);
    assert!(
        asked.elapsed() >= Duration::from_millis(600),
        "waited out both 429s"
    );
}

#[test]
fn a_reply_discord_refuses_for_good_is_not_sent_again() {
    let s = setup(TOKEN);
    s.llm.push(anthropic_text("You will not see this."));
    let _daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT));
    s.discord
        .refuse_next(403, 50007, "Cannot send messages to this user");
    s.discord.dm(OWNER, "hi");
    let why = s.home.wait_failed_reply(WAIT);
    assert!(why.contains("Cannot send messages to this user"), "{why}");
    // A send that may pass later is tried again after 2 s; this one is not.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(s.discord.refused(), 1);
    assert!(s.discord.wait_sent(1, Duration::ZERO).is_empty());
}

#[test]
fn a_bad_token_is_reported_and_not_retried_forever() {
    let s = setup("wrong-token");
    let _daemon = daemon(&s);
    let deadline = Instant::now() + WAIT;
    loop {
        let plugins = s.home.cmd(&["plugins"]).ok().to_owned();
        if plugins.contains("4004") {
            assert!(plugins.contains("bot token"), "{plugins}");
            break;
        }
        assert!(Instant::now() < deadline, "no word of the token: {plugins}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!s.discord.wait_connected(Duration::from_millis(100)));
}

#[test]
fn a_card_is_answered_with_its_buttons_and_only_the_owners_press_counts() {
    for (choice, outcome, runs) in [("y", "Approved", true), ("n", "Denied", false)] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("exec");
        let s = setup_with(TOKEN, Some(&log));
        let command = format!("rm -rf /srv/photos-{choice}");
        s.llm.push(anthropic_tool_use(
            None,
            "t1",
            "probe_shell",
            &json!({ "command": command }),
        ));
        s.llm.push(anthropic_text("finished"));
        let _daemon = daemon(&s);
        assert!(s.discord.wait_connected(WAIT));
        s.discord.dm(OWNER, "clean up");
        let card = s.discord.wait_sent(1, WAIT).remove(0);
        assert_eq!(card.channel, format!("dm-{OWNER}"));
        assert!(card.content.contains(&command), "{}", card.content);
        let ids: Vec<String> = card.components[0]["components"]
            .as_array()
            .expect("a row of buttons")
            .iter()
            .map(|b| b["custom_id"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(ids.len(), 3, "approve, deny, always: {ids:?}");
        let pick = |c: &str| {
            ids.iter()
                .find(|id| id.ends_with(&format!(":{c}")))
                .unwrap()
                .clone()
        };
        // A stranger's press changes nothing, though it is acknowledged.
        s.discord.press(STRANGER, &card.id, &pick("y"));
        let deadline = Instant::now() + WAIT;
        while s.discord.acknowledged().is_empty() {
            assert!(
                Instant::now() < deadline,
                "the stranger's press was never acknowledged"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            s.discord.wait_sent(1, WAIT)[0].edits,
            0,
            "a stranger's press was taken"
        );
        s.discord.press(OWNER, &card.id, &pick(choice));
        let sent = s
            .discord
            .sent_until(WAIT, |sent| sent.len() >= 2 && sent[0].edits > 0);
        assert!(sent[0].content.contains(outcome), "{}", sent[0].content);
        assert_eq!(sent[0].components, json!([]), "the buttons go");
        assert_eq!(sent[1].content, "finished");
        let ran = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(ran.contains(&command), runs, "{choice}: {ran}");
    }
}

#[test]
fn what_came_while_the_daemon_was_killed_is_answered_once_after_it_starts() {
    let s = setup(TOKEN);
    s.llm.push(anthropic_text("One."));
    s.llm.push(anthropic_text("Two."));
    let mut daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT));
    s.discord.dm(OWNER, "first");
    assert_eq!(s.discord.wait_sent(1, WAIT).len(), 1);
    daemon.kill9();
    s.discord.dm(OWNER, "second, while you were away");
    let _daemon = self::daemon(&s);
    let sent = s.discord.wait_sent(2, WAIT);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].content, "Two.");
    let (identifies, _) = s.discord.sessions();
    assert_eq!(identifies, 2, "a new process starts a new session");
    let reads = s.discord.reads();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0].0, format!("dm-{OWNER}"));
    std::thread::sleep(Duration::from_millis(500));
    let asked: Vec<String> = s
        .llm
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(asked.len(), 2, "the first message was not answered again");
    assert!(asked[1].contains("while you were away"));
}

#[test]
fn a_file_reaches_the_agent_and_one_over_the_cap_is_named_with_why() {
    let s = setup(TOKEN);
    s.llm.push(anthropic_text("Read it."));
    s.llm.push(anthropic_text("Too big."));
    let _daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT));
    s.discord.dm_with_file(
        OWNER,
        "what does it say?",
        "notes.txt",
        b"the word is marmalade\n",
        22,
    );
    assert_eq!(s.discord.wait_sent(1, WAIT)[0].content, "Read it.");
    let asked = s.llm.requests()[0].body.to_string();
    assert!(
        asked.contains("notes.txt") && asked.contains("marmalade"),
        "{asked}"
    );
    let saved = s.home.home().join("attachments/discord");
    let files: Vec<_> = std::fs::read_dir(&saved).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "saved under {}", saved.display());
    // Said to be 30 MiB: not fetched at all.
    s.discord
        .dm_with_file(OWNER, "and this?", "huge.bin", b"small really", 30 << 20);
    assert_eq!(s.discord.wait_sent(2, WAIT)[1].content, "Too big.");
    let asked = s.llm.requests()[1].body.to_string();
    assert!(
        asked.contains("huge.bin was not downloaded") && asked.contains("over the"),
        "{asked}"
    );
}

#[test]
fn files_the_agent_attaches_follow_the_text_and_one_too_large_is_named() {
    // Over the plugin's limit: never uploaded. Under it but over the
    // fake's: refused with a 413, then named, and the rest go.
    let s = setup_full(TOKEN, None, "max_upload_bytes = 5000\n");
    let chart = s.home.write("out/chart.png", "not really a png");
    let report = s.home.write("out/q3; \"final\".pdf", "%PDF-1.4 report");
    let big = s.home.write("out/big.csv", &"1,2,3\n".repeat(400));
    let huge = s.home.write("out/huge.bin", &"x".repeat(6000));
    for (id, path) in [("t1", &chart), ("t2", &report), ("t3", &big), ("t4", &huge)] {
        s.llm.push(anthropic_tool_use(
            None,
            id,
            "attach_file",
            &json!({ "path": path.display().to_string() }),
        ));
    }
    s.llm.push(anthropic_text("Here they are."));
    let _daemon = daemon(&s);
    assert!(s.discord.wait_connected(WAIT));
    s.discord.max_upload(1000);
    // A 429 first: the upload waits its turn and is sent again whole.
    s.discord.rate_limit_next(1);
    s.discord.dm(OWNER, "send me the files");
    let sent = s.discord.wait_sent(1, WAIT);
    assert_eq!(sent[0].channel, format!("dm-{OWNER}"));
    assert_eq!(
        sent[0].content,
        "Here they are.\n\n(huge.bin was too large to send)\n(big.csv was too large to send)"
    );
    assert_eq!(
        sent[0].files,
        [
            SentFile {
                name: "chart.png".into(),
                content_type: Some("image/png".into()),
                bytes: b"not really a png".to_vec(),
            },
            SentFile {
                name: "q3; \"final\".pdf".into(),
                content_type: Some("application/pdf".into()),
                bytes: b"%PDF-1.4 report".to_vec(),
            },
        ]
    );
    assert_eq!(s.discord.limited(), 1);
    // big.csv went once (refused); huge.bin never did.
    assert_eq!(
        s.discord.uploads(),
        [
            "chart.png",
            "q3; \"final\".pdf",
            "big.csv",
            "chart.png",
            "q3; \"final\".pdf"
        ]
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.discord.wait_sent(2, Duration::from_millis(10)).len(), 1);
}
