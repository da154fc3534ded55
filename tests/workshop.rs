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
local ok3, err3 = pcall(hearth.db.query, 42)
local ok4, err4 = pcall(hearth.db.query, "SELECT :a", { b = 1 })
return { changes = w.changes, rows = r.rows, truncated = r.truncated, write_in_query = tostring(err), attach = tostring(err2),
  not_text = tostring(err3), bad_param = tostring(err4) }"#,
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
    for (key, expected) in [
        ("not_text", "the SQL must be a string"),
        ("bad_param", "`b` is not a parameter"),
    ] {
        assert!(got[key].as_str().unwrap().contains(expected), "{got}");
    }
    // The model's tool sees what the script wrote.
    let read = call_ok(
        &rt,
        "execute_sql",
        sql("SELECT count(*) FROM item", Value::Null),
    );
    assert_eq!(read["rows"], json!([[1]]));
}

fn write_script(rt: &hearth::runtime::Runtime, path: &str, source: &str) -> Result<Value, String> {
    rt.tools
        .call("write_script", json!({ "path": path, "source": source }))
        .map_err(|e| e.to_string())
}

const GREET: &str = "local util = require('util')\n\
    return { name = 'greet', description = 'greets', run = function(args) return util.hello(args.who) end }\n";

#[test]
fn tools_require_libraries_that_reload_and_keep_their_last_good_version() {
    let h = Hearth::new("");
    h.write(
        "lib/util.lua",
        "local M = {}\nfunction M.hello(who) return 'hello ' .. who end\nreturn M\n",
    );
    h.write("tools/greet.lua", GREET);
    let rt = h.runtime();
    assert_eq!(call_ok(&rt, "greet", json!({"who": "sam"})), "hello sam");
    // An edit through write_script re-validates the tools that require it.
    write_script(
        &rt,
        "lib/util.lua",
        "local M = {}\nfunction M.hello(who) return 'hi ' .. who end\nreturn M\n",
    )
    .unwrap();
    assert_eq!(call_ok(&rt, "greet", json!({"who": "sam"})), "hi sam");
    // A broken library is refused with its file and line, and nothing
    // changes.
    let error = write_script(
        &rt,
        "lib/util.lua",
        "local M = {}\n\nfunction M.hello(\nreturn M\n",
    )
    .unwrap_err();
    assert!(error.contains("lib/util.lua:4:"), "{error}");
    assert_eq!(call_ok(&rt, "greet", json!({"who": "sam"})), "hi sam");
    // Saved broken by hand: the last good version keeps serving, and the
    // problem is on record with its file and line.
    std::fs::write(
        h.home().join("lib/util.lua"),
        "local M = {}\nerror('boom')\nreturn M\n",
    )
    .unwrap();
    let scripts = rt.tools.scripts().unwrap();
    scripts.reload_paths(&[h.home().join("lib/util.lua")]);
    let status = call_ok(&rt, "script_status", json!({}));
    assert!(
        status["errors"]
            .to_string()
            .contains("lib/util.lua:2: boom"),
        "{status}"
    );
    assert_eq!(call_ok(&rt, "greet", json!({"who": "sam"})), "hi sam");
    // A library may require another; each loads once per call.
    h.write("lib/base.lua", "return { n = 0 }\n");
    h.write(
        "lib/counter.lua",
        "local base = require('base')\nbase.n = base.n + 1\nreturn base\n",
    );
    h.write(
        "tools/count.lua",
        &tool("count", "local a = require('counter')\nlocal b = require('counter')\nreturn { same = a == b, n = require('base').n }"),
    );
    scripts.reload_paths(&[h.home().join("lib"), h.home().join("tools/count.lua")]);
    assert_eq!(
        call_ok(&rt, "count", json!({})),
        json!({"same": true, "n": 1})
    );
    // Each call starts fresh: no state leaks from one call to the next.
    assert_eq!(
        call_ok(&rt, "count", json!({})),
        json!({"same": true, "n": 1})
    );
}

#[test]
fn a_missing_library_and_a_cycle_are_clear_errors() {
    let h = Hearth::new("");
    h.write("lib/a.lua", "local b = require('b')\nreturn {}\n");
    h.write("lib/b.lua", "local a = require('a')\nreturn {}\n");
    h.write(
        "tools/missing.lua",
        &tool("missing", "local lib = require('nowhere')\nreturn lib"),
    );
    let rt = h.runtime();
    // a requires b, which requires a while a still loads: refused at load,
    // naming the chain and the line, so no call can loop.
    let status = call_ok(&rt, "script_status", json!({}));
    let errors = status["errors"].to_string();
    assert!(
        errors.contains("lib/b.lua:1: require cycle: a -> b -> a"),
        "{errors}"
    );
    let error = call_err(&rt, "missing", json!({}));
    assert!(
        error.contains("tools/missing.lua:2: require(\"nowhere\"): no library named"),
        "{error}"
    );
    // A top-level require of a missing library refuses the tool at save.
    let error = write_script(
        &rt,
        "tools/bad.lua",
        "local x = require('nope')\nreturn x\n",
    )
    .unwrap_err();
    assert!(
        error.contains("tools/bad.lua:1:") && error.contains("nope"),
        "{error}"
    );
    // Library names are checked like the other script paths.
    let error = write_script(&rt, "lib/Bad Name.lua", "return {}\n").unwrap_err();
    assert!(error.contains("is not a script"), "{error}");
}

