//! The canvas plugin over real HTTP and WebSocket connections: who gets in,
//! what the protocol does, how hostile input is refused, and that nothing
//! is lost across a restart.

use std::time::Duration;

use hearth_tests::canvas::{self, Canvas, Frame};
use hearth_tests::fake_llm::{FakeLlm, Reply, anthropic_text, anthropic_tool_use};
use hearth_tests::{Daemon, Hearth, plugin, probe};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// A home with the canvas (on a free port) and the probe, and a model at
/// `fake`; `extra` adds config.
fn home(fake: &FakeLlm, extra: &str) -> Hearth {
    home_with(fake, "", extra)
}

/// As [`home`], with more `[plugins.canvas]` keys.
fn home_with(fake: &FakeLlm, canvas_keys: &str, extra: &str) -> Hearth {
    Hearth::with_plugins(
        &[plugin("canvas"), probe()],
        &format!(
            "{}{canvas_keys}\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n{extra}",
            canvas::CONFIG,
            fake.url()
        ),
    )
}

fn start(h: &Hearth) -> (Daemon, Canvas) {
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    let canvas = Canvas::of(h.home());
    (daemon, canvas)
}

fn send(id: &str, text: &str) -> String {
    json!({ "type": "send", "id": id, "text": text }).to_string()
}

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn without_a_session_only_the_login_page_is_served() {
    let fake = FakeLlm::start();
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    // (method, path, Accept, expected status)
    let cases = [
        ("GET", "/", "text/html", 303),
        ("GET", "/", "*/*", 401),
        ("GET", "/app.js", "*/*", 401),
        ("GET", "/app.css", "*/*", 401),
        ("GET", "/ws", "*/*", 401),
        ("GET", "/files/anything.txt", "*/*", 401),
        ("GET", "/files/../canvas.token", "*/*", 401),
        ("POST", "/upload?name=x", "*/*", 401),
        ("GET", "/no-such-page", "text/html", 303),
        ("GET", "/login", "text/html", 200),
        ("GET", "/login.css", "*/*", 200),
        ("GET", "/favicon.svg", "*/*", 200),
    ];
    for (method, path, accept, expected) in cases {
        let answer = canvas.request(method, path, None, &[("Accept", accept)], b"x");
        assert_eq!(answer.status, expected, "{method} {path} ({accept})");
        if expected == 303 {
            assert_eq!(answer.header("location"), Some("/login"), "{path}");
        }
        assert!(
            answer.header("content-security-policy").is_some(),
            "{path} has no CSP"
        );
    }
    let login = canvas.get("/login", None).text();
    assert!(login.contains("name=\"token\""), "{login}");
    assert!(
        !login.contains(&canvas.token),
        "the login page leaks the token"
    );
}

#[test]
fn the_token_link_gives_a_strict_cookie_and_guesses_are_throttled() {
    let fake = FakeLlm::start();
    let h = home(&fake, "");
    let (daemon, canvas) = start(&h);
    let answer = canvas.get(&format!("/login?token={}", canvas.token), None);
    assert_eq!(answer.status, 303);
    assert_eq!(answer.header("location"), Some("/"));
    let cookie = answer.header("set-cookie").unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    let session = cookie.split(';').next().unwrap();
    assert_eq!(canvas.get("/", Some(session)).status, 200);
    assert_eq!(canvas.get("/app.js", Some(session)).status, 200);
    // A forged or foreign cookie is no session.
    for forged in ["hearth_session=abc.def", &session.replace('a', "b")] {
        assert_eq!(canvas.get("/app.js", Some(forged)).status, 401, "{forged}");
    }

    let form = |token: &str| {
        canvas.request(
            "POST",
            "/login",
            None,
            &[("Content-Type", "application/x-www-form-urlencoded")],
            format!("token={token}").as_bytes(),
        )
    };
    for guess in 0..5 {
        let refused = form(&format!("guess{guess}"));
        assert_eq!(refused.status, 401);
        assert!(
            refused.text().contains("That token is not right."),
            "{}",
            refused.text()
        );
    }
    // Throttled now, even for the right token.
    let throttled = form(&canvas.token);
    assert_eq!(throttled.status, 429);
    assert!(throttled.header("retry-after").is_some());
    assert!(
        throttled.text().contains("Too many wrong tokens"),
        "{}",
        throttled.text()
    );
    // The token itself never reaches the log, beyond the one-time link.
    let leaks = daemon
        .logs()
        .iter()
        .filter(|l| l.contains(&canvas.token))
        .count();
    assert_eq!(leaks, 1, "the token is logged more than once");
    let url = h.cmd(&["canvas-url"]).ok().trim().to_owned();
    assert_eq!(url, canvas.login_url());
}

