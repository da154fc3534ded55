//! Tools that appear and disappear while the daemon runs: a plugin sets
//! its whole tool list (`tools.set`, as the MCP bridge does when a
//! server's list changes), the registry swaps its table, and a model sees
//! the new list from its next step, each dotted name in the wire form the
//! model APIs accept (`probe.dyn.hello` as `probe__dyn__hello`).

use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use, system_prompt};
use hearth_tests::{Hearth, probe};
use serde_json::{Value, json};

/// A tool spec for `tools.set`.
fn spec(name: &str) -> Value {
    json!({ "name": name, "description": format!("{name} (set at run time)"),
            "parameters": { "type": "object" }, "risk": "read" })
}

/// Arguments for `probe_host` that set the probe's tools to `names`
/// (`probe_host` always stays, so the test can set them again).
fn set_tools(names: &[&str]) -> Value {
    let mut tools = vec![spec("probe_host")];
    tools.extend(names.iter().map(|n| spec(n)));
    json!({ "service": "tools.set", "request": { "tools": tools } })
}

fn names(listed: &Value) -> Vec<String> {
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["spec"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn sent_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_plugin_sets_its_tools_and_the_model_sees_them_from_the_next_step() {
    let fake = FakeLlm::start();
    let h = Hearth::with_plugins(
        &[probe()],
        &format!(
            "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\nretry_base_ms = 10\nmax_retries = 0\n",
            fake.url()
        ),
    );
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });

    // Through the daemon: its registry changes, not a one-shot's.
    let set = set_tools(&["probe.dyn.hello"]).to_string();
    let answer = h.cmd(&["tool", "call", "probe_host", &set]).json();
    assert_eq!(answer["answer"]["skipped"], json!([]), "{answer}");
    let listed = names(&h.cmd(&["tools", "--json"]).json());
    assert!(listed.contains(&"probe.dyn.hello".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"probe_exec".to_owned()), "{listed:?}");
    let called = h
        .cmd(&["tool", "call", "probe.dyn.hello", r#"{"n":1}"#])
        .json();
    assert_eq!(
        called,
        json!({ "dynamic": "probe.dyn.hello", "args": { "n": 1 } })
    );

    // The model calls it by its wire name; in the same turn it sets a new
    // list, which its next step is sent.
    fake.push(anthropic_tool_use(
        None,
        "t1",
        "probe__dyn__hello",
        &json!({"n": 2}),
    ));
    fake.push(anthropic_tool_use(
        None,
        "t2",
        "probe_host",
        &set_tools(&["probe.dyn.bye"]),
    ));
    fake.push(anthropic_text("done"));
    assert_eq!(h.chat("use the new tools").ok().trim(), "done");

    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let first = sent_tools(&requests[0].body);
    assert!(first.contains(&"probe__dyn__hello".to_owned()), "{first:?}");
    assert!(!first.iter().any(|n| n.contains('.')), "{first:?}");
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains(r#"\"dynamic\":\"probe.dyn.hello\""#),
        "{}",
        requests[1].body["messages"]
    );
    let last = sent_tools(&requests[2].body);
    assert!(last.contains(&"probe__dyn__bye".to_owned()), "{last:?}");
    assert!(!last.contains(&"probe__dyn__hello".to_owned()), "{last:?}");
    // One description per tool: the tools are not listed again in the
    // system prompt.
    let prompt = system_prompt(&requests[2].body);
    assert!(!prompt.contains("probe__dyn__bye"), "{prompt}");

    // The audit names the registry's tool, not the wire form.
    let audited = h
        .cmd(&["audit", "--json", "--tool", "probe.dyn.hello"])
        .json();
    assert_eq!(audited.as_array().map(Vec::len), Some(2), "{audited}");
    let gone = h.cmd(&["tool", "call", "probe.dyn.hello", "{}"]).fails();
    assert!(gone.contains("unknown tool"), "{gone}");
}

#[test]
fn bad_tool_lists_are_refused_or_trimmed_with_reasons() {
    let h = Hearth::with_plugins(&[probe()], "");
    let _daemon = h.daemon();
    let call = |request: Value| {
        let args = json!({ "service": "tools.set", "request": request }).to_string();
        h.cmd(&["tool", "call", "probe_host", &args]).json()
    };
    let answer = call(json!({ "tools": [
        spec("probe_host"), spec("Bad Name"), spec("probe..x"), spec("probe.a__b"),
        spec("probe.ok"), spec("probe.ok"), spec("manage_knowledge"),
    ]}));
    let skipped = answer["answer"]["skipped"].to_string();
    for why in [
        "\\\"Bad Name\\\" is invalid",
        "\\\"probe..x\\\" is invalid",
        "cannot also hold `__`",
        "probe.ok is listed twice",
    ] {
        assert!(skipped.contains(why), "{why}: {skipped}");
    }
    // A built-in's name is kept by the built-in.
    let listed = h.cmd(&["tools", "--json"]).json();
    let knowledge = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["spec"]["name"] == "manage_knowledge")
        .unwrap();
    assert_eq!(knowledge["source"], "builtin");
    assert!(names(&listed).contains(&"probe.ok".to_owned()));

    for (request, error) in [
        (json!({}), "missing field `tools`"),
        (json!({ "tools": "no" }), "invalid type"),
        (json!({ "tools": [{ "name": "x" }] }), "missing field"),
        (
            json!({ "tools": (0..1001).map(|i| spec(&format!("probe.t{i}"))).collect::<Vec<_>>() }),
            "over the limit of 1000",
        ),
    ] {
        let answer = call(request);
        assert!(
            answer["error"].as_str().unwrap_or_default().contains(error),
            "{error}: {answer}"
        );
    }
    // Over 4 MiB (padded by the probe: too large for the control socket).
    let huge = json!({ "service": "tools.set", "request": { "tools": [] }, "pad_bytes": 5 << 20 });
    let answer = h
        .cmd(&["tool", "call", "probe_host", &huge.to_string()])
        .json();
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("over the 4194304-byte limit"),
        "{error:.200}"
    );
    // The daemon still serves the probe's tools.
    let still = h.cmd(&["tool", "call", "probe.ok", "{}"]).json();
    assert_eq!(still["dynamic"], "probe.ok");
}
