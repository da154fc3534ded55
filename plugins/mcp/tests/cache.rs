//! Lazy servers and the tool cache: a server's tools are learned once and
//! kept in the plugin's store, so a later start of the plugin knows them
//! without starting the server; a changed command drops them; a host
//! without a store still works.

mod common;

use std::sync::Arc;

use common::{Fixture, TestHost, servers, stdio, text_of};
use hearth_sdk::Plugin;
use hearth_sdk::protocol::PartState;
use serde_json::json;

#[test]
fn a_cached_server_stays_idle_until_its_first_call() {
    let host = TestHost::new();
    let config = servers(json!({ "s": stdio(&[]) }));
    {
        let first = Fixture::on(Arc::clone(&host), config.clone()).unwrap();
        first.wait_for_tool("mcp.s.echo");
        // The list is announced first and stored after: on a loaded
        // machine the store can come a moment later.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !host.kv.lock().unwrap().contains_key("tools:s") {
            assert!(
                std::time::Instant::now() < deadline,
                "the tools were never stored"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let second = Fixture::on(Arc::clone(&host), config).unwrap();
    let described = second.mcp().describe();
    assert!(
        described.tools.iter().any(|t| t.name == "mcp.s.echo"),
        "known from the cache at once"
    );
    assert!(described.channel.is_none());
    let idle = second.status("s");
    assert_eq!(idle.state, PartState::Idle, "{idle:?}");
    assert_eq!(
        idle.detail,
        format!("stdio; starts on first use ({} tools cached)", idle.tools)
    );
    assert_eq!(second.mcp().server_pid("s"), None, "not started");
    // The first call starts it.
    assert_eq!(
        text_of(&second.ok("mcp.s.echo", json!({"text": "hi"}))),
        "echo: hi"
    );
    assert_eq!(second.status("s").state, PartState::Up);
}

#[test]
fn a_changed_command_drops_the_cache() {
    let host = TestHost::new();
    {
        let first = Fixture::on(Arc::clone(&host), servers(json!({ "s": stdio(&[]) }))).unwrap();
        first.wait_for_tool("mcp.s.echo");
    }
    // Other arguments: another server, perhaps with other tools.
    let other = servers(json!({ "s": stdio(&["--page-size", "2"]) }));
    let second = Fixture::on(Arc::clone(&host), other).unwrap();
    assert!(
        second.mcp().describe().tools.is_empty(),
        "the cache is not trusted"
    );
    // Learned again, in the background.
    second.wait_for_tool("mcp.s.echo");
}

#[test]
fn an_eager_server_starts_at_once_even_when_cached() {
    let host = TestHost::new();
    let mut eager = stdio(&[]);
    eager["start"] = json!("eager");
    {
        let first = Fixture::on(Arc::clone(&host), servers(json!({ "s": eager.clone() }))).unwrap();
        first.wait_for_tool("mcp.s.echo");
    }
    let second = Fixture::on(Arc::clone(&host), servers(json!({ "s": eager }))).unwrap();
    second.wait_status("s", "up", |s| s.state == PartState::Up);
    assert!(second.mcp().server_pid("s").is_some());
}

#[test]
fn a_host_without_a_store_still_serves() {
    let f = Fixture::on(
        TestHost::with_kv(false),
        servers(json!({ "s": stdio(&[]) })),
    )
    .unwrap();
    f.wait_for_tool("mcp.s.echo");
    assert_eq!(
        text_of(&f.ok("mcp.s.echo", json!({"text": "x"}))),
        "echo: x"
    );
}

#[test]
fn a_disabled_server_is_off_and_offers_nothing() {
    let mut off = stdio(&[]);
    off["enabled"] = json!(false);
    let f = Fixture::new(servers(json!({ "off": off })));
    let status = f.status("off");
    assert_eq!(status.state, PartState::Off);
    assert!(f.mcp().tools().is_empty());
}

#[test]
fn a_bad_config_stops_the_plugin_with_the_key_named() {
    let bad = servers(json!({ "fs": {"command": "x", "risk": "rw"} }));
    let error = Fixture::on(TestHost::new(), bad).err().expect("refused");
    assert_eq!(
        error,
        "plugins.mcp.servers.fs.risk: expected \"read\", \"write\" or \"exec\", got \"rw\""
    );
}
