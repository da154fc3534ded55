//! Lua tools and skills through the registry: the bundled examples, the
//! host API (json, kv, time, sleep, tool, http), the built-in script tools,
//! and argument validation.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use hearth::tools::ToolError;
use hearth_tests::Hearth;
use serde_json::{Value, json};

fn tool(name: &str, body: &str) -> String {
    format!(
        "return {{ name = {name:?}, description = \"test tool\", run = function(args, ctx)\n{body}\nend }}\n"
    )
}

#[test]
fn bundled_tools_and_skill_work_through_the_cli() {
    // convert_many and notes are examples, loaded once turned on.
    let h = Hearth::new("examples = true\n");
    let cases = [
        (
            "convert_units",
            json!({"value": 10, "from": "mi", "to": "km"}),
            json!({"kind": "length", "unit": "km", "value": 16.09344}),
        ),
        (
            "convert_units",
            json!({"value": 100, "from": "C", "to": "F"}),
            json!({"kind": "temperature", "unit": "F", "value": 212}),
        ),
        (
            "convert_many",
            json!({"values": [0, 100], "from": "C", "to": "K"}),
            json!({"unit": "K", "values": [273.15, 373.15]}),
        ),
        (
            "dates.days_between",
            json!({"from": "2024-02-28", "to": "2024-03-01"}),
            json!({"days": 2}),
        ),
        (
            "dates.shift",
            json!({"date": "2026-11-21", "days": 100}),
            json!({"date": "2027-03-01", "weekday": "Monday"}),
        ),
    ];
    for (name, args, expected) in cases {
        let got = h.cmd(&["tool", "call", name, &args.to_string()]).json();
        assert_eq!(got, expected, "{name} {args}");
    }
    // notes keeps state across processes, in SQLite.
    h.cmd(&[
        "tool",
        "call",
        "notes",
        r#"{"action":"add","text":"buy milk"}"#,
    ])
    .ok();
    let list = h
        .cmd(&["tool", "call", "notes", r#"{"action":"list"}"#])
        .json();
    assert_eq!(list["notes"][0]["text"], "buy milk");
    // Errors raised by a script name the file and line.
    let out = h
        .cmd(&[
            "tool",
            "call",
            "convert_units",
            r#"{"value":1,"from":"kg","to":"km"}"#,
        ])
        .fails();
    assert!(
        out.contains("tools/convert_units.lua:") && out.contains("cannot convert kg"),
        "{out}"
    );
}

#[test]
fn schema_violations_are_refused_before_run_with_the_field_named() {
    let h = Hearth::new("");
    // A tool that would record that it ran.
    h.write(
        "tools/strict.lua",
        r#"return { name = "strict", description = "x",
        parameters = { type = "object", properties = { n = { type = "integer", minimum = 1 } },
                       required = { "n" }, additionalProperties = false },
        run = function(args) hearth.kv.set("ran", true) return args.n end }"#,
    );
    let rt = h.runtime();
    for (args, field) in [
        (json!({}), "args.n: required"),
        (json!({"n": "1"}), "args.n: expected integer"),
        (json!({"n": 0}), "args.n: 0 is less than the minimum"),
        (json!({"n": 1, "m": 2}), "args.m: unknown field"),
    ] {
        let err = rt.tools.call("strict", args).unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        assert!(err.to_string().contains(field), "{err}");
    }
    let ran: i64 = h
        .db()
        .query_row("SELECT COUNT(*) FROM kv WHERE key = 'ran'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(ran, 0, "run must not have been called");
    assert_eq!(rt.tools.call("strict", json!({"n": 3})).unwrap(), json!(3));
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn json_has_a_clear_story_for_null_and_empty_arrays() {
    let h = Hearth::new("");
    h.write(
        "tools/shapes.lua",
        &tool(
            "shapes",
            r#"
        local decoded = hearth.json.decode('{"list":[],"none":null,"obj":{}}')
        return {
            null = hearth.json.null,
            empty_array = hearth.json.array(),
            empty_object = {},
            roundtrip = hearth.json.encode(decoded),
            none_is_null = decoded.none == hearth.json.null,
            args_null = args.x == hearth.json.null,
        }"#,
        ),
    );
    let rt = h.runtime();
    let got = rt.tools.call("shapes", json!({"x": null})).unwrap();
    assert_eq!(
        got,
        json!({
            "null": null, "empty_array": [], "empty_object": {},
            "roundtrip": r#"{"list":[],"none":null,"obj":{}}"#,
            "none_is_null": true, "args_null": true,
        })
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn kv_is_persistent_and_namespaced_per_script_and_per_skill() {
    let h = Hearth::new("");
    let setter = |name: &str| {
        tool(
            name,
            "if args.set then hearth.kv.set('k', args.set) end return hearth.kv.get('k')",
        )
    };
    h.write("tools/a.lua", &setter("a"));
    h.write("tools/b.lua", &setter("b"));
    h.write(
        "skills/pair/SKILL.md",
        "---\nname: pair\ndescription: two tools, one store\n---\nbody\n",
    );
    h.write("skills/pair/one.lua", &setter("one"));
    h.write("skills/pair/two.lua", &setter("two"));
    let rt = h.runtime();
    rt.tools.call("a", json!({"set": "from a"})).unwrap();
    rt.tools
        .call("pair.one", json!({"set": {"shared": [1, 2]}}))
        .unwrap();
    assert_eq!(rt.tools.call("b", json!({})).unwrap(), Value::Null);
    assert_eq!(rt.tools.call("a", json!({})).unwrap(), json!("from a"));
    assert_eq!(
        rt.tools.call("pair.two", json!({})).unwrap(),
        json!({"shared": [1, 2]})
    );
    rt.stop(Duration::from_secs(5)).unwrap();
    // Still there after a restart.
    let rt = h.runtime();
    assert_eq!(rt.tools.call("a", json!({})).unwrap(), json!("from a"));
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn time_log_and_print_work_and_stdout_stays_clean() {
    let h = Hearth::new("");
    h.write("tools/clock.lua", &tool("clock", r#"
        print("printed", 1, { a = 1 })
        hearth.log("logged at warn", "warn")
        return { year = hearth.time.format("%Y", 0), iso = hearth.time.iso(86400), recent = hearth.now() > 1.7e9 }"#));
    let run = h.cmd(&["--log-level", "info", "tool", "call", "clock"]);
    assert_eq!(
        run.json(),
        json!({"year": "1970", "iso": "1970-01-02T00:00:00Z", "recent": true})
    );
    assert!(
        run.stderr.contains("printed\t1\t{\"a\":1}"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("logged at warn"), "{}", run.stderr);
}

#[test]
fn sleep_blocks_only_its_own_call() {
    let h = Hearth::new("");
    h.write(
        "tools/nap.lua",
        &tool("nap", "hearth.sleep(args.s) return 'rested'"),
    );
    let rt = h.runtime();
    let sleeper = {
        let tools = std::sync::Arc::clone(&rt.tools);
        std::thread::spawn(move || tools.call("nap", json!({"s": 1.5})))
    };
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let converted = rt
        .tools
        .call(
            "convert_units",
            json!({"value": 1, "from": "km", "to": "m"}),
        )
        .unwrap();
    assert_eq!(converted["value"], 1000);
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "blocked for {:?}",
        started.elapsed()
    );
    assert_eq!(sleeper.join().unwrap().unwrap(), json!("rested"));
    // Sleeping past the deadline ends at the deadline.
    let err = rt
        .tools
        .call("nap", json!({"s": 60}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("deadline"), "{err}");
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn tool_calls_from_lua_go_through_the_registry_and_are_bounded() {
    // The relay calls echo, an example plugin's tool.
    let h = Hearth::new("examples = true\n");
    h.write(
        "tools/relay.lua",
        &tool("relay", "return hearth.tool(args.name, args.args)"),
    );
    h.write(
        "tools/loop.lua",
        &tool("loop", "return hearth.tool('loop', {})"),
    );
    let rt = h.runtime();
    let echo = rt
        .tools
        .call(
            "relay",
            json!({"name": "echo", "args": {"text": "via lua"}}),
        )
        .unwrap();
    assert_eq!(echo, json!({"text": "via lua"}));
    let bad = rt
        .tools
        .call("relay", json!({"name": "echo", "args": {"text": 1}}))
        .unwrap_err()
        .to_string();
    assert!(bad.contains("args.text: expected string"), "{bad}");
    let deep = rt.tools.call("loop", json!({})).unwrap_err().to_string();
    assert!(deep.contains("nest deeper than"), "{deep}");
}

#[test]
fn write_script_validates_before_writing_and_loads_at_once() {
    let h = Hearth::new("");
    let rt = h.runtime();
    let write = |path: &str, source: &str| {
        rt.tools
            .call("write_script", json!({"path": path, "source": source}))
    };
    write(
        "tools/greet.lua",
        &tool("greet", "return 'hi ' .. args.who"),
    )
    .unwrap();
    assert_eq!(
        rt.tools.call("greet", json!({"who": "bob"})).unwrap(),
        json!("hi bob")
    );

    let refusals = [
        ("tools/greet.lua", "return {", "tools/greet.lua:1"),
        ("tools/greet.lua", "return 42", "must end with `return {"),
        (
            "tools/other.lua",
            &tool("greet", "return 1"),
            "already taken",
        ),
        ("../escape.lua", "return {}", "without `..`"),
        ("/etc/x.lua", "return {}", "relative"),
        ("tools/sub/x.lua", "return {}", "is not a script"),
        (
            "skills/s/SKILL.md",
            "---\nname: s\n---\n",
            "no `description`",
        ),
        (
            "skills/s/SKILL.md",
            "---\nname: t\ndescription: d\n---\n",
            "must match its folder",
        ),
        (
            "tools/read_file.lua",
            &tool("read_file", "return 1"),
            "already taken by a plugin or built-in",
        ),
    ];
    for (path, source, expected) in refusals {
        let err = write(path, source).unwrap_err().to_string();
        assert!(err.contains(expected), "{path}: {err}");
    }
    // The good version is untouched on disk and still answers.
    assert_eq!(
        rt.tools.call("greet", json!({"who": "amy"})).unwrap(),
        json!("hi amy")
    );
    assert!(
        std::fs::read_to_string(h.home().join("tools/greet.lua"))
            .unwrap()
            .contains("'hi '")
    );
    assert!(!h.home().join("tools/other.lua").exists());
    assert!(!h.home().join("tools/read_file.lua").exists());
    // A skill, written in two steps.
    write(
        "skills/weather/SKILL.md",
        "---\nname: weather\ndescription: Reads the sky.\n---\nLook up.",
    )
    .unwrap();
    write("skills/weather/sky.lua", &tool("sky", "return 'blue'")).unwrap();
    assert_eq!(
        rt.tools.call("weather.sky", json!({})).unwrap(),
        json!("blue")
    );
    let skill = rt
        .tools
        .call("read_skill", json!({"name": "weather"}))
        .unwrap();
    assert_eq!(skill["body"], "Look up.");
    assert_eq!(skill["tools"], json!(["weather.sky"]));
    let status = rt.tools.call("script_status", json!({})).unwrap();
    assert!(
        status["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "weather")
    );
}

#[test]
fn http_requests_obey_the_egress_rules() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in server.incoming().take(2) {
            let mut stream = stream.unwrap();
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap();
            let first = String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            let body = format!("you asked: {first}");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let fetch = tool(
        "fetch",
        "return hearth.http.request({ url = args.url, timeout_ms = args.timeout_ms })",
    );
    // Default: loopback, private and metadata addresses are refused.
    let h = Hearth::new("");
    h.write("tools/fetch.lua", &fetch);
    let rt = h.runtime();
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        "http://169.254.169.254/latest/meta-data/".into(),
        "http://10.0.0.1/".into(),
        "http://[::1]/".into(),
        "file:///etc/passwd".into(),
    ] {
        let err = rt
            .tools
            .call("fetch", json!({"url": url}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("may not reach it") || err.contains("only http and https"),
            "{url}: {err}"
        );
    }
    rt.stop(Duration::from_secs(5)).unwrap();
    // Allowed by config: the request goes through.
    let h = Hearth::new("[scripts.http]\nallow_private = true\n");
    h.write("tools/fetch.lua", &fetch);
    let rt = h.runtime();
    let got = rt
        .tools
        .call(
            "fetch",
            json!({"url": format!("http://127.0.0.1:{port}/hello")}),
        )
        .unwrap();
    assert_eq!(got["status"], 200);
    assert_eq!(got["body"], "you asked: GET /hello HTTP/1.1");
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn http_bodies_are_capped_and_silent_servers_time_out() {
    // One server sends 64 KiB; another accepts and never answers.
    let big = TcpListener::bind("127.0.0.1:0").unwrap();
    let big_port = big.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Some(Ok(mut stream)) = big.incoming().next() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "x".repeat(65_536);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(5));
        drop(held);
    });
    let h = Hearth::new("[scripts.http]\nallow_private = true\nmax_bytes = 1024\n");
    h.write(
        "tools/fetch.lua",
        &tool(
            "fetch",
            "return hearth.http.request({ url = args.url, timeout_ms = 300 })",
        ),
    );
    let rt = h.runtime();
    let err = rt
        .tools
        .call(
            "fetch",
            json!({"url": format!("http://127.0.0.1:{big_port}/")}),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("over 1024 bytes"), "{err}");
    let started = Instant::now();
    let err = rt
        .tools
        .call(
            "fetch",
            json!({"url": format!("http://127.0.0.1:{silent_port}/")}),
        )
        .unwrap_err()
        .to_string();
    assert!(err.to_lowercase().contains("timed out"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_tool_may_set_its_own_deadline_up_to_the_maximum() {
    let h = Hearth::new("[scripts]\ndeadline_ms = 300\nmax_deadline_ms = 600\n");
    let napper = |name: &str, deadline: u64| {
        format!(
            "return {{ name = {name:?}, description = \"x\", deadline_ms = {deadline}, run = function(args) hearth.sleep(args.s) return 'ok' end }}"
        )
    };
    h.write("tools/quick.lua", &napper("quick", 100));
    h.write("tools/greedy.lua", &napper("greedy", 100_000));
    let rt = h.runtime();
    let err = rt
        .tools
        .call("quick", json!({"s": 0.2}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("deadline of 100 ms"), "{err}");
    assert_eq!(
        rt.tools.call("greedy", json!({"s": 0.4})).unwrap(),
        json!("ok")
    );
    let err = rt
        .tools
        .call("greedy", json!({"s": 5}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("deadline of 600 ms"),
        "capped at the maximum: {err}"
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_worker_outlives_the_thread_that_started_it() {
    // PR_SET_PDEATHSIG follows the forking *thread*: workers must be forked
    // from a thread that lives as long as the daemon.
    let h = Hearth::new("");
    h.write(
        "tools/pid.lua",
        &tool("pid", "hearth.sleep(0.3) return 'done'"),
    );
    let rt = h.runtime();
    let tools = std::sync::Arc::clone(&rt.tools);
    let first = std::thread::spawn(move || tools.call("pid", json!({})))
        .join()
        .unwrap();
    assert_eq!(first.unwrap(), json!("done"));
    // The idle worker that thread started is reused here, and still alive.
    assert_eq!(rt.tools.call("pid", json!({})).unwrap(), json!("done"));
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_skill_in_the_published_format_loads_unedited_and_an_unknown_key_is_a_note() {
    let h = Hearth::new("");
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills/release-notes");
    let dest = h.home().join("skills/release-notes");
    for file in [
        "SKILL.md",
        "LICENSE.txt",
        "scripts/collect.py",
        "reference/GROUPS.md",
    ] {
        std::fs::create_dir_all(dest.join(file).parent().unwrap()).unwrap();
        std::fs::copy(fixture.join(file), dest.join(file)).unwrap();
    }
    let rt = h.runtime();
    let skill = rt
        .tools
        .call("read_skill", json!({"name": "release-notes"}))
        .unwrap();
    assert!(
        skill["description"]
            .as_str()
            .unwrap()
            .starts_with("Writes release notes from a git history: groups"),
        "{skill}"
    );
    assert_eq!(skill["license"], "Apache-2.0 (LICENSE.txt in this folder)");
    assert_eq!(skill["allowed_tools"], json!(["Bash", "Read", "Write"]));
    assert_eq!(
        skill["files"],
        json!(["LICENSE.txt", "reference/GROUPS.md", "scripts/collect.py"])
    );
    assert!(
        skill["body"]
            .as_str()
            .unwrap()
            .contains("scripts/collect.py <tag>")
    );
    let status = rt.tools.call("script_status", json!({})).unwrap();
    assert_eq!(status["errors"], json!([]), "{status}");
    let listed = status["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "release-notes")
        .expect("the skill is listed")
        .clone();
    let notes = listed["notes"].to_string();
    assert!(
        notes.contains("`x-publisher`") && notes.contains("ignored"),
        "{notes}"
    );
}

/// The scripts' first load runs after the daemon is ready, so a slow
/// script never holds up start-up; whoever asks for the tools during the
/// load waits for it, so nobody sees the scripts half loaded.
#[test]
fn the_daemon_is_ready_before_a_slow_script_has_loaded_and_callers_wait_for_it() {
    let h = Hearth::new("");
    h.write(
        "tools/slow.lua",
        "hearth.sleep(1.5)\n\
         return { name = 'slow', description = 'Loads slowly.', run = function() return 'ran' end }\n",
    );
    let daemon = h.daemon();
    let loaded = |l: &str| l.contains("\"message\":\"scripts loaded\"");
    assert!(
        !daemon.logs().iter().any(|l| loaded(l)),
        "ready came after the scripts' load:\n{}",
        daemon.logs().join("\n")
    );
    let listed = h.cmd(&["tools", "--json"]).json();
    assert!(listed.to_string().contains("\"slow\""), "{listed}");
    assert!(daemon.logs().iter().any(|l| loaded(l)));
    assert_eq!(h.cmd(&["tool", "call", "slow", "{}"]).json(), json!("ran"));
}

/// An idle daemon holds no Lua worker and no thread to retire one: the
/// thread runs while a worker lives and ends with the last.
#[test]
fn the_worker_reaper_runs_only_while_a_worker_lives() {
    let h = Hearth::new("[scripts]\nworker_idle_ms = 300\n");
    h.write("tools/quick.lua", &tool("quick", "return 'ok'"));
    let daemon = h.daemon();
    let threads = || {
        std::fs::read_dir(format!("/proc/{}/task", daemon.pid()))
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|name| name.starts_with("hearth-lua-reap"))
            .count()
    };
    let eventually_none = |what: &str| {
        let start = Instant::now();
        while threads() > 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // The scripts' first load retires its worker when it is done.
    h.cmd(&["tools"]).ok();
    eventually_none("a reaper after the first load");
    assert_eq!(h.cmd(&["tool", "call", "quick", "{}"]).json(), json!("ok"));
    assert_eq!(threads(), 1, "no reaper while a worker lives");
    eventually_none("the reaper outlived the last worker");
}
