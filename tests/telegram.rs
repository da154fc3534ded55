//! The Telegram channel end to end: the real `hearth` daemon with the real
//! Telegram plugin, against the fake Bot API and the fake model.
//!
//! Each test starts a bot through [`Bot::start`] and drives it as Telegram
//! would: updates pushed into the fake, answers read from what the bot
//! sent. The fake checks what the real API checks (HTML, the 4096 limit),
//! so a malformed reply fails the send there.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, Reply, anthropic_text, anthropic_tool_use};
use hearth_tests::fake_telegram::{FakeTelegram, MAX_TEXT, Sent};
use hearth_tests::{Daemon, Hearth, plugin, probe};
use serde_json::{Value, json};

const TOKEN: &str = "4242:test-token";
const OWNER: i64 = 1001;
const STRANGER: i64 = 666;
const WAIT: Duration = Duration::from_secs(30);
/// The poll timeout the tests configure.
const POLL_S: u64 = 1;

/// A configured home with its fakes.
struct Bot {
    telegram: FakeTelegram,
    llm: FakeLlm,
    home: Hearth,
}

impl Bot {
    /// A bot allowed to talk to [`OWNER`]; `extra` adds keys to
    /// `[plugins.telegram]`.
    fn new(extra: &str) -> Bot {
        let telegram = FakeTelegram::start(TOKEN);
        let llm = FakeLlm::start();
        let exec_log = tempfile::NamedTempFile::new()
            .expect("exec log")
            .into_temp_path();
        let home = Hearth::with_plugins(
            &[plugin("telegram"), probe()],
            &format!(
                "[plugins.telegram]\ntoken = {TOKEN:?}\napi_url = {:?}\nallowed_chat_ids = [{OWNER}]\n\
                 poll_timeout_s = {POLL_S}\npace_chat_ms = 0\n{extra}\n\
                 [plugins.probe]\nexec_log = {:?}\n\
                 [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
                 api_key_env = \"HEARTH_TEST_API_KEY\"\n[policy]\nconfirm_timeout_ms = 20000\n",
                telegram.url(),
                home_log(&exec_log),
                llm.url()
            ),
        );
        std::mem::forget(exec_log);
        Bot {
            telegram,
            llm,
            home,
        }
    }

