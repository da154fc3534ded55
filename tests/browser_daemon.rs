//! The browser in the daemon, end to end with a fake model and real
//! Chromium: the model logs in to a site on 127.0.0.1 with a secret by
//! name; the site gets the value, and the model's requests, the audit,
//! the log and every file but the credentials never do; `/browser` says
//! what the browser is doing; and after a daemon restart the site still
//! knows the browser.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use serde_json::json;

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
                "/login" => html(
                    "<title>Login</title><form method=post action=/login>\
                     <label>User <input name=user></label>\
                     <label>Password <input type=password name=pass></label>\
                     <button>Sign in</button></form>",
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
