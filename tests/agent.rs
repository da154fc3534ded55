//! The agent end to end: the real daemon, the real control socket, and a
//! fake model server speaking the Anthropic and OpenAI wire formats.

use std::time::Duration;

use hearth_tests::fake_llm::{
    FakeLlm, Reply, anthropic_error, anthropic_text, anthropic_tool_use, ollama_tool_call,
    openai_text, openai_tool_call, system_prompt,
};
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

const SECRET: &str = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK";

/// An `[llm]` section pointing at `fake`; `extra` may add `[llm]` keys
/// first, then other sections.
fn config(fake: &FakeLlm, provider: &str, extra: &str) -> String {
    let base = match provider {
        "openai" => format!("{}/v1", fake.url()),
        _ => fake.url(),
    };
    format!(
        // The example tools (echo) are offered only when the config turns them on.
        "examples = true\n[llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nretry_base_ms = 10\nmax_retries = 3\n{extra}"
    )
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", SECRET);
    })
}

fn tool_results(body: &Value) -> String {
    body["messages"].to_string()
}

#[test]
fn a_turn_with_a_plugin_tool_and_a_lua_tool_through_anthropic() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        Some("Let me echo."),
        "toolu_01",
        "echo",
        &json!({"text": "from the model"}),
    ));
    fake.push(anthropic_tool_use(
        None,
        "toolu_02",
        "convert_units",
        &json!({"value": 2, "from": "km", "to": "m"}),
    ));
    fake.push(anthropic_text("Echoed, and 2 km is 2000 m."));
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let daemon = start(&h);

    let out = h.chat("please echo and convert");
    assert_eq!(out.ok().trim(), "Echoed, and 2 km is 2000 m.");

    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some(SECRET));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    let first = &requests[0].body;
    assert_eq!(first["stream"], true);
    assert!(
        system_prompt(first).contains("## Skills\n"),
        "{}",
        first["system"]
    );
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "convert_units")
    );
    assert!(tool_results(&requests[1].body).contains(r#"{\"text\":\"from the model\"}"#));
    assert!(tool_results(&requests[2].body).contains(r#"\"value\":2000"#));

    // Every step is in the history, in order.
    let roles: Vec<(String, String)> = h
        .db()
        .prepare("SELECT role, content FROM messages ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let kinds: Vec<String> = roles
        .iter()
        .map(|(role, content)| {
            let blocks: Value = serde_json::from_str(content).unwrap();
            let last = blocks.as_array().unwrap().last().unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned();
            format!("{role}:{last}")
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user:text",
            "assistant:tool_use",
            "user:tool_result",
            "assistant:tool_use",
            "user:tool_result",
            "assistant:text"
        ]
    );
    let logs = daemon.logs();
    assert!(logs.len() > 10, "the debug log should have been collected");
    drop(daemon);
    assert_secret_never_stored_logged_or_prompted(&h, &fake, &logs);
}

#[test]
fn a_turn_with_tools_through_openai_and_ollama_dialects() {
    let fake = FakeLlm::start();
    fake.push(openai_tool_call(
        "call_1",
        "echo",
        &json!({"text": "via openai"}),
    ));
    fake.push(ollama_tool_call(
        "call_2",
        "convert_units",
        &json!({"value": 1, "from": "m", "to": "cm"}),
    ));
    fake.push(openai_text("All done."));
    let h = Hearth::new(&config(&fake, "openai", ""));
    let _daemon = start(&h);
    assert_eq!(h.chat("go").ok().trim(), "All done.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("\"tool_call_id\":\"call_1\"") && second.contains("via openai"),
        "{second}"
    );
    let third = requests[2].body["messages"].to_string();
    assert!(
        third.contains("\"tool_call_id\":\"call_2\"") && third.contains("100"),
        "{third}"
    );
}

#[test]
fn recorded_provider_streams_are_understood() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llm");
    let read = |f: &str| std::fs::read_to_string(fixtures.join(f)).unwrap();
    for (provider, file, final_reply) in [
        (
            "anthropic",
            "anthropic_tool_use.sse",
            anthropic_text("recorded ok"),
        ),
        (
            "openai",
            "openai_tool_calls.sse",
            openai_text("recorded ok"),
        ),
        ("openai", "ollama_tool_call.sse", openai_text("recorded ok")),
    ] {
        let fake = FakeLlm::start();
        fake.push(Reply::Sse(read(file)));
        fake.push(final_reply);
        let h = Hearth::new(&config(&fake, provider, ""));
        let _daemon = start(&h);
        assert_eq!(h.chat("replay").ok().trim(), "recorded ok", "{file}");
        let results = fake.requests()[1].body["messages"].to_string();
        assert!(
            results.contains("from the model") || results.contains("1000"),
            "{file}: {results}"
        );
    }
}

#[test]
fn rate_limits_server_errors_resets_and_garbage_are_ridden_out() {
    let cases: Vec<(&str, Reply)> = vec![
        (
            "429 with retry-after",
            anthropic_error(429, "rate_limit_error", "slow down", Some(1)),
        ),
        ("500", anthropic_error(500, "api_error", "boom", None)),
        (
            "529",
            anthropic_error(529, "overloaded_error", "overloaded", None),
        ),
        (
            "reset mid-stream",
            Reply::Disconnect {
                sse: sse_of(&anthropic_text("never finished")),
                events: 3,
            },
        ),
        (
            "malformed SSE",
            Reply::Sse("event: message_start\ndata: {not json\n\n".into()),
        ),
    ];
    for (name, failure) in cases {
        let fake = FakeLlm::start();
        fake.push(failure);
        fake.push(anthropic_text("recovered"));
        let h = Hearth::new(&config(&fake, "anthropic", ""));
        let _daemon = start(&h);
        let started = std::time::Instant::now();
        assert_eq!(h.chat("hi").ok().trim(), "recovered", "{name}");
        assert_eq!(fake.requests().len(), 2, "{name}");
        if name.starts_with("429") {
            assert!(
                started.elapsed() >= Duration::from_millis(900),
                "{name}: retry-after was not honoured"
            );
        }
    }
}

#[test]
fn a_model_that_keeps_failing_gets_a_clear_reply_and_nothing_is_lost() {
    let fake = FakeLlm::start();
    for _ in 0..4 {
        fake.push(anthropic_error(
            503,
            "api_error",
            "down for maintenance",
            None,
        ));
    }
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let _daemon = start(&h);
    let reply = h.chat("anyone there?").ok().to_owned();
    assert!(
        reply.contains("could not get an answer from the model")
            && reply.contains("down for maintenance"),
        "{reply}"
    );
    let stored: i64 = h
        .db()
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE content LIKE '%anyone there?%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, 1);
}

#[test]
fn a_failing_model_falls_back_to_the_next_one() {
    let fake = FakeLlm::start();
    for _ in 0..4 {
        fake.push(anthropic_error(500, "api_error", "primary is down", None));
    }
    fake.push(anthropic_text("from the fallback"));
    let h = Hearth::new(&config(
        &fake,
        "anthropic",
        "fallback_models = [\"backup-model\"]\n",
    ));
    let _daemon = start(&h);
    assert_eq!(h.chat("hello").ok().trim(), "from the fallback");
    let models: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        models,
        [
            "fake-model",
            "fake-model",
            "fake-model",
            "fake-model",
            "backup-model"
        ]
    );
}

#[test]
fn every_message_the_model_sees_says_when_where_and_from_whom() {
    let fake = FakeLlm::start();
    fake.push(anthropic_text("first"));
    fake.push(anthropic_text("second"));
    let extra = "[owner]\nname = \"Sam\"\ntimezone = \"America/New_York\"\n";
    let h = Hearth::new(&config(&fake, "anthropic", extra));
    let _daemon = start(&h);
    h.chat("hello there").ok();
    h.chat("and again").ok();

    let requests = fake.requests();
    let body = &requests[1].body;
    let messages = body["messages"].as_array().unwrap();
    // Both of the owner's messages carry their header, earlier ones too.
    for (i, typed) in [(0, "hello there"), (2, "and again")] {
        let text = messages[i]["content"][0]["text"].as_str().unwrap();
        let (header, rest) = text.split_once('\n').unwrap();
        assert_eq!(rest, typed);
        assert!(
            header.starts_with('[') && header.ends_with(" · local · from Sam, your owner]"),
            "{header}"
        );
        // New York's zone, whatever the machine's.
        assert!(
            header.contains(" EST ") || header.contains(" EDT "),
            "{header}"
        );
    }
    // The time is in the headers only: a clock in the system prompt
    // would change the prompt's prefix every minute.
    let system = system_prompt(body);
    assert!(
        !system.contains(" EST") && !system.contains(" EDT") && !system.contains("UTC-0"),
        "{system}"
    );
}

#[test]
fn remembered_facts_are_in_the_next_prompt_and_removing_one_drops_it() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "toolu_m",
        "manage_knowledge",
        &json!({"tier": "memory", "action": "add", "text": "The owner takes tea without sugar."}),
    ));
    fake.push(anthropic_text("Noted."));
    fake.push(anthropic_text("You take it without sugar."));
    let h = Hearth::new(&config(&fake, "anthropic", "[owner]\nname = \"Sam\"\n"));
    let _daemon = start(&h);
    assert_eq!(h.chat("remember how I take my tea").ok().trim(), "Noted.");
    // This conversation keeps its context as it began (the cache holds
    // it); the next one starts with the fact in it.
    h.chat("/new").ok();
    assert_eq!(
        h.chat("how do I take my tea?").ok().trim(),
        "You take it without sugar."
    );
    let system = system_prompt(&fake.requests()[2].body);
    assert!(
        system.contains("[1] The owner takes tea without sugar."),
        "{system}"
    );
    assert!(system.contains("Your owner is Sam."), "{system}");
    let removed = r#"/tool manage_knowledge {"tier":"memory","action":"remove","id":1}"#;
    assert!(h.chat(removed).ok().contains("removed"));
    let listed = r#"/tool manage_knowledge {"tier":"memory","action":"list"}"#;
    assert!(h.chat(listed).ok().contains("\"memories\": []"));
}