#[test]
fn websocket_upgrades_need_the_cookie_and_the_pages_origin() {
    let fake = FakeLlm::start();
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    let cookie = canvas.login();
    let own = canvas.base();
    let cases = [
        (None, Some(own.as_str()), Err(401)),
        (
            Some("hearth_session=forged.00"),
            Some(own.as_str()),
            Err(401),
        ),
        (Some(cookie.as_str()), Some("http://evil.example"), Err(403)),
        (Some(cookie.as_str()), Some("null"), Err(403)),
        (Some(cookie.as_str()), Some(own.as_str()), Ok(())),
    ];
    for (cookie, origin, expected) in cases {
        let got = canvas.ws_with(cookie, origin).map(drop);
        assert_eq!(got, expected, "cookie {cookie:?}, origin {origin:?}");
    }
}

#[test]
fn a_message_streams_its_reply_and_draws_on_every_browser() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "canvas_show",
        &json!({ "type": "markdown", "id": "note", "data": { "markdown": "**bold** <script>alert(1)</script>" } }),
    ));
    fake.push(anthropic_text("Hello from the fake model."));
    let h = home(&fake, "");
    let (mut daemon, canvas) = start(&h);
    let (mut a, hello) = canvas.connect();
    assert_eq!(hello["status"]["model"], "fake-model");
    let (mut b, _) = canvas.connect();

    a.send(&send("m-1", "draw something"));
    assert_eq!(a.wait_for(WAIT, |f| f["type"] == "ack")["id"], "m-1");
    for ws in [&mut a, &mut b] {
        let echoed = ws.wait_for(WAIT, |f| f["type"] == "message");
        assert_eq!(echoed["message"]["key"], "in-m-1");
        let shown = ws.wait_for(WAIT, |f| f["type"] == "canvas");
        let html = shown["element"]["html"].as_str().unwrap();
        assert!(
            html.contains("<strong>bold</strong>") && !html.contains("<script"),
            "{html}"
        );
        let mut streamed = String::new();
        let reply = loop {
            let frame = ws.next_json(WAIT);
            match frame["type"].as_str() {
                Some("delta") => streamed.push_str(frame["text"].as_str().unwrap()),
                Some("delta_reset") => streamed.clear(),
                Some("message") => break frame,
                _ => {}
            }
        };
        assert_eq!(streamed, "Hello from the fake model.");
        assert_eq!(reply["message"]["role"], "agent");
        assert_eq!(reply["message"]["id"], "m-1");
        assert!(
            reply["message"]["key"]
                .as_str()
                .unwrap()
                .starts_with("out-")
        );
    }

    // After a restart, the history and the pane are as they were.
    daemon.kill9();
    let (_daemon, canvas) = start(&h);
    let (_c, hello) = canvas.connect();
    let keys: Vec<&str> = hello["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2, "{hello}");
    assert_eq!(keys[0], "in-m-1");
    assert_eq!(hello["canvas"][0]["id"], "note");
    drop(daemon);
}

