//! The policy through the real registry and the probe plugin: what each
//! mode allows, asks and denies; the guards file seeded and re-read; grants
//! for one exact call; and the audit of every call, secrets redacted.

use std::path::{Path, PathBuf};

use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::{Hearth, guard_corpus, plugin, probe};
use serde_json::{Value, json};

/// What the policy should do with a call.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Runs without asking.
    Runs,
    /// Asks (and, with no channel to ask on, is refused saying so).
    Asks,
    /// Refused outright in this mode.
    Denied,
}

/// A home with the probe, its exec log at `<home>/../exec`-like temp path.
fn probe_home(mode: &str, probe_settings: &str) -> (Hearth, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let exec_log = dir.path().join("exec");
    let h = Hearth::with_plugins(
        &[probe()],
        &format!("[plugins.probe]\nexec_log = {exec_log:?}\n{probe_settings}"),
    )
    .in_mode(mode);
    (h, exec_log, dir)
}

/// Calls `tool` and classifies the outcome; `ran` says whether the probe
/// logged it.
fn outcome(rt: &hearth::runtime::Runtime, tool: &str, args: Value) -> (Expect, String) {
    match rt.tools.call(tool, args) {
        Ok(result) => (Expect::Runs, result.to_string()),
        Err(e) => {
            let text = e.to_string();
            let kind = if text.contains("needs the owner's approval") {
                Expect::Asks
            } else {
                Expect::Denied
            };
            (kind, text)
        }
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn development_mode_asks_outside_the_roots_and_before_every_write_or_exec() {
    let (h, exec_log, _dir) = probe_home("development", "");
    let rt = h.runtime();
    let cases = [
        (
            "probe_write",
            json!({ "path": "/etc/hearth-x" }),
            Expect::Asks,
            "outside the writable roots",
        ),
        (
            "probe_write",
            json!({ "path": "notes/../../../../../../../../etc/x" }),
            Expect::Asks,
            "outside the writable roots",
        ),
        (
            "probe_write",
            json!({ "path": "~/.bashrc" }),
            Expect::Asks,
            "outside the writable roots",
        ),
        (
            "probe_write",
            json!({ "path": "notes/a.md" }),
            Expect::Asks,
            "every write tool",
        ),
        (
            "probe_write",
            json!({ "path": "/tmp/hearth-x" }),
            Expect::Asks,
            "every write tool",
        ),
        // Reading anywhere is fine: a command may run outside the roots,
        // confined to changing what lies inside them.
        (
            "probe_shell",
            json!({ "command": "ls", "cwd": "/etc" }),
            Expect::Asks,
            "every exec tool",
        ),
        (
            "probe_shell",
            json!({ "command": "ls", "cwd": "/" }),
            Expect::Asks,
            "every exec tool",
        ),
        (
            "probe_shell",
            json!({ "command": "ls" }),
            Expect::Asks,
            "every exec tool",
        ),
        (
            "probe_shell",
            json!({ "command": "rm -rf /" }),
            Expect::Asks,
            "recursive",
        ),
        (
            "probe_exec",
            json!({ "marker": "m" }),
            Expect::Asks,
            "every exec tool",
        ),
        (
            "probe_host",
            json!({ "service": "host.info" }),
            Expect::Runs,
            "",
        ),
    ];
    for (tool, args, expected, says) in cases {
        let (got, text) = outcome(&rt, tool, args.clone());
        assert_eq!(got, expected, "{tool} {args}: {text}");
        assert!(text.contains(says), "{tool} {args}: {text}");
    }
    assert!(lines(&exec_log).is_empty(), "nothing asked or denied ran");
    rt.stop(std::time::Duration::from_secs(5)).unwrap();
}

#[test]
fn production_mode_asks_only_for_guarded_actions() {
    let (h, exec_log, _dir) = probe_home("production", "");
    let rt = h.runtime();
    let cases = [
        ("probe_shell", json!({ "command": "ls -la" }), Expect::Runs),
        (
            "probe_shell",
            json!({ "command": "git status", "cwd": "/" }),
            Expect::Runs,
        ),
        (
            "probe_shell",
            json!({ "command": "rm -rf ~/x" }),
            Expect::Asks,
        ),
        (
            "probe_shell",
            json!({ "command": "r''m -rf /" }),
            Expect::Asks,
        ),
        // What the guard cannot see into runs, confined by the kernel.
        (
            "probe_shell",
            json!({ "command": "echo $(id)" }),
            Expect::Runs,
        ),
        ("probe_write", json!({ "path": "/etc/hosts" }), Expect::Asks),
        (
            "probe_write",
            json!({ "path": "~/.ssh/authorized_keys" }),
            Expect::Asks,
        ),
        (
            "probe_write",
            json!({ "path": "config/guards.toml" }),
            Expect::Asks,
        ),
        ("probe_write", json!({ "path": "notes/a.md" }), Expect::Runs),
        ("probe_exec", json!({ "marker": "m" }), Expect::Runs),
        // The command's `env` argument is judged as the line's own
        // `export`s are.
        (
            "probe_shell",
            json!({ "command": "ls", "env": { "LD_PRELOAD": "/tmp/evil.so" } }),
            Expect::Runs,
        ),
        (
            "probe_shell",
            json!({ "command": "perl x.pl", "env": { "PERL5OPT": "-Mx" } }),
            Expect::Runs,
        ),
        (
            "probe_shell",
            json!({ "command": "git commit", "env": { "GIT_EDITOR": "sh -c x" } }),
            Expect::Runs,
        ),
        (
            "probe_shell",
            json!({ "command": "ls", "env": { "PATH": 1 } }),
            Expect::Asks,
        ),
        (
            "probe_shell",
            json!({ "command": "sort x", "env": { "LANG": "C" } }),
            Expect::Runs,
        ),
    ];
    for (tool, args, expected) in cases {
        let (got, text) = outcome(&rt, tool, args.clone());
        assert_eq!(got, expected, "{tool} {args}: {text}");
    }
    assert_eq!(
        lines(&exec_log),
        [
            "ls -la",
            "git status",
            "echo $(id)",
            "notes/a.md",
            "m",
            "ls",
            "perl x.pl",
            "git commit",
            "sort x"
        ],
        "exactly the allowed calls ran"
    );
    rt.stop(std::time::Duration::from_secs(5)).unwrap();
}

#[test]
fn the_guards_file_is_seeded_and_edits_apply_to_the_next_call() {
    let (h, exec_log, _dir) = probe_home("production", "");
    let rt = h.runtime();
    let file = h.home().join("config/guards.toml");
    let bundled = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/guards.toml"),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), bundled);

    let ls = || outcome(&rt, "probe_shell", json!({ "command": "ls" }));
    assert_eq!(ls().0, Expect::Runs);
    std::fs::write(
        &file,
        bundled.replacen("always = [", "always = [\"ls\", ", 1),
    )
    .unwrap();
    let (got, text) = ls();
    assert_eq!(got, Expect::Asks, "{text}");
    std::fs::write(&file, "always = [\n  \"ls\",\n  42,\n]\n").unwrap();
    let (got, text) = ls();
    assert_eq!(got, Expect::Asks, "an invalid file fails closed: {text}");
    assert!(text.contains("guards.toml is invalid"), "{text}");
    assert_eq!(lines(&exec_log), ["ls"]);
    rt.stop(std::time::Duration::from_secs(5)).unwrap();

    // At start, an invalid file is an error naming the file and the line.
    let run = h.cmd(&["tool", "call", "probe_host", r#"{"service":"host.info"}"#]);
    let error = run.fails();
    assert!(
        error.contains("guards.toml") && error.contains("line 3"),
        "{error}"
    );
}

#[test]
fn every_call_is_audited_with_secrets_redacted() {
    let (h, _exec_log, _dir) = probe_home("production", "");
    let rt = h.runtime();
    let calls = [
        json!({ "path": "notes/a.md", "token": "tok-1234567890" }),
        json!({ "path": "/etc/hosts" }),
    ];
    for args in calls {
        let _ = rt.tools.call("probe_write", args);
    }
    let _ = rt.tools.call(
        "probe_shell",
        json!({ "command": "API_KEY=abcdef123456 curl -H 'Authorization: Bearer zzzzzz' x" }),
    );
    let _ = rt.tools.call("probe_exec", json!({}));
    rt.stop(std::time::Duration::from_secs(5)).unwrap();

    let audit = h.cmd(&["audit", "--json"]).json();
    let rows = audit.as_array().unwrap();
    let summary: Vec<(String, String, String, String)> = rows
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_owned();
            (s("tool"), s("caller"), s("decision"), s("outcome"))
        })
        .collect();
    let row = |tool: &str, decision: &str, outcome: &str| {
        (
            tool.to_owned(),
            "local".to_owned(),
            decision.to_owned(),
            outcome.to_owned(),
        )
    };
    assert_eq!(
        summary,
        [
            row("probe_write", "allow", "ok"),
            row("probe_write", "ask", "refused"),
            row("probe_shell", "allow", "ok"),
            row("probe_exec", "invalid", "error"),
        ]
    );
    let all = audit.to_string();
    for secret in ["tok-1234567890", "abcdef123456", "zzzzzz"] {
        assert!(
            !all.contains(secret),
            "{secret} leaked into the audit: {all}"
        );
    }
    assert_eq!(rows[0]["args"]["token"], "[redacted]");
    assert!(
        rows[1]["reason"].as_str().unwrap().contains("/etc"),
        "{}",
        rows[1]
    );
    assert!(
        rows[3]["detail"].as_str().unwrap().contains("marker"),
        "{}",
        rows[3]
    );
    assert!(
        rows.iter()
            .all(|r| r["duration_ms"].as_f64().unwrap() >= 0.0)
    );

    let text = h.cmd(&["audit", "--tool", "probe_exec"]).ok().to_owned();
    assert!(
        text.contains("probe_exec") && !text.contains("probe_write"),
        "{text}"
    );
}

#[test]
fn an_always_grant_covers_one_exact_call_until_it_is_revoked() {
    let fake = FakeLlm::start();
    // Four chats: the same command twice, another command, the first again.
    for command in ["echo a", "echo a", "echo b", "echo a"] {
        fake.push(anthropic_tool_use(
            None,
            "t1",
            "probe_shell",
            &json!({ "command": command }),
        ));
        fake.push(anthropic_text("done"));
    }
    let dir = tempfile::tempdir().unwrap();
    let (events, exec_log) = (dir.path().join("events"), dir.path().join("exec"));
    let h = Hearth::with_plugins(
        &[probe()],
        &format!(
            "[plugins.probe]\nevents = {events:?}\nexec_log = {exec_log:?}\nconfirm = \"always\"\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n[owner.identities]\nprobe = [\"owner\"]\n",
            fake.url()
        ),
    )
    .in_mode("development");
    let cards = || {
        lines(&events)
            .iter()
            .filter(|l| l.contains("\"kind\":\"confirmation\""))
            .count()
    };
    let audit = {
        let _daemon = h.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        });
        h.chat("one").ok();
        assert_eq!(cards(), 1, "the first call asks");
        h.chat("two").ok();
        assert_eq!(cards(), 1, "the granted call runs without asking");
        h.chat("three").ok();
        assert_eq!(cards(), 2, "a different command asks again");

        let grants = h.cmd(&["approvals", "--json"]).json();
        let grants = grants.as_array().unwrap();
        assert_eq!(grants.len(), 2, "{grants:?}");
        let first = grants.iter().find(|g| g["command"] == "echo a").unwrap();
        assert_eq!(first["uses"], 1);
        let id = first["id"].to_string();
        assert!(h.cmd(&["approvals"]).ok().contains("echo a"));
        h.cmd(&["approvals", "revoke", &id]).ok();
        assert!(
            h.cmd(&["approvals", "revoke", &id])
                .fails()
                .contains("no active grant")
        );

        h.chat("four").ok();
        assert_eq!(cards(), 3, "a revoked grant asks again");
        // Asked of the running daemon, which commits its queued rows
        // first: the test's daemon is killed, not stopped, at the block's
        // end, and could take the last row with it.
        h.cmd(&["audit", "--json", "--tool", "probe_shell"]).json()
    };
    assert_eq!(lines(&exec_log), ["echo a", "echo a", "echo b", "echo a"]);
    let approvals: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["approval"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        approvals,
        [
            "approved always",
            "granted",
            "approved always",
            "approved always"
        ]
    );
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["caller"] == "agent 1")
    );
}

