//! The browser tool against real Chromium and pages served on 127.0.0.1:
//! reading a page that renders with JavaScript, acting on it, the network
//! rules, a crash, the idle stop, and bad input.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hearth_browser::Browser;
use hearth_browser::config::Settings;
use serde_json::{Value, json};

/// A site on 127.0.0.1: each request's path picks a page; every request
/// line it got is kept.
struct Site {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

const RENDERED: &str = r#"<!doctype html><title>Rendered</title><body><div id=app></div><script>
setTimeout(() => {
  document.getElementById('app').innerHTML =
    '<h1>Made by script</h1><p>Count: <span id=n>0</span></p>' +
    '<button onclick="document.getElementById(\'n\').textContent = 1 + +document.getElementById(\'n\').textContent">Add one</button>' +
    '<label>Name <input id=name></label><select id=color><option value=r>Red</option><option value=g>Green</option></select>' +
    '<p id=echo></p><a href="/next">Go on</a>';
  document.getElementById('name').addEventListener('input', e => document.getElementById('echo').textContent = 'typed:' + e.target.value);
  document.getElementById('color').addEventListener('change', e => document.getElementById('echo').textContent = 'chose:' + e.target.value);
}, 100);
</script>"#;

fn page(path: &str, other_port: u16) -> Option<(String, String)> {
    let html = |body: &str| Some(("text/html".to_owned(), body.to_owned()));
    match path {
        "/" => html(RENDERED),
        "/next" => html("<title>Next</title><p>The next page.</p>"),
        "/reaches-out" => html(&format!(
            "<title>Out</title><p>reaching</p><img src='http://127.0.0.1:{other_port}/img'>\
             <script>fetch('http://127.0.0.1:{other_port}/fetch').catch(() => {{}})</script>"
        )),
        "/redirect" => Some((
            "redirect".to_owned(),
            format!("http://127.0.0.1:{other_port}/"),
        )),
        "/dialog" => html(
            "<title>Dialog</title><button onclick=\"document.body.dataset.ok = confirm('Sure?'); document.getElementById('r').textContent = 'answered ' + document.body.dataset.ok\">Ask</button><p id=r></p>",
        ),
        "/popup" => {
            html("<title>Opener</title><button onclick=\"window.open('/next')\">Pop</button>")
        }
        "/slow" => None,
        "/alert" => html(
            "<title>Alert</title><button onclick=\"alert('Hi there'); document.getElementById('r').textContent = 'after alert'\">Warn</button><p id=r></p>",
        ),
        "/leave" => html(
            "<title>Leave</title><script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; });</script>\
             <input id=t><button onclick=\"document.getElementById('t').value = 'dirty'\">Edit</button>",
        ),
        "/long" => html(&format!(
            "<title>Long</title>{}<button id=end>The end</button>",
            "<p>filler line</p>".repeat(300)
        )),
        "/files" => {
            html("<title>Files</title><a href='/report.txt'>Report</a> <a href='/big.bin'>Big</a>")
        }
        "/upload" => html(
            "<title>Upload</title><label>File <input type=file id=f></label><p id=out></p><script>             f.onchange = () => { const x = f.files[0]; x.text().then(t => out.textContent = 'picked:' + x.name + ':' + t, () => out.textContent = 'unreadable:' + x.name); };             </script>",
        ),
        "/login" => html(
            "<title>Login</title><form method=post action=/login><label>User <input name=user></label>             <label>Password <input type=password name=pass></label><label>Code <input name=code></label>             <button>Sign in</button></form>",
        ),
        _ => html("<title>404</title>"),
    }
}

impl Site {
    fn start(other_port: u16) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = kept.clone();
                thread::spawn(move || serve(stream, other_port, &kept));
            }
        });
        Site { port, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// What a page sends besides HTML: a file to download, a login's answer.
fn special(path: &str, cookie: &str, body: &str) -> Option<String> {
    let file = |name: &str, bytes: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"{name}\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{bytes}",
            bytes.len()
        )
    };
    let html = |body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    match path {
        "/report.txt" => Some(file("report.txt", "quarterly numbers")),
        "/big.bin" => Some(file("big.bin", &"x".repeat(200_000))),
        "/login" if body.contains("pass=hunter2") => Some(
            "HTTP/1.1 303 See Other\r\nLocation: /account\r\nSet-Cookie: session=ok; Max-Age=3600; Path=/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_owned(),
        ),
        "/account" if cookie.contains("session=ok") => {
            Some(html("<title>Account</title><p>Logged in as anna</p>"))
        }
        "/account" => Some(html("<title>Account</title><p>Please log in</p>")),
        _ => None,
    }
}

