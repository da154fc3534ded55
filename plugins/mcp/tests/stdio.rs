//! MCP servers as child processes on real pipes, driven through the
//! plugin's own API: tools listed under mapped names, calls answered,
//! errors, list changes, crashes and restarts, timeouts that do not hold
//! up other calls, stops, garbage on stdout, oversized results, both
//! protocol eras, and a server that speaks neither.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Fixture, alive, eventually, kill9, servers, stdio, text_of};
use hearth_sdk::Plugin;
use hearth_sdk::protocol::{PartState, Risk};
use serde_json::{Value, json};

#[test]
fn tools_are_offered_under_mapped_names_and_answer() {
    let mut server = stdio(&[]);
    server["risk"] = json!("write");
    server["tools"] = json!({"echo": {"risk": "read"}, "print_env": {"enabled": false}});
    let f = Fixture::new(servers(json!({ "s": server })));
    // No cache: the lazy server is started in the background to learn its
    // tools, and the host is told.
    f.wait_for_tool("mcp.s.echo");
    let names = f.tool_names();
    for expected in [
        "mcp.s.echo",
        "mcp.s.get_tiny_image",
        "mcp.s.add_tool",
        "mcp.s.hang",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    assert!(!names.iter().any(|n| n == "mcp.s.print_env"), "disabled");
    let tools = f.mcp().tools();
    let risk = |name: &str| tools.iter().find(|t| t.name == name).unwrap().risk;
    assert_eq!(risk("mcp.s.echo"), Risk::Read);
    assert_eq!(risk("mcp.s.fail"), Risk::Write);
    // The server's thread tells the host just after the plugin's own list
    // changes: on a loaded machine the call can come a moment later.
    eventually(Duration::from_secs(10), "the host's tool list", || {
        f.host.last_tool_set().as_ref() == Some(&names)
    });
    assert_eq!(
        f.host.last_tool_set().expect("tools.set was called"),
        names,
        "the host has the same list"
    );

    let answer = f.ok("mcp.s.echo", json!({"text": "hello"}));
    assert_eq!(text_of(&answer), "echo: hello");

    // A camelCase tool is called by its own name; its image is saved.
    let image = f.ok("mcp.s.get_tiny_image", json!({}));
    let path = image["image"]["path"].as_str().unwrap();
    assert!(Path::new(path).is_file(), "{image}");
    assert!(path.starts_with(f.host.home.path().join("mcp/s/media").to_str().unwrap()));
    assert_eq!(image["image"]["mime"], "image/png");

    let structured = f.ok("mcp.s.structured", json!({}));
    assert_eq!(structured["structured"], json!({"answer": 42}));

    let mixed = f.ok("mcp.s.mixed", json!({}));
    assert!(
        mixed["audio"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with(".wav"),
        "{mixed}"
    );
    assert_eq!(mixed["resources"][0]["uri"], "file:///srv/report.pdf");
    assert_eq!(mixed["resources"][1]["text"], "the memo");

    let status = f.status("s");
    assert_eq!(status.state, PartState::Up, "{status:?}");
    assert!(
        status
            .detail
            .starts_with("stdio, protocol 2025-11-25, pid "),
        "{}",
        status.detail
    );
    assert_eq!(status.tools, names.len());
}

#[test]
fn an_error_result_is_the_tools_error() {
    let f = Fixture::new(servers(json!({ "s": stdio(&[]) })));
    f.wait_for_tool("mcp.s.fail");
    assert_eq!(
        f.fails("mcp.s.fail", json!({"message": "disk full"})),
        "disk full"
    );
    // An unknown tool of ours is refused before the server is asked.
    assert!(f.fails("mcp.s.nope", json!({})).contains("no such tool"));
    assert!(f.fails("mcp.other.x", json!({})).contains("no tool"));
}

#[test]
fn a_new_tool_is_announced_to_the_host() {
    for era in ["legacy", "modern"] {
        let f = Fixture::new(servers(json!({ "s": stdio(&["--era", era]) })));
        f.wait_for_tool("mcp.s.add_tool");
        f.ok("mcp.s.add_tool", json!({"name": "brandNew"}));
        eventually(
            Duration::from_secs(10),
            "tools.set with the new tool",
            || {
                f.host
                    .last_tool_set()
                    .is_some_and(|names| names.iter().any(|n| n == "mcp.s.brand_new"))
            },
        );
        let answer = f.ok("mcp.s.brand_new", json!({"text": "hi"}));
        assert_eq!(text_of(&answer), "added tool brandNew: hi", "{era}");
    }
}

#[test]
fn a_killed_server_is_restarted_by_the_next_call() {
    let f = Fixture::new(servers(json!({ "s": stdio(&[]) })));
    f.wait_for_tool("mcp.s.pid");
    let before: u32 = text_of(&f.ok("mcp.s.pid", json!({}))).parse().unwrap();
    assert_eq!(f.mcp().server_pid("s"), Some(before));
    kill9(before);
    let down = f.wait_status("s", "down", |s| s.state == PartState::Down);
    assert!(
        down.detail
            .contains("was killed by signal 9 (SIGKILL); restarting on the next call"),
        "{}",
        down.detail
    );
    let after: u32 = text_of(&f.ok("mcp.s.pid", json!({}))).parse().unwrap();
    assert_ne!(before, after);
    assert!(alive(after));
    assert_eq!(f.status("s").state, PartState::Up);
}

#[test]
fn a_call_racing_its_servers_death_is_sent_at_most_once_and_the_next_is_answered() {
    let f = Fixture::new(servers(json!({ "s": stdio(&[]) })));
    f.wait_for_tool("mcp.s.pid");
    // Three times: five failures in a minute would be a crash loop.
    for _ in 0..3 {
        let before: u32 = text_of(&f.ok("mcp.s.pid", json!({}))).parse().unwrap();
        kill9(before);
        // Before the plugin has seen the server gone. A request that could
        // not be written is sent again to a new process; one written to
        // the dying process may have been read, so it is not sent twice:
        // the call says why it failed.
        match f
            .mcp()
            .call_tool("mcp.s.echo", json!({"text": "right away"}))
        {
            Ok(echo) => assert_eq!(text_of(&echo), "echo: right away"),
            Err(e) => assert!(
                e.to_string().contains("was killed by signal 9 (SIGKILL)"),
                "{e}"
            ),
        }
        let after: u32 = text_of(&f.ok("mcp.s.pid", json!({}))).parse().unwrap();
        assert_ne!(before, after);
    }
}

#[test]
fn a_crashing_server_says_why() {
    let f = Fixture::new(servers(json!({ "s": stdio(&["--crash-after", "1"]) })));
    f.wait_for_tool("mcp.s.echo");
    f.ok("mcp.s.echo", json!({"text": "once"}));
    let down = f.wait_status("s", "down", |s| s.state == PartState::Down);
    assert!(
        down.detail
            .contains("exited with status 1 (last stderr line: \"Error: crashing as asked\")"),
        "{}",
        down.detail
    );
    // Restarted at once, it answers again.
    assert_eq!(
        text_of(&f.ok("mcp.s.echo", json!({"text": "again"}))),
        "echo: again"
    );
}

#[test]
fn a_server_that_cannot_start_is_down_with_its_last_words() {
    let f = Fixture::new(servers(json!({ "s": stdio(&["--exit-at-start"]) })));
    let down = f.wait_status("s", "down", |s| s.state == PartState::Down);
    assert!(
        down.detail.contains("exited with status 1")
            && down.detail.contains("Error: cannot open database"),
        "{}",
        down.detail
    );
}

#[test]
fn a_hanging_call_times_out_while_other_calls_answer() {
    let mut slow = stdio(&[]);
    slow["timeout_s"] = json!(1);
    let f = Fixture::new(servers(json!({ "a": slow, "b": stdio(&[]) })));
    f.wait_for_tool("mcp.a.hang");
    f.wait_for_tool("mcp.b.echo");
    std::thread::scope(|s| {
        let hanging = s.spawn(|| {
            let started = Instant::now();
            (f.call("mcp.a.hang", json!({})), started.elapsed())
        });
        // While it hangs: another server, and the same one, answer.
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        assert_eq!(
            text_of(&f.ok("mcp.b.echo", json!({"text": "b"}))),
            "echo: b"
        );
        assert_eq!(
            text_of(&f.ok("mcp.a.echo", json!({"text": "a"}))),
            "echo: a"
        );
        assert!(started.elapsed() < Duration::from_millis(900));
        let (result, took) = hanging.join().unwrap();
        assert_eq!(
            result.unwrap_err(),
            "mcp.a.hang: server \"a\" did not answer within 1 s; the call was cancelled"
        );
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(3),
            "{took:?}"
        );
    });
    // The server was told: it lists the cancelled request.
    let cancelled: Vec<Value> =
        serde_json::from_str(text_of(&f.ok("mcp.a.cancelled", json!({})))).unwrap();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
}

#[test]
fn the_owner_stops_a_call_promptly() {
    let f = Fixture::new(servers(json!({ "s": stdio(&[]) })));
    f.wait_for_tool("mcp.s.hang");
    std::thread::scope(|s| {
        let call = s.spawn(|| f.call_as("mcp.s.hang", json!({}), "call-1"));
        eventually(Duration::from_secs(5), "the call to run", || {
            f.mcp().calls.running() == 1
        });
        std::thread::sleep(Duration::from_millis(50));
        let asked = Instant::now();
        assert!(f.mcp().cancel_call("call-1").unwrap());
        let error = call.join().unwrap().unwrap_err();
        assert!(
            asked.elapsed() < Duration::from_millis(500),
            "{:?}",
            asked.elapsed()
        );
        assert!(error.contains("stopped by the owner"), "{error}");
    });
    assert!(!f.mcp().cancel_call("call-1").unwrap(), "no longer running");
    let cancelled = f.ok("mcp.s.cancelled", json!({}));
    assert_ne!(text_of(&cancelled), "[]");
}

#[test]
fn a_missing_command_is_down_and_the_others_serve() {
    let f = Fixture::new(servers(json!({
        "gone": {"command": "hearth-no-such-mcp-server"},
        "ok": stdio(&[]),
    })));
    let down = f.wait_status("gone", "down", |s| s.state == PartState::Down);
    assert!(
        down.detail.starts_with(
            "down: cannot start \"hearth-no-such-mcp-server\": no such program on its PATH"
        ),
        "{}",
        down.detail
    );
    f.wait_for_tool("mcp.ok.echo");
    assert_eq!(
        text_of(&f.ok("mcp.ok.echo", json!({"text": "x"}))),
        "echo: x"
    );
}

#[test]
fn text_on_stdout_is_named_when_the_server_never_answers() {
    let mut garbage = stdio(&["--garbage", "only"]);
    garbage["startup_timeout_s"] = json!(2);
    let f = Fixture::new(servers(
        json!({ "g": garbage, "b": stdio(&["--garbage", "before"]) }),
    ));
    let down = f.wait_status("g", "down", |s| s.state == PartState::Down);
    assert!(
        down.detail.contains(
            "did not answer the handshake within 2 s; it printed non-protocol text on stdout \
             (\"Hello world\"); MCP servers must log to stderr"
        ),
        "{}",
        down.detail
    );
    // A banner before the protocol is logged, not fatal.
    f.wait_for_tool("mcp.b.echo");
    assert_eq!(
        text_of(&f.ok("mcp.b.echo", json!({"text": "x"}))),
        "echo: x"
    );
    let logs = f.host.logs.lock().unwrap();
    assert!(
        logs.iter()
            .any(|(_, target, m)| target == "mcp::b" && m.contains("\"Hello world\"")),
        "{logs:?}"
    );
}

#[test]
fn an_oversized_result_is_bounded_and_saved_whole() {
    let f = Fixture::new(servers(json!({ "s": stdio(&[]) })));
    f.wait_for_tool("mcp.s.big");
    let result = f.ok("mcp.s.big", json!({"bytes": 1_000_000}));
    assert_eq!(result["truncated"], true);
    let text = text_of(&result);
    assert!(text.len() < 300_000, "{} bytes", text.len());
    assert!(text.starts_with("HEAD") && text.ends_with("TAIL"));
    let log = result["log"].as_str().unwrap();
    assert!(log.starts_with(f.host.home.path().join("mcp/s/results").to_str().unwrap()));
    let whole: Value = serde_json::from_slice(&std::fs::read(log).unwrap()).unwrap();
    assert_eq!(
        whole["content"][0]["text"].as_str().unwrap().len(),
        1_000_000
    );
}

#[test]
fn the_newest_common_protocol_is_spoken() {
    let f = Fixture::new(servers(json!({
        "legacy": stdio(&["--era", "legacy"]),
        "modern": stdio(&["--era", "modern"]),
        "dual": stdio(&["--era", "dual", "--page-size", "4"]),
    })));
    for (name, protocol) in [
        ("legacy", "2025-11-25"),
        ("modern", "2026-07-28"),
        ("dual", "2026-07-28"),
    ] {
        f.wait_for_tool(&format!("mcp.{name}.echo"));
        let up = f.wait_status(name, "up", |s| s.state == PartState::Up);
        assert!(
            up.detail.contains(&format!("protocol {protocol}")),
            "{name}: {}",
            up.detail
        );
        let echo = f.ok(&format!("mcp.{name}.echo"), json!({"text": name}));
        assert_eq!(text_of(&echo), format!("echo: {name}"));
    }
    // Paginated: every page was read.
    assert_eq!(f.status("dual").tools, f.status("modern").tools);
}

#[test]
fn a_server_of_an_older_protocol_is_refused_with_both_lists() {
    let f = Fixture::new(servers(json!({ "old": stdio(&["--era", "old"]) })));
    let down = f.wait_status("old", "down", |s| s.state == PartState::Down);
    assert!(
        down.detail.starts_with(
            "down: speaks protocol 2024-11-05; hearth supports 2025-03-26, 2025-06-18, \
             2025-11-25, 2026-07-28"
        ),
        "{}",
        down.detail
    );
}

#[test]
fn server_requests_are_refused_and_pings_answered() {
    let f = Fixture::new(servers(json!({ "s": stdio(&[]) })));
    f.wait_for_tool("mcp.s.ask");
    for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
        let reply: Value =
            serde_json::from_str(text_of(&f.ok("mcp.s.ask", json!({"method": method})))).unwrap();
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
    }
    let pong: Value =
        serde_json::from_str(text_of(&f.ok("mcp.s.ask", json!({"method": "ping"})))).unwrap();
    assert_eq!(pong, json!({"result": {}}));
}

