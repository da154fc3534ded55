//! What a server process inherits, and what an idle plugin costs. One test
//! in this binary, on purpose: it changes the process environment, which
//! is only safe while no other thread runs, and it counts threads.

mod common;

use common::{Fixture, servers, stdio, text_of};
use serde_json::{Value, json};

#[test]
fn servers_see_only_the_allow_list_and_an_idle_plugin_costs_no_thread() {
    // An idle plugin (no server) starts no thread.
    let threads = || {
        std::fs::read_dir("/proc/self/task")
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let before = threads();
    {
        let idle = Fixture::new(json!({}));
        assert!(idle.tool_names().is_empty());
        assert_eq!(threads(), before);
    }

    // SAFETY: this is the only test of its binary and no other thread of
    // it runs yet: nothing reads the environment concurrently.
    unsafe {
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-secret");
        std::env::set_var("HEARTH_TEST_PASSED", "passed-through");
        std::env::set_var("HEARTH_TEST_KEPT_OUT", "kept-out");
    }
    let mut server = stdio(&[]);
    server["pass_env"] = json!(["HEARTH_TEST_PASSED"]);
    server["env"] = json!({"LITERAL": "set", "PORT": 8080});
    let f = Fixture::new(servers(json!({ "s": server })));
    f.wait_for_tool("mcp.s.print_env");
    let env: Value = serde_json::from_str(text_of(&f.ok("mcp.s.print_env", json!({})))).unwrap();
    let env = env.as_object().unwrap();
    assert!(!env.contains_key("ANTHROPIC_API_KEY"), "{env:?}");
    assert!(!env.contains_key("HEARTH_TEST_KEPT_OUT"), "{env:?}");
    assert_eq!(env["HEARTH_TEST_PASSED"], "passed-through");
    assert_eq!(env["LITERAL"], "set");
    assert_eq!(env["PORT"], "8080");
    assert!(env.contains_key("PATH"));
    for name in env.keys() {
        assert!(
            hearth_mcp::INHERITED_ENV.contains(&name.as_str())
                || ["HEARTH_TEST_PASSED", "LITERAL", "PORT"].contains(&name.as_str()),
            "{name} should not reach the server"
        );
    }
}
