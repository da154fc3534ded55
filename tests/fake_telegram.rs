//! Self-tests of the fake Telegram Bot API (`support::fake_telegram`), so a
//! Telegram channel's tests can trust what the fake answers: long polling,
//! offset confirmation, the server's text checks, flood limits, auth, file
//! download and a server that stops answering.
//!
//! The client here is a few lines of plain HTTP/1.1 over `TcpStream`, so the
//! fake is checked on the wire, independent of any HTTP library.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hearth_tests::fake_telegram::FakeTelegram;
use serde_json::{Value, json};

const TOKEN: &str = "123456:TEST-token";

/// Sends one request and returns the status and the raw body.
fn http(base: &str, method: &str, path: &str, body: Option<(&str, &[u8])>) -> (u16, Vec<u8>) {
    let host = base.strip_prefix("http://").expect("an http:// base");
    let mut stream = TcpStream::connect(host).expect("connect to the fake");
    let (kind, bytes) = body.unwrap_or(("text/plain", b""));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
        bytes.len()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream.write_all(bytes).expect("send the body");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    (status, answer[split + 4..].to_vec())
}

/// Calls a Bot API method with a JSON body.
fn call(fake: &FakeTelegram, method: &str, params: &Value) -> (u16, Value) {
    let body = params.to_string();
    let path = format!("/bot{}/{method}", fake.token());
    let (status, bytes) = http(
        &fake.url(),
        "POST",
        &path,
        Some(("application/json", body.as_bytes())),
    );
    (
        status,
        serde_json::from_slice(&bytes).expect("a JSON answer"),
    )
}

#[test]
fn get_me_answers_the_bot_user_and_query_strings_work() {
    let fake = FakeTelegram::start(TOKEN);
    let (status, body) = call(&fake, "getMe", &json!({}));
    assert_eq!(status, 200);
    assert_eq!(body["ok"], true);
    assert_eq!(body["result"]["id"], 123456);
    assert_eq!(body["result"]["is_bot"], true);

    fake.push_message(7, 7, "hi");
    let path = format!("/bot{TOKEN}/getupdates?offset=0&timeout=0");
    let (status, bytes) = http(&fake.url(), "GET", &path, None);
    let body: Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(status, 200);
    assert_eq!(body["result"][0]["message"]["text"], "hi");
    assert_eq!(fake.requests_for("getUpdates")[0].params["offset"], 0);
}

#[test]
fn wrong_token_is_401_and_unknown_method_is_404() {
    let fake = FakeTelegram::start(TOKEN);
    let (status, bytes) = http(&fake.url(), "POST", "/bot1:wrong/getMe", None);
    let body: Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(status, 401);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );
    let (status, body) = call(&fake, "noSuchMethod", &json!({}));
    assert_eq!(status, 404);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 404, "description": "Not Found"})
    );
    assert!(!fake.requests()[0].authorized);
}

#[test]
fn long_poll_returns_when_a_message_is_pushed() {
    let fake = FakeTelegram::start(TOKEN);
    let (tx, rx) = mpsc::channel();
    let url = fake.url();
    std::thread::scope(|s| {
        s.spawn(|| {
            let started = Instant::now();
            let answer = call(&fake, "getUpdates", &json!({"offset": 0, "timeout": 30}));
            tx.send((answer, started.elapsed()))
                .expect("send the answer");
        });
        assert!(fake.wait_for_requests(1, Duration::from_secs(5)));
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        let id = fake.push_message(42, 7, "/start now");
        let ((status, body), took) = rx.recv_timeout(Duration::from_secs(5)).expect("answered");
        assert_eq!(status, 200, "{url}");
        assert!(took < Duration::from_secs(5));
        let update = &body["result"][0];
        assert_eq!(update["update_id"], id);
        assert_eq!(update["message"]["chat"]["id"], 42);
        assert_eq!(update["message"]["from"]["id"], 7);
        assert_eq!(update["message"]["text"], "/start now");
        assert_eq!(update["message"]["entities"][0]["type"], "bot_command");
        assert_eq!(update["message"]["entities"][0]["length"], 6);
    });
}

#[test]
fn long_poll_answers_empty_after_the_timeout() {
    let fake = FakeTelegram::start(TOKEN);
    let started = Instant::now();
    let (status, body) = call(&fake, "getUpdates", &json!({"timeout": 1}));
    let took = started.elapsed();
    assert_eq!(status, 200);
    assert_eq!(body, json!({"ok": true, "result": []}));
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn confirming_by_offset_drops_older_updates() {
    let fake = FakeTelegram::start(TOKEN);
    let first = fake.push_message(1, 1, "one");
    let second = fake.push_callback(1, 1, 99, "yes");
    let (_, body) = call(&fake, "getUpdates", &json!({"limit": 1}));
    assert_eq!(body["result"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["result"][0]["update_id"], first);

    let (_, body) = call(&fake, "getUpdates", &json!({"offset": first + 1}));
    let updates = body["result"].as_array().expect("an array");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0]["update_id"], second);
    assert_eq!(updates[0]["callback_query"]["data"], "yes");
    assert_eq!(updates[0]["callback_query"]["message"]["message_id"], 99);

    let (_, body) = call(&fake, "getUpdates", &json!({"offset": second + 1}));
    assert_eq!(body["result"], json!([]));
    assert!(fake.pending_updates().is_empty());
    let (_, body) = call(&fake, "getUpdates", &json!({}));
    assert_eq!(body["result"], json!([]), "confirmed updates stay gone");
}

