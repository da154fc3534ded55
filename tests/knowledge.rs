//! The agents' notes end to end: memories and scratchpad entries written
//! by the model's tool calls, read back from the next session's prompt as
//! the fake model receives it.

use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_uses};
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

fn start(fake: &FakeLlm) -> (Hearth, Daemon) {
    let h = Hearth::new(&format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\n",
        fake.url()
    ));
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    (h, daemon)
}

fn knowledge(h: &Hearth, args: Value) -> Result<Value, String> {
    let run = h.cmd(&["tool", "call", "manage_knowledge", &args.to_string()]);
    if run.status.success() {
        Ok(run.json())
    } else {
        Err(run.stderr)
    }
}

#[test]
fn notes_from_one_session_are_in_the_next_sessions_prompt() {
    let fake = FakeLlm::start();
    let (h, _daemon) = start(&fake);
    fake.push(anthropic_tool_uses(&[
        (
            "t1",
            "manage_knowledge",
            json!({"tier": "memory", "action": "add", "text": "Sam takes tea with lemon"}),
        ),
        (
            "t2",
            "manage_knowledge",
            json!({"tier": "scratchpad", "action": "add", "title": "Garden plan 2027",
                   "body": "Tomatoes along the south wall; beans where the shed was."}),
        ),
    ]));
    fake.push(anthropic_text("Noted both."));
    assert_eq!(h.chat("keep these").ok().trim(), "Noted both.");
    h.chat("/new").ok();
    fake.push(anthropic_text("Hello again."));
    h.chat("hi").ok();
    let system = fake.requests().last().unwrap().body["system"].to_string();
    assert!(system.contains("Sam takes tea with lemon"), "{system}");
    assert!(system.contains("## Scratchpad"), "{system}");
    assert!(system.contains("Garden plan 2027"), "{system}");
    assert!(
        !system.contains("Tomatoes"),
        "the body is not in the prompt: {system}"
    );
    // The body is read on demand.
    let listed = knowledge(&h, json!({"tier": "scratchpad", "action": "list"})).unwrap();
    let id = listed["entries"][0]["id"].clone();
    let read = knowledge(
        &h,
        json!({"tier": "scratchpad", "action": "read", "id": id}),
    )
    .unwrap();
    assert!(read["body"].as_str().unwrap().starts_with("Tomatoes"));
}

#[test]
fn memories_over_budget_are_kept_and_the_prompt_asks_to_consolidate() {
    let fake = FakeLlm::start();
    let (h, _daemon) = start(&fake);
    for i in 0..14 {
        knowledge(
            &h,
            json!({"tier": "memory", "action": "add",
                   "text": format!("fact {i}: {}", "x".repeat(480))}),
        )
        .unwrap();
    }
    fake.push(anthropic_text("ok"));
    h.chat("hi").ok();
    let system = fake.requests().last().unwrap().body["system"].to_string();
    assert!(
        system.contains("fact 0:") && system.contains("fact 13:"),
        "nothing is cut"
    );
    assert!(system.contains("over their budget of 6000"), "{system}");
    assert!(system.contains("consolidate them now"), "{system}");
}

#[test]
fn bad_notes_are_refused_naming_the_field_and_the_limit() {
    let fake = FakeLlm::start();
    let (h, _daemon) = start(&fake);
    let cases = [
        (
            json!({"tier": "scratchpad", "action": "add", "title": "  ", "body": "b"}),
            "field `title`",
        ),
        (
            json!({"tier": "scratchpad", "action": "add", "title": "t", "body": "b".repeat(20_001)}),
            "maxLength",
        ),
        (
            json!({"tier": "memory", "action": "add", "text": ""}),
            "field `text`",
        ),
        (
            json!({"tier": "memory", "action": "remove", "id": 999}),
            "no memory 999",
        ),
        (
            json!({"tier": "scratchpad", "action": "read", "id": 42}),
            "no scratchpad entry 42",
        ),
        (
            json!({"tier": "scratchpad", "action": "update", "id": 42}),
            "give at least one",
        ),
        (json!({"action": "add", "text": "x"}), "field `tier`"),
        (
            json!({"tier": "memory", "action": "read", "id": 1}),
            "has no body",
        ),
    ];
    for (args, want) in cases {
        let err = knowledge(&h, args.clone()).unwrap_err();
        assert!(err.contains(want), "{args}: {err}");
    }
    let help = knowledge(&h, json!({"action": "help"})).unwrap();
    assert!(help["help"].as_str().unwrap().contains("scratchpad"));
}

