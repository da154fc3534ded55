//! Recall by meaning end to end: the daemon with `[memory.embeddings]`
//! naming a fake OpenAI-compatible embeddings server on 127.0.0.1
//! (`fake_embeddings`), messages and notes embedded in the background,
//! and `search_history` and `manage_knowledge` finding by meaning what
//! their words do not say; the same store without the endpoint searching
//! by keyword as before; the endpoint down (search answers by keyword and
//! says so, the indexing catches up once it is back); and broken answers
//! (the wrong length, NaN, too many vectors, 429 with Retry-After)
//! refused with a clear log line and nothing lost.

use std::time::{Duration, Instant};

use hearth::caller::Caller;
use hearth_tests::fake_embeddings::{Broken, DIMS, FakeEmbeddings};
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

const QUESTION: &str = "what did I say about my sister's birthday";
const SAID: &str = "Anna turns 40 on 3 May";
const KEY: &str = "sk-embed-test-5f2c9a";

/// The config naming `fake`, with `extra` keys.
fn config(fake: &FakeEmbeddings, extra: &str) -> String {
    format!(
        "[memory.embeddings]\nbase_url = \"{}\"\nmodel = \"fake-embed\"\n\
         query_timeout_ms = 2000\n{extra}",
        fake.url()
    )
}

/// A session of the owner's with `SAID` among everyday messages; returns
/// how many messages were stored.
fn fill(h: &Hearth) -> i64 {
    h.cmd(&["agents"]).ok();
    let db = h.db();
    db.execute(
        "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (1, 'telegram', '1001', 0)",
        [],
    )
    .unwrap();
    let session = db.last_insert_rowid();
    let texts = [
        "did you water the plants today",
        SAID,
        "the train was late again this morning",
        "remind me to buy lemon for the tea",
        "the shed roof needs fixing before winter",
    ];
    for (i, text) in texts.iter().enumerate() {
        let content = json!([{ "type": "text", "text": text }]).to_string();
        db.execute(
            "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (?1, 'user', ?2, ?3)",
            rusqlite::params![session, content, i as i64 * 1000],
        )
        .unwrap();
    }
    texts.len() as i64
}

fn tool(h: &Hearth, name: &str, args: Value) -> Value {
    h.cmd(&["tool", "call", name, &args.to_string()]).json()
}

fn count(h: &Hearth, sql: &str) -> i64 {
    h.db().query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Waits until `n` vectors are stored and nothing is queued.
fn wait_indexed(h: &Hearth, n: i64, timeout: Duration) {
    let start = Instant::now();
    loop {
        let stored = count(h, "SELECT count(*) FROM embeddings");
        let queued = count(h, "SELECT count(*) FROM embedding_queue");
        if stored == n && queued == 0 {
            return;
        }
        assert!(
            start.elapsed() < timeout,
            "{stored} of {n} vectors stored, {queued} queued after {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_EMBED_KEY", KEY);
    })
}