fn serve(stream: TcpStream, other_port: u16, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let (mut cookie, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("cookie:") {
            cookie = value.trim().to_owned();
        } else if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    seen.lock().unwrap().push(first.trim().to_owned());
    let path = first.split(' ').nth(1).unwrap_or("/").to_owned();
    let mut stream = stream;
    if let Some(answer) = special(&path, &cookie, &String::from_utf8_lossy(&body)) {
        let _ = stream.write_all(answer.as_bytes());
        return;
    }
    match page(&path, other_port) {
        None => thread::sleep(Duration::from_secs(120)),
        Some((kind, target)) if kind == "redirect" => {
            let _ = write!(
                stream,
                "HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
        Some((kind, body)) => {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    }
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
}

/// A browser plugin on a throwaway home, allowed to reach `site` only.
fn browser(home: &std::path::Path, site: &Site, extra: Value) -> Browser {
    let mut config =
        json!({ "allow_hosts": [format!("127.0.0.1:{}", site.port)], "call_timeout_secs": 20 });
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    Browser::new(
        Settings::parse(config).unwrap(),
        home.to_owned(),
        Vec::new(),
    )
}

fn text(result: Value) -> String {
    match result {
        Value::String(s) => s,
        other => panic!("not text: {other}"),
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn eventually(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// The number a snapshot gave the element whose line holds `label`.
fn reference(snapshot: &str, label: &str) -> u64 {
    let line = snapshot
        .lines()
        .find(|l| l.contains(label) && l.contains('['))
        .unwrap_or_else(|| panic!("no element {label:?} in:\n{snapshot}"));
    let at = line.find(label).unwrap();
    let open = line[..at].rfind('[').unwrap();
    line[open + 1..open + line[open..].find(']').unwrap()]
        .parse()
        .unwrap()
}

#[test]
fn a_page_made_by_javascript_is_read_and_acted_on() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    let shown = text(
        b.call(json!({ "action": "open", "url": site.url("/") }), false)
            .unwrap(),
    );
    assert!(shown.contains("# Made by script"), "{shown}");
    assert!(shown.contains("Count: 0"), "{shown}");
    let add = reference(&shown, "button \"Add one\"");
    let shown = text(
        b.call(json!({ "action": "click", "ref": add }), false)
            .unwrap(),
    );
    assert!(shown.contains("Count: 1"), "{shown}");
    let name = reference(&shown, "textbox \"Name\"");
    let shown = text(
        b.call(
            json!({ "action": "type", "ref": name, "text": "Anna" }),
            false,
        )
        .unwrap(),
    );
    assert!(shown.contains("typed:Anna"), "{shown}");
    assert!(shown.contains("textbox \"Name\" = \"Anna\""), "{shown}");
    let color = reference(&shown, "select");
    let shown = text(
        b.call(
            json!({ "action": "select", "ref": color, "values": ["Green"] }),
            false,
        )
        .unwrap(),
    );
    assert!(shown.contains("chose:g"), "{shown}");
    let next = reference(&shown, "link \"Go on\"");
    let shown = text(
        b.call(json!({ "action": "click", "ref": next }), false)
            .unwrap(),
    );
    assert!(shown.contains("The next page."), "{shown}");
    let tabs = text(b.call(json!({ "action": "tabs" }), false).unwrap());
    assert!(tabs.contains("*0 \"Next\""), "{tabs}");
}

#[test]
fn dialogs_are_answered_and_popups_become_the_current_tab() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/dialog") }),
            false,
        )
        .unwrap(),
    );
    let ask = reference(&shown, "button \"Ask\"");
    let shown = text(
        b.call(json!({ "action": "click", "ref": ask }), false)
            .unwrap(),
    );
    assert!(shown.contains("answered true"), "{shown}");
    assert!(shown.contains("confirm dialog (\"Sure?\")"), "{shown}");
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/popup") }),
            false,
        )
        .unwrap(),
    );
    let pop = reference(&shown, "button \"Pop\"");
    text(
        b.call(json!({ "action": "click", "ref": pop }), false)
            .unwrap(),
    );
    let shown = text(b.call(json!({ "action": "snapshot" }), false).unwrap());
    assert!(shown.contains("opened a new tab"), "{shown}");
    assert!(shown.contains("The next page."), "{shown}");
    let tabs = text(b.call(json!({ "action": "close" }), false).unwrap());
    assert!(tabs.contains("*0 \"Opener\""), "{tabs}");
}

#[test]
fn a_page_cannot_reach_loopback_beyond_what_is_allowed() {
    let home = tempfile::tempdir().unwrap();
    let other = Site::start(1);
    let site = Site::start(other.port);
    let b = browser(home.path(), &site, json!({}));
    // Asked for directly.
    let refused = b
        .call(json!({ "action": "open", "url": other.url("/") }), false)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("refused") && refused.contains("loopback"),
        "{refused}"
    );
    // Redirected to.
    let refused = b
        .call(
            json!({ "action": "open", "url": site.url("/redirect") }),
            false,
        )
        .unwrap_err()
        .to_string();
    assert!(refused.contains("refused"), "{refused}");
    // Loaded and fetched by a page.
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/reaches-out") }),
            false,
        )
        .unwrap(),
    );
    assert!(shown.contains("reaching"), "{shown}");
    thread::sleep(Duration::from_millis(500));
    assert!(
        other.requests().is_empty(),
        "the other site was reached: {:?}",
        other.requests()
    );
}

