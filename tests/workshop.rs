//! The agent's workshop: its own database (`execute_sql`, Lua's
//! `hearth.db`), Lua libraries, and the versions of every script it writes.

use hearth_tests::{Hearth, call_err, call_ok};
use serde_json::{Value, json};

fn tool(name: &str, body: &str) -> String {
    format!(
        "return {{ name = {name:?}, description = \"test tool\", run = function(args, ctx)\n{body}\nend }}\n"
    )
}

fn sql(sql: &str, params: Value) -> Value {
    json!({ "sql": sql, "params": params })
}

#[test]
fn execute_sql_keeps_tables_in_agent_data_db() {
    let h = Hearth::new("");
    let rt = h.runtime();
    call_ok(
        &rt,
        "execute_sql",
        sql("CREATE TABLE item (name TEXT, qty INTEGER)", Value::Null),
    );
    let written = call_ok(
        &rt,
        "execute_sql",
        sql(
            "INSERT INTO item VALUES (?, ?), (?, ?)",
            json!(["milk", 2, "eggs", 12]),
        ),
    );
    assert_eq!(written["changes"], 2);
    let read = call_ok(
        &rt,
        "execute_sql",
        sql(
            "SELECT name, qty FROM item WHERE qty > :min ORDER BY name",
            json!({"min": 1}),
        ),
    );
    assert_eq!(read["columns"], json!(["name", "qty"]));
    assert_eq!(read["rows"], json!([["eggs", 12], ["milk", 2]]));
    assert_eq!(read["truncated"], false);
    // The rows are in agent_data.db, and hearth.db has no such table.
    let data = rusqlite::Connection::open(h.home().join("agent_data.db")).unwrap();
    let n: i64 = data
        .query_row("SELECT count(*) FROM item", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
    let in_store: i64 = h
        .db()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'item'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(in_store, 0);
}

#[test]
fn the_authorizer_refuses_every_way_to_hearth_db() {
    let h = Hearth::new("");
    let rt = h.runtime();
    let store = h.home().join("hearth.db");
    let cases = [
        (
            format!("ATTACH DATABASE '{}' AS h", store.display()),
            "ATTACH",
        ),
        // A path trick: the same file by a roundabout name, and as a URI.
        (
            format!(
                "ATTACH '{}/./../{}/hearth.db' AS h",
                h.home().display(),
                h.home().file_name().unwrap().to_string_lossy()
            ),
            "ATTACH",
        ),
        (
            format!("ATTACH 'file:{}?mode=ro' AS h", store.display()),
            "ATTACH",
        ),
        (
            format!("VACUUM INTO '{}'", h.home().join("stolen.db").display()),
            "VACUUM INTO",
        ),
        (
            "SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')".into(),
            "extensions cannot be loaded",
        ),
        (
            "PRAGMA writable_schema = ON".into(),
            "PRAGMA writable_schema",
        ),
        (
            "PRAGMA main.journal_mode = OFF".into(),
            "PRAGMA journal_mode",
        ),
        ("PRAGMA trusted_schema = 1".into(), "PRAGMA trusted_schema"),
    ];
    for (statement, expected) in cases {
        let error = call_err(&rt, "execute_sql", sql(&statement, Value::Null));
        assert!(
            error.contains("refused") && error.contains(expected),
            "{statement}: {error}"
        );
    }
    assert!(!h.home().join("stolen.db").exists());
    // Reading pragmas still work.
    call_ok(&rt, "execute_sql", sql("CREATE TABLE t (a)", Value::Null));
    let info = call_ok(&rt, "execute_sql", sql("PRAGMA table_info(t)", Value::Null));
    assert_eq!(info["rows"][0][1], "a");
}

#[test]
fn bad_sql_and_runaway_statements_get_clear_errors() {
    let h = Hearth::new("");
    let rt = h.runtime();
    let cases = [
        (sql("SELEC 1", Value::Null), "syntax error"),
        (
            sql("SELECT * FROM nowhere", Value::Null),
            "no such table: nowhere",
        ),
        (
            sql("SELECT 1; SELECT 2", Value::Null),
            "one statement at a time",
        ),
        (sql("SELECT ?", json!([])), "field `params`"),
        (sql("SELECT :a", json!({"b": 1})), "`b` is not a parameter"),
        (json!({"sql": "SELECT 1", "params": "x"}), "params"),
        (json!({"sql": ""}), "sql"),
        (
            json!({"sql": "INSERT INTO t VALUES (1)", "read_only": true}),
            "no such table",
        ),
    ];
    for (args, expected) in cases {
        let error = call_err(&rt, "execute_sql", args.clone());
        assert!(error.contains(expected), "{args}: {error}");
    }
    call_ok(&rt, "execute_sql", sql("CREATE TABLE t (a)", Value::Null));
    let error = call_err(
        &rt,
        "execute_sql",
        json!({"sql": "INSERT INTO t VALUES (1)", "read_only": true}),
    );
    assert!(error.contains("may only read"), "{error}");
    let runaway =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n";
    let started = std::time::Instant::now();
    let error = call_err(&rt, "execute_sql", sql(runaway, Value::Null));
    assert!(error.contains("time limit of 5000 ms"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // Big results are cut and say so.
    let many = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 2000) SELECT i FROM n";
    let cut = call_ok(&rt, "execute_sql", sql(many, Value::Null));
    assert_eq!(cut["row_count"], 500);
    assert_eq!(cut["truncated"], true);
}

#[test]
fn reads_are_read_tier_and_writes_write_tier() {
    // Development mode asks before every write; this process cannot ask,
    // so a write is refused while a read runs.
    let h = Hearth::new("").in_mode("development");
    let rt = h.runtime();
    let error = call_err(&rt, "execute_sql", sql("CREATE TABLE t (a)", Value::Null));
    assert!(error.contains("approval"), "{error}");
    let read = call_ok(&rt, "execute_sql", sql("SELECT 1 + 1 AS two", Value::Null));
    assert_eq!(read["rows"], json!([[2]]));
    let tiers: Vec<(String, String)> = {
        rt.tools.flush_audit();
        let db = h.db();
        let mut stmt = db
            .prepare("SELECT decision, args FROM audit WHERE tool = 'execute_sql' ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(tiers.len(), 2, "{tiers:?}");
    assert_eq!(tiers[0].0, "ask");
    assert_eq!(tiers[1].0, "allow");
}

#[test]
fn lua_tools_use_the_same_database_through_hearth_db() {
    let h = Hearth::new("");
    h.write(
        "tools/shopping.lua",
        &tool(
            "shopping",
            r#"hearth.db.exec("CREATE TABLE IF NOT EXISTS item (name TEXT, qty INTEGER)")
local w = hearth.db.exec("INSERT INTO item VALUES (:name, :qty)", { name = args.name, qty = args.qty })
local r = hearth.db.query("SELECT name, qty FROM item WHERE qty >= ? ORDER BY name", { 1 })
local ok, err = pcall(hearth.db.query, "DELETE FROM item")
local ok2, err2 = pcall(hearth.db.exec, "ATTACH 'x.db' AS x")
return { changes = w.changes, rows = r.rows, truncated = r.truncated, write_in_query = tostring(err), attach = tostring(err2) }"#,
        ),
    );
    let rt = h.runtime();
    let got = call_ok(&rt, "shopping", json!({"name": "milk", "qty": 2}));
    assert_eq!(got["changes"], 1);
    assert_eq!(got["rows"], json!([{"name": "milk", "qty": 2}]));
    assert_eq!(got["truncated"], false);
    assert!(
        got["write_in_query"]
            .as_str()
            .unwrap()
            .contains("may only read"),
        "{got}"
    );
    assert!(
        got["attach"].as_str().unwrap().contains("refused: ATTACH"),
        "{got}"
    );
    // The model's tool sees what the script wrote.
    let read = call_ok(
        &rt,
        "execute_sql",
        sql("SELECT count(*) FROM item", Value::Null),
    );
    assert_eq!(read["rows"], json!([[1]]));
}
