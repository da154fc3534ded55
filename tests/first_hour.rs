//! A newcomer's first hour: the answers the CLI gives are true and tidy.
//! A reader that closes the pipe early (`hearth tools | head`) ends the
//! command quietly, `--version` names the commit, the bundled config
//! finds the bundled scripts wherever it is copied, each script loads
//! once, and the listings' columns line up. One-shot commands use the
//! running daemon's config, list the tools only the daemon has, and `check`
//! says it reads the file. Mistakes in the config stop the start with the
//! file, line and key (a plugin's table, a misspelt plugin, a missing
//! script folder, an unset model key), a channel that cannot start shows as
//! failed with why, and each error is said once, in the owner's words.

use std::io::Read;
use std::process::Stdio;

use hearth_tests::Hearth;

/// The bundled config, as a newcomer runs it.
fn bundled_config() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../config/hearth.toml"
    ))
    .expect("read config/hearth.toml")
}

#[test]
fn a_closed_pipe_ends_a_listing_quietly() {
    let h = Hearth::new("");
    for args in [&["tools"][..], &["check"], &["plugins"], &["--help"]] {
        let mut child = h
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hearth");
        // The reader is gone before the command writes its first line.
        drop(child.stdout.take());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("piped")
            .read_to_string(&mut stderr)
            .expect("read stderr");
        let status = child.wait().expect("wait");
        assert!(
            status.success() && !stderr.contains("panicked"),
            "hearth {args:?} into a closed pipe: {status}, stderr: {stderr}"
        );
    }
}

#[test]
fn version_names_the_commit() {
    let out = Hearth::new("").cmd(&["--version"]).ok().to_owned();
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match commit {
        // The binary may be a commit behind a checkout with new commits
        // only if it was not rebuilt; the test suite always rebuilds.
        Some(commit) => assert!(out.contains(&format!("(commit {commit})")), "{out}"),
        None => assert!(out.contains("commit"), "{out}"),
    }
}

#[test]
fn the_bundled_config_copied_into_the_home_keeps_the_bundled_scripts() {
    // As a restore or a newcomer would: the bundled config, copied as is.
    let h = Hearth::exact(&bundled_config().replace("127.0.0.1:8080", "127.0.0.1:0"));
    let out = h.cmd(&["tools"]).ok().to_owned();
    assert!(
        out.contains("convert_units"),
        "convert_units missing:\n{out}"
    );
    // The Lua examples stay out of the tools unless turned on.
    for tool in ["convert_many", "notes"] {
        let listed = out
            .lines()
            .any(|l| l.split_whitespace().next() == Some(tool));
        assert!(!listed, "{tool} offered:\n{out}");
    }
}

#[test]
fn each_bundled_script_loads_once() {
    let h = Hearth::exact(&bundled_config().replace("127.0.0.1:8080", "127.0.0.1:0"));
    let daemon = h.daemon();
    let loaded: Vec<String> = daemon
        .logs()
        .into_iter()
        .filter(|l| l.contains("script loaded"))
        .collect();
    let mut files: Vec<&str> = loaded
        .iter()
        .filter_map(|l| l.split("\"file\":").nth(1))
        .collect();
    let all = files.len();
    files.sort_unstable();
    files.dedup();
    assert_eq!(
        all,
        files.len(),
        "a script loaded twice:\n{}",
        loaded.join("\n")
    );
    assert!(
        !daemon.logs().iter().any(|l| l.contains("Some(")),
        "a log field shows Rust's debug form"
    );
    // The start-up time in tenths of a millisecond, not 44.895891999999996.
    let ready = daemon
        .logs()
        .into_iter()
        .find(|l| l.contains("\"message\":\"ready\""))
        .unwrap();
    let ms = ready.split("\"startup_ms\":").nth(1).unwrap();
    let ms: String = ms
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    assert!(
        ms.split('.').nth(1).is_none_or(|tenths| tenths.len() <= 1),
        "{ready}"
    );
}

#[test]
fn version_columns_line_up() {
    let h = Hearth::new("");
    let out = h.cmd(&["identity", "log"]).ok().to_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() >= 2, "{out}");
    // "ver" is right-aligned in four columns, and so is each version.
    for line in &lines {
        assert_eq!(
            line.get(4..6),
            Some("  "),
            "misaligned row {line:?} in:\n{out}"
        );
    }
}

#[test]
fn one_shot_commands_use_the_config_the_daemon_runs_with() {
    let h = Hearth::new("");
    // The config lives outside the home, so only the daemon knows it.
    let elsewhere = tempfile::tempdir().unwrap();
    let config = elsewhere.path().join("mine.toml");
    std::fs::rename(h.config(), &config).unwrap();
    let _daemon = h.daemon_with_config(&config);
    let doctor = std::process::Command::new(hearth_tests::bin())
        .arg("doctor")
        .env("HEARTH_HOME", h.home())
        .env_remove("HEARTH_CONFIG")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        out.contains(&config.display().to_string()) && !out.contains("built-in defaults"),
        "doctor did not use the daemon's config:\n{out}"
    );
}

