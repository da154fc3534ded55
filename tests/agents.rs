//! Sub-agents end to end: the real daemon, one runner per agent, the fake
//! model answering each agent by its name in the system prompt.
//!
//! The owner talks to the main agent over the control socket; the main
//! agent reaches a sub-agent with `send_agent_message`, and the tests read
//! what each agent's model was sent, what the owner got back, and the
//! audit.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{
    FakeLlm, anthropic_text, anthropic_text_paced, anthropic_tool_use, system_prompt,
};
use hearth_tests::fake_telegram::FakeTelegram;
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
/// What every sub-agent's system prompt starts with, before its name.
const SUB: &str = "You are ";

fn config(fake: &FakeLlm, extra: &str) -> String {
    format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nretry_base_ms = 10\nmax_retries = 0\n{extra}",
        fake.url()
    )
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

/// Creates a sub-agent through the running daemon, as the owner would.
fn create_agent(h: &Hearth, name: &str, tools: &[&str]) {
    create_agent_with(h, name, tools, json!(null));
}

/// As [`create_agent`], asking `model` first when it is a string.
fn create_agent_with(h: &Hearth, name: &str, tools: &[&str], model: Value) {
    let args = json!({
        "action": "create", "name": name,
        "system_prompt": format!("You are the {name} test agent."),
        "allowed_tools": tools,
        "model": model,
    });
    h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
        .ok();
}

/// The marker the fake model routes an agent's requests by.
fn agent(name: &str) -> String {
    format!("{SUB}{name}, one of the agents")
}

/// The main agent asks `to` with `text`, then says `then`.
fn main_asks(fake: &FakeLlm, to: &str, text: &str, then: &str) {
    fake.push(anthropic_tool_use(
        None,
        "toolu_ask",
        "send_agent_message",
        &json!({"agent": to, "text": text}),
    ));
    fake.push(anthropic_text(then));
}