fn answering(n: u32) -> String {
    format!("return {{ name = 'ver', description = 'v{n}', run = function() return {n} end }}\n")
}

#[test]
fn three_saves_and_a_rollback_make_four_versions_and_an_audit_row() {
    let h = Hearth::new("");
    let rt = h.runtime();
    for n in 1..=3 {
        let saved = write_script(&rt, "tools/ver.lua", &answering(n)).unwrap();
        assert_eq!(saved["version"], n);
    }
    assert_eq!(call_ok(&rt, "ver", json!({})), 3);
    let rolled = call_ok(&rt, "script_rollback", json!({"name": "ver", "version": 1}));
    assert_eq!(rolled["version"], 4);
    assert_eq!(call_ok(&rt, "ver", json!({})), 1);
    let history = call_ok(&rt, "script_history", json!({"name": "ver"}));
    assert_eq!(history["script"], "tools/ver.lua");
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 4, "{history}");
    assert_eq!(versions[3]["note"], "rollback to version 1");
    assert_eq!(versions[0]["hash"], versions[3]["hash"]);
    assert_eq!(versions[0]["author"], "local");
    rt.tools.flush_audit();
    let audited: i64 = h
        .db()
        .query_row(
            "SELECT count(*) FROM audit WHERE tool = 'script_rollback' AND outcome = 'ok'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(audited, 1);
    // Bad input names the field.
    for (args, expected) in [
        (json!({"name": "ver", "version": 9}), "has no version 9"),
        (
            json!({"name": "nothing", "version": 1}),
            "no tool, library or skill",
        ),
        (
            json!({"name": "tools/nothing.lua", "version": 1}),
            "no script at",
        ),
    ] {
        let error = call_err(&rt, "script_rollback", args.clone());
        assert!(error.contains(expected), "{args}: {error}");
    }
}

#[test]
fn edits_by_hand_are_versions_and_the_cli_rolls_back_through_the_daemon() {
    let h = Hearth::new("");
    let path = h.write("tools/ver.lua", &answering(1));
    let daemon = h.daemon();
    std::fs::write(&path, answering(2)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = h.cmd(&["scripts", "log", "ver", "--json"]).json();
        if log["versions"].as_array().map_or(0, Vec::len) == 2 {
            assert_eq!(log["versions"][1]["author"], "outside write_script");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the edit was not recorded: {log}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let table = h.cmd(&["scripts", "log", "ver"]).ok().to_owned();
    assert!(
        table.contains("saved by an editor or another tool"),
        "{table}"
    );
    let rolled = h.cmd(&["scripts", "rollback", "ver", "1"]).ok().to_owned();
    assert!(
        rolled.contains("restored version 1") && rolled.contains("as version 3"),
        "{rolled}"
    );
    assert_eq!(h.cmd(&["tool", "call", "ver", "{}"]).json(), 1);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), answering(1));
    let error = h.cmd(&["scripts", "rollback", "ver", "7"]).fails();
    assert!(error.contains("has no version 7"), "{error}");
    drop(daemon);
}

#[test]
fn a_bundled_library_serves_the_bundled_skill_and_cannot_be_shadowed() {
    // The bundled scripts of this tree, wherever the build put the binary.
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts");
    let h = Hearth::new(&format!(
        "[scripts]\nbundled_dir = {:?}\n",
        bundled.display().to_string()
    ));
    // The agent's own calendar would make every date day 0.
    h.write(
        "lib/calendar.lua",
        "return { parse = function() return 0 end }\n",
    );
    let rt = h.runtime();
    let days = call_ok(
        &rt,
        "dates.days_between",
        json!({"from": "2026-01-01", "to": "2026-03-01"}),
    );
    assert_eq!(days, json!({"days": 59}));
    let status = call_ok(&rt, "script_status", json!({}));
    let errors = status["errors"].to_string();
    assert!(
        errors.contains("library name calendar is already taken by"),
        "{errors}"
    );
    // A bad date is reported at the line of the tool that passed it.
    let error = call_err(
        &rt,
        "dates.days_between",
        json!({"from": "2026-02-30", "to": "2026-03-01"}),
    );
    assert!(
        error.contains("skills/dates/dates.lua:") && error.contains("not a real date"),
        "{error}"
    );
}
