//! The web plugin: `web_fetch` against a real HTTP server on 127.0.0.1
//! (allow-listed by address and port), and every way of reaching a
//! non-public address refused: literal IPv4 and IPv6, IPv4-mapped IPv6,
//! odd IPv4 spellings, a name that resolves to loopback, and redirects from
//! an allowed server. URLs with credentials are refused by design.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use hearth_tests::{Hearth, plugin};
use serde_json::{Value, json};

const PAGE: &str = "<!doctype html><html><head><title>Test &amp; Page</title>\
    <style>body { color: red }</style><script>alert('no')</script></head>\
    <body><h1>Welcome</h1><p>Hello <b>world</b>.</p>\
    <ul><li>one</li><li>two</li></ul><p>See <a href=\"/docs\">the docs</a>.</p></body></html>";

/// The size of `/big`.
const BIG: usize = 100_000;

/// A server answering canned responses; it runs until the test process
/// ends. Returns its port.
fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || answer(stream, port));
        }
    });
    port
}

fn answer(mut stream: TcpStream, port: u16) {
    let mut request = Vec::new();
    let mut byte = [0u8; 1];
    while !request.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => request.push(byte[0]),
            _ => return,
        }
    }
    let request = String::from_utf8_lossy(&request).into_owned();
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let redirect = |to: &str| (302, "text/plain", String::new(), Some(to.to_owned()));
    let (status, content_type, body, location) = match path.as_str() {
        "/page" => (200, "text/html; charset=utf-8", PAGE.to_owned(), None),
        "/big" => (200, "text/plain", "a".repeat(BIG), None),
        "/missing" => (404, "text/html", "<h1>Not here</h1>".to_owned(), None),
        "/hang" => {
            // Never answer: the client must give up on its own.
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        "/to-page" => redirect("/page"),
        "/to-loopback" => redirect(&format!("http://127.0.0.2:{port}/page")),
        "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-mapped" => redirect(&format!("http://[::ffff:127.0.0.1]:{port}/page")),
        "/loop" => redirect("/loop"),
        _ => (404, "text/plain", "no such path".to_owned(), None),
    };
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(location) = location {
        head.push_str(&format!("Location: {location}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

/// A hearth with the web plugin, the test server allow-listed.
fn setup() -> (Hearth, hearth::runtime::Runtime, u16) {
    let port = server();
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!("[plugins.web]\nallow_hosts = [\"127.0.0.1:{port}\"]\n"),
    );
    let rt = h.runtime();
    (h, rt, port)
}

fn fetch(rt: &hearth::runtime::Runtime, args: Value) -> Result<Value, String> {
    rt.tools.call("web_fetch", args).map_err(|e| e.to_string())
}

#[test]
fn html_becomes_text_with_title_and_links() {
    let (_h, rt, port) = setup();
    let got = fetch(
        &rt,
        json!({ "url": format!("http://127.0.0.1:{port}/page") }),
    )
    .unwrap();
    assert_eq!(got["status"], 200);
    assert_eq!(got["url"], format!("http://127.0.0.1:{port}/page"));
    assert_eq!(got["content_type"], "text/html; charset=utf-8");
    assert_eq!(got["title"], "Test & Page");
    assert_eq!(got["truncated"], false);
    assert_eq!(got["bytes"], PAGE.len());
    assert_eq!(
        got["text"],
        format!(
            "# Welcome\n\nHello world.\n\n- one\n- two\n\nSee the docs (http://127.0.0.1:{port}/docs)."
        )
    );
}

#[test]
fn raw_returns_the_body_as_it_is() {
    let (_h, rt, port) = setup();
    let got = fetch(
        &rt,
        json!({ "url": format!("http://127.0.0.1:{port}/page"), "raw": true }),
    )
    .unwrap();
    assert_eq!(got["text"], PAGE);
    assert_eq!(got["title"], "Test & Page");
}

#[test]
fn the_size_cap_truncates() {
    let (_h, rt, port) = setup();
    let url = format!("http://127.0.0.1:{port}/big");
    let got = fetch(&rt, json!({ "url": url, "max_bytes": 1000 })).unwrap();
    assert_eq!(got["truncated"], true);
    assert_eq!(got["bytes"], 1000);
    assert_eq!(got["text"].as_str().unwrap().len(), 1000);
    assert!(got.get("title").is_none());
    let whole = fetch(&rt, json!({ "url": url, "max_bytes": BIG })).unwrap();
    assert_eq!(whole["truncated"], false);
    assert_eq!(whole["bytes"], BIG);
}

#[test]
fn a_silent_server_times_out() {
    let (_h, rt, port) = setup();
    let started = Instant::now();
    let err = fetch(
        &rt,
        json!({ "url": format!("http://127.0.0.1:{port}/hang"), "timeout_ms": 500 }),
    )
    .unwrap_err();
    assert!(err.contains("timed out after 500 ms"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_404_is_returned_with_its_status() {
    let (_h, rt, port) = setup();
    let got = fetch(
        &rt,
        json!({ "url": format!("http://127.0.0.1:{port}/missing") }),
    )
    .unwrap();
    assert_eq!(got["status"], 404);
    assert_eq!(got["text"], "# Not here");
}

#[test]
fn an_allowed_redirect_is_followed() {
    let (_h, rt, port) = setup();
    let got = fetch(
        &rt,
        json!({ "url": format!("http://127.0.0.1:{port}/to-page") }),
    )
    .unwrap();
    assert_eq!(got["status"], 200);
    assert_eq!(got["url"], format!("http://127.0.0.1:{port}/page"));
    assert_eq!(got["title"], "Test & Page");
}

#[test]
fn an_allow_listed_name_is_reached_at_its_checked_addresses() {
    let port = server();
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!("[plugins.web]\nallow_hosts = [\"localhost:{port}\"]\n"),
    );
    let rt = h.runtime();
    let got = fetch(
        &rt,
        json!({ "url": format!("http://localhost:{port}/page") }),
    )
    .unwrap();
    assert_eq!(got["status"], 200);
    assert_eq!(got["title"], "Test & Page");
}

#[test]
fn non_public_addresses_schemes_and_bad_urls_are_refused() {
    let (_h, rt, port) = setup();
    // Port 1 is not allow-listed, so 127.0.0.1 there is refused too.
    let cases: Vec<(String, &[&str])> = vec![
        (
            "http://127.0.0.1:1/".into(),
            &["refused: 127.0.0.1 is a loopback address", "allow_hosts"],
        ),
        (
            "http://10.0.0.1/".into(),
            &["10.0.0.1 is a private address"],
        ),
        ("http://172.16.5.4/".into(), &["private address"]),
        ("http://192.168.1.1/".into(), &["private address"]),
        ("http://100.64.0.1/".into(), &["carrier-grade NAT"]),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            &["169.254.169.254 is the cloud metadata address"],
        ),
        ("http://169.254.1.1/".into(), &["link-local address"]),
        (
            format!("http://[::1]:{port}/page"),
            &["[::1] is a loopback address"],
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/page"),
            &["::ffff:127.0.0.1", "loopback address"],
        ),
        ("http://[fe80::1]/".into(), &["link-local address"]),
        ("http://[fd00::1]/".into(), &["unique-local address"]),
        (
            "http://[fd00:ec2::254]/".into(),
            &["cloud metadata address"],
        ),
        (
            "http://0.0.0.0/".into(),
            &["0.0.0.0 is an unspecified address"],
        ),
        ("http://224.0.0.1/".into(), &["multicast address"]),
        ("http://255.255.255.255/".into(), &["broadcast address"]),
        // Other spellings of 127.0.0.1 that URL parsing normalizes.
        ("http://2130706433:1/".into(), &["127.0.0.1 is a loopback"]),
        ("http://0x7f.1:1/".into(), &["127.0.0.1 is a loopback"]),
        (
            "http://localhost:1/".into(),
            &["refused: localhost resolves to", "loopback address"],
        ),
        (
            format!("http://127.0.0.1:{port}/to-loopback"),
            &["redirects to http://127.0.0.2", "loopback address"],
        ),
        (
            format!("http://127.0.0.1:{port}/to-metadata"),
            &[
                "redirects to http://169.254.169.254",
                "cloud metadata address",
            ],
        ),
        (
            format!("http://127.0.0.1:{port}/to-mapped"),
            &["redirects to", "loopback address"],
        ),
        (
            format!("http://127.0.0.1:{port}/loop"),
            &["more than 5 redirects"],
        ),
        ("file:///etc/passwd".into(), &["file:", "http and https"]),
        ("ftp://example.com/x".into(), &["ftp:", "http and https"]),
        ("not a url".into(), &["not a valid URL"]),
        ("http://".into(), &["not a valid URL"]),
        ("http://[::1/".into(), &["not a valid URL"]),
        // Credentials are refused, not sent; the password is not echoed.
        (
            format!("http://user:secret@127.0.0.1:{port}/page"),
            &["user name or password", "user:***@"],
        ),
    ];
    for (url, wanted) in &cases {
        let err = match fetch(&rt, json!({ "url": url })) {
            Ok(got) => panic!("{url} was fetched: {got}"),
            Err(e) => e,
        };
        for w in *wanted {
            assert!(err.contains(w), "{url}: {err:?} lacks {w:?}");
        }
        assert!(!err.contains("secret"), "{url}: {err:?} shows the password");
    }
}

#[test]
fn out_of_range_arguments_are_refused() {
    let (_h, rt, port) = setup();
    let url = format!("http://127.0.0.1:{port}/page");
    for args in [
        json!({ "url": url, "max_bytes": 6 * 1024 * 1024 }),
        json!({ "url": url, "max_bytes": 0 }),
        json!({ "url": url, "timeout_ms": 60_001 }),
        json!({ "url": url, "extra": 1 }),
        json!({}),
    ] {
        let err = fetch(&rt, args.clone()).unwrap_err();
        assert!(err.contains("invalid arguments"), "{args}: {err}");
    }
}