fn audit(h: &Hearth, tool: &str) -> Vec<(String, String)> {
    let db = h.db();
    let mut stmt = db
        .prepare("SELECT caller, outcome FROM audit WHERE tool = ?1 ORDER BY id")
        .unwrap();
    stmt.query_map([tool], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_message_round_trips_between_two_agents() {
    let fake = FakeLlm::start();
    main_asks(&fake, "helper", "What is 2+2?", "I asked helper.");
    fake.push_for(&agent("helper"), anthropic_text("4"));
    fake.push(anthropic_text("helper says 4"));
    let h = Hearth::new(&config(&fake, ""));
    let _daemon = start(&h);
    create_agent_with(&h, "helper", &[], json!("helper-model"));
    h.cmd(&[
        "tool",
        "call",
        "manage_knowledge",
        r#"{"tier":"memory","action":"add","text":"the owner's spare key is under the mat"}"#,
    ])
    .ok();
    let listener = h.listen();

    h.cmd(&["chat", "-m", "ask helper", "--timeout", "60"]).ok();
    let replies = listener.wait_for(2, WAIT);
    let texts: Vec<&str> = replies.iter().filter_map(|r| r["text"].as_str()).collect();
    assert!(texts.contains(&"helper says 4"), "{texts:?}");

    let requests = fake.requests();
    let helper = requests
        .iter()
        .find(|r| system_prompt(&r.body).contains(&agent("helper")))
        .expect("the helper's model was asked");
    assert_eq!(helper.body["model"], "helper-model");
    assert_eq!(requests[0].body["model"], "fake-model");
    let system = system_prompt(&helper.body);
    assert!(
        system.contains("You are the helper test agent."),
        "{system}"
    );
    assert!(
        system.contains("another of your owner's agents"),
        "{system}"
    );
    // Its own (empty) memory, never the owner's.
    assert!(system.contains("## Memory"), "{system}");
    assert!(!system.contains("spare key"), "{system}");
    assert!(requests[0].body["system"].to_string().contains("spare key"));
    assert!(helper.body["messages"].to_string().contains("What is 2+2?"));
    // The answer came back into the owner's conversation with the main agent.
    let last = requests.last().unwrap();
    assert!(
        last.body["messages"]
            .to_string()
            .contains("from the agent helper]\\n4\""),
        "{}",
        last.body
    );
}

#[test]
fn a_sub_agent_reaches_only_its_tools_from_every_source() {
    let fake = FakeLlm::start();
    // echo, an example plugin's tool, is offered once turned on.
    let h = Hearth::new(&format!("examples = true\n{}", config(&fake, "")));
    h.write(
        "tools/relay.lua",
        "return { name = \"relay\", description = \"test tool\", run = function(args, ctx)\n\
         return hearth.tool(\"manage_knowledge\", { tier = \"memory\", action = \"add\", text = \"from lua\" })\nend }\n",
    );
    main_asks(&fake, "narrow", "Remember something.", "Asked.");
    let narrow = agent("narrow");
    fake.push_for(
        &narrow,
        anthropic_tool_use(
            None,
            "t1",
            "manage_knowledge",
            &json!({"tier": "memory", "action": "add", "text": "direct"}),
        ),
    );
    fake.push_for(&narrow, anthropic_tool_use(None, "t2", "relay", &json!({})));
    fake.push_for(&narrow, anthropic_text("I could not."));
    fake.push(anthropic_text("noted"));
    let _daemon = start(&h);
    create_agent(&h, "narrow", &["relay", "echo"]);

    h.chat("go").ok();
    wait_until("the narrow agent's three model calls", || {
        fake.requests()
            .iter()
            .filter(|r| r.body["system"].to_string().contains(&narrow))
            .count()
            >= 3
    });
    let results: Vec<Value> = fake
        .requests()
        .iter()
        .filter(|r| r.body["system"].to_string().contains(&narrow))
        .map(|r| r.body["messages"].clone())
        .collect();
    let seen = results.last().unwrap().to_string();
    assert_eq!(
        seen.matches("manage_knowledge is not among the tools this agent may use")
            .count(),
        2,
        "{seen}"
    );
    // The tools it was offered are its own, and the reply tool.
    let offered: Vec<String> = fake
        .requests()
        .iter()
        .find(|r| r.body["system"].to_string().contains(&narrow))
        .unwrap()
        .body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let mut offered_sorted = offered.clone();
    offered_sorted.sort();
    assert_eq!(offered_sorted, ["echo", "relay", "send_agent_message"]);

    wait_until("the refusals in the audit", || {
        audit(&h, "manage_knowledge").len() >= 2
    });
    let rows = audit(&h, "manage_knowledge");
    assert_eq!(
        rows,
        [
            ("agent 2".to_owned(), "refused".to_owned()),
            ("agent 2 > lua relay".to_owned(), "refused".to_owned())
        ]
    );
    let facts: i64 = h
        .db()
        .query_row("SELECT COUNT(*) FROM memory", [], |r| r.get(0))
        .unwrap();
    assert_eq!(facts, 0);
}

#[test]
fn agents_asking_each_other_stop_at_the_hop_limit() {
    let fake = FakeLlm::start();
    main_asks(&fake, "ping", "Start the rally.", "Started.");
    // Each agent always asks the other, then says it did.
    for (me, other) in [("ping", "pong"), ("pong", "ping")] {
        for i in 0..6 {
            fake.push_for(
                &agent(me),
                anthropic_tool_use(
                    None,
                    &format!("{me}{i}"),
                    "send_agent_message",
                    &json!({"agent": other, "text": "your turn"}),
                ),
            );
            fake.push_for(&agent(me), anthropic_text("passed it on"));
        }
    }
    for _ in 0..6 {
        fake.push(anthropic_text("main heard back"));
    }
    let h = Hearth::new(&config(&fake, "[agent]\nmax_agent_hops = 3\n"));
    let _daemon = start(&h);
    create_agent(&h, "ping", &[]);
    create_agent(&h, "pong", &[]);

    h.chat("rally").ok();
    wait_until("a refusal at the hop limit", || {
        fake.requests()
            .iter()
            .any(|r| r.body["messages"].to_string().contains("max_agent_hops"))
    });
    // Nothing keeps going: the inbox drains and stays drained.
    wait_until("an empty inbox", || {
        h.db()
            .query_row(
                "SELECT COUNT(*) FROM inbox WHERE status != 'done'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            == 0
    });
    let settled = fake.requests().len();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(fake.requests().len(), settled, "the agents kept talking");
    let max_hops: i64 = h
        .db()
        .query_row("SELECT MAX(hops) FROM inbox", [], |r| r.get(0))
        .unwrap();
    assert!(max_hops <= 3, "hops reached {max_hops}");
}

#[test]
fn two_agents_turns_run_at_the_same_time() {
    let fake = FakeLlm::start();
    let gap = Duration::from_millis(400);
    fake.push(anthropic_tool_use(
        None,
        "toolu_ask",
        "send_agent_message",
        &json!({"agent": "worker", "text": "take your time"}),
    ));
    fake.push(anthropic_text_paced(&["main ", "is ", "done"], gap));
    fake.push_for(
        &agent("worker"),
        anthropic_text_paced(&["worker ", "is ", "done"], gap),
    );
    fake.push(anthropic_text("main heard back"));
    let h = Hearth::new(&config(&fake, ""));
    let _daemon = start(&h);
    create_agent(&h, "worker", &[]);

    h.chat("start").ok();
    wait_until("both slow answers", || fake.answered().len() >= 3);
    let mut answered = fake.answered();
    answered.sort();
    // The first answer is the quick tool call; by the time the first slow
    // answer was complete, both slow requests had arrived: the main agent's
    // turn and the worker's ran at the same time.
    let overlapping = fake
        .received()
        .iter()
        .filter(|at| **at < answered[1])
        .count();
    assert!(
        overlapping >= 3,
        "only {overlapping} requests before the first slow answer"
    );
}

#[test]
fn manage_agents_refuses_bad_input_naming_the_field() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(&fake, ""));
    let _daemon = start(&h);
    create_agent(&h, "helper", &["echo"]);
    let cases = [
        (
            json!({"action": "create", "allowed_tools": []}),
            "field `name`",
        ),
        (
            json!({"action": "create", "name": "a b", "allowed_tools": []}),
            "field `name`: only letters",
        ),
        (
            json!({"action": "create", "name": "x"}),
            "field `allowed_tools`: required",
        ),
        (
            json!({"action": "create", "name": "x", "allowed_tools": ["*"]}),
            "main agent only",
        ),
        (
            json!({"action": "create", "name": "x", "allowed_tools": "echo"}),
            "allowed_tools",
        ),
        (
            json!({"action": "create", "name": "HELPER", "allowed_tools": []}),
            "already exists",
        ),
        (
            json!({"action": "update", "name": "nobody"}),
            "no agent named \"nobody\"",
        ),
        (
            json!({"action": "update", "name": "main", "system_prompt": "x"}),
            "main agent is not changed here",
        ),
        (
            json!({"action": "delete", "name": "main"}),
            "main agent is not changed here",
        ),
        (
            json!({"action": "dance"}),
            "args.action: \"dance\" is not one of",
        ),
    ];
    for (args, wanted) in cases {
        let out = h
            .cmd(&["tool", "call", "manage_agents", &args.to_string()])
            .fails();
        assert!(out.contains(wanted), "{args}: {out}");
    }
    let listed = h.cmd(&["agents", "--json"]).json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["main", "helper"]);
}

