//! Images to the model end to end: the real daemon, the real Telegram and
//! fs plugins, the fake Bot API and the fake model in both providers'
//! shapes. What the model gets is decoded here: its size within the
//! provider's limits, upright, with no EXIF left; bad files become notes
//! and the daemon keeps answering; images stop being sent after
//! `image_turns` turns; a model that cannot see gets a note. A canvas
//! upload takes the same way as a Telegram photo.

use std::time::{Duration, Instant};

use hearth_tests::canvas::{self, Canvas};
use hearth_tests::fake_llm::{
    FakeLlm, Reply, anthropic_text, anthropic_tool_use, openai_text, openai_tool_call,
};
use hearth_tests::fake_telegram::FakeTelegram;
use hearth_tests::images::{
    GPS_MARK, contains, declared_png, images_in, jpeg, photo_with_exif, transparent_png,
};
use hearth_tests::{Daemon, Hearth, plugin};
use serde_json::{Value, json};

const TOKEN: &str = "4242:test-token";
const OWNER: i64 = 1001;
const WAIT: Duration = Duration::from_secs(60);
const PROVIDERS: [&str; 2] = ["anthropic", "openai"];

/// A home with the Telegram channel and the fake model.
struct Bot {
    /// First, so the daemon stops before its fakes and home go.
    daemon: Option<Daemon>,
    telegram: FakeTelegram,
    llm: FakeLlm,
    home: Hearth,
}

impl Bot {
    /// A bot for [`OWNER`] on `provider`; `llm_keys` adds `[llm]` keys.
    fn start(provider: &'static str, llm_keys: &str, replies: usize) -> Bot {
        let telegram = FakeTelegram::start(TOKEN);
        let llm = FakeLlm::start();
        let base = match provider {
            "openai" => format!("{}/v1", llm.url()),
            _ => llm.url(),
        };
        let home = Hearth::with_plugins(
            &[plugin("telegram")],
            &format!(
                "[plugins.telegram]\ntoken = {TOKEN:?}\napi_url = {:?}\nallowed_chat_ids = [{OWNER}]\n\
                 poll_timeout_s = 1\npace_chat_ms = 0\n\
                 [llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
                 api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n{llm_keys}\n",
                telegram.url(),
            ),
        );
        for n in 0..replies {
            llm.push(text_reply(provider, &format!("answer {n}")));
        }
        let mut bot = Bot {
            daemon: None,
            telegram,
            llm,
            home,
        };
        bot.daemon = Some(bot.home.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        }));
        bot
    }

    /// Sends a photo (as Telegram sends one: sizes, the last the largest)
    /// and waits for the model to be asked; that request's body.
    fn photo(&self, bytes: &[u8], caption: &str) -> Value {
        let id = self.telegram.add_file(bytes);
        self.send(json!({
            "caption": caption,
            "photo": [
                { "file_id": "thumb-not-fetched", "file_unique_id": "t", "width": 90, "height": 60 },
                { "file_id": id, "file_unique_id": "p", "width": 2400, "height": 1600,
                  "file_size": bytes.len() },
            ],
        }))
    }

    /// Sends a file as a document named `name` of type `mime`.
    fn document(&self, name: &str, mime: &str, bytes: &[u8]) -> Value {
        let id = self.telegram.add_file(bytes);
        self.send(json!({
            "caption": "have a look",
            "document": { "file_id": id, "file_unique_id": "d", "file_name": name,
                          "mime_type": mime, "file_size": bytes.len() },
        }))
    }

    /// Sends text; the request it made.
    fn text(&self, text: &str) -> Value {
        self.send(json!({ "text": text }))
    }

    /// Pushes a message with `fields` and waits for the reply; the body of
    /// the model request it made.
    fn send(&self, fields: Value) -> Value {
        let before = self.llm.requests().len();
        let replies = self.telegram.sent().len();
        let mut message = json!({
            "message_id": before + 10, "date": 0,
            "chat": { "id": OWNER, "type": "private" },
            "from": { "id": OWNER, "is_bot": false, "first_name": "o" },
        });
        for (k, v) in fields.as_object().expect("fields") {
            message[k] = v.clone();
        }
        self.telegram.push_update(json!({ "message": message }));
        let sent = self.telegram.wait_for_sent(replies + 1, WAIT);
        assert!(sent.len() > replies, "no reply: {sent:#?}");
        let requests = self.llm.requests();
        assert_eq!(requests.len(), before + 1, "one model request per message");
        requests[before].body.clone()
    }
}

fn text_reply(provider: &str, text: &str) -> Reply {
    match provider {
        "openai" => openai_text(text),
        _ => anthropic_text(text),
    }
}

/// The text the model was given in a request, images left out.
fn words(body: &Value) -> String {
    let mut out = String::new();
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) if !s.starts_with("data:") => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            Value::Object(m) if m.get("type").and_then(Value::as_str) != Some("image") => {
                m.values().for_each(|v| walk(v, out));
            }
            _ => {}
        }
    }
    walk(&body["messages"], &mut out);
    out
}