#[test]
fn a_patch_the_owner_approved_inside_the_roots_cannot_reach_outside_them() {
    let h = Hearth::with_plugins(&[plugin("fs")], "").in_mode("development");
    let outside = hearth_tests::outside_roots();
    let target = outside.path().join("x.txt");
    // The patch's root is inside the roots, so the owner approved a change
    // there; the file names inside it lead out, which only the plugin sees.
    let args = json!({ "patch": format!("--- /dev/null\n+++ {}\n@@ -0,0 +1 @@\n+hi\n", target.display()) });
    let rt = h.runtime();
    h.grant("apply_patch", &args);
    let error = rt.tools.call("apply_patch", args).unwrap_err().to_string();
    assert!(error.contains("outside the writable roots"), "{error}");
    assert!(!target.exists());
    // A write the owner approved outside the roots runs: that is what the
    // approval was for.
    let args = json!({ "path": target.display().to_string(), "content": "approved" });
    h.grant("write_file", &args);
    rt.tools.call("write_file", args).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "approved");
    rt.stop(std::time::Duration::from_secs(5)).unwrap();
}

#[test]
fn check_reports_the_mode_landlock_and_the_guards_file() {
    let (h, _exec_log, _dir) = probe_home("development", "");
    let out = h.cmd(&["check"]).ok().to_owned();
    assert!(out.contains("mode: development"), "{out}");
    let landlock = out
        .lines()
        .find_map(|l| l.strip_prefix("landlock: "))
        .unwrap_or_else(|| panic!("no landlock line in:\n{out}"));
    assert!(
        landlock.starts_with("available (ABI ") || landlock.starts_with("unavailable: "),
        "{landlock}"
    );
    assert!(out.contains("config/guards.toml"), "{out}");
}

