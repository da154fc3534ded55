//! Delegated workers end to end: the real daemon, `spawn_agent` from the
//! main agent's turn, the fake model answering workers by their base
//! prompt.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{
    FakeLlm, Reply, anthropic_text, anthropic_text_paced, anthropic_tool_use, anthropic_tool_uses,
    system_prompt,
};
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
/// How every worker's system prompt starts.
const WORKER: &str = "You are a worker of hearth";

fn home(fake: &FakeLlm, extra: &str) -> Hearth {
    Hearth::new(&format!(
        // The example tools (echo) are offered only when the config turns them on.
        "examples = true\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n{extra}",
        fake.url()
    ))
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

fn spawn(id: &str, task: &str, spec: Value) -> (String, String, Value) {
    (
        id.to_owned(),
        "spawn_agent".to_owned(),
        json!({ "spec": spec, "task": task }),
    )
}

/// The requests the workers' model calls made, in arrival order.
fn worker_requests(fake: &FakeLlm) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| system_prompt(b).starts_with(WORKER))
        .collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The tool results the main agent's last request carried.
fn last_results(fake: &FakeLlm) -> String {
    fake.requests()
        .into_iter()
        .rfind(|r| !system_prompt(&r.body).starts_with(WORKER))
        .map(|r| r.body["messages"].to_string())
        .unwrap_or_default()
}

#[test]
fn three_workers_spawned_in_one_step_run_at_the_same_time() {
    let fake = FakeLlm::start();
    let calls: Vec<(String, String, Value)> = ["a", "b", "c"]
        .iter()
        .map(|t| spawn(&format!("w_{t}"), &format!("task {t}"), json!({})))
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, input)| (id.as_str(), name.as_str(), input.clone()))
        .collect();
    fake.push(anthropic_tool_uses(&calls));
    for _ in 0..3 {
        fake.push_for(
            WORKER,
            anthropic_text_paced(&["done ", "with ", "it"], Duration::from_millis(400)),
        );
    }
    fake.push(anthropic_text("All three are done."));
    let h = home(&fake, "");
    let _daemon = start(&h);

    let started = Instant::now();
    assert_eq!(
        h.chat("split it three ways").ok().trim(),
        "All three are done."
    );
    let took = started.elapsed();

    // Every worker's request arrived before the first worker's answer was
    // complete: they ran side by side, not one after another.
    let mut answered = fake.answered();
    answered.sort();
    let before_first_worker_answer = fake
        .received()
        .iter()
        .filter(|at| **at < answered[1])
        .count();
    assert!(
        before_first_worker_answer >= 4,
        "the workers ran one by one ({took:?})"
    );
    let results = last_results(&fake);
    assert_eq!(results.matches("done with it").count(), 3, "{results}");
    // Each worker saw only its own task.
    for body in worker_requests(&fake) {
        let seen = body["messages"].to_string();
        assert!(!seen.contains("split it three ways"), "{seen}");
        assert_eq!(seen.matches("task ").count(), 1, "{seen}");
    }
}

