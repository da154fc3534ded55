//! The canvas in a real browser: headless Chromium, driven by
//! `tests/browser/canvas.test.mjs` through `playwright-core`, against the
//! real daemon with a fake model; and the agent's pages, driven by
//! `tests/browser/pages.test.mjs`.
//!
//! The browser script prints `STEP <name>` and waits; this side prepares
//! the model's answers for that step (or checks the daemon side, or
//! restarts the daemon), then answers `OK`. Screenshots of every element
//! land in `target/browser-artifacts/`.
//!
//! Needs `node`, Debian's `chromium`, and `npm ci` in `tests/browser`;
//! `.ci/run` installs all three.

use std::time::Duration;

use hearth_tests::browser::Browser;
use hearth_tests::canvas::Canvas;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_text_paced, anthropic_tool_use};
use hearth_tests::{Daemon, Hearth, plugin, probe};
use serde_json::{Value, json};

/// An 8x8 orange PNG.
const PIXEL_PNG: [u8; 74] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x08, 0x08, 0x02, 0x00, 0x00, 0x00, 0x4b, 0x6d, 0x29,
    0xdc, 0x00, 0x00, 0x00, 0x11, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x78, 0x50, 0x60, 0x80,
    0x15, 0x31, 0x0c, 0x2d, 0x09, 0x00, 0xae, 0xf3, 0x60, 0x01, 0x1c, 0x6f, 0xc9, 0xfb, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[test]
fn the_canvas_works_end_to_end_in_chromium() {
    let browser = Browser::new(true);
    let artifacts = browser.artifacts.clone();

    let fake = FakeLlm::start();
    let scratch = tempfile::tempdir().unwrap();
    let exec_log = scratch.path().join("exec");
    let port = free_port();
    let h = Hearth::with_plugins(
        &[plugin("canvas"), probe()],
        &format!(
            "[plugins.canvas]\nlisten = \"127.0.0.1:{port}\"\n\
             [plugins.probe]\nexec_log = {exec_log:?}\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n",
            fake.url()
        ),
    )
    // Development mode, so the probe's exec tool asks and the page shows cards.
    .in_mode("development");
    std::fs::create_dir_all(h.home().join("shared")).unwrap();
    std::fs::write(h.home().join("shared/pixel.png"), PIXEL_PNG).unwrap();
    std::fs::write(h.home().join("shared/clip.mp4"), b"not really a video").unwrap();
    // A sub-agent for the status bar's "also working": the store is made
    // by a command that needs no daemon, then the row written in place.
    h.cmd(&["agents"]).ok();
    h.db()
        .execute(
            "INSERT INTO agents (name, system_prompt, allowed_tools, created_at_ms) \
             VALUES ('researcher', 'You research.', '[]', 0)",
            [],
        )
        .unwrap();
    let mut daemon = start(&h);
    let canvas = Canvas::of(h.home());

    browser.run("canvas.test.mjs", &canvas, &[], |step| match step {
        "login" | "done" => Ok(()),
        "chat" => {
            let pieces = ["Hello ", "from ", "the ", "fake ", "model", "."];
            fake.push(anthropic_text_paced(&pieces, Duration::from_millis(150)));
            Ok(())
        }
        "working" => {
            fake.push(anthropic_tool_use(
                None,
                "a1",
                "send_agent_message",
                &json!({ "agent": "researcher", "text": "look into it" }),
            ));
            fake.push(anthropic_text("Asked the researcher."));
            let pieces = ["found ", "it ", "after ", "a ", "while"];
            fake.push_for(
                "You are researcher,",
                anthropic_text_paced(&pieces, Duration::from_millis(250)),
            );
            fake.push(anthropic_text("The researcher found it."));
            Ok(())
        }
        "upcoming" => {
            let args = json!({ "action": "add", "kind": "task", "cron": "0 9 * * MON",
                                   "text": "weekly review" });
            // Development mode asks before every write: the owner has
            // allowed exactly this call.
            h.grant("manage_schedule", &args);
            h.cmd(&["tool", "call", "manage_schedule", &args.to_string()])
                .ok();
            Ok(())
        }
        "elements" => {
            for (n, (id, kind, data)) in elements().into_iter().enumerate() {
                let args = json!({ "id": id, "type": kind, "data": data, "title": id });
                fake.push(anthropic_tool_use(
                    None,
                    &format!("t{n}"),
                    "canvas_show",
                    &args,
                ));
            }
            fake.push(anthropic_text("Done."));
            Ok(())
        }
        "approve" | "deny" => {
            let marker = if step == "approve" {
                "approved"
            } else {
                "denied"
            };
            fake.push(anthropic_tool_use(
                None,
                "x1",
                "probe_exec",
                &json!({ "marker": marker }),
            ));
            fake.push(anthropic_text(if step == "approve" {
                "Ran it."
            } else {
                "Not run."
            }));
            Ok(())
        }
        "check-approved" => check(
            std::fs::read_to_string(&exec_log)
                .unwrap_or_default()
                .contains("approved"),
            "the approved call did not run",
        ),
        "check-denied" => check(
            !std::fs::read_to_string(&exec_log)
                .unwrap_or_default()
                .contains("denied"),
            "the denied call ran",
        ),
        "upload" => {
            fake.push(anthropic_text("Got the file."));
            Ok(())
        }
        "check-upload" => {
            let prompt = fake
                .requests()
                .last()
                .map(|r| r.body["messages"].to_string());
            check(
                prompt.is_some_and(|p| p.contains("attached content 42")),
                "the upload did not reach the model",
            )
        }
        "restart" => {
            daemon.kill9();
            daemon = start(&h);
            Ok(())
        }
        "offline" => {
            fake.push(anthropic_text("While you were away, I tidied up."));
            let (mut ws, _) = canvas.connect();
            ws.send(
                &json!({ "type": "send", "id": "from-the-test", "text": "tidy up" }).to_string(),
            );
            ws.wait_for(Duration::from_secs(20), |f| f["type"] == "ack");
            drop(ws);
            wait_delivered(&h, "While you were away");
            Ok(())
        }
        other => Err(format!("unknown step {other}")),
    });
    for id in ["el-markdown", "el-chart-bar", "el-progress"] {
        assert!(
            artifacts.join(format!("element-{id}.png")).is_file(),
            "no screenshot of {id}"
        );
    }
    drop(daemon);
}