#[test]
fn identity_edits_are_versions_and_a_rollback_reaches_the_prompt() {
    let fake = FakeLlm::start();
    let (h, _daemon) = start(&fake);
    let edit = |args: Value| {
        h.cmd(&["tool", "call", "update_identity", &args.to_string()])
            .json()
    };
    edit(json!({"mode": "append", "text": "Observation one: Sam likes short answers."}));
    edit(json!({"mode": "replace_section", "section": "Tone", "text": "Warm, and brief."}));
    let third =
        edit(json!({"mode": "append", "text": "Observation three: never call before nine."}));
    assert_eq!(third["version"]["version"], 4);
    assert!(third["text"].as_str().unwrap().contains("## Tone"));

    let restored = h.cmd(&["identity", "rollback", "1"]).ok().to_owned();
    assert!(
        restored.contains("restored version 1 as version 5"),
        "{restored}"
    );
    let log = h.cmd(&["identity", "log"]).ok().to_owned();
    assert_eq!(log.lines().count(), 6, "a header and five versions: {log}");
    assert!(log.contains("rollback to version 1"), "{log}");
    let second = h.cmd(&["identity", "show", "2"]).ok().to_owned();
    assert!(second.contains("Observation one"), "{second}");

    fake.push(anthropic_text("hi"));
    h.chat("hello").ok();
    let system = fake.requests().last().unwrap().body["system"].to_string();
    let first = h.cmd(&["identity", "show", "1"]).ok().trim().to_owned();
    assert!(system.contains(&first[..60]), "{system}");
    assert!(!system.contains("Observation"), "{system}");
    let err = h
        .cmd(&["tool", "call", "identity_rollback", r#"{"version": 99}"#])
        .fails();
    assert!(err.contains("no version 99"), "{err}");
}

#[test]
fn the_notepad_survives_compaction_and_the_warning_comes_once() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\n\
         [agent]\ncompact_after_messages = 4\nkeep_recent_messages = 2\n",
        fake.url()
    ));
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    fake.push(anthropic_text("a1"));
    fake.push(anthropic_text("a2"));
    // Turn three crosses the limit: the warning step, the summary, the turn.
    fake.push(anthropic_tool_uses(&[(
        "n1",
        "notepad",
        json!({"action": "replace", "text": "State: counting turns; at three."}),
    )]));
    fake.push(anthropic_text("Summary: the owner counted to two."));
    fake.push(anthropic_text("a3"));
    for text in ["one", "two", "three"] {
        h.chat(text).ok();
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    let warned: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.body["messages"]
                .to_string()
                .contains("about to be compacted")
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        warned,
        [2],
        "the warning step comes once, before the summary"
    );
    // The tools are the same as every call's, so the prompt's prefix is
    // read from the cache; the notice asks for the notepad only.
    assert_eq!(requests[2].body["tools"], requests[1].body["tools"]);
    // After the compaction, the notepad is in the prompt beside the summary.
    let system = requests[4].body["system"].to_string();
    assert!(system.contains("## Notepad"), "{system}");
    assert!(
        system.contains("State: counting turns; at three."),
        "{system}"
    );
    assert!(
        system.contains("Summary: the owner counted to two."),
        "{system}"
    );
}
