//! Search over past conversations: the real store with 100,000 messages,
//! the tools called through the registry as each kind of caller, and the
//! index checked against the table after the daemon is killed mid-turn.

use std::time::Duration;

use hearth::caller::{Caller, ToolScope};
use hearth_tests::fake_llm::{FakeLlm, anthropic_text_paced};
use hearth_tests::{Hearth, call_err};
use serde_json::{Value, json};

/// Sessions of the main agent with the owner, and one sub-agent's.
const SESSIONS: i64 = 1_000;
const PER_SESSION: i64 = 100;
/// The session (counted from the newest) where the phrase was said.
const AGO: i64 = 500;
const PHRASE: &str = "the blue heron nests by the old mill";

/// Fills the store with `SESSIONS` × `PER_SESSION` messages; the phrase is
/// said once, `AGO` sessions back; the same words, scattered, come later.
fn fill(h: &Hearth) {
    h.cmd(&["agents"]).ok();
    let db = h.db();
    let tx = db.unchecked_transaction().unwrap();
    tx.execute(
        "INSERT INTO agents (id, name, created_at_ms) VALUES (2, 'helper', 0)",
        [],
    )
    .unwrap();
    let filler = [
        "did you water the plants today",
        "the train was late again this morning",
        "remind me to call the plumber about the mill street flat",
        "what is the weather like in the old town",
        "blue skies all week according to the forecast",
    ];
    for s in 0..SESSIONS {
        let agent = if s % 10 == 9 { 2 } else { 1 };
        tx.execute(
            "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (?1, 'telegram', '1001', ?2)",
            rusqlite::params![agent, s * 1000],
        )
        .unwrap();
        let session = tx.last_insert_rowid();
        for m in 0..PER_SESSION {
            let text = if s == SESSIONS - AGO && m == 42 {
                format!("I saw that {PHRASE} last spring")
            } else if s == SESSIONS - 10 && m == 7 {
                // The words, not the phrase.
                "by the mill the old heron was blue and the nests empty".to_owned()
            } else if s == SESSIONS - 1 && m == 1 {
                // In the helper's session: the phrase, which only it may find.
                format!("helper notes: {PHRASE}")
            } else {
                format!("{} ({s}/{m})", filler[(s + m) as usize % filler.len()])
            };
            let role = if m % 2 == 0 { "user" } else { "assistant" };
            let content = json!([{ "type": "text", "text": text }]).to_string();
            tx.execute(
                "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![session, role, content, s * 1000 + m],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn search(rt: &hearth::runtime::Runtime, caller: &Caller, args: Value) -> Result<Value, String> {
    rt.tools
        .call_as(caller, "search_history", args, 0)
        .map_err(|e| e.to_string())
}

#[test]
fn a_phrase_said_500_sessions_ago_is_found_first_and_scoping_holds() {
    let h = Hearth::new("");
    fill(&h);
    let rt = h.runtime();
    let main = Caller::agent(1);
    let found = search(&rt, &main, json!({ "query": PHRASE })).unwrap();
    let hits = found["hits"].as_array().unwrap();
    assert!(hits.len() >= 3, "{found:#}");
    // Both exact ones come first (the main agent sees every agent's), then
    // the scattered words.
    assert!(
        hits[0]["exact"] == true && hits[1]["exact"] == true,
        "{found:#}"
    );
    assert!(hits[2]["exact"] == false, "{found:#}");
    assert!(
        hits[2]["snippet"].as_str().unwrap().contains("[heron]"),
        "{found:#}"
    );
    let said = hits
        .iter()
        .find(|h| h["snippet"].as_str().unwrap().contains("last spring"))
        .unwrap();
    assert_eq!(said["speaker"], "owner");
    assert_eq!(said["agent"], "main");
    assert_eq!(said["channel"], "telegram");

    // A sub-agent finds only its own sessions.
    let helper = Caller::scoped_agent(
        2,
        ToolScope::from_list(&["search_history".into(), "read_history".into()]),
    );
    let own = search(&rt, &helper, json!({ "query": PHRASE })).unwrap();
    let own_hits = own["hits"].as_array().unwrap();
    assert!(!own_hits.is_empty());
    assert!(own_hits.iter().all(|h| h["agent"] == "helper"), "{own:#}");
    assert!(!own.to_string().contains("last spring"), "{own:#}");
    let err = search(&rt, &helper, json!({ "query": PHRASE, "agent": "main" })).unwrap_err();
    assert!(err.contains("its own conversations only"), "{err}");
    // Nor may it read the owner's session around a hit.
    let err = rt
        .tools
        .call_as(
            &helper,
            "read_history",
            json!({ "session": said["session"], "around_message": said["message"] }),
            0,
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("no session"), "{err}");

    // The main agent reads around the hit.
    let around = rt
        .tools
        .call_as(
            &main,
            "read_history",
            json!({ "session": said["session"], "around_message": said["message"], "n": 2 }),
            0,
        )
        .unwrap();
    let messages = around["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5, "{around:#}");
    assert!(messages[2]["text"].as_str().unwrap().contains(PHRASE));
    assert_eq!(messages[3]["speaker"], "main");
}

#[test]
fn bad_searches_are_refused_readably() {
    let h = Hearth::new("");
    fill_small(&h);
    let rt = h.runtime();
    let cases = [
        (json!({ "query": "\"unclosed" }), "is not a valid search"),
        (json!({ "query": "heron AND" }), "is not a valid search"),
        (json!({ "query": "   " }), "field `query`"),
        (json!({ "query": "x".repeat(501) }), "query"),
        (
            json!({ "query": "heron", "since": "last week" }),
            "field `since`",
        ),
        (
            json!({ "query": "heron", "agent": "nobody" }),
            "field `agent`",
        ),
    ];
    for (args, want) in cases {
        let err = call_err(&rt, "search_history", args.clone());
        assert!(err.contains(want), "{args}: {err}");
        assert!(!err.contains("fts5:"), "{args}: {err}");
    }
    let err = call_err(
        &rt,
        "read_history",
        json!({ "session": 999_999, "around_message": 1 }),
    );
    assert!(err.contains("no session 999999"), "{err}");
    // FTS5 syntax that parses works.
    let found = call_ok_search(&rt, json!({ "query": "hero* NOT blue" }));
    assert_eq!(found["count"], 1, "{found:#}");
}

fn call_ok_search(rt: &hearth::runtime::Runtime, args: Value) -> Value {
    hearth_tests::call_ok(rt, "search_history", args)
}

fn fill_small(h: &Hearth) {
    h.cmd(&["agents"]).ok();
    let db = h.db();
    db.execute(
        "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (1, 'local', 'terminal', 0)",
        [],
    )
    .unwrap();
    for text in ["a heron on the roof", "a blue heron", "nothing here"] {
        db.execute(
            "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (1, 'user', ?1, 0)",
            [json!([{ "type": "text", "text": text }]).to_string()],
        )
        .unwrap();
    }
}

#[test]
fn the_index_matches_the_messages_after_a_kill_mid_turn() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\n",
        fake.url()
    ));
    for round in 0..3 {
        fake.push(anthropic_text_paced(
            &["a slow ", "answer ", "that is ", "cut short"],
            Duration::from_millis(300),
        ));
        let mut daemon = h.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        });
        let mut child = h
            .command(&["chat", "-m", &format!("message number {round}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        daemon.kill9();
        let _ = child.kill();
        let _ = child.wait();
    }
    let count = |sql: &str| -> i64 { h.db().query_row(sql, [], |r| r.get(0)).unwrap() };
    let messages = count("SELECT count(*) FROM messages");
    assert!(messages > 0);
    // Every message is indexed or queued for it, never neither or both.
    assert_eq!(
        count("SELECT count(*) FROM message_index")
            + count("SELECT count(*) FROM message_index_queue"),
        messages
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM message_index_queue q \
             JOIN message_index x ON x.rowid = q.message_id"
        ),
        0
    );
    // A search indexes what is queued first, and finds it.
    let rt = h.runtime();
    let found = hearth_tests::call_ok(&rt, "search_history", json!({ "query": "message number" }));
    let said = count("SELECT count(*) FROM messages WHERE content LIKE '%message number%'");
    assert!(said >= 1);
    assert_eq!(found["count"], said, "{found:#}");
    assert_eq!(count("SELECT count(*) FROM message_index"), messages);
    h.db()
        .execute(
            "INSERT INTO message_index (message_index, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
}