#[test]
fn a_telegram_photo_reaches_the_model_upright_downscaled_and_without_exif() {
    let photo = photo_with_exif(2400, 1600);
    assert!(contains(&photo, b"Exif\0\0") && contains(&photo, &GPS_MARK));
    for provider in PROVIDERS {
        let bot = Bot::start(provider, "vision = true", 1);
        let body = bot.photo(&photo, "what is this?");
        let images = images_in(&body);
        assert_eq!(images.len(), 1, "{provider}: {}", words(&body));
        let image = &images[0];
        assert_eq!(image.media_type, "image/jpeg", "{provider}");
        let (w, h) = image.size();
        assert!(h > w, "{provider}: not turned upright: {w}x{h}");
        match provider {
            // About 1.15 megapixels, 1568 a side.
            "anthropic" => {
                assert_eq!((w, h), (875, 1313));
                assert!(u64::from(w) * u64::from(h) <= 1_150_000);
            }
            // 768 on the shorter side.
            _ => assert_eq!((w, h), (768, 1152), "{provider}"),
        }
        assert!(
            !contains(&image.bytes, b"Exif"),
            "{provider}: EXIF reached the model"
        );
        assert!(
            !contains(&image.bytes, &GPS_MARK),
            "{provider}: the GPS position reached the model"
        );
        assert!(
            !contains(&image.bytes, &[0xFF, 0xE1]),
            "{provider}: an APP1 segment survived"
        );
        let text = words(&body);
        assert!(text.contains("what is this?"), "{text}");
        assert!(
            text.contains("[Attached image: photo.jpg (1600x2400), saved at "),
            "{provider}: {text}"
        );
        // Each provider's own shape.
        let messages = body["messages"].as_array().expect("messages");
        let user = messages.last().expect("the user's message");
        assert_eq!(user["role"], "user");
        match provider {
            "anthropic" => {
                assert_eq!(user["content"][0]["type"], "text");
                assert_eq!(user["content"][1]["type"], "image");
            }
            _ => {
                assert_eq!(user["content"][0]["type"], "text");
                assert_eq!(user["content"][1]["type"], "image_url");
            }
        }
        // The history holds a reference to the prepared copy, never its bytes.
        let stored: String = bot
            .home
            .db()
            .query_row(
                "SELECT content FROM messages WHERE role = 'user' ORDER BY id LIMIT 1",
                [],
                |r| r.get(0),
            )
            .expect("the stored message");
        assert!(
            stored.len() < 2_000,
            "{provider}: {} bytes stored",
            stored.len()
        );
        let blocks: Value = serde_json::from_str(&stored).expect("stored JSON");
        let copy = blocks[1]["path"].as_str().expect("the copy's path");
        assert!(copy.contains("/media/"), "{copy}");
        assert_eq!(std::fs::read(copy).expect("the saved copy"), image.bytes);
    }
}

#[test]
fn bad_files_become_notes_and_the_daemon_keeps_serving() {
    let whole = jpeg(640, 480);
    let cases: [(&str, &str, Vec<u8>, &str); 4] = [
        (
            "holiday.jpg",
            "image/jpeg",
            b"I am a text file pretending to be a photo".to_vec(),
            "[Attached file: holiday.jpg (image/jpeg, ",
        ),
        (
            "cut.jpg",
            "image/jpeg",
            whole[..whole.len() / 2].to_vec(),
            "it is damaged or cut short",
        ),
        (
            "bomb.png",
            "image/png",
            declared_png(50_000, 50_000),
            "it declares 50000×50000 pixels",
        ),
        (
            "iphone.heic",
            "image/heic",
            b"\0\0\0\x18ftypheic\0\0\0\0mif1heic".to_vec(),
            "it is a HEIC image, which hearth cannot read",
        ),
    ];
    let bot = Bot::start("anthropic", "", cases.len() + 1);
    for (name, mime, bytes, note) in &cases {
        let started = Instant::now();
        let body = bot.document(name, mime, bytes);
        assert!(images_in(&body).is_empty(), "{name} was sent as an image");
        let text = words(&body);
        assert!(text.contains(note), "{name}: expected {note:?} in {text}");
        assert!(
            text.contains("it is not shown as an image"),
            "{name}: {text}"
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{name}: slow");
    }
    // The not-a-photo note says what was wrong.
    let first = words(&bot.llm.requests()[0].body);
    assert!(first.contains("its content is not an image"), "{first}");
    // Still serving, and still seeing.
    let body = bot.document("good.png", "image/png", &transparent_png(64, 32));
    let images = images_in(&body);
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].media_type, "image/png", "transparency keeps PNG");
    assert_eq!(images[0].size(), (64, 32));
}

