//! Loading plugins: the bundled Rust and C plugins work through the real
//! `.so` files, and every kind of bad plugin is refused with a message that
//! names the file and the fix, while the rest keep working.

use std::time::Duration;

use hearth::plugins::PluginState;
use hearth::tools::ToolError;
use hearth_tests::{Hearth, fixture, plugin, probe};
use serde_json::json;

#[test]
fn tool_calls_work_through_the_rust_and_the_c_plugin() {
    // The example plugins are found next to the binary, once turned on.
    let h = Hearth::new("examples = true\n");
    let echo = h.cmd(&["tool", "call", "echo", r#"{"text":"hi"}"#]).json();
    assert_eq!(echo, json!({ "text": "hi" }));
    let hello = h.cmd(&["tool", "call", "hello", r#"{"name":"x"}"#]).json();
    assert_eq!(hello, json!({ "greeting": "hello, x" }));
    // The C plugin copies escaped JSON through intact.
    let quoted = h
        .cmd(&["tool", "call", "hello", r#"{"name":"a \"b\" \u00e9"}"#])
        .json();
    assert_eq!(quoted, json!({ "greeting": "hello, a \"b\" é" }));
}

#[test]
fn bad_tool_calls_are_refused_with_the_field_named() {
    let h = Hearth::new("examples = true\n");
    let cases: [(&[&str], &str); 6] = [
        (
            &["tool", "call", "echo", "{}"],
            "args.text: required field is missing",
        ),
        (
            &["tool", "call", "echo", r#"{"text":5}"#],
            "args.text: expected string, found number",
        ),
        (
            &["tool", "call", "echo", r#"{"text":"a","x":1}"#],
            "args.x: unknown field",
        ),
        (&["tool", "call", "echo", "{not json"], "not valid JSON"),
        (&["tool", "call", "echo", "[1]"], "must be a JSON object"),
        (
            &["tool", "call", "ech", "{}"],
            "unknown tool \"ech\"; did you mean \"echo\"?",
        ),
    ];
    for (args, expected) in cases {
        let out = h.cmd(args).fails();
        assert!(
            out.contains(expected),
            "{args:?}: expected {expected:?} in:\n{out}"
        );
    }
}

#[test]
fn broken_plugins_are_refused_with_a_clear_reason_and_the_rest_keep_working() {
    let junk_dir = tempfile::tempdir().unwrap();
    let junk = junk_dir.path().join("libhearth_plugin_junk.so");
    std::fs::write(&junk, "this is not an ELF file\n").unwrap();
    let missing = junk_dir.path().join("libhearth_plugin_gone.so");
    let cases = [
        (
            fixture("abi_major2.so"),
            vec!["abi_major2.so", "ABI 2.0", "ABI 1.1", "rebuild the plugin"],
        ),
        (
            fixture("abi_minor_newer.so"),
            vec!["abi_minor_newer.so", "ABI 1.7", "ABI 1.1", "upgrade hearth"],
        ),
        (
            fixture("no_entry.so"),
            vec!["no_entry.so", "does not export `hearth_plugin_v1`"],
        ),
        (
            junk.clone(),
            vec![
                "libhearth_plugin_junk.so",
                "cannot load it as a shared library",
            ],
        ),
        (
            missing.clone(),
            vec!["libhearth_plugin_gone.so", "no such file"],
        ),
        (
            probe(),
            vec![
                "libhearth_test_probe.so",
                "plugin probe",
                "init failed: no token configured",
            ],
        ),
    ];
    for (bad, expected) in cases {
        let h = Hearth::with_plugins(
            &[plugin("echo"), bad.clone(), plugin("hello_c")],
            "[plugins.probe]\nfail_init = \"no token configured\"\n",
        );
        let listing = h.cmd(&["plugins", "--json"]).json();
        let rows = listing.as_array().unwrap();
        let failed: Vec<_> = rows.iter().filter(|r| r["state"] == "failed").collect();
        assert_eq!(failed.len(), 1, "{bad:?}: {listing:#}");
        let reason = failed[0]["reason"].as_str().unwrap();
        for needle in &expected {
            assert!(
                reason.contains(needle),
                "{bad:?}: {needle:?} not in {reason:?}"
            );
        }
        // The others loaded and answer.
        assert_eq!(rows.iter().filter(|r| r["state"] == "active").count(), 2);
        h.cmd(&["tool", "call", "hello", r#"{"name":"y"}"#]).ok();
        // `check` fails and says why.
        let check = h.cmd(&["check"]).fails();
        assert!(
            check.contains("check failed") && check.contains(expected[1]),
            "{check}"
        );
    }
}

#[test]
fn world_writable_plugin_files_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("libhearth_plugin_echo.so");
    std::fs::copy(plugin("echo"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o777)).unwrap();
    let h = Hearth::with_plugins(&[copy], "");
    let out = h.cmd(&["check"]).fails();
    assert!(out.contains("world-writable"), "{out}");
}

#[test]
fn a_panicking_tool_returns_an_error_and_only_its_plugin_is_disabled() {
    let h = Hearth::with_plugins(&[plugin("echo"), plugin("hello_c"), probe()], "");
    let rt = h.runtime();
    let err = rt.tools.call("echo_panic", json!({})).unwrap_err();
    assert!(matches!(err, ToolError::Provider { .. }), "{err}");
    assert!(err.to_string().contains("echo_panic was called"), "{err}");
    // The plugin that panicked is disabled, with the reason on record...
    let again = rt.tools.call("echo", json!({"text": "x"})).unwrap_err();
    assert!(
        again.to_string().contains("disabled after a crash"),
        "{again}"
    );
    let report = rt
        .plugins
        .reports()
        .into_iter()
        .find(|r| r.name.as_deref() == Some("echo"));
    assert!(matches!(
        report.unwrap().state,
        hearth::plugins::PluginState::Failed(_)
    ));
    // ...and every other plugin keeps answering.
    let hello = rt.tools.call("hello", json!({"name": "z"})).unwrap();
    assert_eq!(hello, json!({ "greeting": "hello, z" }));
    let info = rt
        .tools
        .call("probe_host", json!({"service": "host.info"}))
        .unwrap();
    assert_eq!(info["answer"]["abi_major"], 1);
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_disabled_plugin_is_listed_but_not_started() {
    let h = Hearth::with_plugins(
        &[plugin("echo"), plugin("hello_c")],
        "[plugins.echo]\nenabled = false\n",
    );
    let rows = h.cmd(&["plugins", "--json"]).json();
    assert_eq!(rows[0]["name"], "echo");
    assert_eq!(rows[0]["state"], "off");
    assert_eq!(rows[0]["reason"], "enabled = false in its config table");
    let out = h.cmd(&["tool", "call", "echo", r#"{"text":"a"}"#]).fails();
    assert!(out.contains("unknown tool"), "{out}");
}

#[test]
fn a_disabled_plugin_file_is_never_mapped() {
    // A copy under a name of its own, so that no other test in this process
    // can have mapped the same file.
    let dir = tempfile::tempdir().unwrap();
    let copies: Vec<_> = ["echo", "hello_c"]
        .iter()
        .map(|name| {
            let copy = dir.path().join(format!("libhearth_plugin_{name}.so"));
            std::fs::copy(plugin(name), &copy).unwrap();
            copy
        })
        .collect();
    let h = Hearth::with_plugins(
        &copies,
        "[plugins.echo]\nenabled = false\n[plugins.hello-c]\nenabled = false\n",
    );
    let rt = h.runtime();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for copy in &copies {
        assert!(
            !maps.contains(copy.to_str().unwrap()),
            "{} was mapped",
            copy.display()
        );
    }
    let states: Vec<_> = rt
        .plugins
        .reports()
        .into_iter()
        .map(|r| (r.name, r.state))
        .collect();
    assert_eq!(
        states,
        [
            (
                Some("echo".into()),
                PluginState::Off("enabled = false in its config table".into())
            ),
            (
                Some("hello_c".into()),
                PluginState::Off("enabled = false in its config table".into())
            ),
        ]
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn the_bundled_plugins_are_built_in_and_a_channel_without_settings_is_off() {
    let h = Hearth::new("[plugins]\nexe_dir = true\n[plugins.canvas]\nenabled = false\n");
    let rows = h.cmd(&["plugins", "--json"]).json();
    let state = |name: &str| {
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {rows:#}"));
        (
            row["state"].as_str().unwrap().to_owned(),
            row["path"].clone(),
        )
    };
    for name in ["fs", "shell", "web"] {
        assert_eq!(state(name).0, "active", "{name}");
        // The code is the binary's own: no twin library was opened.
        assert_eq!(
            state(name).1,
            hearth_tests::bin().to_str().unwrap(),
            "{name}"
        );
    }
    for name in ["canvas", "telegram", "signal"] {
        assert_eq!(state(name).0, "off", "{name}");
    }
    let listed = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .filter(|r| r["name"] == name)
            .count()
    };
    assert_eq!(
        listed("shell"),
        1,
        "the twin library beside the binary is not tried"
    );
    // The example plugins beside the binary are listed, off until the
    // config turns them on; then they load as files.
    assert_eq!(state("echo").0, "off");
    let h = Hearth::new("examples = true\n[plugins]\nexe_dir = true\n");
    let rows = h.cmd(&["plugins", "--json"]).json();
    let echo = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "echo")
        .unwrap_or_else(|| panic!("echo is not listed: {rows:#}"));
    assert_eq!(echo["state"], "active", "{echo}");
}

#[test]
fn tools_lists_every_tool_with_its_source() {
    let h = Hearth::with_plugins(&[plugin("echo"), plugin("hello_c")], "");
    let listing = h.cmd(&["tools", "--json"]).json();
    let tools = listing["tools"].as_array().unwrap();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["spec"]["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(find("hello")["source"], "plugin hello-c");
    assert_eq!(find("hello")["spec"]["risk"], "read");
    assert_eq!(find("echo_panic")["source"], "plugin echo");
    assert_eq!(find("write_script")["source"], "builtin");
    assert_eq!(find("write_script")["spec"]["risk"], "write");
    let convert = find("convert_units")["source"].as_str().unwrap().to_owned();
    assert!(
        convert.starts_with("lua ") && convert.ends_with("scripts/tools/convert_units.lua"),
        "{convert}"
    );
    assert_eq!(listing["script_errors"], serde_json::json!([]));
}