#[test]
fn through_the_registry_in_production_every_guarded_form_asks_or_runs_confined_and_everyday_commands_run()
 {
    // A home outside /tmp, as a real one is: under /tmp, `$HEARTH_HOME/..`
    // would still be inside a root.
    let dir = tempfile::tempdir().unwrap();
    let exec_log = dir.path().join("exec");
    let parent = hearth_tests::outside_roots();
    let h = Hearth::with_plugins_in(
        parent.path(),
        &[probe()],
        &format!("[plugins.probe]\nexec_log = {exec_log:?}\n"),
    );
    let rt = h.runtime();
    // The corpora are written for an owner whose home is /home/owner: put
    // this run's homes in.
    let hearth_home = h.home().canonicalize().unwrap().display().to_string();
    let user_home = std::env::var("HOME").unwrap();
    let here = |lines: Vec<String>| -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                l.replace("/home/owner/.hearth", &hearth_home)
                    .replace("/home/owner", &user_home)
            })
            .collect()
    };
    let (harmless, guarded) = (
        here(guard_corpus("harmless.txt")),
        here(guard_corpus("ask.txt")),
    );
    for command in &harmless {
        let (got, text) = outcome(&rt, "probe_shell", json!({ "command": command }));
        assert_eq!(got, Expect::Runs, "{command}: {text}");
    }
    // Every guarded form asks, or (a spelling the guard cannot see into)
    // runs under the kernel's confinement: none runs unconfined.
    let mut ran_confined = Vec::new();
    for command in &guarded {
        let (got, text) = outcome(&rt, "probe_shell", json!({ "command": command }));
        if got == Expect::Runs {
            let result: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(result["floor"]["protect"][0], "/", "{command}: {text}");
            ran_confined.push(command.clone());
        } else {
            assert_eq!(got, Expect::Asks, "{command}: {text}");
        }
    }
    let ran = lines(&exec_log);
    assert_eq!(
        ran[..harmless.len()],
        harmless[..],
        "the everyday commands ran"
    );
    assert_eq!(ran[harmless.len()..], ran_confined[..]);
    rt.stop(std::time::Duration::from_secs(5)).unwrap();
}

