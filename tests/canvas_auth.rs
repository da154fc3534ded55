//! The canvas's auth over real HTTP, as an attacker would try it: a
//! rebound host name, links out of `shared/`, a forged cookie, guesses from
//! many addresses, and the token file as the one source of sessions.

use std::net::Ipv4Addr;
use std::time::Duration;

use hearth_tests::canvas::{self, Answer, Canvas, Frame};
use hearth_tests::{Daemon, Hearth, plugin};

const WAIT: Duration = Duration::from_secs(20);
/// The brakes in plugins/canvas/src/auth.rs: wrong tokens per address,
/// and from all addresses together, per minute.
const PER_ADDRESS: usize = 5;
const OVERALL: usize = 30;

/// A daemon with only the canvas; `keys` adds `[plugins.canvas]` keys.
fn start(keys: &str) -> (Hearth, Daemon, Canvas) {
    let h = Hearth::with_plugins(&[plugin("canvas")], &format!("{}{keys}", canvas::CONFIG));
    let daemon = h.daemon();
    let canvas = Canvas::of(h.home());
    (h, daemon, canvas)
}

/// `GET /login?token=…` and `POST /login` with the right token, sent to
/// `host`.
fn logins(canvas: &Canvas, host: Option<&str>) -> [Answer; 2] {
    let get = canvas.request_to(
        host,
        "GET",
        &format!("/login?token={}", canvas.token),
        None,
        &[],
        b"",
    );
    let post = canvas.request_to(
        host,
        "POST",
        "/login",
        None,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!("token={}", canvas.token).as_bytes(),
    );
    [get, post]
}

/// The WebSocket's answer, `Ok(())` when it opened.
fn ws(canvas: &Canvas, host: &str, cookie: &str, origin: &str) -> Result<(), u16> {
    canvas.ws_to(host, Some(cookie), origin).map(drop)
}

#[test]
fn a_foreign_host_gets_no_cookie_and_no_websocket() {
    let (_h, _daemon, canvas) = start("");
    let port = canvas.addr.port();
    let own = canvas.addr.to_string();
    let foreign = [
        Some(format!("evil.example:{port}")),
        Some("evil.example".to_owned()),
        Some(format!("127.0.0.1.evil.example:{port}")),
        // A loopback name without the port is served only on port 80.
        Some("127.0.0.1".to_owned()),
        Some(format!("localhost:{}", port.wrapping_add(1))),
        None,
    ];
    for host in &foreign {
        for answer in logins(&canvas, host.as_deref()) {
            assert_eq!(answer.status, 421, "{host:?}: {}", answer.text());
            assert_eq!(answer.header("set-cookie"), None, "{host:?}");
            assert!(answer.text().contains("allowed_hosts"), "{}", answer.text());
        }
    }
    for host in [
        own.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        for answer in logins(&canvas, Some(&host)) {
            assert_eq!(answer.status, 303, "{host}: {}", answer.text());
            assert!(answer.header("set-cookie").is_some(), "{host}");
        }
    }

    // With a valid cookie, every route still needs a served host.
    let cookie = canvas.login();
    for path in [
        "/",
        "/app.js",
        "/login.css",
        "/files/x.txt",
        "/pages/x",
        "/upload",
    ] {
        let answer = canvas.request_to(Some("evil.example"), "GET", path, Some(&cookie), &[], b"");
        assert_eq!(answer.status, 421, "{path}");
    }
    let evil = format!("evil.example:{port}");
    let (evil_origin, own_origin) = (format!("http://{evil}"), canvas.base());
    let localhost = format!("localhost:{port}");
    let localhost_origin = format!("http://{localhost}");
    let cases = [
        // Rebound: the browser sends the attacker's name in both.
        (evil.as_str(), evil_origin.as_str(), Err(421)),
        (own.as_str(), evil_origin.as_str(), Err(403)),
        (own.as_str(), "null", Err(403)),
        // Another loopback name is another origin.
        (own.as_str(), "http://localhost:1", Err(403)),
        (localhost.as_str(), own_origin.as_str(), Err(403)),
        (own.as_str(), own_origin.as_str(), Ok(())),
        (localhost.as_str(), localhost_origin.as_str(), Ok(())),
    ];
    for (host, origin, expected) in cases {
        assert_eq!(
            ws(&canvas, host, &cookie, origin),
            expected,
            "Host {host}, Origin {origin}"
        );
    }
}