#[test]
fn send_message_is_stored_and_over_4096_is_rejected() {
    let fake = FakeTelegram::start(TOKEN);
    let markup = json!({"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]});
    let (status, body) = call(
        &fake,
        "sendMessage",
        &json!({"chat_id": 5, "text": "hello", "reply_markup": markup,
                "reply_parameters": {"message_id": 3}}),
    );
    assert_eq!(status, 200);
    assert_eq!(body["result"]["text"], "hello");
    assert_eq!(body["result"]["chat"]["id"], 5);
    let id = body["result"]["message_id"].as_i64().expect("a message id");

    let exactly = "é".repeat(4096);
    let (status, _) = call(
        &fake,
        "sendMessage",
        &json!({"chat_id": 5, "text": exactly}),
    );
    assert_eq!(status, 200);
    let (status, body) = call(
        &fake,
        "sendMessage",
        &json!({"chat_id": 5, "text": format!("{exactly}!")}),
    );
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 400, "description": "Bad Request: message is too long"})
    );

    let sent = fake.wait_for_sent(2, Duration::from_secs(1));
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].chat_id, 5);
    assert_eq!(sent[0].text, "hello");
    assert_eq!(sent[0].message_id, id);
    assert_eq!(sent[0].reply_markup, Some(markup));
    assert_eq!(sent[0].reply_to, Some(3));
    assert!(sent[1].message_id > id);
}

#[test]
fn html_is_checked_like_the_real_server() {
    let fake = FakeTelegram::start(TOKEN);
    let cases = [
        (
            "<b>hi <div>x</div></b>",
            "Unsupported start tag \"div\" at byte offset 6",
        ),
        (
            "<b>open",
            "Can't find end tag corresponding to start tag \"b\"",
        ),
        (
            "<b>x</i>",
            "Unmatched end tag at byte offset 4, expected \"</b>\", found \"</i>\"",
        ),
        ("x</b>", "Unexpected end tag at byte offset 1"),
    ];
    for (text, error) in cases {
        let (status, body) = call(
            &fake,
            "sendMessage",
            &json!({"chat_id": 1, "text": text, "parse_mode": "HTML"}),
        );
        assert_eq!(status, 400, "{text}");
        assert_eq!(
            body["description"],
            format!("Bad Request: can't parse entities: {error}"),
            "{text}"
        );
    }
    let text = "<b>bold</b> <a href=\"https://example.com/?a=1&amp;b=2\">link</a> 1 &lt; 2";
    let (status, body) = call(
        &fake,
        "sendMessage",
        &json!({"chat_id": 1, "text": text, "parse_mode": "HTML"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["text"], "bold link 1 < 2");
    assert_eq!(fake.sent()[0].text, text);
    assert_eq!(fake.sent()[0].parse_mode.as_deref(), Some("HTML"));
}

#[test]
fn edits_replace_the_text_and_identical_edits_are_refused() {
    let fake = FakeTelegram::start(TOKEN);
    let (_, body) = call(
        &fake,
        "sendMessage",
        &json!({"chat_id": 2, "text": "draft"}),
    );
    let id = body["result"]["message_id"].clone();
    let edit = json!({"chat_id": 2, "message_id": id, "text": "final"});
    let (status, _) = call(&fake, "editMessageText", &edit);
    assert_eq!(status, 200);
    let (status, body) = call(&fake, "editMessageText", &edit);
    assert_eq!(status, 400);
    assert!(
        body["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Bad Request: message is not modified")),
        "{body}"
    );
    let sent = fake.sent();
    assert_eq!(sent[0].text, "final");
    assert_eq!(sent[0].edits, vec!["final".to_owned()]);
}

#[test]
fn rate_limit_answers_429_with_retry_after() {
    let fake = FakeTelegram::start(TOKEN);
    fake.rate_limit(1, 5);
    let (status, _) = call(&fake, "getMe", &json!({}));
    assert_eq!(status, 200, "only send methods are limited");
    let params = json!({"chat_id": 1, "text": "x"});
    let (status, body) = call(&fake, "sendMessage", &params);
    assert_eq!(status, 429);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 429,
               "description": "Too Many Requests: retry after 5",
               "parameters": {"retry_after": 5}})
    );
    let (status, _) = call(&fake, "sendMessage", &params);
    assert_eq!(status, 200);
    assert_eq!(fake.sent().len(), 1);

    fake.fail_next("sendmessage", 403, "Forbidden: bot was blocked by the user");
    let (status, body) = call(&fake, "sendMessage", &params);
    assert_eq!(status, 403);
    assert_eq!(
        body["description"],
        "Forbidden: bot was blocked by the user"
    );
    let (status, _) = call(&fake, "sendMessage", &params);
    assert_eq!(status, 200);
}