#[test]
fn meaning_finds_what_the_words_miss_and_keyword_search_is_unchanged_without_it() {
    let fake = FakeEmbeddings::start().with_key(KEY);
    let h = Hearth::new(&config(&fake, "api_key_env = \"HEARTH_TEST_EMBED_KEY\"\n"));
    let messages = fill(&h);
    let daemon = start(&h);
    let added = tool(
        &h,
        "manage_knowledge",
        json!({"tier": "memory", "action": "add", "text": SAID}),
    );
    tool(
        &h,
        "manage_knowledge",
        json!({"tier": "scratchpad", "action": "add", "title": "Garden plan",
               "body": "Tomatoes along the south wall; beans where the shed was."}),
    );
    wait_indexed(&h, messages + 2, Duration::from_secs(20));

    let found = tool(&h, "search_history", json!({ "query": QUESTION }));
    assert_eq!(found["search"], "hybrid", "{found:#}");
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(
        hits.len(),
        1,
        "only the message alike in meaning: {found:#}"
    );
    assert!(
        hits[0]["snippet"].as_str().unwrap().contains(SAID),
        "{found:#}"
    );
    assert_eq!(hits[0]["matched"], "meaning");
    assert!(hits[0]["similarity"].as_f64().unwrap() > 0.8, "{found:#}");
    assert_eq!(hits[0]["speaker"], "owner");
    // A word match and a meaning match of one message are one hit.
    let both = tool(&h, "search_history", json!({ "query": "Anna's birthday" }));
    let first = &both["hits"][0];
    assert!(
        first["snippet"].as_str().unwrap().contains("Anna"),
        "{both:#}"
    );

    let memories = tool(
        &h,
        "manage_knowledge",
        json!({"tier": "memory", "action": "list", "query": QUESTION}),
    );
    assert_eq!(memories["search"], "hybrid", "{memories:#}");
    assert_eq!(memories["memories"][0]["id"], added["id"], "{memories:#}");
    assert_eq!(memories["memories"][0]["matched"], "meaning");
    let entries = tool(
        &h,
        "manage_knowledge",
        json!({"tier": "scratchpad", "action": "list", "query": "garden"}),
    );
    assert_eq!(entries["entries"][0]["title"], "Garden plan", "{entries:#}");
    assert_eq!(entries["entries"][0]["matched"], "both", "{entries:#}");

    // The wire: the model, the key as a bearer token, batches of texts.
    let requests = fake.requests();
    assert!(requests.iter().all(|r| r.status == 200), "{requests:?}");
    assert!(requests.iter().all(|r| r.body["model"] == "fake-embed"));
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {KEY}")))
    );
    assert!(
        requests.iter().any(|r| r.inputs().len() > 1),
        "the catch-up is batched"
    );
    assert!(
        requests.iter().any(|r| r.inputs() == [QUESTION]),
        "the query is embedded"
    );
    let stored: (String, i64, i64) = h
        .db()
        .query_row(
            "SELECT model, dims, length(vector) FROM embeddings LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        stored,
        ("fake-embed".to_owned(), DIMS as i64, DIMS as i64 * 4)
    );
    assert!(
        !daemon.logs().join("\n").contains(KEY),
        "the key is never logged"
    );
    drop(daemon);
    let db = std::fs::read(h.home().join("hearth.db")).unwrap();
    let text = String::from_utf8_lossy(&db);
    assert!(!text.contains(KEY), "the key is never stored");

    // The same store without the endpoint: keyword search, as before.
    let plain = Hearth::new("");
    fill(&plain);
    let rt = plain.runtime();
    let call =
        |name: &str, args: Value| rt.tools.call_as(&Caller::agent(1), name, args, 0).unwrap();
    let found = call("search_history", json!({ "query": QUESTION }));
    assert_eq!(found["count"], 0, "{found:#}");
    assert!(found.get("search").is_none(), "{found:#}");
    let found = call("search_history", json!({ "query": "Anna" }));
    assert_eq!(found["count"], 1, "{found:#}");
    assert!(found["hits"][0].get("matched").is_none(), "{found:#}");
    call(
        "manage_knowledge",
        json!({"tier": "memory", "action": "add", "text": SAID}),
    );
    let memories = call(
        "manage_knowledge",
        json!({"tier": "memory", "action": "list", "query": QUESTION}),
    );
    assert_eq!(memories["memories"], json!([]), "{memories:#}");
    let queued: i64 = plain
        .db()
        .query_row("SELECT count(*) FROM embedding_queue", [], |r| r.get(0))
        .unwrap();
    assert_eq!(queued, 0, "nothing is queued without an endpoint");
}