/// The private page: its script lists its query's rows and tries the
/// canvas's WebSocket.
const PRIVATE_PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Shop</title>
<ul id="rows"></ul><p id="state">pending</p><p id="ws">pending</p>
<script>
const out = (id, text) => { document.getElementById(id).textContent = text; };
fetch("/pages/shop/queries/items?min=2").then((r) => r.json()).then((d) => {
  for (const row of d.rows) {
    const li = document.createElement("li");
    li.textContent = `${row.name}: ${row.qty}`;
    document.getElementById("rows").append(li);
  }
  out("state", `loaded ${d.row_count}`);
}).catch((e) => out("state", `failed: ${e}`));
try {
  const ws = new WebSocket(`ws://${location.host}/ws`);
  ws.onopen = () => out("ws", "opened");
  ws.onerror = () => out("ws", "failed: error");
} catch (e) { out("ws", `failed: ${e.name}`); }
</script>"#;

/// The public page: its script tries the WebSocket, `/files`, the cookie
/// and its own query.
const PUBLIC_PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Board</title>
<p id="ws">pending</p><p id="files">pending</p><p id="query">pending</p><p id="cookie">pending</p>
<script>
const out = (id, text) => { document.getElementById(id).textContent = text; };
try {
  const ws = new WebSocket(`ws://${location.host}/ws`);
  ws.onopen = () => out("ws", "opened");
  ws.onerror = () => out("ws", "failed: error");
} catch (e) { out("ws", `failed: ${e.name}`); }
fetch("/files/secret.txt").then((r) => r.text().then((t) => out("files", r.ok ? `read: ${t}` : `failed: ${r.status}`)))
  .catch((e) => out("files", `failed: ${e}`));
