//! Config errors: each names the file and the key or line, `hearth check`
//! exits non-zero, and `hearth run` refuses to start.

use hearth_tests::Hearth;

#[test]
fn bad_configs_are_refused_with_the_key_and_line() {
    let cases: [(&str, &[&str]); 36] = [
        ("colour = \"red\"\n", &["line 1", "colour"]),
        (
            "[llm]\nprovider = \"gpt\"\nmodel = \"m\"\n",
            &["line 2", "gpt"],
        ),
        ("[llm]\nprovider = \"openai\"\n", &["model"]),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \" \"\n",
            &["llm.model", "empty"],
        ),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"ftp://x\"\n",
            &["llm.base_url", "http://"],
        ),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\napi_key = \"sk\"\n",
            &["line 4", "api_key"],
        ),
        (
            "[agent]\nmax_steps = 0\n",
            &["agent.max_steps", "at least 1"],
        ),
        (
            "[agent]\nkeep_recent_messages = 100\n",
            &["agent.keep_recent_messages"],
        ),
        ("[owner]\nidentities = 5\n", &["line 2", "invalid type"]),
        (
            "[scripts]\nworkers = 0\n",
            &["scripts.workers", "at least 1"],
        ),
        ("[log]\nlevl = \"debug\"\n", &["line 2", "levl"]),
        (
            "[daemon]\nqueue_capacity = \"big\"\n",
            &["line 2", "invalid type"],
        ),
        ("[log\nlevel = \"info\"\n", &["line 1"]),
        ("mode = \"yolo\"\n", &["line 1", "yolo"]),
        ("[log]\nlevel = 3\n", &["line 2", "level = 3"]),
        (
            "[plugins]\ndirz = [\"x\"]\n",
            &["plugins.dirz", "unknown key"],
        ),
        (
            "[plugins.echo]\nrequired = \"yes\"\n",
            &["plugins.echo.required", "true or false"],
        ),
        (
            "[daemon]\nqueue_capacity = 0\n",
            &["daemon.queue_capacity", "at least 1"],
        ),
        ("home = \"a\"\nhome = \"b\"\n", &["line 2", "duplicate key"]),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\n[llm.cheap]\nmodle = \"x\"\n",
            &["line 5", "modle"],
        ),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\n[llm.cheap]\nmodel = \"\"\n",
            &["llm.cheap.model", "empty"],
        ),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\n[llm.cheap]\nmodel = \"c\"\ntimeout_ms = 5\n",
            &["llm.cheap.timeout_ms", "1000 to 600000"],
        ),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\n[llm.cheap]\nmodel = \"c\"\ninput_chars = 10\n",
            &["llm.cheap.input_chars", "1000 to 1000000"],
        ),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\n[llm.cheap]\nmodel = \"c\"\nbase_url = \"x\"\n",
            &["llm.cheap.base_url", "http://"],
        ),
        (
            "[groups]\nmax_steps = 0\n",
            &["groups.max_steps", "1 to 500"],
        ),
        (
            "[groups]\ndeliverable_timeout_ms = 10\n",
            &["groups.deliverable_timeout_ms", "1000"],
        ),
        ("[groups]\nauto_run = true\n", &["line 2", "auto_run"]),
        (
            "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\nthinking = 500\n",
            &["llm.thinking", "at least 1024"],
        ),
        (
            "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\nthinking = 8000\n",
            &["llm.thinking", "less than max_tokens (4096)"],
        ),
        (
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nthinking = 2048\n",
            &["llm.thinking", "only; leave it out"],
        ),
        (
            "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\nthinking = \"deep\"\n",
            &["llm.thinking", "is not a way of thinking"],
        ),
        (
            "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\nthinking_effort = \"low\"\n",
            &["llm.thinking_effort", "adaptive"],
        ),
        (
            "[memory.capture]\nquiet_seconds = 0\n",
            &["memory.capture.quiet_seconds", "1 to 604800"],
        ),
        (
            "[memory.capture]\nmax_per_conversation = 0\n",
            &["memory.capture.max_per_conversation", "enabled = false"],
        ),
        (
            "[memory.capture]\ncontacts = \"yes\"\n",
            &["line 2", "invalid type"],
        ),
        (
            "[memory.capture]\nquiet_minutes = 5\n",
            &["line 2", "quiet_minutes"],
        ),
    ];
    for (text, expected) in cases {
        let h = Hearth::exact(text);
        let out = h.cmd(&["check"]).fails();
        assert!(
            out.contains("hearth.toml"),
            "{text:?}: file not named in:\n{out}"
        );
        for needle in expected {
            assert!(out.contains(needle), "{text:?}: {needle:?} not in:\n{out}");
        }
        let run = h.cmd(&["run"]).fails();
        assert!(
            run.contains("invalid config"),
            "{text:?}: run did not refuse:\n{run}"
        );
    }
}

#[test]
fn the_shipped_configs_pass_check() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for file in ["config/hearth.toml", "config/hearth.example.toml"] {
        let h = Hearth::new("");
        std::fs::copy(root.join(file), h.config()).unwrap();
        // The example's model needs its key to pass (`check` fails
        // without it, as the doctor does); a placeholder is enough.
        let out = hearth_tests::Run::from(
            h.command(&["check"])
                .env("ANTHROPIC_API_KEY", "sk-placeholder")
                .output()
                .unwrap(),
        );
        assert!(
            out.stdout.contains("check passed"),
            "{file}:\n{}{}",
            out.stdout,
            out.stderr
        );
    }
}

#[test]
fn hearth_config_env_is_used_and_the_flag_wins() {
    let h = Hearth::new("[log]\nlevel = \"warn\"\n");
    let bad = h.home().join("bad.toml");
    std::fs::write(&bad, "nonsense = true\n").unwrap();
    let mut cmd = h.command(&["check"]);
    // --config (set by the helper) wins over HEARTH_CONFIG.
    let out = cmd.env("HEARTH_CONFIG", &bad).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Without the flag, HEARTH_CONFIG is read.
    let out = std::process::Command::new(hearth_tests::bin())
        .arg("check")
        .env("HEARTH_HOME", h.home())
        .env("HEARTH_CONFIG", &bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("bad.toml"));
}