#[test]
fn invalid_tool_names_and_arguments_go_back_to_the_model() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "toolu_a",
        "no_such_tool",
        &json!({}),
    ));
    fake.push(anthropic_tool_use(
        None,
        "toolu_b",
        "echo",
        &json!({"text": 42}),
    ));
    fake.push(anthropic_text("Sorry, fixed it."));
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let _daemon = start(&h);
    assert_eq!(h.chat("try things").ok().trim(), "Sorry, fixed it.");
    let requests = fake.requests();
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("unknown tool") && second.contains("\"is_error\":true"),
        "{second}"
    );
    let third = requests[2].body["messages"].to_string();
    assert!(third.contains("args.text: expected string"), "{third}");
}

#[test]
fn kill_9_while_waiting_on_the_model_answers_exactly_once_after_restart() {
    let fake = FakeLlm::start();
    fake.push(Reply::Hang);
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let mut daemon = start(&h);
    let mut client = h.command(&["chat", "-m", "are you there?", "--timeout", "60"]);
    let mut client = client
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        fake.wait_for_requests(1, Duration::from_secs(20)),
        "the model was never asked"
    );
    daemon.kill9();
    let _ = client.wait();

    fake.push(anthropic_text("yes, once"));
    let _daemon = start(&h);
    let listener = h.listen();
    let replies = listener.wait_for(1, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    let replies_after = listener.wait_for(2, Duration::from_millis(10));
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(
        replies_after.len(),
        1,
        "a reply was delivered twice: {replies_after:?}"
    );
    assert_eq!(replies[0]["text"], "yes, once");
    let db = h.db();
    let (status, retried): (String, i64) = db
        .query_row("SELECT status, retried FROM inbox", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((status.as_str(), retried), ("done", 1));
    let outbox: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM outbox WHERE status = 'delivered'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(outbox, 1);
    let users: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE role = 'user'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        users, 1,
        "the retried turn must not duplicate the owner's message"
    );
}