#[test]
fn shutdown_ends_every_server() {
    let mut f = Fixture::new(servers(json!({ "a": stdio(&[]), "b": stdio(&[]) })));
    f.wait_for_tool("mcp.a.pid");
    f.wait_for_tool("mcp.b.pid");
    let pids: Vec<u32> = ["a", "b"]
        .iter()
        .map(|n| f.mcp().server_pid(n).expect("running"))
        .collect();
    let started = Instant::now();
    f.shutdown();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    for pid in pids {
        assert!(!alive(pid), "{pid} outlived the shutdown");
    }
}

#[test]
fn an_eager_server_is_restarted_in_the_background() {
    let mut eager = stdio(&[]);
    eager["start"] = json!("eager");
    let f = Fixture::new(servers(json!({ "e": eager })));
    f.wait_status("e", "up", |s| s.state == PartState::Up);
    let before = f.mcp().server_pid("e").unwrap();
    kill9(before);
    // No call: it comes back on its own.
    eventually(Duration::from_secs(10), "a new process", || {
        f.mcp().server_pid("e").is_some_and(|pid| pid != before)
    });
    assert_eq!(f.status("e").state, PartState::Up);
}

#[test]
fn a_message_over_16_mib_breaks_the_connection_and_the_next_call_restarts() {
    let f = Fixture::new(servers(json!({ "s": stdio(&[]) })));
    f.wait_for_tool("mcp.s.big");
    let error = f.fails("mcp.s.big", json!({"bytes": 17 << 20}));
    assert_eq!(
        error,
        "mcp.s.big: the call failed: server \"s\" sent a message over 16 MiB on stdout, which \
         breaks the protocol"
    );
    assert_eq!(
        text_of(&f.ok("mcp.s.echo", json!({"text": "after"}))),
        "echo: after"
    );
}

