//! The browser in the daemon, end to end with a fake model and real
//! Chromium: the model logs in to a site on 127.0.0.1 with a secret by
//! name; the site gets the value, and the model's requests, the audit,
//! the log and every file but the credentials never do; `/browser` says
//! what the browser is doing; and after a daemon restart the site still
//! knows the browser. The owner watches the browser on the canvas and logs
//! in by hand there, with clicks and keys on its live view.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use hearth_tests::Hearth;
use hearth_tests::canvas::{self, Canvas};
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use serde_json::{Value, json};

/// The site's password, kept as the secret `SITE_PASSWORD`.
const VALUE: &str = "pw-8c1e-DO-NOT-LEAK";

/// A site with a login form (user [1], password [2]), a session cookie,
/// and `/account`, which says who is logged in. Every request body it got
/// is kept.
fn site() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&bodies);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let (mut cookie, mut length) = (String::new(), 0);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("cookie:") {
                    cookie = v.trim().to_owned();
                } else if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let body = String::from_utf8_lossy(&body).into_owned();
            kept.lock().unwrap().push(body.clone());
            let path = first.split(' ').nth(1).unwrap_or("/");
            let html = |page: &str| {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                )
            };
            let answer = match path {
                "/login" if body.contains(&format!("pass={VALUE}")) => {
                    "HTTP/1.1 303 See Other\r\nLocation: /account\r\nSet-Cookie: s=anna; Max-Age=3600; Path=/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
                }
                // Each control fills a third of the window, so the owner's
                // clicks on the live view land on them by fractions.
                "/login" => html(
                    "<title>Login</title><style>input,button{position:fixed;left:0;\
                     width:100%;height:30%;margin:0}</style>\
                     <form method=post action=/login>\
                     <label>User <input name=user style=top:0></label>\
                     <label>Password <input type=password name=pass style=top:35%></label>\
                     <button style=top:70%>Sign in</button></form>",
                ),
                "/big" => html(
                    "<title>Big</title><button style=position:fixed;inset:0;width:100%;height:100% \
                     onclick=\"document.title='clicked';this.textContent='Pressed'\">Press</button>",
                ),
                "/account" if cookie.contains("s=anna") => {
                    html("<title>Account</title><p>Logged in as anna</p>")
                }
                _ => html("<title>Account</title><p>Please log in</p>"),
            };
            let mut stream = stream;
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, bodies)
}

fn config(fake: &FakeLlm, port: u16) -> String {
    format!(
        "mode = \"production\"\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\n\
         base_url = \"{}\"\napi_key_env = \"HEARTH_TEST_API_KEY\"\n\
         [plugins.browser]\nallow_hosts = [\"127.0.0.1:{port}\"]\n",
        fake.url()
    )
}

#[test]
fn a_login_with_a_secret_by_name_leaks_it_nowhere_and_lasts_a_restart() {
    let (port, bodies) = site();
    let fake = FakeLlm::start();
    let login = format!("http://127.0.0.1:{port}/login");
    fake.push(anthropic_tool_use(
        None,
        "toolu_1",
        "browser",
        &json!({ "action": "open", "url": login }),
    ));
    fake.push(anthropic_tool_use(
        None,
        "toolu_2",
        "browser",
        &json!({ "action": "type", "ref": 1, "text": "anna" }),
    ));
    fake.push(anthropic_tool_use(
        None,
        "toolu_3",
        "browser",
        &json!({ "action": "type", "ref": 2, "text": "{{secret:SITE_PASSWORD}}", "submit": true }),
    ));
    fake.push(anthropic_text("Logged in."));
    let h = Hearth::new(&config(&fake, port));
    let mut set = h
        .command(&["secret", "set", "SITE_PASSWORD"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    set.stdin
        .take()
        .unwrap()
        .write_all(VALUE.as_bytes())
        .unwrap();
    assert!(set.wait().unwrap().success());
    let key = |cmd: &mut std::process::Command| {
        cmd.env("HEARTH_TEST_API_KEY", "test-key");
    };
    let daemon = h.daemon_with(key);
    assert_eq!(h.chat("log in to the site").ok().trim(), "Logged in.");

    // The site got the value; the model saw the page after, not the value.
    assert!(
        bodies.lock().unwrap().iter().any(|b| b.contains(VALUE)),
        "the site never got the password: {}",
        fake.requests().last().unwrap().body["messages"]
    );
    let requests = fake.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("Logged in as anna"), "{last}");
    for request in &requests {
        assert!(
            !request.body.to_string().contains(VALUE),
            "the model saw it"
        );
    }
    let audit = h
        .cmd(&["audit", "--json", "--tool", "browser"])
        .ok()
        .to_owned();
    assert!(audit.contains("{{secret:SITE_PASSWORD}}"), "{audit}");
    assert!(!audit.contains(VALUE), "{audit}");

    let status = h.chat("/browser").ok().to_owned();
    assert!(
        status.contains("running") && status.contains("\"Account\""),
        "{status}"
    );
    assert!(
        !chromium_children(daemon.pid()).is_empty(),
        "a browser runs after use"
    );
    for line in daemon.logs() {
        assert!(!line.contains(VALUE), "the log holds it: {line}");
    }
    drop(daemon);
    // No file but the credentials holds it: the secret store, and the
    // browser's profile (hidden from every other program).
    let mut dirs = vec![h.home().to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path == h.home().join("secrets.json") || path == h.home().join("browser/profile") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains(VALUE), "{} holds it", path.display());
            }
        }
    }

    // After a restart the browser's profile still holds the login.
    fake.push(anthropic_tool_use(
        None,
        "toolu_4",
        "browser",
        &json!({ "action": "open", "url": format!("http://127.0.0.1:{port}/account") }),
    ));
    fake.push(anthropic_text("Still logged in."));
    let _daemon = h.daemon_with(key);
    assert_eq!(h.chat("check the account").ok().trim(), "Still logged in.");
    let last = fake.requests().last().unwrap().body.to_string();
    assert!(last.contains("Logged in as anna"), "{last}");
}