#[test]
fn an_image_is_sent_for_image_turns_turns_then_becomes_a_note() {
    let bot = Bot::start("anthropic", "image_turns = 2", 4);
    let first = bot.photo(&jpeg(300, 200), "here");
    assert_eq!(images_in(&first).len(), 1);
    let second = bot.text("and the colours?");
    assert_eq!(images_in(&second).len(), 1, "sent again in the next turn");
    let third = bot.text("anything else?");
    assert!(images_in(&third).is_empty(), "still sent after 2 turns");
    let text = words(&third);
    assert!(
        text.contains("[image photo.jpg (300x200), shown in an earlier turn; saved at "),
        "{text}"
    );
    assert!(text.contains("attachments/telegram/"), "{text}");
}

#[test]
fn a_model_that_cannot_see_gets_a_note() {
    // Said in the config; and guessed for an OpenAI-compatible model
    // whose name says nothing of vision.
    for (provider, keys) in [("anthropic", "vision = false"), ("openai", "")] {
        let bot = Bot::start(provider, keys, 1);
        let body = bot.photo(&photo_with_exif(400, 300), "look");
        assert!(images_in(&body).is_empty(), "{provider}");
        let text = words(&body);
        assert!(
            text.contains("[image: photo.jpg, 300x400, saved at "),
            "{provider}: {text}"
        );
        assert!(text.contains("; this model cannot see images]"), "{text}");
        assert!(
            !bot.home.home().join("media").exists(),
            "{provider}: a copy was prepared"
        );
    }
}

#[test]
fn read_file_shows_the_model_an_image_after_the_tool_results() {
    for provider in PROVIDERS {
        let llm = FakeLlm::start();
        let base = match provider {
            "openai" => format!("{}/v1", llm.url()),
            _ => llm.url(),
        };
        let home = Hearth::new(&format!(
            "[llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\nvision = true\n"
        ));
        std::fs::write(home.home().join("chart.png"), transparent_png(3000, 1000)).unwrap();
        let args = json!({ "path": "chart.png" });
        llm.push(match provider {
            "openai" => openai_tool_call("call_1", "read_file", &args),
            _ => anthropic_tool_use(None, "toolu_1", "read_file", &args),
        });
        llm.push(text_reply(provider, "a half-transparent chart"));
        let _daemon = home.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        });
        let out = home.chat("what does chart.png show?");
        assert_eq!(out.ok().trim(), "a half-transparent chart", "{provider}");
        let requests = llm.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        let body = &requests[1].body;
        let images = images_in(body);
        assert_eq!(images.len(), 1, "{provider}: {}", words(body));
        assert_eq!(images[0].media_type, "image/png");
        let (w, h) = images[0].size();
        assert_eq!(w / h, 3, "{provider}: {w}x{h}");
        assert!(w <= 2048 && h <= 768, "{provider}: {w}x{h}");
        let messages = body["messages"].as_array().expect("messages");
        match provider {
            "anthropic" => {
                let results = &messages.last().expect("the results")["content"];
                assert_eq!(results[0]["type"], "tool_result");
                assert_eq!(results[1]["type"], "text");
                assert_eq!(results[2]["type"], "image");
                let content = results[0]["content"].as_str().unwrap_or_default();
                assert!(
                    content.contains("shown after the tool results"),
                    "{content}"
                );
            }
            _ => {
                let n = messages.len();
                assert_eq!(messages[n - 2]["role"], "tool", "{provider}");
                assert_eq!(messages[n - 1]["role"], "user", "{provider}");
                assert_eq!(messages[n - 1]["content"][1]["type"], "image_url");
                let label = messages[n - 1]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default();
                assert!(label.contains("read_file returned"), "{label}");
            }
        }
    }
}

#[test]
fn a_canvas_upload_is_shown_as_an_image() {
    let llm = FakeLlm::start();
    llm.push(anthropic_text("a blue square"));
    let home = Hearth::with_plugins(
        &[plugin("canvas")],
        &format!(
            "{}\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n",
            canvas::CONFIG,
            llm.url()
        ),
    );
    let _daemon = home.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    let canvas = Canvas::of(home.home());
    let cookie = canvas.login();
    // The browser's stated type is wrong; the bytes decide.
    let answer = canvas.request(
        "POST",
        "/upload?name=square.bin",
        Some(&cookie),
        &[("Content-Type", "application/octet-stream")],
        &jpeg(200, 200),
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    let upload: Value = serde_json::from_slice(&answer.body).expect("an attachment");
    let (mut ws, _) = canvas.connect();
    let message = json!({ "type": "send", "id": "u-1", "text": "what is it?", "attachments": [upload["id"]] });
    ws.send(&message.to_string());
    ws.wait_for(WAIT, |f| {
        f["type"] == "message" && f["message"]["role"] == "agent"
    });
    let body = &llm.requests()[0].body;
    let images = images_in(body);
    assert_eq!(images.len(), 1, "{}", words(body));
    assert_eq!(images[0].size(), (200, 200));
    assert!(
        words(body).contains("[Attached image: square.bin (200x200)"),
        "{}",
        words(body)
    );
}