    fn start(&self) -> Daemon {
        self.home.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        })
    }

    /// Waits for `n` messages from the bot.
    fn sent(&self, n: usize) -> Vec<Sent> {
        let sent = self.telegram.wait_for_sent(n, WAIT);
        assert!(sent.len() >= n, "expected {n} sent messages, got {sent:#?}");
        sent
    }

    /// Waits until `pred` holds for what was sent.
    fn sent_until(&self, what: &str, pred: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
        let deadline = Instant::now() + WAIT;
        loop {
            let sent = self.telegram.sent();
            if pred(&sent) {
                return sent;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {sent:#?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn getupdates(&self) -> usize {
        self.telegram.requests_for("getUpdates").len()
    }

    /// Waits until the bot has completed `n` more poll cycles, so anything
    /// pushed before has been read.
    fn polled(&self, n: usize) {
        let target = self.getupdates() + n;
        let deadline = Instant::now() + WAIT;
        while self.getupdates() < target {
            assert!(Instant::now() < deadline, "the bot stopped polling");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn exec_log(&self) -> String {
        let config = std::fs::read_to_string(self.home.config()).expect("config");
        let path = config
            .lines()
            .find_map(|l| l.strip_prefix("exec_log = "))
            .expect("exec_log in the config");
        std::fs::read_to_string(path.trim_matches('"')).unwrap_or_default()
    }
}

fn home_log(path: &std::path::Path) -> String {
    path.display().to_string()
}

/// The text Telegram shows for our HTML: tags dropped, entities decoded.
fn visible(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

#[test]
fn a_message_goes_in_and_the_reply_comes_back_as_html() {
    let bot = Bot::new("");
    bot.llm.push(anthropic_text("**Hi** <there> & `you`"));
    let _daemon = bot.start();
    bot.telegram.push_message(OWNER, OWNER, "hello");
    let sent = bot.sent(1);
    assert_eq!(sent[0].chat_id, OWNER);
    assert_eq!(sent[0].parse_mode.as_deref(), Some("HTML"));
    assert_eq!(
        sent[0].text,
        "<b>Hi</b> &lt;there&gt; &amp; <code>you</code>"
    );
    let prompt = bot.llm.requests()[0].body.to_string();
    assert!(prompt.contains("hello"), "{prompt}");
    let typing = bot.telegram.requests_for("sendChatAction");
    assert!(
        typing
            .iter()
            .any(|r| r.params["action"] == "typing" && r.params["chat_id"] == OWNER),
        "a typing action while the turn ran: {typing:?}"
    );
}

#[test]
fn a_confirmation_is_answered_with_the_buttons_and_only_the_owner_counts() {
    for (choice, outcome, runs) in [("y", "Approved", true), ("n", "Denied", false)] {
        let bot = Bot::new("");
        let command = format!("rm -rf /srv/photos-{choice}");
        bot.llm.push(anthropic_tool_use(
            None,
            "t1",
            "probe_shell",
            &json!({ "command": command }),
        ));
        bot.llm.push(anthropic_text("finished"));
        let _daemon = bot.start();
        bot.telegram.push_message(OWNER, OWNER, "clean up");
        let card = bot.sent(1).remove(0);
        assert!(card.text.contains(&command), "{}", card.text);
        let buttons = card.reply_markup.clone().expect("inline keyboard");
        let data = buttons["inline_keyboard"][0]
            .as_array()
            .expect("a row of buttons")
            .iter()
            .map(|b| b["callback_data"].as_str().unwrap_or_default().to_owned())
            .find(|d| d.ends_with(&format!(":{choice}")))
            .expect("the button");
        // A stranger's press changes nothing.
        bot.telegram
            .push_callback(OWNER, STRANGER, card.message_id, &data.replace(":n", ":y"));
        bot.polled(2);
        assert!(
            bot.telegram.sent()[0].edits.is_empty(),
            "a stranger's press was taken"
        );
        bot.telegram
            .push_callback(OWNER, OWNER, card.message_id, &data);
        let sent = bot.sent_until("the card's outcome and the reply", |s| {
            s.len() >= 2 && !s[0].edits.is_empty()
        });
        assert!(sent[0].text.contains(outcome), "{}", sent[0].text);
        assert_eq!(sent[0].reply_markup, Some(json!({ "inline_keyboard": [] })));
        assert_eq!(sent[1].text, "finished");
        assert_eq!(bot.exec_log().contains(&command), runs, "{choice}");
        assert!(!bot.telegram.requests_for("answerCallbackQuery").is_empty());
    }
}

#[test]
fn stop_withdraws_a_card_and_the_card_says_so() {
    let bot = Bot::new("");
    let command = "rm -rf /srv/photos-stop";
    bot.llm.push(anthropic_tool_use(
        None,
        "t1",
        "probe_shell",
        &json!({ "command": command }),
    ));
    let _daemon = bot.start();
    bot.telegram.push_message(OWNER, OWNER, "clean up");
    let card = bot.sent(1).remove(0);
    assert!(card.text.contains(command), "{}", card.text);
    bot.telegram.push_message(OWNER, OWNER, "/stop");
    let sent = bot.sent_until("the card withdrawn and the replies", |s| {
        s.len() >= 3 && !s[0].edits.is_empty()
    });
    assert!(
        sent[0].text.contains("Withdrawn") && sent[0].text.contains("the turn was stopped"),
        "{}",
        sent[0].text
    );
    assert_eq!(sent[0].reply_markup, Some(json!({ "inline_keyboard": [] })));
    let replies: Vec<String> = sent[1..].iter().map(|m| visible(&m.text)).collect();
    assert!(
        replies.contains(&format!(
            "Stopped. Cut short: probe_shell ({command}), its approval request was withdrawn."
        )),
        "{replies:?}"
    );
    assert!(!bot.exec_log().contains(command), "the withdrawn call ran");
}

#[test]
fn a_429_storm_is_ridden_out_and_the_reply_arrives_once() {
    let bot = Bot::new("");
    bot.llm.push(anthropic_text("after the storm"));
    let _daemon = bot.start();
    bot.telegram.rate_limit(4, 1);
    bot.telegram.push_message(OWNER, OWNER, "hi");
    bot.sent(1);
    bot.polled(2);
    let sent = bot.telegram.sent();
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0].text, "after the storm");
    // The storm answered 429 to four sends (typing actions count too), and
    // the reply still went out once.
    let tries = bot.telegram.requests_for("sendMessage").len()
        + bot.telegram.requests_for("sendChatAction").len();
    assert!(tries >= 5, "{tries} send requests");
}

#[test]
fn a_hung_connection_is_replaced_within_the_timeout_plus_five_seconds() {
    let bot = Bot::new("");
    bot.llm.push(anthropic_text("back"));
    let daemon = bot.start();
    bot.polled(1);
    bot.telegram.hang(true);
    let hung_at = Instant::now();
    // The poll in flight ends at its timeout; the next one hangs, and a
    // further one means the hung one was torn down.
    bot.polled(2);
    let replaced = hung_at.elapsed();
    assert!(
        replaced <= Duration::from_secs(POLL_S + 5),
        "the hung poll was replaced after {replaced:?}"
    );
    let status = bot.home.cmd(&["status"]);
    assert!(status.ok().contains("telegram down"), "{}", status.stdout);
    bot.telegram.hang(false);
    bot.telegram.push_message(OWNER, OWNER, "still there?");
    assert_eq!(bot.sent(1)[0].text, "back");
    let status = bot.home.cmd(&["status"]);
    assert!(
        status.ok().contains("telegram up (long polling)"),
        "{}",
        status.stdout
    );
    drop(daemon);
}

#[test]
fn a_kill_9_mid_poll_loses_nothing_and_doubles_nothing() {
    let bot = Bot::new("");
    // The first turn hangs in the model, so the daemon dies with updates
    // stored but unanswered.
    bot.llm.push(Reply::Hang);
    for n in 0..40 {
        bot.llm.push(anthropic_text(&format!("reply {n}")));
    }
    let mut daemon = bot.start();
    for n in 0..5 {
        bot.telegram
            .push_message(OWNER, OWNER, &format!("first {n}"));
    }
    assert!(bot.llm.wait_for_requests(1, WAIT), "the first turn started");
    bot.polled(1);
    daemon.kill9();
    for n in 0..5 {
        bot.telegram
            .push_message(OWNER, OWNER, &format!("second {n}"));
    }
    let _daemon = bot.start();
    bot.sent(10);
    bot.polled(2);
    let db = bot.home.db();
    let (rows, keys): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT idempotency_key) FROM inbox WHERE channel = 'telegram'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("inbox");
    assert_eq!((rows, keys), (10, 10));
    let replies: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM outbox WHERE channel = 'telegram' AND status = 'delivered'",
            [],
            |r| r.get(0),
        )
        .expect("outbox");
    assert_eq!(replies, 10);
    let sent = bot.telegram.sent();
    let mut texts: Vec<_> = sent.iter().map(|s| s.text.clone()).collect();
    texts.sort();
    texts.dedup();
    assert_eq!((sent.len(), texts.len()), (10, 10), "{sent:#?}");
}

#[test]
fn a_ten_thousand_character_reply_arrives_split_into_valid_messages() {
    let bot = Bot::new("");
    let paragraph = "Some **bold** words & <angles> in a paragraph that goes on for a while. ";
    let mut reply = String::new();
    while reply.chars().count() < 10_000 {
        reply.push_str(&paragraph.repeat(3));
        reply.push_str("\n\n");
    }
    reply.push_str("```\nfn main() {}\n```\n");
    bot.llm.push(anthropic_text(&reply));
    let _daemon = bot.start();
    bot.telegram.push_message(OWNER, OWNER, "write a lot");
    bot.sent(3);
    bot.polled(2);
    let sent = bot.telegram.sent();
    for s in &sent {
        let shown = visible(&s.text);
        assert!(
            shown.encode_utf16().count() <= MAX_TEXT,
            "{} units",
            shown.len()
        );
    }
    assert_eq!(
        bot.telegram.requests_for("sendMessage").len(),
        sent.len(),
        "the fake refused a part"
    );
    let joined: String = sent.iter().map(|s| visible(&s.text)).collect();
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    let wanted = squash(&reply.replace("**", "").replace("```", ""));
    assert_eq!(squash(&joined), wanted);
}

#[test]
fn strangers_get_nothing_and_never_reach_the_model() {
    let bot = Bot::new("");
    bot.llm.push(anthropic_text("only for you"));
    let daemon = bot.start();
    for text in ["hi", "hello?", "/start"] {
        bot.telegram.push_message(STRANGER, STRANGER, text);
    }
    // A group that is not allowed, and the owner writing in it.
    bot.telegram.push_update(json!({ "message": {
        "message_id": 90, "date": 0, "text": "@bot hi",
        "chat": { "id": -5, "type": "group", "title": "g" },
        "from": { "id": OWNER, "is_bot": false, "first_name": "o" },
    }}));
    bot.polled(2);
    bot.telegram.push_message(OWNER, OWNER, "me");
    let sent = bot.sent(1);
    bot.polled(2);
    assert_eq!(bot.telegram.sent().len(), 1);
    assert_eq!(sent[0].chat_id, OWNER);
    assert_eq!(
        bot.llm.requests().len(),
        1,
        "only the owner's message reached the model"
    );
    let logged = daemon
        .logs()
        .iter()
        .filter(|l| l.contains("not in allowed_chat_ids") && l.contains(&STRANGER.to_string()))
        .count();
    assert_eq!(logged, 1, "a stranger is logged once an hour");
    let stored: i64 = bot
        .home
        .db()
        .query_row(
            "SELECT COUNT(*) FROM inbox WHERE sender = ?1",
            [STRANGER.to_string()],
            |r| r.get(0),
        )
        .expect("inbox");
    assert_eq!(stored, 0);
}

#[test]
fn a_document_is_downloaded_and_stored_as_an_attachment() {
    let bot = Bot::new("max_file_bytes = 1000\n");
    bot.llm.push(anthropic_text("got it"));
    bot.llm.push(anthropic_text("too big"));
    let file_id = bot.telegram.add_file(b"quarterly numbers");
    let big_id = bot.telegram.add_file(&[b'x'; 2000]);
    let _daemon = bot.start();
    for (id, name) in [(&file_id, "report.txt"), (&big_id, "huge.bin")] {
        bot.telegram.push_update(json!({ "message": {
            "message_id": 5, "date": 0, "caption": "see attached",
            "chat": { "id": OWNER, "type": "private" },
            "from": { "id": OWNER, "is_bot": false, "first_name": "o" },
            "document": { "file_id": id, "file_unique_id": "u", "file_name": name, "mime_type": "text/plain" },
        }}));
    }
    bot.sent(2);
    let saved = std::fs::read_dir(bot.home.home().join("attachments/telegram"))
        .expect("the attachment directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect::<Vec<_>>();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(
        std::fs::read(&saved[0]).expect("saved file"),
        b"quarterly numbers"
    );
    let second = bot.llm.requests()[1].body.to_string();
    assert!(second.contains("huge.bin was not downloaded"), "{second}");
}

#[test]
fn the_webhook_takes_updates_only_with_the_secret() {
    let port = free_port();
    let bot = Bot::new(&format!(
        "mode = \"webhook\"\nwebhook_url = \"https://bot.example/hook\"\nwebhook_listen = \"127.0.0.1:{port}\"\n"
    ));
    bot.llm.push(anthropic_text("via webhook"));
    let _daemon = bot.start();
    let deadline = Instant::now() + WAIT;
    let hook = loop {
        if let Some(hook) = bot.telegram.webhook() {
            break hook;
        }
        assert!(Instant::now() < deadline, "setWebhook never came");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(hook.url, "https://bot.example/hook");
    let secret = hook.secret_token.expect("a secret token");
    let update = json!({ "update_id": 77, "message": {
        "message_id": 1, "date": 0, "text": "hi",
        "chat": { "id": OWNER, "type": "private" },
        "from": { "id": OWNER, "is_bot": false, "first_name": "o" },
    }})
    .to_string();
    let oversized = format!("{{\"update_id\": 1, \"pad\": \"{}\"}}", "x".repeat(2 << 20));
    let cases: [(Option<&str>, &str, u16); 6] = [
        (None, &update, 401),
        (Some("wrong"), &update, 401),
        (Some(&secret), "{not json", 400),
        (Some(&secret), "{\"message\": {}}", 400),
        (Some(&secret), &oversized, 413),
        (Some(&secret), &update, 200),
    ];
    for (given, body, status) in cases {
        assert_eq!(post(port, "/hook", given, body), status, "{given:?} {body}");
    }
    assert_eq!(bot.sent(1)[0].text, "via webhook");
    // Telegram delivering the same update again changes nothing.
    assert_eq!(post(port, "/hook", Some(&secret), &update), 200);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(bot.llm.requests().len(), 1);
}

#[test]
fn status_and_plugins_show_the_channel_health() {
    let bot = Bot::new("");
    let _daemon = bot.start();
    bot.polled(2);
    let status = bot.home.cmd(&["status"]);
    assert!(
        status.ok().contains("telegram up (long polling)"),
        "{}",
        status.stdout
    );
    let plugins = bot.home.cmd(&["plugins"]);
    assert!(
        plugins.ok().contains("channel telegram: up (long polling)"),
        "{}",
        plugins.stdout
    );
    let rows = bot.home.cmd(&["plugins", "--json"]).json();
    let row = rows
        .as_array()
        .and_then(|r| r.iter().find(|p| p["name"] == "telegram"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(row["channel_status"]["state"], "up", "{rows}");
}

#[test]
fn bad_config_is_named_by_its_key() {
    for (table, wanted) in [
        (
            "allowed_chat_ids = [\"abc\"]\ntoken = \"1:a\"",
            "allowed_chat_ids[0]",
        ),
        (
            "token = \"1:a\"\npoll_timeot_s = 3",
            "unknown key `poll_timeot_s`",
        ),
        (
            "token_env = \"HEARTH_TEST_NO_SUCH_VAR\"",
            "HEARTH_TEST_NO_SUCH_VAR is not set",
        ),
    ] {
        let home = Hearth::with_plugins(
            &[plugin("telegram")],
            &format!("[plugins.telegram]\n{table}\n"),
        );
        let check = home.cmd(&["check"]);
        assert!(!check.status.success(), "{table}");
        let out = format!("{}{}", check.stdout, check.stderr);
        assert!(out.contains(wanted), "{table}: {out}");
        assert!(!out.contains("1:a"), "the token leaked: {out}");
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// POSTs `body` to the webhook; returns the status code.
fn post(port: u16, path: &str, secret: Option<&str>, body: &str) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the webhook");
    let header = secret
        .map(|s| format!("X-Telegram-Bot-Api-Secret-Token: {s}\r\n"))
        .unwrap_or_default();
    // A server refusing an oversized body may answer and close before it
    // has read it all: the answer counts, not the failed write.
    let _ = write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{header}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

#[test]
fn files_attached_by_the_agent_go_out_as_photo_and_document() {
    let bot = Bot::new("");
    let photo = bot.home.write("out/chart.png", "not really a png");
    let report = bot.home.write("out/report.pdf", "%PDF-1.4 report");
    for (id, path) in [("t1", &photo), ("t2", &report)] {
        bot.llm.push(anthropic_tool_use(
            None,
            id,
            "attach_file",
            &json!({ "path": path.display().to_string() }),
        ));
    }
    bot.llm.push(anthropic_text("Here they are."));
    let _daemon = bot.start();
    bot.telegram.push_message(OWNER, OWNER, "send me the files");
    let sent = bot.sent(3);
    let shape: Vec<_> = sent
        .iter()
        .map(|s| (s.method.as_str(), s.file.as_ref().map(|f| f.1.as_str())))
        .collect();
    assert_eq!(
        shape,
        [
            ("sendMessage", None),
            ("sendPhoto", Some("chart.png")),
            ("sendDocument", Some("report.pdf")),
        ]
    );
    assert_eq!(sent[2].file.as_ref().map(|f| f.2), Some(15));
}

#[test]
fn attach_file_refuses_what_it_cannot_send_and_names_the_field() {
    let h = Hearth::new("");
    let dir = h.home().join("somedir");
    std::fs::create_dir_all(&dir).expect("dir");
    let big = h.home().join("big.bin");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(50 * 1024 * 1024 + 1))
        .expect("sparse file");
    let rt = h.runtime();
    for (args, wanted) in [
        (json!({ "path": "relative.txt" }), "not an absolute path"),
        (
            json!({ "path": "/nonexistent/hearth/file" }),
            "No such file",
        ),
        (
            json!({ "path": dir.display().to_string() }),
            "is not a file",
        ),
        (
            json!({ "path": big.display().to_string() }),
            "over the 52428800-byte limit",
        ),
        (json!({ "path": "" }), "path"),
        (json!({ "path": "/etc/hostname", "extra": 1 }), "extra"),
    ] {
        let err = hearth_tests::call_err(&rt, "attach_file", args.clone());
        assert!(err.contains(wanted), "{args}: {err}");
    }
    // The config is one of hearth's credentials: never sent.
    let err = hearth_tests::call_err(
        &rt,
        "attach_file",
        json!({ "path": big.display().to_string().replace("big.bin", "hearth.toml") }),
    );
    assert!(err.contains("credentials"), "{err}");
    let notes = h.write("notes.md", "# notes\n");
    let ok = hearth_tests::call_ok(
        &rt,
        "attach_file",
        json!({ "path": notes.display().to_string() }),
    );
    assert_eq!(ok["attached"]["name"], "notes.md");
    let _ = rt.stop(Duration::from_secs(5));
}