#[test]
fn a_worker_may_not_spawn_workers_and_stops_at_its_bounds() {
    let fake = FakeLlm::start();
    // The first worker tries to spawn one; the second keeps calling tools.
    fake.push(anthropic_tool_use(
        None,
        "w1",
        "spawn_agent",
        &json!({ "spec": {"allowed_tools": ["spawn_agent"]}, "task": "recurse" }),
    ));
    fake.push_for(
        WORKER,
        anthropic_tool_use(
            None,
            "r1",
            "spawn_agent",
            &json!({"spec": {}, "task": "deeper"}),
        ),
    );
    fake.push_for(WORKER, anthropic_text("I could not spawn."));
    fake.push(anthropic_tool_use(
        None,
        "w2",
        "spawn_agent",
        &json!({ "spec": {"allowed_tools": ["echo"], "max_turns": 2}, "task": "loop" }),
    ));
    for i in 0..3 {
        fake.push_for(
            WORKER,
            anthropic_tool_use(
                Some(&format!("round {i}")),
                &format!("e{i}"),
                "echo",
                &json!({"text": "again"}),
            ),
        );
    }
    fake.push(anthropic_text("Both came back."));
    let h = home(&fake, "");
    let _daemon = start(&h);

    assert_eq!(h.chat("try").ok().trim(), "Both came back.");
    let workers = worker_requests(&fake);
    let refusal = workers[1]["messages"].to_string();
    assert!(
        refusal.contains("spawn_agent is not among the tools this agent may use"),
        "{refusal}"
    );
    let results = last_results(&fake);
    assert!(results.contains("I could not spawn."), "{results}");
    assert!(
        results.contains("the worker stopped at its 2 model calls (max_turns)"),
        "{results}"
    );
    assert!(results.contains("round 1"), "what it had so far: {results}");
    let audit: i64 = h
        .db()
        .query_row(
            "SELECT COUNT(*) FROM audit WHERE tool = 'spawn_agent' AND caller LIKE 'worker %' \
             AND outcome = 'refused'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(audit, 1);
}

#[test]
fn a_long_result_is_cut_and_kept_whole_in_a_file() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "w1",
        "spawn_agent",
        &json!({ "spec": {}, "task": "write a lot" }),
    ));
    let long = "x".repeat(500);
    fake.push_for(WORKER, anthropic_text(&long));
    fake.push(anthropic_text("Got it."));
    let h = home(&fake, "[agent]\nworker_result_chars = 100\n");
    let _daemon = start(&h);

    h.chat("go").ok();
    let results = last_results(&fake);
    assert!(
        results.contains("[cut at 100 characters; the whole result is in "),
        "{results}"
    );
    let kept = std::fs::read_to_string(h.home().join("workers/worker-1.txt")).unwrap();
    assert_eq!(kept, long);
}

#[test]
fn a_long_result_comes_with_a_summary_by_the_cheap_model() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "w1",
        "spawn_agent",
        &json!({ "spec": {}, "task": "list every x" }),
    ));
    fake.push_for(WORKER, anthropic_text(&format!("{}END", "x".repeat(500))));
    fake.push_for(
        "You summarize long output",
        anthropic_text("500 x's, then END."),
    );
    fake.push(anthropic_text("Got it."));
    let h = home(
        &fake,
        "[llm.cheap]\nmodel = \"fake-cheap\"\n[agent]\nworker_result_chars = 100\n",
    );
    let _daemon = start(&h);

    h.chat("go").ok();
    let results = last_results(&fake);
    assert!(
        results.contains(
            r#"[a summary of the whole result, by the cheap model:]\\n500 x's, then END.\\n\\nxxx"#
        ),
        "{results}"
    );
    assert!(results.contains("[cut at 100 characters; the whole result is in "));
    let asked = fake
        .requests()
        .into_iter()
        .find(|r| r.body["model"] == "fake-cheap")
        .expect("a summary request");
    let question = asked.body["messages"].to_string();
    assert!(question.contains("list every x"), "{question:.300}");
    assert!(question.contains("xxxEND"), "{question:.300}");
}