#[test]
fn a_killed_browser_fails_the_call_it_was_in_and_the_next_call_starts_another() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = Arc::new(browser(home.path(), &site, json!({})));
    text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    let pid = b.session().pid().unwrap();
    let killer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(700));
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let error = b
        .call(
            json!({ "action": "wait", "text": "never there", "timeout_ms": 15000 }),
            false,
        )
        .unwrap_err()
        .to_string();
    killer.join().unwrap();
    assert!(error.contains("exited during this call"), "{error}");
    let shown = text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    assert!(shown.contains("The next page."), "{shown}");
    assert_ne!(b.session().pid(), Some(pid));
}

#[test]
fn an_idle_browser_is_stopped_and_an_unused_one_never_started() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({ "idle_timeout_secs": 1 }));
    assert_eq!(b.session().pid(), None);
    text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    let pid = b.session().pid().unwrap();
    eventually(Duration::from_secs(10), "the idle browser stopped", || {
        b.session().pid().is_none() && !alive(pid)
    });
    let shown = text(b.call(json!({ "action": "snapshot" }), false).unwrap());
    assert!(
        shown.contains("about:blank"),
        "a new browser starts blank: {shown}"
    );
}

#[test]
fn bad_input_gets_a_clear_error_and_the_browser_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    let cases = [
        (
            json!({ "action": "open", "url": "file:///etc/passwd" }),
            "not an http(s) URL",
        ),
        (
            json!({ "action": "open", "url": "javascript:alert(1)" }),
            "not an http(s) URL",
        ),
        (json!({ "action": "open" }), "open needs url"),
        (json!({ "action": "fly" }), "unknown action \"fly\""),
        (json!({ "action": "click" }), "click needs ref"),
        (json!({ "action": "click", "ref": 99 }), "no element 99"),
        (json!({ "action": "switch", "tab": 5 }), "there is no tab 5"),
        (
            json!({ "action": "press", "key": "Hyper" }),
            "not a key name",
        ),
        (
            json!({ "action": "wait", "text": "x", "timeout_ms": 999999 }),
            "timeout_ms must be 1-20000",
        ),
        (
            json!({ "action": "open", "url": "http://127.0.0.1:1/", "extra": 1 }),
            "unknown field `extra`",
        ),
    ];
    text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    for (args, expected) in cases {
        let error = b.call(args.clone(), false).unwrap_err().to_string();
        assert!(error.contains(expected), "{args}: {error}");
    }
    let slow = b
        .call(
            json!({ "action": "open", "url": site.url("/slow"), "timeout_ms": 2000 }),
            false,
        )
        .unwrap_err()
        .to_string();
    assert!(slow.contains("did not finish loading in 2 s"), "{slow}");
    let shown = text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    assert!(shown.contains("The next page."), "{shown}");
}