#[test]
fn the_tools_only_the_daemon_has_are_listed_and_explained_without_it() {
    let h = Hearth::new("");
    let out = h.cmd(&["tools"]).ok().to_owned();
    for tool in [
        "manage_schedule",
        "manage_contacts",
        "manage_agents",
        "manage_groups",
        "assign_mission",
        "send_message",
        "send_agent_message",
        "spawn_agent",
        "manage_agent_templates",
    ] {
        let row = out.lines().find(|l| l.trim_start().starts_with(tool));
        assert!(
            row.is_some_and(|r| r.contains("needs the daemon")),
            "{tool} not listed as needing the daemon:\n{out}"
        );
    }
    let call = h.cmd(&["tool", "call", "manage_schedule", r#"{"action":"list"}"#]);
    let error = call.fails();
    assert!(
        error.contains("only the running daemon provides") && !error.contains("did you mean"),
        "{error}"
    );
}

#[test]
fn check_says_it_reads_the_file_not_the_daemon() {
    let h = Hearth::new("[plugins.canvas]\nlisten = \"127.0.0.1:0\"\n");
    let _daemon = h.daemon();
    let out = h.cmd(&["check"]).ok().to_owned();
    assert!(!out.contains("the daemon is not running"), "{out}");
    assert!(out.contains("`hearth status` shows"), "{out}");
}

#[test]
fn mistakes_in_a_plugin_table_stop_the_start_naming_file_line_and_key() {
    let cases: [(&str, &[&str]); 6] = [
        (
            "[plugins.telegram]\ntoken = \"1:abc\"\nallowed_chat_id = [1]\n",
            &[
                "line 3",
                "unknown key `allowed_chat_id`",
                "did you mean `allowed_chat_ids`?",
            ],
        ),
        (
            "[plugins.canvas]\nlisten = 8080\n",
            &[
                "line 2",
                "[plugins.canvas]",
                "`listen`",
                "expected a string",
            ],
        ),
        (
            "[plugins.canvas]\nlisten = \"127.0.0.1:0\"\nlistenn = \"127.0.0.1:0\"\n",
            &[
                "line 3",
                "unknown field `listenn`",
                "did you mean `listen`?",
            ],
        ),
        (
            "mode = \"development\"\n\n[plugins.telegramm]\nbot_token_env = \"T\"\n",
            &["line 3", "did you mean [plugins.telegram]?"],
        ),
        (
            "[plugins]\nexe_dir = false\npaths = []\n[plugins.telegram]\ntoken = \"1:x\"\n",
            &["line 4", "a built-in plugin, but", "exe_dir = true"],
        ),
        (
            "[plugins.canvas]\nlisten = \"nowhere\"\n",
            &["line 2", "listen: \"nowhere\" is not an address"],
        ),
    ];
    for (config, expected) in cases {
        let h = Hearth::exact(config);
        let path = h.config().display().to_string();
        for command in [&["check"][..], &["run"]] {
            let out = h.cmd(command).fails();
            for needle in expected.iter().chain([&path.as_str()]) {
                assert!(
                    out.contains(needle),
                    "hearth {command:?} with {config:?}: {needle:?} missing from:\n{out}"
                );
            }
        }
    }
}

#[test]
fn a_channel_that_cannot_start_shows_as_failed_with_why() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let h = Hearth::new(&format!("[plugins.canvas]\nlisten = \"{address}\"\n"));
    let _daemon = h.daemon();
    let status = h.cmd(&["status"]).ok().to_owned();
    assert!(
        status.contains("canvas (failed: ") && status.contains("cannot listen on"),
        "{status}"
    );
}

#[test]
fn a_missing_script_folder_and_an_unset_model_key_fail_the_check() {
    let cases: [(&str, &[&str]); 2] = [
        (
            "[scripts]\nbundled_dir = \"no-such-folder\"\n",
            &["scripts.bundled_dir", "no-such-folder", "is not a folder"],
        ),
        (
            "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\napi_key_env = \"HEARTH_TEST_UNSET_KEY\"\n",
            &["check failed", "HEARTH_TEST_UNSET_KEY"],
        ),
    ];
    for (config, expected) in cases {
        let h = Hearth::new(config);
        let out = h
            .command(&["check"])
            .env_remove("HEARTH_TEST_UNSET_KEY")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{config}: check passed:\n{text}");
        for needle in expected {
            assert!(
                text.contains(needle),
                "{config}: {needle:?} missing:\n{text}"
            );
        }
    }
}

#[test]
fn errors_are_said_once_in_the_owners_words() {
    let h = Hearth::new("");
    let missing = h.home().join("nowhere.toml");
    let run = std::process::Command::new(hearth_tests::bin())
        .arg("--config")
        .arg(&missing)
        .arg("status")
        .env("HEARTH_HOME", h.home())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
    let cases: [(&[&str], &str); 2] = [
        (&["chat", "-m", " "], "the message after -m is empty"),
        (
            &["secret", "set", "bad name"],
            "not with an upper-case letter A-Z",
        ),
    ];
    for (args, expected) in cases {
        let out = h.cmd(args).fails();
        assert!(out.contains(expected), "hearth {args:?}: {out}");
    }
}

#[test]
fn an_mcp_tool_not_announced_yet_says_how_to_see_its_server() {
    let h = Hearth::new("");
    let out = h
        .cmd(&[
            "tool",
            "call",
            "mcp.notes.read_text_file",
            r#"{"path":"x"}"#,
        ])
        .fails();
    assert!(
        out.contains("MCP server \"notes\" has not announced it")
            && out.contains("hearth mcp list")
            && !out.contains("did you mean"),
        "{out}"
    );
}
