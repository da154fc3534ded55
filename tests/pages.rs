//! The agent's pages: `manage_pages` through the registry (rules, errors,
//! versions) and the canvas serving them over real HTTP (sessions, the
//! sandboxing policy, named queries on agent_data.db, the rate limit).

use hearth_tests::canvas::{self, Canvas};
use hearth_tests::{Daemon, Hearth, call_err, call_ok, plugin};
use serde_json::{Value, json};

/// A PNG's signature is enough for a file-backed page.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\nnot really an image";

#[test]
fn manage_pages_creates_updates_lists_deletes_and_keeps_versions() {
    let h = Hearth::new("");
    let rt = h.runtime();
    call_ok(
        &rt,
        "execute_sql",
        json!({ "sql": "CREATE TABLE item (name TEXT, qty INTEGER)" }),
    );
    let help = call_ok(&rt, "manage_pages", json!({ "action": "help" }));
    assert!(help["help"].as_str().unwrap().contains("/queries/"));
    let created = call_ok(
        &rt,
        "manage_pages",
        json!({
            "action": "create", "path": "shop/list", "content": "<h1>Shop</h1>",
            "queries": { "items": "SELECT name, qty FROM item WHERE qty >= :min" }
        }),
    );
    assert_eq!(created["url"], "/pages/shop/list");
    assert_eq!(created["public"], false);
    assert_eq!(
        created["queries"],
        json!(["/pages/shop/list/queries/items"])
    );
    let updated = call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "update", "path": "shop/list", "public": true }),
    );
    assert_eq!(updated["public"], true);
    assert_eq!(
        updated["queries"],
        json!(["/pages/shop/list/queries/items"])
    );
    call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "create", "path": "notes.md", "mime": "text/markdown", "content": "# Notes" }),
    );
    let listed = call_ok(&rt, "manage_pages", json!({ "action": "list" }));
    let paths: Vec<&str> = listed["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["notes.md", "shop/list"]);
    assert_eq!(listed["pages"][1]["queries"], json!(["items"]));
    assert_eq!(listed["pages"][1]["author"], "owner");
    call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "delete", "path": "notes.md" }),
    );
    let listed = call_ok(&rt, "manage_pages", json!({ "action": "list" }));
    assert_eq!(listed["pages"].as_array().unwrap().len(), 1);
    // Every save is a version with the whole record; the deletion too.
    let versions: Vec<(String, i64, Option<String>, String)> = h
        .db()
        .prepare(
            "SELECT name, version, content, author FROM versions WHERE kind = 'page' ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let shown: Vec<(&str, i64, bool)> = versions
        .iter()
        .map(|(n, v, c, _)| (n.as_str(), *v, c.is_some()))
        .collect();
    assert_eq!(
        shown,
        [
            ("shop/list", 1, true),
            ("shop/list", 2, true),
            ("notes.md", 1, true),
            ("notes.md", 2, false)
        ]
    );
    let second: Value = serde_json::from_str(versions[1].2.as_deref().unwrap()).unwrap();
    assert_eq!(second["public"], true);
    assert_eq!(second["content"], "<h1>Shop</h1>");
    assert_eq!(versions[0].3, "owner");

    // History and rollback, of a page that is there and of a deleted one.
    let history = call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "history", "path": "shop/list" }),
    );
    let listed: Vec<i64> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, [1, 2]);
    assert_eq!(history["versions"][0]["hash"].as_str().unwrap().len(), 64);
    let restored = call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "rollback", "path": "shop/list", "version": 1 }),
    );
    assert_eq!(restored["public"], false);
    let restored = call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "rollback", "path": "notes.md", "version": 1 }),
    );
    assert_eq!(restored["mime"], "text/markdown");
    let listed = call_ok(&rt, "manage_pages", json!({ "action": "list" }));
    assert_eq!(listed["pages"].as_array().unwrap().len(), 2);
    let history = call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "history", "path": "shop/list" }),
    );
    assert_eq!(history["versions"][2]["note"], "rollback to version 1");
    // script_history and script_rollback reach pages by where they are
    // served, through the same versions.
    let same = call_ok(&rt, "script_history", json!({ "name": "pages/shop/list" }));
    assert_eq!(same["versions"], history["versions"]);
    let again = call_ok(
        &rt,
        "script_rollback",
        json!({ "name": "pages/shop/list", "version": 2 }),
    );
    assert_eq!(again["public"], true);
    let cases = [
        (
            json!({ "action": "rollback", "path": "notes.md", "version": 2 }),
            "is its deletion",
        ),
        (
            json!({ "action": "rollback", "path": "notes.md", "version": 9 }),
            "has no version 9",
        ),
        (
            json!({ "action": "rollback", "path": "notes.md" }),
            "field `version`",
        ),
        (
            json!({ "action": "history", "path": "never" }),
            "no page \"never\"",
        ),
    ];
    for (args, expected) in cases {
        let error = call_err(&rt, "manage_pages", args.clone());
        assert!(error.contains(expected), "{args}: {error}");
    }
}

