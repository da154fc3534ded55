//! Sub-agents end to end: the real daemon, one runner per agent, the fake
//! model answering each agent by its name in the system prompt.
//!
//! The owner talks to the main agent over the control socket; the main
//! agent reaches a sub-agent with `send_agent_message`, and the tests read
//! what each agent's model was sent, what the owner got back, and the
//! audit.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_text_paced, anthropic_tool_use};
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
    let args = json!({
        "action": "create", "name": name,
        "system_prompt": format!("You are the {name} test agent."),
        "allowed_tools": tools,
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
    create_agent(&h, "helper", &[]);
    let listener = h.listen();

    h.cmd(&["chat", "-m", "ask helper", "--timeout", "60"]).ok();
    let replies = listener.wait_for(2, WAIT);
    let texts: Vec<&str> = replies.iter().filter_map(|r| r["text"].as_str()).collect();
    assert!(texts.contains(&"helper says 4"), "{texts:?}");

    let requests = fake.requests();
    let helper = requests
        .iter()
        .find(|r| {
            r.body["system"]
                .as_str()
                .unwrap_or("")
                .contains(&agent("helper"))
        })
        .expect("the helper's model was asked");
    let system = helper.body["system"].as_str().unwrap();
    assert!(
        system.contains("You are the helper test agent."),
        "{system}"
    );
    assert!(
        system.contains("another of your owner's agents"),
        "{system}"
    );
    assert!(!system.contains("## Memory"), "{system}");
    assert!(helper.body["messages"].to_string().contains("What is 2+2?"));
    // The answer came back into the owner's conversation with the main agent.
    let last = requests.last().unwrap();
    assert!(
        last.body["messages"].to_string().contains("\"4\""),
        "{}",
        last.body
    );
}

#[test]
fn a_sub_agent_reaches_only_its_tools_from_every_source() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(&fake, ""));
    h.write(
        "tools/relay.lua",
        "return { name = \"relay\", description = \"test tool\", run = function(args, ctx)\n\
         return hearth.tool(\"remember\", { fact = \"from lua\" })\nend }\n",
    );
    main_asks(&fake, "narrow", "Remember something.", "Asked.");
    let narrow = agent("narrow");
    fake.push_for(
        &narrow,
        anthropic_tool_use(None, "t1", "remember", &json!({"fact": "direct"})),
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
        seen.matches("remember is not among the tools this agent may use")
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
        audit(&h, "remember").len() >= 2
    });
    let rows = audit(&h, "remember");
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
