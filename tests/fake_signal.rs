//! The fake signal-cli daemon checked on its own, with a bare HTTP client:
//! what the Signal plugin's tests rely on must hold first.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use hearth_tests::fake_signal::{FakeSignal, METHOD_NOT_FOUND, USER_ERROR, base64};
use serde_json::{Value, json};

const ACCOUNT: &str = "+15550000001";
const OWNER: &str = "+15550000002";

/// Sends raw `request` text and returns the whole answer (the fake answers
/// `Connection: close` requests and closes).
fn raw(fake: &FakeSignal, request: &str) -> String {
    let mut stream = TcpStream::connect(fake.url().trim_start_matches("http://")).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// POSTs a JSON-RPC body; returns the status line and the body as JSON
/// (`Null` when empty).
fn post(fake: &FakeSignal, body: &Value) -> (String, Value) {
    let host = fake.url().trim_start_matches("http://").to_owned();
    let body = body.to_string();
    let answer = raw(
        fake,
        &format!(
            "POST /api/v1/rpc HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn call(fake: &FakeSignal, method: &str, params: Value) -> Value {
    post(
        fake,
        &json!({"jsonrpc": "2.0", "method": method, "params": params, "id": 7}),
    )
    .1
}

/// Opens an event stream; returns the socket, with a short read timeout.
fn open_stream(fake: &FakeSignal) -> TcpStream {
    let host = fake.url().trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&host).unwrap();
    stream
        .write_all(format!("GET /api/v1/events HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    stream
}

/// Reads from `stream` for `how_long`, returning what came.
fn read_for(stream: &mut TcpStream, how_long: Duration) -> String {
    let deadline = Instant::now() + how_long;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn json_rpc_answers_as_signal_cli_does() {
    let fake = FakeSignal::start(ACCOUNT);
    let params = json!({"recipient": [OWNER], "message": "hi there", "textStyle": ["0:2:BOLD"]});
    let answer = call(&fake, "send", params);
    let timestamp = answer["result"]["timestamp"].as_i64().expect("a timestamp");
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"]["results"][0]["type"], "SUCCESS");
    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (
            sent[0].recipients.clone(),
            sent[0].message.as_str(),
            sent[0].timestamp
        ),
        (vec![OWNER.to_owned()], "hi there", timestamp)
    );
    assert_eq!(sent[0].text_styles, ["0:2:BOLD"]);

    let code = |answer: Value| {
        (
            answer["error"]["code"].as_i64(),
            answer["error"]["message"].clone(),
        )
    };
    assert_eq!(
        code(call(&fake, "nope", json!({}))),
        (Some(METHOD_NOT_FOUND), json!("Method not implemented"))
    );
    assert_eq!(
        code(call(
            &fake,
            "send",
            json!({"recipient": OWNER, "message": "x", "textStyle": "0:1:LOUD"})
        )),
        (Some(USER_ERROR), json!("Invalid style: LOUD"))
    );
    assert_eq!(
        code(call(&fake, "send", json!({"message": "x"}))).1,
        json!("No recipients given")
    );
    fake.fail_next_send(-5, "Failed to send message due to rate limiting");
    assert_eq!(
        code(call(
            &fake,
            "send",
            json!({"recipient": OWNER, "message": "x"})
        ))
        .0,
        Some(-5)
    );
    assert_eq!(
        fake.sent().len(),
        1,
        "failed sends are not recorded as sent"
    );
    assert_eq!(fake.requests_for("send").len(), 4);

    let notification = post(
        &fake,
        &json!({"jsonrpc": "2.0", "method": "sendTyping", "params": {"recipient": [OWNER]}}),
    );
    assert!(
        notification.0.starts_with("HTTP/1.1 201"),
        "{notification:?}"
    );
    let parse_error = post(&fake, &json!("not an object"));
    assert_eq!(parse_error.1["error"]["code"], -32600);
    let no_type = raw(
        &fake,
        "POST /api/v1/rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    assert!(no_type.starts_with("HTTP/1.1 415"), "{no_type}");
    let foreign = raw(
        &fake,
        "GET /api/v1/check HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert!(foreign.starts_with("HTTP/1.1 421"), "{foreign}");
    let check = raw(
        &fake,
        "GET /api/v1/check HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(check.starts_with("HTTP/1.1 200"), "{check}");
}

#[test]
fn attachments_come_back_base64() {
    let fake = FakeSignal::start(ACCOUNT);
    let attachment = fake.add_attachment(b"hello, file", "text/plain", "note.txt");
    let id = attachment["id"].as_str().unwrap();
    assert_eq!(attachment["size"], 11);
    let answer = call(
        &fake,
        "getAttachment",
        json!({"id": id, "recipient": OWNER}),
    );
    assert_eq!(answer["result"]["data"], base64(b"hello, file"));
    assert_eq!(base64(b"ab"), "YWI=");
    let missing = call(&fake, "getAttachment", json!({"id": "nope"}));
    assert_eq!(
        missing["error"]["message"],
        "Could not find attachment with ID: nope"
    );
}

#[test]
fn streams_carry_messages_and_keepalives_and_can_hang_or_drop() {
    let fake = FakeSignal::start(ACCOUNT);
    fake.keepalive_every(Duration::from_millis(100));
    let early = fake.push_message(OWNER, "sent while nobody listened");
    let mut stream = open_stream(&fake);
    assert!(fake.wait_for_streams(1, Duration::from_secs(5)));
    let later = fake.push_message(OWNER, "sent while listening");
    let got = read_for(&mut stream, Duration::from_millis(600));
    assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
    assert!(got.contains("Transfer-encoding: chunked") && got.contains("text/event-stream"));
    assert!(got.contains("\r\n:\n\r\n"), "a keep-alive chunk: {got}");
    let data: Vec<Value> = got
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(data.len(), 2, "{got}");
    assert_eq!(data[0]["account"], ACCOUNT);
    assert_eq!(data[0]["envelope"]["timestamp"], early);
    assert_eq!(data[1]["envelope"]["sourceNumber"], OWNER);
    assert_eq!(
        data[1]["envelope"]["dataMessage"]["message"],
        "sent while listening"
    );
    assert_eq!(data[1]["envelope"]["dataMessage"]["timestamp"], later);
    assert!(got.contains("event:receive\ndata:"));

    fake.hang(true);
    read_for(&mut stream, Duration::from_millis(100));
    fake.push_message(OWNER, "held");
    assert_eq!(
        read_for(&mut stream, Duration::from_millis(400)),
        "",
        "a hung stream is silent"
    );
    fake.hang(false);
    assert!(read_for(&mut stream, Duration::from_millis(400)).contains("held"));

    fake.drop_streams();
    let rest = read_for(&mut stream, Duration::from_millis(500));
    assert!(rest.ends_with("0\r\n\r\n"), "{rest:?}");
    assert_eq!(fake.streams_open(), 0);
}