#[test]
fn bad_pages_are_refused_naming_what_is_wrong() {
    let h = Hearth::new("");
    std::fs::create_dir_all(h.home().join("pages")).unwrap();
    std::fs::write(h.home().join("pages/logo.png"), PNG).unwrap();
    std::fs::write(h.home().join("outside.html"), "x").unwrap();
    std::os::unix::fs::symlink(h.home().join("hearth.db"), h.home().join("pages/db.html")).unwrap();
    std::fs::write(h.home().join("pages/big.html"), vec![b'x'; 9 << 20]).unwrap();
    let rt = h.runtime();
    call_ok(
        &rt,
        "execute_sql",
        json!({ "sql": "CREATE TABLE item (name TEXT)" }),
    );
    call_ok(
        &rt,
        "manage_pages",
        json!({ "action": "create", "path": "taken", "content": "x" }),
    );
    let create = |extra: Value| {
        let mut args = json!({ "action": "create", "path": "p", "content": "<p>hi</p>" });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                args.as_object_mut().unwrap().remove(k);
            } else {
                args[k] = v.clone();
            }
        }
        args
    };
    let big = "x".repeat((512 << 10) + 1);
    let cases = [
        (create(json!({ "path": "" })), "field `path`"),
        (create(json!({ "path": "/abs" })), "field `path`"),
        (create(json!({ "path": "a/../b" })), "`..`"),
        (create(json!({ "path": "Caps" })), "a-z 0-9"),
        (create(json!({ "path": "a//b" })), "empty segment"),
        (
            create(json!({ "path": "a/queries/b" })),
            "segment `queries`",
        ),
        (create(json!({ "path": "taken" })), "exists already"),
        (
            create(json!({ "mime": "application/x-sh" })),
            "field `mime`",
        ),
        (create(json!({ "content": big })), "content"),
        (
            create(json!({ "content": null })),
            "fields `content` and `file`",
        ),
        (
            create(json!({ "file": "pages/logo.png" })),
            "fields `content` and `file`",
        ),
        (create(json!({ "mime": "image/png" })), "binary"),
        (
            create(json!({ "content": null, "file": h.home().join("outside.html") })),
            "is not inside",
        ),
        (
            create(json!({ "content": null, "file": "pages/../outside.html" })),
            "is not inside",
        ),
        (
            create(json!({ "content": null, "file": "pages/db.html" })),
            "is not inside",
        ),
        (
            create(json!({ "content": null, "file": "pages/missing.html" })),
            "does not resolve",
        ),
        (
            create(json!({ "content": null, "file": "pages/big.html" })),
            "over the",
        ),
        (
            create(json!({ "queries": { "wipe": "DELETE FROM item" } })),
            "query `wipe`: refused",
        ),
        (
            create(json!({ "queries": { "bad": "SELEC name FROM item" } })),
            "query `bad`: SQL error",
        ),
        (
            create(json!({ "queries": { "gone": "SELECT * FROM nowhere" } })),
            "query `gone`: SQL error",
        ),
        (
            create(json!({ "queries": { "two": "SELECT 1; SELECT 2" } })),
            "query `two`",
        ),
        (
            create(json!({ "queries": { "Bad-Name": "SELECT 1" } })),
            "the name \"Bad-Name\"",
        ),
        (
            json!({ "action": "update", "path": "nope", "public": true }),
            "no page \"nope\"",
        ),
        (
            json!({ "action": "delete", "path": "nope" }),
            "no page \"nope\"",
        ),
        (json!({ "action": "create" }), "field `path`"),
    ];
    for (args, expected) in cases {
        let error = call_err(&rt, "manage_pages", args.clone());
        assert!(error.contains(expected), "{args}: {error}");
    }
    let many: serde_json::Map<String, Value> = (0..21)
        .map(|i| (format!("q{i}"), json!("SELECT 1")))
        .collect();
    let error = call_err(&rt, "manage_pages", create(json!({ "queries": many })));
    assert!(error.contains("at most 20"), "{error}");
    // A file page under pages/ is fine, and stored relative to the home.
    let saved = call_ok(
        &rt,
        "manage_pages",
        create(
            json!({ "path": "logo.png", "mime": "image/png", "content": null, "file": "pages/logo.png" }),
        ),
    );
    assert_eq!(saved["url"], "/pages/logo.png");
    // Nothing refused was stored.
    let listed = call_ok(&rt, "manage_pages", json!({ "action": "list" }));
    assert_eq!(listed["pages"].as_array().unwrap().len(), 2);
}