/// The daemon's child processes that are a Chromium.
fn chromium_children(daemon_pid: i32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some((comm, rest)) = stat.split_once(") ") else {
            continue;
        };
        let ppid: i32 = rest
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if ppid == daemon_pid && comm.contains("chrom") {
            found.push(stat.clone());
        }
    }
    found
}

#[test]
fn a_daemon_that_never_used_the_browser_runs_no_browser() {
    let (port, _) = site();
    let fake = FakeLlm::start();
    fake.push(anthropic_text("Hello."));
    let h = Hearth::new(&config(&fake, port));
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "test-key");
    });
    assert_eq!(h.chat("hello").ok().trim(), "Hello.");
    let tools = fake.requests()[0].body["tools"].to_string();
    assert!(tools.contains("\"browser\""), "the tool is offered");
    assert_eq!(chromium_children(daemon.pid()), Vec::<String>::new());
    let status = h.chat("/browser").ok().to_owned();
    assert!(
        status.contains("browser: idle") && status.contains("starts on first use"),
        "{status}"
    );
}

#[test]
fn browser_login_refuses_what_it_cannot_open_and_says_why() {
    let h = Hearth::new("");
    let cases = [
        (
            vec!["browser", "login", "ftp://x"],
            "not an http(s) address",
        ),
        (
            vec!["browser", "login", "https://x.example"],
            "no display here",
        ),
        (
            vec!["browser", "login", "https://x.example"],
            "type https://x.example under its Browser view",
        ),
    ];
    for (args, expected) in cases {
        let out = hearth_tests::Run::from(
            h.command(&args)
                .env_remove("DISPLAY")
                .env_remove("WAYLAND_DISPLAY")
                .output()
                .unwrap(),
        );
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn the_owner_watches_the_browser_on_the_canvas_and_logs_in_by_hand() {
    let (port, bodies) = site();
    let fake = FakeLlm::start();
    let site = format!("http://127.0.0.1:{port}");
    fake.push(anthropic_tool_use(
        None,
        "toolu_1",
        "browser",
        &json!({ "action": "open", "url": format!("{site}/login") }),
    ));
    fake.push(anthropic_text("The login page is open."));
    let h = Hearth::new(&format!(
        "{}idle_timeout_secs = 8\n{}",
        config(&fake, port),
        canvas::CONFIG
    ));
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "test-key");
    });
    let canvas = Canvas::of(h.home());
    let (mut ws, _) = canvas.connect();
    assert_eq!(
        h.chat("open the login page").ok().trim(),
        "The login page is open."
    );

    // The agent's tab, as it is: a frame, then its image on request.
    let wait = Duration::from_secs(20);
    let titled = |title: &'static str| move |f: &Value| f["type"] == "view" && f["title"] == title;
    let shown = ws.wait_for(wait, titled("Login"));
    assert_eq!(shown["source"], "browser");
    assert!(
        shown["url"].as_str().unwrap().ends_with("/login"),
        "{shown}"
    );
    assert!(shown["width"].as_u64().unwrap() > 100, "{shown}");
    let cookie = canvas.login();
    let image = canvas.get("/view/frame", Some(&cookie));
    assert_eq!(image.status, 200);
    assert_eq!(image.header("content-type"), Some("image/jpeg"));
    assert!(image.body.starts_with(&[0xFF, 0xD8, 0xFF]), "a JPEG");
    assert_eq!(canvas.get("/view/frame", None).status, 401, "owner only");

    // The owner logs in: clicks on the fields and the button by where
    // they show, typing between.
    let act = |ws: &mut hearth_tests::canvas::Ws, input: Value| {
        ws.send(&json!({ "type": "view", "source": "browser", "input": input }).to_string());
    };
    act(&mut ws, json!({ "kind": "click", "x": 0.5, "y": 0.15 }));
    act(&mut ws, json!({ "kind": "text", "text": "anna" }));
    act(&mut ws, json!({ "kind": "click", "x": 0.5, "y": 0.5 }));
    act(&mut ws, json!({ "kind": "text", "text": VALUE }));
    act(&mut ws, json!({ "kind": "click", "x": 0.5, "y": 0.85 }));
    ws.wait_for(wait, titled("Account"));
    assert!(
        bodies
            .lock()
            .unwrap()
            .iter()
            .any(|b| b.contains(&format!("pass={VALUE}"))),
        "the site got the password the owner typed"
    );

    // An address the owner opens shows in a new tab, and a click lands.
    act(
        &mut ws,
        json!({ "kind": "open", "url": format!("{site}/big") }),
    );
    ws.wait_for(wait, titled("Big"));
    act(&mut ws, json!({ "kind": "click", "x": 0.5, "y": 0.5 }));
    ws.wait_for(wait, titled("clicked"));
    // A bad action is answered, and nothing breaks.
    act(&mut ws, json!({ "kind": "click", "x": 7, "y": 0.5 }));
    let refused = ws.wait_for(wait, |f| f["type"] == "error");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("fractions of the view"),
        "{refused}"
    );

    // The agent sees where the owner left it, and never the password.
    fake.push(anthropic_tool_use(
        None,
        "toolu_2",
        "browser",
        &json!({ "action": "snapshot" }),
    ));
    fake.push(anthropic_text("I see it."));
    assert_eq!(h.chat("what do you see?").ok().trim(), "I see it.");
    let last = fake.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("Pressed") && last.contains("the owner opened"),
        "{last}"
    );
    for request in fake.requests() {
        assert!(
            !request.body.to_string().contains(VALUE),
            "the model saw it"
        );
    }
    for line in daemon.logs() {
        assert!(!line.contains(VALUE), "the log holds it: {line}");
    }

    // Stopped when idle: the view says so.
    let closed = ws.wait_for(Duration::from_secs(30), |f| {
        f["type"] == "view" && f["closed"] == true
    });
    assert_eq!(closed["source"], "browser");
    assert_eq!(canvas.get("/view/frame", Some(&cookie)).status, 404);
}