fetch("/pages/open/board/queries/all").then((r) => r.json()).then((d) => out("query", `rows ${d.row_count}`))
  .catch((e) => out("query", `failed: ${e}`));
try { out("cookie", `cookie: ${document.cookie}`); } catch (e) { out("cookie", `failed: ${e.name}`); }
</script>"#;

#[test]
fn pages_show_their_queries_and_public_pages_stay_in_their_sandbox_in_chromium() {
    let browser = Browser::new(false);
    let h = Hearth::with_plugins(
        &[plugin("canvas")],
        &format!("[plugins.canvas]\nlisten = \"127.0.0.1:{}\"\n", free_port()),
    );
    std::fs::create_dir_all(h.home().join("shared")).unwrap();
    std::fs::write(h.home().join("shared/secret.txt"), "owner only").unwrap();
    let _daemon = h.daemon();
    let canvas = Canvas::of(h.home());
    let tool = |name: &str, args: Value| {
        h.cmd(&["tool", "call", name, &args.to_string()]).ok();
    };
    tool(
        "execute_sql",
        json!({ "sql": "CREATE TABLE item (name TEXT, qty INTEGER)" }),
    );
    tool(
        "execute_sql",
        json!({ "sql": "INSERT INTO item VALUES ('milk', 2), ('eggs', 12), ('flour', 1)" }),
    );
    tool(
        "manage_pages",
        json!({ "action": "create", "path": "shop", "content": PRIVATE_PAGE,
                "queries": { "items": "SELECT name, qty FROM item WHERE qty >= :min ORDER BY name" } }),
    );
    tool(
        "manage_pages",
        json!({ "action": "create", "path": "open/board", "content": PUBLIC_PAGE, "public": true,
                "queries": { "all": "SELECT name FROM item" } }),
    );
    browser.run("pages.test.mjs", &canvas, &[], |step| {
        Err(format!("the pages script has no step {step}"))
    });
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

fn check(ok: bool, why: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why.to_owned()) }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn wait_delivered(h: &Hearth, text: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let delivered: i64 = h
            .db()
            .query_row(
                "SELECT COUNT(*) FROM outbox WHERE status = 'delivered' AND text LIKE ?1",
                [format!("{text}%")],
                |r| r.get(0),
            )
            .unwrap();
        if delivered > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{text:?} was never delivered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One element of every type, as the browser script expects them.
fn elements() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "el-markdown",
            "markdown",
            json!({ "markdown": "Some **bold** text.\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>" }),
        ),
        (
            "el-table",
            "table",
            json!({ "columns": ["name", "qty"], "rows": [["apples", 3], ["pears", 5], ["plums", 0]] }),
        ),
        (
            "el-chart-line",
            "chart",
            json!({ "kind": "line", "labels": ["Mon", "Tue", "Wed", "Thu"], "series": [{ "name": "temp", "values": [3.5, 5, 4.25, 7] }, { "name": "wind", "values": [1, 2, null, 4] }] }),
        ),
        (
            "el-chart-bar",
            "chart",
            json!({ "kind": "bar", "labels": ["a", "b", "c"], "series": [{ "name": "count", "values": [4, 9, 2] }] }),
        ),
        (
            "el-image",
            "image",
            json!({ "url": "/files/pixel.png", "alt": "an orange square", "caption": "A test image" }),
        ),
        (
            "el-code",
            "code",
            json!({ "language": "rust", "code": "fn main() {\n    println!(\"hi\");\n}" }),
        ),
        (
            "el-checklist",
            "checklist",
            json!({ "items": [{ "text": "milk", "done": true }, { "text": "bread", "done": false }] }),
        ),
        (
            "el-link",
            "link",
            json!({ "url": "https://example.org/docs", "title": "Hearth docs", "description": "How it works" }),
        ),
        (
            "el-video",
            "video",
            json!({ "url": "/files/clip.mp4", "title": "A clip" }),
        ),
        (
            "el-progress",
            "progress",
            json!({ "label": "Copying", "value": 40, "max": 100 }),
        ),
    ]
}
