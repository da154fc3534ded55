//! MCP servers over Streamable HTTP on 127.0.0.1, driven through the
//! plugin's own API: JSON and event-stream answers, both protocol eras,
//! tool list changes on the listening stream, an expired session, a
//! refused connection, a hanging call, and an older protocol.

mod common;

use std::time::{Duration, Instant};

use common::{Fixture, HttpServer, eventually, refused_url, servers, text_of};
use hearth_sdk::protocol::PartState;
use serde_json::{Value, json};

#[test]
fn both_eras_and_both_answer_kinds_work() {
    let cases = [
        (vec!["--era", "legacy"], "2025-11-25"),
        (vec!["--era", "legacy", "--sse"], "2025-11-25"),
        (vec!["--era", "modern"], "2026-07-28"),
        (vec!["--era", "modern", "--sse"], "2026-07-28"),
        (vec!["--era", "dual", "--sse"], "2026-07-28"),
    ];
    let started: Vec<HttpServer> = cases
        .iter()
        .map(|(args, _)| HttpServer::start(args))
        .collect();
    let mut table = serde_json::Map::new();
    for (i, server) in started.iter().enumerate() {
        table.insert(format!("h{i}"), server.config());
    }
    let f = Fixture::new(servers(Value::Object(table)));
    for (i, (args, protocol)) in cases.iter().enumerate() {
        let name = format!("h{i}");
        f.wait_for_tool(&format!("mcp.{name}.echo"));
        let up = f.wait_status(&name, "up", |s| s.state == PartState::Up);
        assert!(
            up.detail == format!("http {}, protocol {protocol}", started[i].url),
            "{args:?}: {}",
            up.detail
        );
        let echo = f.ok(&format!("mcp.{name}.echo"), json!({"text": "over http"}));
        assert_eq!(text_of(&echo), "echo: over http", "{args:?}");
        let image = f.ok(&format!("mcp.{name}.image"), json!({}));
        assert!(
            image["image"]["path"].as_str().is_some(),
            "{args:?}: {image}"
        );
        assert_eq!(
            f.fails(&format!("mcp.{name}.fail"), json!({})),
            "it failed, as asked",
            "{args:?}"
        );
    }
}

#[test]
fn a_new_tool_arrives_on_the_listening_stream() {
    for era in ["legacy", "modern"] {
        let server = HttpServer::start(&["--era", era, "--sse"]);
        let f = Fixture::new(servers(json!({ "h": server.config() })));
        f.wait_for_tool("mcp.h.add_tool");
        // Give the listening stream a moment to open: a change made before
        // it is open would not be announced (the server keeps no history).
        std::thread::sleep(Duration::from_millis(300));
        f.ok("mcp.h.add_tool", json!({"name": "late_comer"}));
        eventually(
            Duration::from_secs(10),
            &format!("{era}: the new tool"),
            || {
                f.host
                    .last_tool_set()
                    .is_some_and(|names| names.iter().any(|n| n == "mcp.h.late_comer"))
            },
        );
        let answer = f.ok("mcp.h.late_comer", json!({"text": "hi"}));
        assert_eq!(text_of(&answer), "added tool late_comer: hi", "{era}");
    }
}

#[test]
fn server_requests_on_an_event_stream_are_answered() {
    let server = HttpServer::start(&["--era", "legacy", "--sse"]);
    let f = Fixture::new(servers(json!({ "h": server.config() })));
    f.wait_for_tool("mcp.h.ask");
    let reply: Value =
        serde_json::from_str(text_of(&f.ok("mcp.h.ask", json!({"method": "roots/list"})))).unwrap();
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
}

#[test]
fn an_expired_session_is_renewed() {
    let server = HttpServer::start(&["--era", "legacy"]);
    let f = Fixture::new(servers(json!({ "h": server.config() })));
    f.wait_for_tool("mcp.h.expire_session");
    f.ok("mcp.h.expire_session", json!({}));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        text_of(&f.ok("mcp.h.echo", json!({"text": "again"}))),
        "echo: again"
    );
}

#[test]
fn a_refused_connection_is_down_naming_the_url() {
    let url = refused_url();
    let f = Fixture::new(servers(json!({ "gone": {"url": url} })));
    let down = f.wait_status("gone", "down", |s| s.state == PartState::Down);
    assert_eq!(
        down.detail,
        format!("down: cannot connect to {url} (connection refused); restarting on the next call")
    );
}

#[test]
fn a_hanging_http_call_times_out_and_others_answer() {
    let server = HttpServer::start(&["--era", "legacy", "--sse"]);
    let mut config = server.config();
    config["timeout_s"] = json!(1);
    let f = Fixture::new(servers(json!({ "h": config })));
    f.wait_for_tool("mcp.h.hang");
    std::thread::scope(|s| {
        let hanging = s.spawn(|| f.call("mcp.h.hang", json!({})));
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        assert_eq!(
            text_of(&f.ok("mcp.h.echo", json!({"text": "x"}))),
            "echo: x"
        );
        assert!(started.elapsed() < Duration::from_millis(900));
        assert_eq!(
            hanging.join().unwrap().unwrap_err(),
            "mcp.h.hang: server \"h\" did not answer within 1 s; the call was cancelled"
        );
    });
    eventually(
        Duration::from_secs(5),
        "the server to hear of the cancel",
        || {
            f.call("mcp.h.cancelled", json!({}))
                .is_ok_and(|r| text_of(&r) != "[]")
        },
    );
}

#[test]
fn an_http_server_of_an_older_protocol_is_refused() {
    let server = HttpServer::start(&["--era", "old"]);
    let f = Fixture::new(servers(json!({ "old": server.config() })));
    let down = f.wait_status("old", "down", |s| s.state == PartState::Down);
    assert!(
        down.detail.contains(
            "speaks protocol 2024-11-05; hearth supports 2025-03-26, 2025-06-18, 2025-11-25, \
             2026-07-28"
        ),
        "{}",
        down.detail
    );
    assert!(f.mcp().tools().is_empty());
}

#[test]
fn progress_arrives_on_the_calls_own_stream() {
    for era in ["legacy", "modern"] {
        let server = HttpServer::start(&["--era", era]);
        let f = Fixture::new(servers(json!({ "h": server.config() })));
        f.wait_for_tool("mcp.h.progress");
        let done = f
            .call_as("mcp.h.progress", json!({"steps": 2}), "call-9")
            .unwrap();
        assert_eq!(text_of(&done), "done");
        let shown: Vec<String> = f
            .host
            .outputs
            .lock()
            .unwrap()
            .iter()
            .map(|o| o.text.clone())
            .collect();
        assert_eq!(shown, ["step 1 (1/2)\n", "step 2 (2/2)\n"], "{era}");
    }
}