/// A daemon with the canvas, and a table of three items.
fn serve() -> (Hearth, Daemon, Canvas) {
    let h = Hearth::with_plugins(&[plugin("canvas")], canvas::CONFIG);
    std::fs::create_dir_all(h.home().join("pages")).unwrap();
    std::fs::write(h.home().join("pages/logo.png"), PNG).unwrap();
    std::fs::create_dir_all(h.home().join("shared")).unwrap();
    std::fs::write(h.home().join("shared/secret.txt"), "owner only").unwrap();
    let daemon = h.daemon();
    let canvas = Canvas::of(h.home());
    tool(
        &h,
        "execute_sql",
        json!({ "sql": "CREATE TABLE item (name TEXT, qty INTEGER)" }),
    );
    tool(
        &h,
        "execute_sql",
        json!({ "sql": "INSERT INTO item VALUES ('milk', 2), ('eggs', 12), ('flour', 1)" }),
    );
    (h, daemon, canvas)
}

fn tool(h: &Hearth, name: &str, args: Value) -> Value {
    h.cmd(&["tool", "call", name, &args.to_string()]).json()
}

fn json_of(answer: &hearth_tests::canvas::Answer) -> Value {
    serde_json::from_str(&answer.text())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", answer.text()))
}

#[test]
fn the_canvas_serves_private_and_public_pages_and_their_queries() {
    let (h, _daemon, canvas) = serve();
    let queries = json!({
        "items": "SELECT name, qty FROM item WHERE qty >= :min ORDER BY name",
        "all": "SELECT name FROM item ORDER BY name",
        "slow": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
    });
    tool(
        &h,
        "manage_pages",
        json!({ "action": "create", "path": "shop", "content": "<h1>Private</h1>", "queries": queries }),
    );
    tool(
        &h,
        "manage_pages",
        json!({ "action": "create", "path": "open/board.html", "content": "<h1>Public</h1>",
                "public": true, "queries": { "all": "SELECT name FROM item ORDER BY name" } }),
    );
    tool(
        &h,
        "manage_pages",
        json!({ "action": "create", "path": "notes", "mime": "text/markdown",
                "content": "# Notes\n\n<script>alert(1)</script>", "public": true }),
    );
    tool(
        &h,
        "manage_pages",
        json!({ "action": "create", "path": "logo.png", "mime": "image/png", "file": "pages/logo.png" }),
    );
    let cookie = canvas.login();
    let session = Some(cookie.as_str());

    // Private: 401 without a session (page and query alike), 200 with.
    let answer = canvas.get("/pages/shop", None);
    assert_eq!(answer.status, 401, "{}", answer.text());
    let answer = canvas.get("/pages/shop/queries/all", None);
    assert_eq!(answer.status, 401);
    assert!(
        json_of(&answer)["error"]
            .as_str()
            .unwrap()
            .contains("log in")
    );
    // An unknown page looks the same as a private one without a session.
    assert_eq!(canvas.get("/pages/nowhere", None).status, 401);
    let answer = canvas.get("/pages/shop", session);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.text(), "<h1>Private</h1>");
    assert_eq!(
        answer.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = answer.header("content-security-policy").unwrap();
    assert!(
        csp.starts_with("sandbox allow-scripts allow-same-origin"),
        "{csp}"
    );
    assert!(
        csp.contains(&format!(
            "connect-src http://{}/pages/shop/queries/ ",
            canvas.addr
        )),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");

    // Queries: rows from agent_data.db as objects, parameters from the URL.
    let answer = canvas.get("/pages/shop/queries/items?min=2", session);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let rows = json_of(&answer);
    assert_eq!(
        rows["rows"],
        json!([{ "name": "eggs", "qty": 12 }, { "name": "milk", "qty": 2 }])
    );
    assert_eq!(rows["columns"], json!(["name", "qty"]));
    assert_eq!(rows["truncated"], false);
    let answer = canvas.get("/pages/shop/queries/items?min=5", session);
    assert_eq!(json_of(&answer)["row_count"], 1);
    // Bad input at the HTTP side: each a clear error.
    let cases = [
        ("/pages/nowhere", 404, "no page"),
        ("/pages/shop/queries/nope", 404, "has no query"),
        ("/pages/shop/queries/items", 400, ":min has no value"),
        (
            "/pages/shop/queries/items?min=1&extra=2",
            400,
            "`extra` is not a parameter",
        ),
        ("/pages/shop/queries/slow", 400, "time limit"),
    ];
    for (path, status, expected) in cases {
        let answer = canvas.get(path, session);
        assert_eq!(answer.status, status, "{path}: {}", answer.text());
        assert!(
            answer.text().contains(expected),
            "{path}: {}",
            answer.text()
        );
        if path.contains("/queries/") {
            assert!(json_of(&answer)["error"].is_string(), "{path}");
        }
    }

    // Public: served without a session, in an opaque origin.
    let answer = canvas.get("/pages/open/board.html", None);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.text(), "<h1>Public</h1>");
    let csp = answer.header("content-security-policy").unwrap();
    assert!(
        csp.starts_with("sandbox allow-scripts allow-downloads;"),
        "{csp}"
    );
    assert!(!csp.contains("allow-same-origin"), "{csp}");
    assert!(
        csp.contains(&format!(
            "connect-src http://{0}/pages/open/board.html/queries/ https://{0}/pages/open/board.html/queries/;",
            canvas.addr
        )),
        "{csp}"
    );
    let answer = canvas.get("/pages/open/board.html/queries/all", None);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
    assert_eq!(json_of(&answer)["row_count"], 3);
    // A private page's rows are never readable cross-origin.
    let answer = canvas.get("/pages/shop/queries/all", session);
    assert_eq!(answer.header("access-control-allow-origin"), None);

    // Markdown is rendered, its raw HTML shown as text.
    let answer = canvas.get("/pages/notes", None);
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let html = answer.text();
    assert!(html.contains("<h1>Notes</h1>"), "{html}");
    assert!(html.contains("&lt;script&gt;"), "{html}");
    // A file page is served from its file, with its type.
    let answer = canvas.get("/pages/logo.png", session);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("image/png"));
    assert_eq!(answer.body, PNG);

    // What a public page's origin (`null`, no cookie) gets from the rest.
    assert_eq!(
        canvas.ws_with(Some(&cookie), Some("null")).err(),
        Some(403),
        "an opaque origin's WebSocket"
    );
    let answer = canvas.request(
        "POST",
        "/upload?name=x.txt",
        Some(&cookie),
        &[("Origin", "null")],
        b"x",
    );
    assert_eq!(answer.status, 403, "an opaque origin's upload");
    assert_eq!(canvas.get("/files/secret.txt", None).status, 401);
    // The session cookie is one a sandboxed page never sends.
    let login = canvas.get(&format!("/login?token={}", canvas.token), None);
    let set_cookie = login.header("set-cookie").unwrap();
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    assert!(set_cookie.contains("SameSite=Strict"), "{set_cookie}");

    // Deleted: gone.
    tool(
        &h,
        "manage_pages",
        json!({ "action": "delete", "path": "shop" }),
    );
    assert_eq!(canvas.get("/pages/shop", session).status, 404);
}

#[test]
fn public_pages_are_rate_limited_per_address_and_sessions_are_not() {
    let (h, _daemon, canvas) = serve();
    tool(
        &h,
        "manage_pages",
        json!({ "action": "create", "path": "open", "content": "hi", "public": true,
                "queries": { "all": "SELECT name FROM item" } }),
    );
    for n in 0..60 {
        let path = if n % 2 == 0 {
            "/pages/open"
        } else {
            "/pages/open/queries/all"
        };
        assert_eq!(canvas.get(path, None).status, 200, "request {n}");
    }
    let answer = canvas.get("/pages/open", None);
    assert_eq!(answer.status, 429);
    let wait: u64 = answer.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(canvas.get("/pages/open/queries/all", None).status, 429);
    // The owner is never braked.
    let cookie = canvas.login();
    assert_eq!(canvas.get("/pages/open", Some(&cookie)).status, 200);
}