#[test]
fn with_the_endpoint_down_search_answers_by_keyword_and_indexing_catches_up() {
    let fake = FakeEmbeddings::start();
    fake.set_down(true);
    let h = Hearth::new(&config(&fake, ""));
    let messages = fill(&h);
    let daemon = start(&h);
    daemon.wait_for_log(
        |l| l.contains("cannot embed for recall by meaning (kept queued)"),
        Duration::from_secs(20),
    );
    let found = tool(&h, "search_history", json!({ "query": QUESTION }));
    assert_eq!(found["search"], "keyword", "{found:#}");
    assert!(
        found["note"]
            .as_str()
            .unwrap()
            .contains("searched by keyword only: the search by meaning is unavailable"),
        "{found:#}"
    );
    assert_eq!(found["count"], 0);
    let found = tool(&h, "search_history", json!({ "query": "Anna" }));
    assert_eq!(found["count"], 1, "the words still find it: {found:#}");
    assert_eq!(found["search"], "keyword");
    assert_eq!(count(&h, "SELECT count(*) FROM embeddings"), 0);
    assert_eq!(count(&h, "SELECT count(*) FROM embedding_queue"), messages);

    fake.set_down(false);
    wait_indexed(&h, messages, Duration::from_secs(40));
    daemon.wait_for_log(
        |l| l.contains("the embeddings endpoint answers again"),
        Duration::from_secs(5),
    );
    let found = tool(&h, "search_history", json!({ "query": QUESTION }));
    assert_eq!(found["search"], "hybrid", "{found:#}");
    assert!(
        found["hits"][0]["snippet"].as_str().unwrap().contains(SAID),
        "{found:#}"
    );
}

#[test]
fn broken_answers_are_refused_with_a_clear_error_and_nothing_is_lost() {
    let fake = FakeEmbeddings::start();
    for how in [Broken::WrongDims, Broken::NaN, Broken::TooMany] {
        fake.break_next(how);
    }
    fake.fail_next(
        429,
        "Rate limit reached for requests",
        "requests",
        Some("1"),
    );
    let h = Hearth::new(&config(
        &fake,
        &format!("dimensions = {DIMS}\nbatch_size = 2\n"),
    ));
    let messages = fill(&h);
    let daemon = start(&h);
    wait_indexed(&h, messages, Duration::from_secs(60));
    let logs = daemon.logs().join("\n");
    for says in [
        "has 7 numbers where 32 were expected",
        "not an embeddings answer",
        "`data` has 3 vectors for the 2 texts sent",
        "rate limiting (429): Rate limit reached for requests (requests, rate_limit_exceeded)",
    ] {
        assert!(logs.contains(says), "the log says {says:?}:\n{logs}");
    }
    let requests = fake.requests();
    assert!(requests.iter().all(|r| r.body["dimensions"] == DIMS));
    // Every message of the first batch was sent again until it was stored.
    let first = requests[0].inputs();
    assert_eq!(
        requests.iter().filter(|r| r.inputs() == first).count(),
        5,
        "{requests:?}"
    );
    let found = tool(&h, "search_history", json!({ "query": QUESTION }));
    assert_eq!(found["search"], "hybrid", "{found:#}");
    assert!(
        found["hits"][0]["snippet"].as_str().unwrap().contains(SAID),
        "{found:#}"
    );
}

#[test]
fn the_key_can_come_from_the_secret_store_and_a_missing_one_is_said() {
    let fake = FakeEmbeddings::start().with_key(KEY);
    let h = Hearth::new(&config(&fake, "api_key_secret = \"EMBEDDINGS_KEY\"\n"));
    let messages = fill(&h);
    let daemon = h.daemon();
    // No secret yet: searches say why they answer by keyword.
    let found = tool(&h, "search_history", json!({ "query": QUESTION }));
    assert_eq!(found["search"], "keyword", "{found:#}");
    assert!(
        found["note"]
            .as_str()
            .unwrap()
            .contains("the secret EMBEDDINGS_KEY is not set"),
        "{found:#}"
    );
    h.cmd_with_input(&["secret", "set", "EMBEDDINGS_KEY"], &format!("{KEY}\n"))
        .ok();
    // Read at each request: no restart needed.
    wait_indexed(&h, messages, Duration::from_secs(60));
    let found = tool(&h, "search_history", json!({ "query": QUESTION }));
    assert_eq!(found["search"], "hybrid", "{found:#}");
    assert!(
        !daemon.logs().join("\n").contains(KEY),
        "the key is never logged"
    );
}