#[test]
fn get_file_and_download_the_bytes() {
    let fake = FakeTelegram::start(TOKEN);
    let bytes: Vec<u8> = (0..=255).collect();
    let file_id = fake.add_file(&bytes);
    let (status, body) = call(&fake, "getFile", &json!({"file_id": file_id}));
    assert_eq!(status, 200);
    assert_eq!(body["result"]["file_size"], 256);
    let path = body["result"]["file_path"].as_str().expect("a file path");
    let (status, got) = http(
        &fake.url(),
        "GET",
        &format!("/file/bot{TOKEN}/{path}"),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(got, bytes);
    let (status, _) = http(&fake.url(), "GET", &format!("/file/bot1:x/{path}"), None);
    assert_eq!(status, 404);
    let (status, body) = call(&fake, "getFile", &json!({"file_id": "nope"}));
    assert_eq!(status, 400);
    assert_eq!(body["description"], "Bad Request: invalid file_id");
}

#[test]
fn multipart_upload_is_recorded_and_downloadable() {
    let fake = FakeTelegram::start(TOKEN);
    let boundary = "XyZ";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!("--{boundary}\r\ncontent-disposition: form-data; name=\"chat_id\"\r\n\r\n9\r\n")
            .as_bytes(),
    );
    body.extend_from_slice(
        format!(
            "--{boundary}\r\ncontent-disposition: form-data; name=\"document\"; filename=\"a.txt\"\r\ncontent-type: text/plain\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(b"file\r\nbody");
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let kind = format!("multipart/form-data; boundary={boundary}");
    let path = format!("/bot{TOKEN}/sendDocument");
    let (status, answer) = http(&fake.url(), "POST", &path, Some((&kind, &body)));
    let answer: Value = serde_json::from_slice(&answer).expect("JSON");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["document"]["file_name"], "a.txt");
    assert_eq!(answer["result"]["document"]["file_size"], 10);
    let sent = fake.sent();
    assert_eq!(sent[0].chat_id, 9);
    assert_eq!(
        sent[0].file,
        Some(("document".to_owned(), "a.txt".to_owned(), 10))
    );
    let logged = &fake.requests()[0].params["document"];
    assert_eq!(logged, &json!({"filename": "a.txt", "size": 10}));

    let file_id = &answer["result"]["document"]["file_id"];
    let (_, info) = call(&fake, "getFile", &json!({"file_id": file_id}));
    let file_path = info["result"]["file_path"].as_str().expect("a file path");
    let (_, got) = http(
        &fake.url(),
        "GET",
        &format!("/file/bot{TOKEN}/{file_path}"),
        None,
    );
    assert_eq!(got, b"file\r\nbody");
}

#[test]
fn webhook_is_recorded_and_blocks_get_updates() {
    let fake = FakeTelegram::start(TOKEN);
    let (status, _) = call(
        &fake,
        "setWebhook",
        &json!({"url": "https://bot.invalid/hook", "secret_token": "s3"}),
    );
    assert_eq!(status, 200);
    let hook = fake.webhook().expect("a webhook");
    assert_eq!(hook.url, "https://bot.invalid/hook");
    assert_eq!(hook.secret_token.as_deref(), Some("s3"));
    let (status, _) = call(&fake, "getUpdates", &json!({}));
    assert_eq!(status, 409);
    let (status, _) = call(&fake, "deleteWebhook", &json!({}));
    assert_eq!(status, 200);
    assert!(fake.webhook().is_none());
    let (status, _) = call(
        &fake,
        "sendChatAction",
        &json!({"chat_id": 1, "action": "typing"}),
    );
    assert_eq!(status, 200);
    let (status, _) = call(
        &fake,
        "answerCallbackQuery",
        &json!({"callback_query_id": "cb1"}),
    );
    assert_eq!(status, 200);
}

#[test]
fn hang_holds_requests_until_released() {
    let fake = FakeTelegram::start(TOKEN);
    fake.hang(true);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let answer = call(&fake, "getMe", &json!({}));
            tx.send(answer).expect("send the answer");
        });
        assert!(fake.wait_for_requests(1, Duration::from_secs(5)));
        assert!(
            rx.recv_timeout(Duration::from_millis(500)).is_err(),
            "a hung server answered"
        );
        fake.hang(false);
        let (status, _) = rx.recv_timeout(Duration::from_secs(5)).expect("released");
        assert_eq!(status, 200);
    });
}