#[test]
fn a_sub_agent_cannot_change_any_agent() {
    let fake = FakeLlm::start();
    main_asks(&fake, "rogue", "Do your thing.", "Asked.");
    let rogue = agent("rogue");
    fake.push_for(
        &rogue,
        anthropic_tool_use(
            None,
            "t1",
            "manage_agents",
            &json!({"action": "update", "name": "rogue", "allowed_tools": ["shell_exec"]}),
        ),
    );
    fake.push_for(&rogue, anthropic_text("tried"));
    fake.push(anthropic_text("ok"));
    let h = Hearth::new(&config(&fake, ""));
    let _daemon = start(&h);
    // Even with manage_agents on its own list.
    create_agent(&h, "rogue", &["manage_agents"]);

    h.chat("go").ok();
    wait_until("the rogue's second model call", || {
        fake.requests()
            .iter()
            .filter(|r| r.body["system"].to_string().contains(&rogue))
            .count()
            >= 2
    });
    let last = fake
        .requests()
        .into_iter()
        .rfind(|r| r.body["system"].to_string().contains(&rogue))
        .unwrap();
    assert!(
        last.body["messages"]
            .to_string()
            .contains("only the main agent manages agents"),
        "{}",
        last.body["messages"]
    );
    let tools: String = h
        .db()
        .query_row(
            "SELECT allowed_tools FROM agents WHERE name = 'rogue'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tools, r#"["manage_agents"]"#);
}

const TOKEN: &str = "4242:test-token";
const OWNER: i64 = 1001;
const ALEX: i64 = 2002;

/// A home with the Telegram channel (the owner and Alex allowed) and the
/// fake model.
fn with_telegram(telegram: &FakeTelegram, fake: &FakeLlm) -> Hearth {
    Hearth::with_plugins(
        &[hearth_tests::plugin("telegram")],
        &format!(
            "[plugins.telegram]\ntoken = {TOKEN:?}\napi_url = {:?}\nallowed_chat_ids = [{OWNER}, {ALEX}]\n\
             poll_timeout_s = 1\npace_chat_ms = 0\n[owner.identities]\ntelegram = [\"{OWNER}\"]\n{}",
            telegram.url(),
            config(fake, "")
        ),
    )
}

#[test]
fn a_contact_typing_tool_reaches_only_their_agents_tools() {
    let telegram = FakeTelegram::start(TOKEN);
    let fake = FakeLlm::start();
    let h = with_telegram(&telegram, &fake);
    let _daemon = start(&h);
    create_agent(&h, "narrow", &["convert_units", "manage_knowledge"]);
    for args in [
        json!({"action": "add", "name": "Alex", "agent": "narrow"}),
        json!({"action": "add_identity", "name": "Alex", "channel": "telegram", "id": ALEX.to_string()}),
    ] {
        h.cmd(&["tool", "call", "manage_contacts", &args.to_string()])
            .ok();
    }

    let cases = [
        (
            "/tool notepad {\"action\":\"clear\"}",
            "notepad is not among the tools this agent may use",
        ),
        (
            "/tool convert_units {\"value\":1,\"from\":\"km\",\"to\":\"m\"}",
            "\"value\": 1000",
        ),
        // On its list, but notes are the agents' own, not a contact's.
        (
            "/tool manage_knowledge {\"tier\":\"memory\",\"action\":\"list\"}",
            "a contact or a worker cannot read or change them",
        ),
        ("/status", "That command is for the owner"),
        ("/help", "/new"),
    ];
    for (i, (text, wanted)) in cases.iter().enumerate() {
        telegram.push_message(ALEX, ALEX, text);
        let sent = telegram.wait_for_sent(i + 1, WAIT);
        let reply = sent
            .get(i)
            .unwrap_or_else(|| panic!("no reply to {text}: {sent:#?}"));
        assert_eq!(reply.chat_id, ALEX);
        let shown = reply.text.replace("&quot;", "\"");
        assert!(shown.contains(wanted), "{text}: {shown}");
    }
    assert!(
        fake.requests().is_empty(),
        "a slash command reached the model"
    );
    let refused: (String, String) = h
        .db()
        .query_row(
            "SELECT caller, outcome FROM audit WHERE tool = 'notepad'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        refused,
        ("contact Alex via telegram".into(), "refused".into())
    );
}

#[test]
fn a_fresh_store_has_the_main_agent_before_any_daemon_ran() {
    let h = Hearth::new("");
    let listed = h.cmd(&["agents", "--json"]).json();
    assert_eq!(listed[0]["id"], 1);
    assert_eq!(listed[0]["name"], "main");
    assert_eq!(listed[0]["allowed_tools"], json!(["*"]));
    assert!(h.cmd(&["contacts"]).ok().contains("name"));
}

#[test]
fn send_message_reaches_the_owner_with_files_and_names_a_bad_one() {
    let telegram = FakeTelegram::start(TOKEN);
    let fake = FakeLlm::start();
    let h = with_telegram(&telegram, &fake);
    let report = h.write("report.txt", "all good");
    let _daemon = start(&h);

    let args = json!({"to": "owner", "text": "Here is the report.", "attachments": [report]});
    h.cmd(&["tool", "call", "send_message", &args.to_string()])
        .ok();
    let sent = telegram.wait_for_sent(2, WAIT);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert!(sent.iter().all(|s| s.chat_id == OWNER));
    assert!(sent[0].text.contains("Here is the report."));
    assert_eq!(sent[1].method, "sendDocument");

    let missing = json!({"to": "owner", "text": "x", "attachments": ["/nonexistent/file"]});
    let out = h
        .cmd(&["tool", "call", "send_message", &missing.to_string()])
        .fails();
    assert!(out.contains("field `attachments[0]`"), "{out}");
}

#[test]
fn send_agent_message_refuses_bad_input_naming_the_field() {
    let fake = FakeLlm::start();
    let bad = [
        json!({"agent": "ghost", "text": "x"}),
        json!({"agent": "main", "text": "x"}),
        json!({"agent": "sleepy", "text": "x"}),
        json!({"agent": "helper"}),
    ];
    for (i, args) in bad.iter().enumerate() {
        fake.push(anthropic_tool_use(
            None,
            &format!("t{i}"),
            "send_agent_message",
            args,
        ));
    }
    fake.push(anthropic_text("gave up"));
    let h = Hearth::new(&config(&fake, ""));
    let _daemon = start(&h);
    create_agent(&h, "helper", &[]);
    create_agent(&h, "sleepy", &[]);
    h.cmd(&[
        "tool",
        "call",
        "manage_agents",
        &json!({"action": "update", "name": "sleepy", "enabled": false}).to_string(),
    ])
    .ok();

    assert_eq!(h.chat("try them").ok().trim(), "gave up");
    let seen = fake.requests().last().unwrap().body["messages"].to_string();
    for wanted in [
        "field `agent`: no agent named \\\"ghost\\\"",
        "field `agent`: that is you",
        "field `agent`: sleepy is disabled",
        "args.text: required field is missing",
    ] {
        assert!(seen.contains(wanted), "{wanted}: {seen}");
    }
    // Outside a turn there is no one to answer to.
    let out = h
        .cmd(&[
            "tool",
            "call",
            "send_agent_message",
            &json!({"agent": "helper", "text": "x"}).to_string(),
        ])
        .fails();
    assert!(out.contains("only inside an agent's turn"), "{out}");
}