#[test]
fn allowed_hosts_adds_exactly_the_names_it_lists() {
    let (_h, _daemon, canvas) = start("allowed_hosts = [\"MyHost.lan:8080\"]\n");
    for answer in logins(&canvas, Some("myhost.lan:8080")) {
        assert_eq!(answer.status, 303, "{}", answer.text());
    }
    for host in ["myhost.lan", "myhost.lan:8081", "other.lan:8080"] {
        for answer in logins(&canvas, Some(host)) {
            assert_eq!(answer.status, 421, "{host}");
        }
    }
    let cookie = canvas.login();
    let host = "myhost.lan:8080";
    assert_eq!(ws(&canvas, host, &cookie, "http://myhost.lan:8080"), Ok(()));
    assert_eq!(
        ws(&canvas, host, &cookie, "https://myhost.lan:8080"),
        Ok(())
    );
    assert_eq!(
        ws(&canvas, host, &cookie, "http://other.lan:8080"),
        Err(403)
    );
}

#[test]
fn files_never_leave_shared() {
    let (h, _daemon, canvas) = start("");
    let home = h.home();
    let token = std::fs::read_to_string(home.join("canvas.token")).unwrap();
    h.write("shared/notes.txt", "inside shared");
    h.write("shared/sub/readme.md", "also inside");
    h.write("outside.txt", "outside shared");
    let shared = home.join("shared");
    let link = |target: &str, name: &str| std::os::unix::fs::symlink(target, shared.join(name));
    link("notes.txt", "inner").unwrap();
    link("../notes.txt", "sub/up").unwrap();
    link("../canvas.token", "token-link").unwrap();
    link("../outside.txt", "outside-link").unwrap();
    link("/etc/hostname", "hostname").unwrap();
    link("/etc/passwd", "passwd").unwrap();
    link("..", "home").unwrap();
    std::fs::hard_link(home.join("canvas.token"), shared.join("token-hard")).unwrap();
    std::fs::hard_link(home.join("hearth.db"), shared.join("db-hard")).unwrap();
    let cookie = canvas.login();
    let cases = [
        ("notes.txt", Some("inside shared")),
        ("inner", Some("inside shared")),
        ("sub/up", Some("inside shared")),
        ("sub/readme.md", Some("also inside")),
        ("sub%2freadme.md", Some("also inside")),
        ("token-link", None),
        ("outside-link", None),
        ("hostname", None),
        ("passwd", None),
        ("home/canvas.token", None),
        ("home/outside.txt", None),
        ("token-hard", None),
        ("db-hard", None),
        ("sub", None),
        ("sub/", None),
        ("../outside.txt", None),
        ("%2e%2e/outside.txt", None),
        ("missing.txt", None),
    ];
    for (path, expected) in cases {
        let answer = canvas.get(&format!("/files/{path}"), Some(&cookie));
        match expected {
            Some(body) => {
                assert_eq!(answer.status, 200, "{path}");
                assert_eq!(answer.text(), body, "{path}");
            }
            None => {
                assert_eq!(answer.status, 404, "{path}: {}", answer.text());
                assert!(!answer.text().contains(token.trim()), "{path}");
            }
        }
    }
}