#[test]
fn stop_cancels_the_running_turn() {
    let fake = FakeLlm::start();
    fake.push(Reply::Hang);
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let _daemon = start(&h);
    let waiting = h
        .command(&["chat", "-m", "think very hard", "--timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(fake.wait_for_requests(1, Duration::from_secs(20)));
    assert!(h.chat("/stop").ok().contains("Stopped"));
    let out = waiting.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Stopped.");
}

#[test]
fn compaction_keeps_tool_pairs_and_the_next_prompt_uses_the_summary() {
    let fake = FakeLlm::start();
    // Turn 1: a tool call, then text. Turn 2: text. Turn 3: compaction
    // first (the warning step, the summary), then the answer.
    fake.push(anthropic_tool_use(
        None,
        "toolu_c",
        "echo",
        &json!({"text": "pair"}),
    ));
    fake.push(anthropic_text("one"));
    fake.push(anthropic_text("two"));
    fake.push(anthropic_text("ok"));
    fake.push(anthropic_text(
        "SUMMARY: the owner asked for an echo of pair.",
    ));
    fake.push(anthropic_text("three"));
    let h = Hearth::new(&config(
        &fake,
        "anthropic",
        "[agent]\ncompact_after_messages = 6\nkeep_recent_messages = 2\n",
    ));
    let _daemon = start(&h);
    for (text, expected) in [("first", "one"), ("second", "two"), ("third", "three")] {
        assert_eq!(h.chat(text).ok().trim(), expected);
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), 6);
    assert!(
        requests[3].body["messages"]
            .to_string()
            .contains("about to be compacted")
    );
    let summary_request = &requests[4].body;
    let transcript = summary_request["messages"].to_string();
    assert!(
        transcript.contains("called echo") && transcript.contains("Tool result"),
        "{transcript}"
    );
    let last = &requests[5].body;
    assert!(system_prompt(last).contains("SUMMARY: the owner asked for an echo of pair."));
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "user");
    let first = messages[0]["content"][0]["text"].as_str().unwrap();
    assert!(first.ends_with(" your owner]\nsecond"), "{first}");
    assert!(
        !last["messages"].to_string().contains("tool_result"),
        "no orphaned tool result"
    );
    let compactions: i64 = h
        .db()
        .query_row("SELECT COUNT(*) FROM compactions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(compactions, 1);
}

#[test]
fn without_a_model_slash_commands_work_and_messages_say_how_to_configure_one() {
    let h = Hearth::new("");
    let _daemon = h.daemon();
    let reply = h.chat("hello").ok().to_owned();
    assert!(
        reply.contains("No model is configured")
            && reply.contains("ANTHROPIC_API_KEY")
            && reply.contains("11434"),
        "{reply}"
    );
    assert!(h.chat("/help").ok().contains("/status"));
    assert!(h.chat("/status").ok().contains("model: none"));
    assert!(h.chat("/tools").ok().contains("convert_units"));
    assert!(h.chat("/skills").ok().contains("dates"));
    assert!(
        h.chat(r#"/tool convert_units {"value":1,"from":"km","to":"m"}"#)
            .ok()
            .contains("1000")
    );
    assert!(
        h.chat("/tool convert_units {bad")
            .ok()
            .contains("not valid JSON")
    );
    assert!(h.chat("/nope").ok().contains("Unknown command /nope"));
    assert!(h.chat("/new").ok().contains("new conversation"));
    assert!(h.cmd(&["status"]).ok().contains("uptime"));
    // Interactive mode with piped input waits for every reply before it ends.
    let session = h.cmd_with_input(&["chat"], "/new\n\n/skills\n");
    let out = session.ok();
    assert!(
        out.contains("Started a new conversation.") && out.contains("dates"),
        "{out}"
    );
}

#[test]
fn replies_go_back_through_the_channel_plugin_that_brought_the_message() {
    use hearth_tests::{plugin, probe};
    let fake = FakeLlm::start();
    fake.push(anthropic_text("hello from the agent"));
    let deliveries = tempfile::tempdir().unwrap();
    let file = deliveries.path().join("sent.jsonl");
    // The plugin files are named, so they load without `examples`, a
    // top-level key that could not follow these tables anyway.
    let llm = config(&fake, "anthropic", "").replacen("examples = true\n", "", 1);
    let h = Hearth::with_plugins(
        &[plugin("echo"), probe()],
        &format!(
            "[plugins.probe]\ninject = [\"hi via the probe channel\"]\ndeliveries = {:?}\n\
             [owner.identities]\nprobe = [\"owner\"]\n{llm}",
            file.display().to_string(),
        ),
    );
    let _daemon = start(&h);
    let start = std::time::Instant::now();
    while !file.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "nothing was delivered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let sent = std::fs::read_to_string(&file).unwrap();
    assert_eq!(sent.lines().count(), 1, "{sent}");
    let line: Value = serde_json::from_str(sent.lines().next().unwrap()).unwrap();
    assert_eq!(
        line,
        json!({"chat": "probe-chat", "text": "hello from the agent"})
    );
    let asked = fake.requests()[0].body["messages"].to_string();
    assert!(asked.contains("hi via the probe channel"), "{asked}");
}

#[test]
fn a_model_that_hangs_times_out_with_a_clear_reply() {
    let fake = FakeLlm::start();
    fake.push(Reply::Hang);
    let h = Hearth::new(&config(&fake, "anthropic", "timeout_ms = 500\n"));
    let _daemon = start(&h);
    let reply = h.chat("hello?").ok().to_owned();
    assert!(
        reply.contains("could not get an answer from the model"),
        "{reply}"
    );
}

#[test]
fn the_control_socket_refuses_bad_requests_and_keeps_serving() {
    use std::io::{BufRead, BufReader, Write};
    let h = Hearth::new("");
    let _daemon = h.daemon();
    let socket = h.home().join("hearth.sock");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    let mut lines = BufReader::new(stream.try_clone().unwrap()).lines();
    writeln!(stream, "{}", hearth_tests::control::hello(h.home())).unwrap();
    let hello: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(hello["op"], "hello", "{hello}");
    for (request, expected) in [
        ("not json", "not JSON"),
        ("{}", "no `op`"),
        (r#"{"op":"launch"}"#, "unknown op"),
        (r#"{"op":"chat","text":""}"#, "non-empty"),
        (r#"{"op":"chat","text":42}"#, "non-empty"),
    ] {
        writeln!(stream, "{request}").unwrap();
        let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(answer["op"], "error", "{request}");
        assert!(
            answer["message"].as_str().unwrap().contains(expected),
            "{request}: {answer}"
        );
    }
    assert!(h.chat("/help").ok().contains("/new"));
}

/// The SSE text of a built reply.
fn sse_of(reply: &Reply) -> String {
    match reply {
        Reply::Sse(text) => text.clone(),
        other => panic!("not an SSE reply: {other:?}"),
    }
}

/// The key must appear in the request header only: never in the database,
/// the log or any prompt.
fn assert_secret_never_stored_logged_or_prompted(h: &Hearth, fake: &FakeLlm, logs: &[String]) {
    for entry in std::fs::read_dir(h.home()).unwrap().map(Result::unwrap) {
        if entry.path().is_file() {
            let bytes = std::fs::read(entry.path()).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(SECRET),
                "{} holds the key",
                entry.path().display()
            );
        }
    }
    for line in logs {
        assert!(!line.contains(SECRET), "the log holds the key: {line}");
    }
    for request in fake.requests() {
        assert!(
            !request.body.to_string().contains(SECRET),
            "a prompt holds the key"
        );
    }
}

/// The model's tool list is built once and reused, so it must still follow
/// the Lua catalog: a tool saved while the daemon runs is offered at the
/// next turn, and a deleted one is withdrawn.
#[test]
fn the_models_tool_list_follows_hot_reload() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let _daemon = start(&h);
    let offered = |n: usize| -> (bool, bool) {
        let body = &fake.requests()[n].body;
        let in_tools = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "shout");
        let in_prompt = system_prompt(body).contains("shout");
        (in_tools, in_prompt)
    };
    let tool = h.home().join("tools/shout.lua");
    // `/tools` is answered by the daemon from its own registry.
    let wait_listed = |listed: bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while h.chat("/tools").ok().contains("shout") != listed {
            assert!(
                std::time::Instant::now() < deadline,
                "hot reload never came"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    fake.push(anthropic_text("one"));
    h.chat("first").ok();
    assert_eq!(offered(0), (false, false));

    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::write(
        &tool,
        "return { name = 'shout', description = 'Says it loud', run = function() return 'HI' end }\n",
    )
    .unwrap();
    wait_listed(true);
    fake.push(anthropic_text("two"));
    h.chat("second").ok();
    assert_eq!(offered(1), (true, false), "described once, in the tools");

    std::fs::remove_file(&tool).unwrap();
    wait_listed(false);
    fake.push(anthropic_text("three"));
    h.chat("third").ok();
    assert_eq!(offered(2), (false, false));
}

#[test]
fn a_stream_that_never_ends_a_line_is_refused_and_the_daemon_keeps_serving() {
    let fake = FakeLlm::start();
    // Nine MiB without a line break: past the 8 MiB a line may have.
    let flood = format!("event: message_start\ndata: {}\n\n", "x".repeat(9 << 20));
    fake.push(Reply::Sse(flood));
    fake.push(anthropic_text("Still here."));
    // Not retried: a broken endpoint would send it again.
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let _daemon = start(&h);
    let said = h.chat("hello").ok().to_owned();
    assert!(
        said.contains("the model API sent too much") && said.contains("longer than"),
        "{said}"
    );
    assert_eq!(h.chat("again").ok().trim(), "Still here.");
}