#[test]
fn a_stderr_flood_is_logged_bounded() {
    let mut f = Fixture::new(servers(json!({ "s": stdio(&["--stderr-lines", "400"]) })));
    f.wait_for_tool("mcp.s.echo");
    f.shutdown();
    let logs = f.host.logs.lock().unwrap();
    let lines: Vec<&str> = logs
        .iter()
        .filter(|(_, target, _)| target == "mcp::s")
        .map(|(_, _, m)| m.as_str())
        .collect();
    let shown = lines.iter().filter(|m| m.starts_with("log line ")).count();
    assert!((1..=60).contains(&shown), "{shown} lines shown");
    assert!(
        lines
            .iter()
            .any(|m| m.ends_with("lines of stderr skipped)")),
        "{lines:?}"
    );
}

/// The "daemon" of the test below: a plugin with one server, whose pid it
/// prints, then waits to be killed. The server ignores the end of its
/// stdin, so only the parent-death signal can end it.
fn play_daemon() {
    let f = Fixture::new(servers(json!({ "s": stdio(&["--ignore-eof"]) })));
    f.wait_for_tool("mcp.s.pid");
    println!("SERVER_PID {}", f.mcp().server_pid("s").unwrap());
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn servers_die_with_the_daemon_even_on_kill_9() {
    if std::env::var_os("MCP_TEST_PLAY_DAEMON").is_some() {
        return play_daemon();
    }
    use std::io::{BufRead, BufReader};
    let mut daemon = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "servers_die_with_the_daemon_even_on_kill_9",
            "--nocapture",
        ])
        .env("MCP_TEST_PLAY_DAEMON", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(daemon.stdout.take().unwrap());
    let pid: u32 = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("SERVER_PID ").map(|p| p.parse().unwrap()))
        .expect("the daemon printed its server's pid");
    assert!(alive(pid));
    kill9(daemon.id());
    daemon.wait().unwrap();
    eventually(Duration::from_secs(5), "the server to die with it", || {
        !alive(pid)
    });
}