#[test]
fn the_canvas_shows_the_live_view_and_the_owner_logs_in_on_it_in_chromium() {
    let browser = hearth_tests::browser::Browser::new(false);
    let (port, bodies) = site();
    let fake = FakeLlm::start();
    let h = Hearth::new(&format!("{}{}", config(&fake, port), canvas::CONFIG));
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "test-key");
    });
    let canvas = Canvas::of(h.home());
    let password = std::ffi::OsStr::new(VALUE);
    browser.run(
        "live.test.mjs",
        &canvas,
        &[("SITE_PASSWORD", password)],
        |step| match step {
            "login" | "done" => Ok(()),
            "open" => {
                fake.push(anthropic_tool_use(
                    None,
                    "toolu_1",
                    "browser",
                    &json!({ "action": "open", "url": format!("http://127.0.0.1:{port}/login") }),
                ));
                fake.push(anthropic_text("Open."));
                let reply = h.chat("open the login page").ok().trim().to_owned();
                (reply == "Open.").then_some(()).ok_or(reply)
            }
            "logged-in" => {
                let got = bodies.lock().unwrap().iter().any(|b| b.contains(VALUE));
                got.then_some(())
                    .ok_or_else(|| "the site never got the password".to_owned())
            }
            other => Err(format!("unknown step {other}")),
        },
    );
    assert!(
        browser.artifacts.join("live-view.png").is_file(),
        "no screenshot of the live view"
    );
    for request in fake.requests() {
        assert!(
            !request.body.to_string().contains(VALUE),
            "the model saw it"
        );
    }
}