#[test]
fn a_worker_cut_short_by_a_crash_is_reported_once_to_the_retried_turn() {
    let fake = FakeLlm::start();
    fake.push(anthropic_tool_use(
        None,
        "w1",
        "spawn_agent",
        &json!({ "spec": {}, "task": "count the stars" }),
    ));
    fake.push_for(WORKER, Reply::Hang);
    let h = home(&fake, "");
    let mut daemon = start(&h);
    let listener = h.listen();
    h.cmd(&["chat", "-m", "astronomy", "--timeout", "1"]);
    wait_until("the worker's model call", || {
        !worker_requests(&fake).is_empty()
    });
    daemon.kill9();
    drop(listener);

    // After the restart the owner's turn runs again, and is told once.
    fake.push(anthropic_text("The worker was lost; I will start over."));
    let _daemon = start(&h);
    let listener = h.listen();
    let replies = listener.wait_for(1, WAIT);
    assert!(
        replies[0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("I will start over"),
        "{replies:?}"
    );
    let retried = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(retried.contains("were interrupted"), "{retried}");
    assert!(retried.contains("count the stars"), "{retried}");
    let (status, reported): (String, i64) = h
        .db()
        .query_row("SELECT status, reported FROM workers", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((status.as_str(), reported), ("interrupted", 1));
}

#[test]
fn templates_and_spawn_agent_refuse_bad_input_naming_the_field() {
    let fake = FakeLlm::start();
    let h = home(&fake, "");
    let _daemon = start(&h);
    let ok = |args: Value| {
        h.cmd(&["tool", "call", "manage_agent_templates", &args.to_string()])
            .ok()
            .to_owned()
    };
    ok(json!({"action": "create", "name": "researcher",
              "spec": {"system_prompt": "Find things.", "allowed_tools": ["echo"]}}));
    let listed = ok(json!({"action": "list"}));
    assert!(
        listed.contains("\"max_turns\": 8"),
        "defaults filled in: {listed}"
    );
    let cases = [
        (
            "manage_agent_templates",
            json!({"action": "create", "name": "researcher", "spec": {}}),
            "already exists",
        ),
        (
            "manage_agent_templates",
            json!({"action": "create", "name": "x y", "spec": {}}),
            "field `name`",
        ),
        (
            "manage_agent_templates",
            json!({"action": "create", "name": "z"}),
            "field `spec`: expected an object",
        ),
        (
            "manage_agent_templates",
            json!({"action": "create", "name": "z", "spec": {"allowed_tools": ["*"]}}),
            "field `spec.allowed_tools`",
        ),
        (
            "manage_agent_templates",
            json!({"action": "update", "name": "nobody", "spec": {}}),
            "no agent template named \"nobody\"",
        ),
        (
            "manage_agent_templates",
            json!({"action": "create", "name": "z", "spec": {"max_turns": 0}}),
            "args.spec.max_turns",
        ),
        ("spawn_agent", json!({"template": "researcher"}), "args"),
        (
            "spawn_agent",
            json!({"template": "ghost", "task": "x"}),
            "field `template`: no agent template named \"ghost\"",
        ),
        (
            "spawn_agent",
            json!({"template": "researcher", "spec": {}, "task": "x"}),
            "not both",
        ),
        ("spawn_agent", json!({"task": "x"}), "not both"),
        (
            "spawn_agent",
            json!({"spec": {"token_budget": 0}, "task": "x"}),
            "args.spec.token_budget",
        ),
    ];
    for (tool, args, wanted) in cases {
        let out = h.cmd(&["tool", "call", tool, &args.to_string()]).fails();
        assert!(out.contains(wanted), "{tool} {args}: {out}");
    }
}

#[test]
fn a_worker_stops_at_its_token_budget_and_at_its_time_limit() {
    let fake = FakeLlm::start();
    // Every fake answer reports a 25-token prompt: a budget of 10 is spent
    // by the first call.
    fake.push(anthropic_tool_use(
        None,
        "w1",
        "spawn_agent",
        &json!({ "spec": {"allowed_tools": ["echo"], "token_budget": 10}, "task": "spend" }),
    ));
    fake.push_for(
        WORKER,
        anthropic_tool_use(Some("first step"), "e1", "echo", &json!({"text": "x"})),
    );
    fake.push(anthropic_tool_use(
        None,
        "w2",
        "spawn_agent",
        &json!({ "spec": {}, "task": "take forever" }),
    ));
    fake.push_for(WORKER, Reply::Hang);
    fake.push(anthropic_text("Both stopped."));
    let h = home(&fake, "[agent]\nworker_timeout_ms = 1000\n");
    let _daemon = start(&h);

    assert_eq!(h.chat("go").ok().trim(), "Both stopped.");
    let results = last_results(&fake);
    assert!(results.contains("its token budget of 10"), "{results}");
    assert!(
        results.contains("first step"),
        "what it had so far: {results}"
    );
    assert!(
        results.contains("its wall-clock limit of 1 s ([agent] worker_timeout_ms)"),
        "{results}"
    );
}