#[test]
fn a_call_to_a_server_that_broke_fails_at_once_saying_why() {
    let home = tempfile::tempdir().unwrap();
    let switch = home.path().join("broken");
    let f = Fixture::new(servers(json!({
        "s": stdio(&["--exit-if-exists", switch.to_str().unwrap()])
    })));
    f.wait_for_tool("mcp.s.echo");
    let pid = f.mcp().server_pid("s").unwrap();
    std::fs::write(&switch, "").unwrap();
    kill9(pid);
    f.wait_status("s", "down", |s| s.state == PartState::Down);
    // One attempt, not retries until the call's minute is up.
    let started = Instant::now();
    let error = f.fails("mcp.s.echo", json!({"text": "x"}));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error.starts_with("mcp.s.echo: server \"s\" is down: exited with status 1")
            && error.contains("Error: cannot open database"),
        "{error}"
    );
    // Mended, it serves again (after the backoff, which the call waits out).
    std::fs::remove_file(&switch).unwrap();
    assert_eq!(
        text_of(&f.ok("mcp.s.echo", json!({"text": "back"}))),
        "echo: back"
    );
}

#[test]
fn progress_is_shown_live_for_a_call_the_owner_watches() {
    for era in ["legacy", "modern"] {
        let f = Fixture::new(servers(json!({ "s": stdio(&["--era", era]) })));
        f.wait_for_tool("mcp.s.progress");
        let done = f
            .call_as("mcp.s.progress", json!({"steps": 3}), "call-7")
            .unwrap();
        assert_eq!(text_of(&done), "done");
        let shown: Vec<(String, String)> = f
            .host
            .outputs
            .lock()
            .unwrap()
            .iter()
            .map(|o| (o.call_id.clone(), o.text.clone()))
            .collect();
        assert_eq!(
            shown,
            [
                ("call-7".to_owned(), "step 1 (1/3)\n".to_owned()),
                ("call-7".to_owned(), "step 2 (2/3)\n".to_owned()),
                ("call-7".to_owned(), "step 3 (3/3)\n".to_owned()),
            ],
            "{era}"
        );
        // A call nobody watches asks for no progress.
        f.ok("mcp.s.progress", json!({"steps": 1}));
        assert_eq!(f.host.outputs.lock().unwrap().len(), 3);
    }
}