#[test]
fn a_browser_that_connects_mid_reply_gets_the_text_so_far_once() {
    let fake = FakeLlm::start();
    let pieces = ["one ", "two ", "three ", "four ", "five."];
    fake.push(hearth_tests::fake_llm::anthropic_text_paced(
        &pieces,
        Duration::from_millis(200),
    ));
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    let (mut a, _) = canvas.connect();
    a.send(&send("mid-1", "count"));
    a.wait_for(WAIT, |f| f["type"] == "delta" && f["text"] == "two ");
    let (mut late, hello) = canvas.connect();
    let so_far = hello["streaming"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["turn"] == "mid-1")
        .map(|s| s["text"].as_str().unwrap().to_owned())
        .unwrap_or_default();
    assert!(so_far.starts_with("one two"), "{hello}");
    let mut text = so_far;
    loop {
        let frame = late.next_json(WAIT);
        match frame["type"].as_str() {
            Some("delta") => text.push_str(frame["text"].as_str().unwrap()),
            Some("message") if frame["message"]["role"] == "agent" => break,
            _ => {}
        }
    }
    assert_eq!(text, "one two three four five.");
}

#[test]
fn a_resent_message_is_stored_once() {
    let fake = FakeLlm::start();
    fake.push(anthropic_text("once"));
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    let (mut ws, _) = canvas.connect();
    for _ in 0..3 {
        ws.send(&send("same-id", "hello"));
    }
    let (mut acks, mut replies) = (0, 0);
    while acks < 3 || replies < 1 {
        let frame = ws.next_json(WAIT);
        acks += usize::from(frame["type"] == "ack");
        replies += usize::from(frame["type"] == "message" && frame["message"]["role"] == "agent");
    }
    let stored: i64 = h
        .db()
        .query_row(
            "SELECT COUNT(*) FROM inbox WHERE channel = 'canvas'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, 1);
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn confirmations_are_answered_from_the_browser_and_shown_again_on_reconnect() {
    let fake = FakeLlm::start();
    for marker in ["approved", "denied"] {
        fake.push(anthropic_tool_use(
            None,
            "t1",
            "probe_exec",
            &json!({ "marker": marker }),
        ));
        fake.push(anthropic_text("done"));
    }
    let dir = tempfile::tempdir().unwrap();
    let exec_log = dir.path().join("exec");
    let h =
        home(&fake, &format!("[plugins.probe]\nexec_log = {exec_log:?}")).in_mode("development");
    let (_daemon, canvas) = start(&h);
    for (n, approve) in [(1, true), (2, false)] {
        let (mut ws, _) = canvas.connect();
        ws.send(&send(&format!("c-{n}"), "run it"));
        let card = ws.wait_for(WAIT, |f| f["type"] == "confirmation");
        let card = &card["confirmation"];
        assert_eq!(card["tool"], "probe_exec");
        assert_eq!(card["state"], "pending");
        assert_eq!(card["fingerprint"].as_str().unwrap().len(), 64);
        assert_eq!(card["mode"], "development");
        // A browser that connects now sees the pending card.
        drop(ws);
        let (mut ws, hello) = canvas.connect();
        let pending: Vec<&Value> = hello["confirmations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["state"] == "pending")
            .collect();
        assert_eq!(pending.len(), 1, "{hello}");
        let id = pending[0]["id"].as_str().unwrap();
        ws.send(&json!({ "type": "confirm", "id": id, "approve": approve }).to_string());
        let decided = ws.wait_for(WAIT, |f| {
            f["type"] == "confirmation" && f["confirmation"]["state"] != "pending"
        });
        let state = if approve { "approved" } else { "denied" };
        assert_eq!(decided["confirmation"]["state"], state);
        assert_eq!(decided["confirmation"]["decided_by"], "owner");
        ws.wait_for(WAIT, |f| {
            f["type"] == "message" && f["message"]["role"] == "agent"
        });
    }
    let ran = std::fs::read_to_string(&exec_log).unwrap();
    assert_eq!(ran.trim(), "approved", "only the approved call ran");
}

#[test]
fn replies_made_while_no_browser_is_connected_are_shown_on_connect() {
    let fake = FakeLlm::start();
    fake.push(Reply::Hang);
    fake.push(anthropic_text("While you were away, I finished."));
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    let (mut ws, _) = canvas.connect();
    ws.send(&send("away-1", "take your time"));
    ws.wait_for(WAIT, |f| f["type"] == "ack");
    drop(ws);
    assert!(fake.wait_for_requests(1, WAIT));
    fake.release();
    let deadline = std::time::Instant::now() + WAIT;
    while h
        .db()
        .query_row(
            "SELECT COUNT(*) FROM outbox WHERE status = 'delivered'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the reply was never delivered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_ws, hello) = canvas.connect();
    let last = hello["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["text"], "While you were away, I finished.");
    assert!(
        last["html"]
            .as_str()
            .unwrap()
            .contains("While you were away")
    );
}

#[test]
fn files_are_served_with_types_and_ranges_and_never_outside_shared() {
    let fake = FakeLlm::start();
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    h.write("shared/notes.txt", "0123456789");
    h.write("shared/clip.mp4", "not really a video");
    h.write("secret.txt", "outside shared");
    let cookie = canvas.login();
    let cookie = Some(cookie.as_str());
    let text = canvas.get("/files/notes.txt", cookie);
    assert_eq!(text.status, 200);
    assert!(
        text.header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    assert!(
        text.header("content-security-policy")
            .unwrap()
            .contains("sandbox")
    );
    let video = canvas.get("/files/clip.mp4", cookie);
    assert_eq!(video.header("content-type"), Some("video/mp4"));
    let range = canvas.request(
        "GET",
        "/files/notes.txt",
        cookie,
        &[("Range", "bytes=2-5")],
        b"",
    );
    assert_eq!(range.status, 206);
    assert_eq!(range.text(), "2345");
    assert_eq!(range.header("content-range"), Some("bytes 2-5/10"));
    for path in [
        "/files/../secret.txt",
        "/files/%2e%2e/secret.txt",
        "/files/..%2fsecret.txt",
        "/files/%2e%2e%2fsecret.txt",
        "/files//etc/passwd",
        "/files/notes.txt/../../secret.txt",
    ] {
        let answer = canvas.get(path, cookie);
        assert_ne!(answer.status, 200, "{path}");
        assert!(!answer.text().contains("outside shared"), "{path}");
    }
}

#[test]
fn uploads_reach_the_agent_as_attachments() {
    let fake = FakeLlm::start();
    fake.push(anthropic_text("Got the file."));
    let h = home_with(&fake, "max_upload_bytes = 1000\n", "");
    let (_daemon, canvas) = start(&h);
    let cookie = canvas.login();
    let upload = |name: &str, body: &[u8]| {
        canvas.request(
            "POST",
            &format!("/upload?name={name}"),
            Some(&cookie),
            &[("Content-Type", "text/plain")],
            body,
        )
    };
    let too_big = upload("big.txt", &[b'x'; 1001]);
    assert_eq!(too_big.status, 413, "{}", too_big.text());
    let answer = upload("..%2F..%2Fnotes.txt", b"attached content 42");
    assert_eq!(answer.status, 200, "{}", answer.text());
    let attachment: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(attachment["name"], "notes.txt");
    assert!(attachment.get("path").is_none(), "paths stay on the server");
    let url = attachment["url"].as_str().unwrap();
    assert_eq!(canvas.get(url, Some(&cookie)).text(), "attached content 42");

    let (mut ws, _) = canvas.connect();
    let message = json!({ "type": "send", "id": "u-1", "text": "here is a file", "attachments": [attachment["id"]] });
    ws.send(&message.to_string());
    ws.wait_for(WAIT, |f| f["type"] == "ack");
    ws.wait_for(WAIT, |f| {
        f["type"] == "message" && f["message"]["role"] == "agent"
    });
    let prompt = fake.requests()[0].body["messages"].to_string();
    assert!(
        prompt.contains("notes.txt") && prompt.contains("attached content 42"),
        "{prompt}"
    );
    let unknown = json!({ "type": "send", "id": "u-2", "text": "x", "attachments": ["nope"] });
    ws.send(&unknown.to_string());
    let refused = ws.wait_for(WAIT, |f| f["type"] == "error");
    assert!(
        refused["message"].as_str().unwrap().contains("no upload"),
        "{refused}"
    );
}

#[test]
fn a_thousand_hostile_frames_are_refused_and_the_daemon_stays_flat() {
    let fake = FakeLlm::start();
    let h = home(&fake, "");
    let (daemon, canvas) = start(&h);
    let cookie = canvas.login();
    let open = || {
        canvas
            .ws_with(Some(&cookie), None)
            .expect("WebSocket opens")
    };
    let big = "x".repeat(70 * 1024);
    // Frames answered with an error frame, the connection kept.
    let answered: Vec<String> = vec![
        "not json".into(),
        "[1,2,3]".into(),
        "{\"type\":42}".into(),
        "{\"type\":\"launch_missiles\"}".into(),
        "{\"type\":\"send\",\"id\":\"../../x\",\"text\":\"hi\"}".into(),
        "{\"type\":\"send\",\"id\":\"ok\",\"text\":7}".into(),
        format!("{{\"type\":\"send\",\"id\":\"ok\",\"text\":\"{big}\"}}"),
        "{\"type\":\"send\",\"id\":\"ok\",\"text\":\"\"}".into(),
        "{\"type\":\"send\",\"id\":\"ok\",\"text\":\"x\",\"attachments\":\"a\"}".into(),
        "{\"type\":\"confirm\",\"id\":\"x\"}".into(),
        "{\"type\":\"confirm\",\"approve\":true}".into(),
        "\u{0}\u{1}\u{2}".into(),
    ];
    // Frames that close the connection: (opcode, payload, close code).
    let oversized = vec![b'a'; (1 << 20) + 1];
    let closing: Vec<(u8, Vec<u8>, u16)> = vec![
        (0x1, vec![0xff, 0xfe, b'{'], 1007),
        (0x1, vec![b'"', 0xc3, 0x28, b'"'], 1007),
        (0x2, b"binary".to_vec(), 1003),
        (0x1, oversized, 1009),
    ];
    let mut rounds = 0;
    let mut rss = Vec::new();
    let mut sent = 0;
    while sent < 1000 {
        let mut ws = open();
        ws.next_json(WAIT); // hello
        for frame in &answered {
            ws.send(frame);
            let reply = ws.next_json(WAIT);
            assert_eq!(reply["type"], "error", "{frame:.80}: {reply}");
            assert!(!reply["message"].as_str().unwrap().is_empty());
            sent += 1;
        }
        for (opcode, payload, code) in &closing {
            let mut ws = open();
            ws.next_json(WAIT);
            ws.send_raw(*opcode, payload);
            match ws.next(WAIT) {
                Frame::Closed(got, _) => assert_eq!(got, *code, "opcode {opcode}"),
                // An oversized frame may be cut off before the close is read.
                Frame::Gone(_) if *code == 1009 => {}
                other => panic!("opcode {opcode}: expected a close, got {other:?}"),
            }
            sent += 1;
        }
        rounds += 1;
        if rounds == 5 || sent >= 1000 {
            rss.push(rss_kib(daemon.pid()));
        }
    }
    // Still serving everyone else.
    let (mut ws, hello) = canvas.connect();
    assert_eq!(hello["type"], "hello");
    ws.send("{\"type\":\"ping\"}");
    assert_eq!(ws.next_json(WAIT)["type"], "pong");
    let growth = rss[1].saturating_sub(rss[0]);
    assert!(
        growth < 4 * 1024,
        "RSS grew by {growth} KiB over {sent} hostile frames: {rss:?}"
    );
}

#[test]
fn a_flood_of_frames_is_cut_off() {
    let fake = FakeLlm::start();
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    let (mut ws, _) = canvas.connect();
    for _ in 0..400 {
        ws.send("{\"type\":\"ping\"}");
    }
    let closed = loop {
        match ws.next(WAIT) {
            Frame::Json(_) => continue,
            other => break other,
        }
    };
    assert!(matches!(closed, Frame::Closed(1008, _)), "{closed:?}");
}

#[test]
fn canvas_url_before_the_first_start_says_what_to_do() {
    let h = Hearth::new("");
    let error = h.cmd(&["canvas-url"]).fails();
    assert!(
        error.contains("canvas.token") && error.contains("hearth run"),
        "{error}"
    );
}

#[test]
fn a_non_loopback_address_is_refused_without_allow_remote() {
    let h = Hearth::with_plugins(
        &[plugin("canvas")],
        "[plugins.canvas]\nlisten = \"0.0.0.0:0\"\n",
    );
    let out = h.cmd(&["plugins"]);
    assert!(
        out.stdout.contains("not a loopback address")
            || out.stderr.contains("not a loopback address"),
        "{}{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn a_cli_command_leaves_the_daemons_port_alone_and_shows_its_health() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let h = Hearth::with_plugins(
        &[plugin("canvas")],
        &format!("[plugins.canvas]\nlisten = \"127.0.0.1:{port}\"\n"),
    );
    let _daemon = h.daemon();
    let listed = h.cmd(&["plugins"]);
    let out = listed.ok();
    assert!(out.contains("active"), "{out}");
    assert!(!out.contains("Address already in use"), "{out}");
    assert!(
        out.contains(&format!(
            "channel canvas: up (listening on http://127.0.0.1:{port})"
        )),
        "{out}"
    );
}

#[test]
fn the_status_names_the_other_agents_at_work() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "toolu_ask",
        "send_agent_message",
        &json!({"agent": "researcher", "text": "look into it"}),
    ));
    fake.push(anthropic_text("asked"));
    fake.push_for(
        "You are researcher,",
        hearth_tests::fake_llm::anthropic_text_paced(&["found ", "it"], Duration::from_millis(300)),
    );
    fake.push(anthropic_text("the researcher found it"));
    let h = home(&fake, "");
    let (_daemon, canvas) = start(&h);
    let args = json!({"action": "create", "name": "researcher", "allowed_tools": []});
    h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
        .ok();
    let (mut ws, _hello) = canvas.connect();

    ws.send(&send("c1", "find out"));
    let busy = ws.wait_for(WAIT, |f| {
        f["type"] == "status" && f["working"] == json!(["researcher"])
    });
    assert_eq!(busy["model"], "fake-model");
    ws.wait_for(WAIT, |f| f["type"] == "status" && f["working"] == json!([]));
}

#[test]
fn the_next_jobs_are_shown_and_kept_for_browsers_that_connect_later() {
    let fake = FakeLlm::start();
    let h = home(&fake, "[owner]\ntimezone = \"UTC\"\n");
    let (_daemon, canvas) = start(&h);
    let (mut ws, hello) = canvas.connect();
    assert_eq!(hello["schedule"], json!([]));
    let add = |args: Value| {
        h.cmd(&["tool", "call", "manage_schedule", &args.to_string()])
            .json()
    };
    add(json!({"action": "add", "kind": "task", "cron": "0 9 * * MON", "text": "weekly review"}));
    let shown = ws.wait_for(WAIT, |f| {
        f["type"] == "schedule" && f["jobs"].as_array().is_some_and(|j| j.len() == 1)
    });
    let job = &shown["jobs"][0];
    assert_eq!(job["kind"], "task");
    assert_eq!(job["text"], "weekly review");
    assert_eq!(job["schedule"], "0 9 * * MON (UTC)");
    assert!(
        job["next_run"].as_str().unwrap().ends_with("09:00 UTC"),
        "{job}"
    );
    // A sooner one goes first; a browser connecting now gets both.
    add(json!({"action": "add", "kind": "task", "in": "5m", "text": "call back"}));
    ws.wait_for(WAIT, |f| {
        f["type"] == "schedule" && f["jobs"][0]["text"] == "call back"
    });
    let (_later, hello) = canvas.connect();
    let texts: Vec<&str> = hello["schedule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["call back", "weekly review"]);
}