#[test]
fn every_request_counts_once_per_page_load() {
    // The proxy passes one request per connection: a page with an image
    // loads both, each once.
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    let count = AtomicUsize::new(0);
    for r in site.requests() {
        if r.starts_with("GET /next ") {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }
    assert_eq!(count.load(Ordering::Relaxed), 1, "{:?}", site.requests());
}

#[test]
fn without_chromium_no_tool_is_offered_and_the_status_says_why() {
    use hearth_sdk::Plugin;
    use hearth_sdk::protocol::PartState;
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let none = browser(
        home.path(),
        &site,
        json!({ "executable": "/nonexistent/chromium" }),
    );
    assert!(none.describe().tools.is_empty());
    let health = none.health();
    assert_eq!(health.state, PartState::Degraded);
    assert!(
        health.detail.contains("/nonexistent/chromium"),
        "{}",
        health.detail
    );
    let found = browser(home.path(), &site, json!({}));
    assert_eq!(found.describe().tools[0].name, "browser");
    assert_eq!(found.health().state, PartState::Idle);
    text(
        found
            .call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    assert_eq!(found.health().state, PartState::Up);
}

#[test]
fn downloads_land_in_downloads_and_one_over_the_cap_is_stopped() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({ "max_download_bytes": 100_000 }));
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/files") }),
            false,
        )
        .unwrap(),
    );
    let report = reference(&shown, "link \"Report\"");
    let saved = b
        .call(json!({ "action": "download", "ref": report }), false)
        .unwrap();
    let path = std::path::PathBuf::from(saved["saved"].as_str().unwrap());
    assert_eq!(path, home.path().join("downloads/report.txt"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "quarterly numbers");
    let again = b
        .call(
            json!({ "action": "download", "url": site.url("/report.txt") }),
            false,
        )
        .unwrap();
    assert!(
        again["saved"]
            .as_str()
            .unwrap()
            .ends_with("downloads/report (1).txt"),
        "{again}"
    );
    let big = reference(&shown, "link \"Big\"");
    let error = b
        .call(json!({ "action": "download", "ref": big }), false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("100000-byte cap"), "{error}");
    // Chromium removes what the stopped download left once it has stopped.
    let left = || {
        let mut left: Vec<String> = std::fs::read_dir(home.path().join("downloads"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        left
    };
    let start = Instant::now();
    while left() != ["report (1).txt", "report.txt"] {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "left in downloads: {:?}",
            left()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn uploads_come_from_the_roots_and_never_a_credential() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    std::fs::write(home.path().join("notes.txt"), "my notes").unwrap();
    std::fs::write(home.path().join("secrets.json"), "{}").unwrap();
    std::fs::write(outside.path().join("elsewhere.txt"), "x").unwrap();
    let hidden = vec![home.path().join("secrets.json").display().to_string()];
    let config = json!({ "allow_hosts": [format!("127.0.0.1:{}", site.port)] });
    let b = Browser::new(
        Settings::parse(config).unwrap(),
        home.path().to_owned(),
        hidden,
    );
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/upload") }),
            false,
        )
        .unwrap(),
    );
    let input = reference(&shown, "file \"File\"");
    let refused = [
        (
            outside.path().join("elsewhere.txt").display().to_string(),
            "outside the writable roots",
        ),
        ("secrets.json".to_owned(), "credentials"),
        ("missing.txt".to_owned(), "No such file"),
    ];
    for (path, why) in refused {
        let error = b
            .call(
                json!({ "action": "upload", "ref": input, "path": path }),
                false,
            )
            .unwrap_err()
            .to_string();
        assert!(error.contains(why), "{path}: {error}");
    }
    let shown = text(
        b.call(
            json!({ "action": "upload", "ref": input, "path": "notes.txt" }),
            false,
        )
        .unwrap(),
    );
    assert!(shown.contains("picked:notes.txt:my notes"), "{shown}");
}

#[test]
fn a_login_typed_with_a_secret_stays_unseen_and_lasts_past_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/login") }),
            false,
        )
        .unwrap(),
    );
    let user = reference(&shown, "textbox \"User\"");
    b.call(
        json!({ "action": "type", "ref": user, "text": "anna" }),
        false,
    )
    .unwrap();
    let code = reference(&shown, "textbox \"Code\"");
    // The host filled this text from a secret: the field is masked.
    let shown = text(
        b.call(
            json!({ "action": "type", "ref": code, "text": "hunter2" }),
            true,
        )
        .unwrap(),
    );
    assert!(shown.contains("textbox \"Code\" (filled)"), "{shown}");
    let pass = reference(&shown, "password \"Password\"");
    let shown = text(
        b.call(
            json!({ "action": "type", "ref": pass, "text": "hunter2", "submit": true }),
            true,
        )
        .unwrap(),
    );
    assert!(shown.contains("Logged in as anna"), "{shown}");
    let shot = b.call(json!({ "action": "screenshot" }), false).unwrap();
    assert!(!shot.to_string().contains("hunter2"), "{shot}");
    b.session().stop();
    drop(b);
    let again = browser(home.path(), &site, json!({}));
    let shown = text(
        again
            .call(
                json!({ "action": "open", "url": site.url("/account") }),
                false,
            )
            .unwrap(),
    );
    assert!(shown.contains("Logged in as anna"), "{shown}");
}