#[test]
fn a_cookie_with_one_wrong_mac_digit_is_refused() {
    let (_h, _daemon, canvas) = start("");
    let cookie = canvas.login();
    let (name, value) = cookie.split_once('=').unwrap();
    let (nonce, mac) = value.split_once('.').unwrap();
    assert_eq!((name, nonce.len(), mac.len()), ("hearth_session", 32, 64));
    let flip = |c: char| if c == '0' { '1' } else { '0' };
    let forged: Vec<String> = [0, 31, 63]
        .iter()
        .map(|&i| {
            let mut mac: Vec<char> = mac.chars().collect();
            mac[i] = flip(mac[i]);
            format!("{name}={nonce}.{}", mac.into_iter().collect::<String>())
        })
        .collect();
    assert_eq!(canvas.get("/app.js", Some(&cookie)).status, 200);
    for forged in &forged {
        assert_eq!(forged.len(), cookie.len());
        assert_eq!(canvas.get("/app.js", Some(forged)).status, 401, "{forged}");
        assert_eq!(canvas.ws_with(Some(forged), None).map(drop), Err(401));
    }
}

#[test]
fn guesses_from_many_addresses_meet_the_global_brake() {
    let (_h, _daemon, canvas) = start("");
    let cookie = canvas.login();
    // Each address stays within its own brake; together they reach the
    // global one.
    let addresses = (OVERALL / PER_ADDRESS) as u8;
    for n in 0..addresses {
        let from = Ipv4Addr::new(127, 0, 0, 10 + n);
        for guess in 0..PER_ADDRESS {
            let answer = canvas.login_form_from(from, &format!("guess{guess}"));
            assert_eq!(answer.status, 401, "{from} guess {guess}");
        }
    }
    // A fresh address with the right token is held back now...
    let fresh = canvas.login_form_from(Ipv4Addr::new(127, 0, 0, 99), &canvas.token);
    assert_eq!(fresh.status, 429, "{}", fresh.text());
    assert_eq!(fresh.header("set-cookie"), None);
    let wait: u64 = fresh.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // ...and an open session is not.
    assert_eq!(canvas.get("/app.js", Some(&cookie)).status, 200);
}

#[test]
fn the_token_file_is_private_after_the_first_start() {
    use std::os::unix::fs::PermissionsExt;
    let (h, _daemon, _canvas) = start("");
    let mode = std::fs::metadata(h.home().join("canvas.token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
}

#[test]
fn deleting_the_token_file_logs_everyone_out() {
    let (h, daemon, canvas) = start("");
    let token_file = h.home().join("canvas.token");
    let cookie = canvas.login();
    let (mut open, _hello) = canvas.connect();
    assert_eq!(canvas.get("/app.js", Some(&cookie)).status, 200);

    std::fs::remove_file(&token_file).unwrap();
    assert_eq!(canvas.get("/app.js", Some(&cookie)).status, 401);
    assert_eq!(canvas.ws_with(Some(&cookie), None).map(drop), Err(401));
    for answer in logins(&canvas, Some(&canvas.addr.to_string())) {
        assert_eq!(answer.status, 503, "{}", answer.text());
        assert_eq!(answer.header("set-cookie"), None);
    }
    // The socket opened before is closed too, at its next frame.
    open.send("{\"type\":\"ping\"}");
    let closed = loop {
        match open.next(WAIT) {
            Frame::Json(_) => continue,
            other => break other,
        }
    };
    assert!(matches!(closed, Frame::Closed(4401, _)), "{closed:?}");
    daemon.wait_for_log(|l| l.contains("canvas.token is gone"), WAIT);

    // A new token: the old cookies stay dead, the new token logs in.
    let new_token = "ab".repeat(32);
    std::fs::write(&token_file, format!("{new_token}\n")).unwrap();
    assert_eq!(canvas.get("/app.js", Some(&cookie)).status, 401);
    let fresh = Canvas::of(h.home());
    assert_eq!(fresh.token, new_token);
    let cookie = fresh.login();
    assert_eq!(fresh.get("/app.js", Some(&cookie)).status, 200);
}