#[test]
fn a_lua_tools_own_calls_pass_the_same_policy_and_audit() {
    let (h, exec_log, _dir) = probe_home("production", "");
    h.write(
        "tools/relay.lua",
        "return { name = \"relay\", description = \"test tool\", run = function(args, ctx)\n\
         return hearth.tool(args.name, args.args)\nend }\n",
    );
    let rt = h.runtime();
    let asked = json!({ "name": "probe_shell", "args": { "command": "rm -rf ~/x" } });
    let error = rt.tools.call("relay", asked).unwrap_err().to_string();
    assert!(error.contains("needs the owner's approval"), "{error}");
    let ran = json!({ "name": "probe_shell", "args": { "command": "ls" } });
    rt.tools.call("relay", ran).unwrap();
    rt.stop(std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(lines(&exec_log), ["ls"]);

    let audit = h.cmd(&["audit", "--json", "--tool", "probe_shell"]).json();
    let rows: Vec<(&str, &str)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["caller"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("local > lua relay", "refused"),
            ("local > lua relay", "ok")
        ]
    );
}

#[test]
fn an_explicit_request_to_run_outside_the_roots_asks_and_a_blank_one_is_no_request() {
    let h = Hearth::with_plugins(&[plugin("shell")], "");
    let rt = h.runtime();
    let cases = [
        (json!({ "command": "true" }), Expect::Runs),
        (
            json!({ "command": "true", "outside_roots": "to install a package for the owner" }),
            Expect::Asks,
        ),
        (
            json!({ "command": "true", "outside_roots": "  " }),
            Expect::Runs,
        ),
    ];
    for (args, expected) in cases {
        let (got, text) = outcome(&rt, "shell_exec", args.clone());
        assert_eq!(got, expected, "{args}: {text}");
        if expected == Expect::Asks {
            assert!(text.contains("outside the writable roots"), "{text}");
        }
    }
    rt.stop(std::time::Duration::from_secs(5)).unwrap();
}