#[test]
fn javascript_runs_in_the_page_and_its_failure_is_told() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    b.call(json!({ "action": "open", "url": site.url("/next") }), false)
        .unwrap();
    let answer = b
        .call(
            json!({ "action": "eval", "js": "document.title + ' ' + (6 * 7)" }),
            false,
        )
        .unwrap();
    assert_eq!(answer["value"], "Next 42");
    let error = b
        .call(json!({ "action": "eval", "js": "no_such_thing()" }), false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("no_such_thing is not defined"), "{error}");
    let error = b
        .call(json!({ "action": "eval" }), false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("eval needs js"), "{error}");
}

#[test]
fn the_kernel_keeps_a_credential_from_the_browser_even_past_the_plugins_checks() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let secret = home.path().join("secrets.json");
    std::fs::write(&secret, "{\"K\": \"v\"}").unwrap();
    let config = json!({ "allow_hosts": [format!("127.0.0.1:{}", site.port)] });
    let hidden = vec![secret.display().to_string()];
    let b = Browser::new(
        Settings::parse(config).unwrap(),
        home.path().to_owned(),
        hidden,
    );
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/upload") }),
            false,
        )
        .unwrap(),
    );
    let input = reference(&shown, "file \"File\"");
    // Handed to Chromium directly, as a bug in the plugin's own check
    // would: the browser cannot read it.
    b.session()
        .with(|running| hearth_browser::page::upload(running, input, &secret))
        .unwrap();
    let shown = text(
        b.call(json!({ "action": "wait", "text": "unreadable:" }), false)
            .unwrap(),
    );
    assert!(shown.contains("unreadable:secrets.json"), "{shown}");
    assert!(!shown.contains("picked:"), "{shown}");
}

#[test]
fn a_hung_browser_fails_the_call_and_the_next_call_starts_another() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    // Long enough for a loaded machine's start, short enough to wait out.
    let b = browser(home.path(), &site, json!({ "call_timeout_secs": 6 }));
    b.call(json!({ "action": "open", "url": site.url("/next") }), false)
        .unwrap();
    let pid = b.session().pid().unwrap();
    // SAFETY: kill has no memory preconditions; the group is the browser's.
    unsafe { libc::kill(-(pid as i32), libc::SIGSTOP) };
    let error = b
        .call(json!({ "action": "snapshot" }), false)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("stopped answering during this call"),
        "{error}"
    );
    assert!(!alive(pid), "the hung browser was left behind");
    let shown = text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    assert!(shown.contains("The next page."), "{shown}");
}

#[test]
fn alerts_and_leaving_a_page_that_asks_do_not_hang() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/alert") }),
            false,
        )
        .unwrap(),
    );
    let warn = reference(&shown, "button \"Warn\"");
    let shown = text(
        b.call(json!({ "action": "click", "ref": warn }), false)
            .unwrap(),
    );
    assert!(shown.contains("after alert"), "{shown}");
    assert!(shown.contains("alert dialog (\"Hi there\")"), "{shown}");
    // A page that asks before it is left (it needs a click first).
    let shown = text(
        b.call(
            json!({ "action": "open", "url": site.url("/leave") }),
            false,
        )
        .unwrap(),
    );
    let edit = reference(&shown, "button \"Edit\"");
    b.call(json!({ "action": "click", "ref": edit }), false)
        .unwrap();
    let shown = text(
        b.call(json!({ "action": "open", "url": site.url("/next") }), false)
            .unwrap(),
    );
    assert!(shown.contains("The next page."), "{shown}");
    assert!(shown.contains("beforeunload dialog"), "{shown}");
}

#[test]
fn scrolling_brings_an_element_into_view_and_a_closed_tab_is_gone() {
    let home = tempfile::tempdir().unwrap();
    let site = Site::start(1);
    let b = browser(home.path(), &site, json!({}));
    let shown = text(
        b.call(json!({ "action": "open", "url": site.url("/long") }), false)
            .unwrap(),
    );
    let end = reference(&shown, "button \"The end\"");
    let at = |b: &Browser| {
        b.call(
            json!({ "action": "eval", "js": "Math.round(scrollY)" }),
            false,
        )
        .unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(at(&b), 0.0);
    b.call(json!({ "action": "scroll", "ref": end }), false)
        .unwrap();
    let bottom = at(&b);
    assert!(bottom > 1000.0, "scrolled to {bottom}");
    b.call(json!({ "action": "scroll", "up": true }), false)
        .unwrap();
    assert!(at(&b) < bottom, "scrolled up");
    let error = b
        .call(json!({ "action": "close", "tab": 3 }), false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("tab 3"), "{error}");
    b.call(json!({ "action": "close" }), false).unwrap();
    let error = b
        .call(json!({ "action": "snapshot" }), false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("no tab is open"), "{error}");
}
