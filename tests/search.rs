//! Search over past conversations: the real store with 100,000 messages,
//! the tools called through the registry as each kind of caller, and the
//! index checked against the table after the daemon is killed mid-turn.
//!
//! And `web_search` with no setup: DuckDuckGo's HTML page, the default
//! when no SearXNG or Brave is configured, against a fake of that page on
//! 127.0.0.1 (`fake_search`): results parsed (titles, links unwrapped from
//! DuckDuckGo's redirect, snippets, ads skipped), its bot check said
//! plainly and backed off from, no results said plainly, the egress guard
//! applied to its address, configured backends taking precedence, and the
//! bundled config searching with no key.

use std::net::TcpListener;
use std::time::Duration;

use hearth::caller::{Caller, ToolScope};
use hearth_tests::fake_llm::{FakeLlm, anthropic_text_paced};
use hearth_tests::fake_search::{Doc, FakeSearch};
use hearth_tests::scenarios::bundled_config;
use hearth_tests::{Hearth, call_err, plugin};
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

// ---- web_search through DuckDuckGo, with no setup ---------------------

/// What the model is told when DuckDuckGo suspects a bot.
const RATE_LIMITED: &str =
    "DuckDuckGo is rate limiting; try again in a minute or configure SearXNG/Brave";
/// Said with DuckDuckGo's results.
const CAVEAT: &str = "Key-less DuckDuckGo: rougher results, no dates.";

fn web_corpus() -> Vec<Doc> {
    vec![
        Doc::new(
            "Async Rust: a tour",
            "https://rust.example/async-tour?lang=en&v=2",
            "Futures, executors and async/await in Rust, step by step.",
            2,
        ),
        Doc::new(
            "Rust & async I/O",
            "https://blog.example/rust-io",
            "Why async Rust needs a runtime: it's about waking tasks.",
            20,
        ),
        Doc::new(
            "The Rust async book",
            "https://book.example/async",
            "The official guide to async programming in Rust.",
            300,
        ),
        Doc::new(
            "Gardening in spring",
            "https://garden.example/spring",
            "Plant peas early.",
            1,
        ),
    ]
}

/// `[plugins.web]` with DuckDuckGo at `fake`, allow-listed: the egress
/// guard judges DuckDuckGo's address like any other, and the fake is on
/// loopback.
fn ddg_web(fake: &FakeSearch) -> String {
    format!(
        "[plugins.web]\nduckduckgo_url = \"{}\"\nallow_hosts = [\"127.0.0.1:{}\"]\n",
        fake.duckduckgo_url(),
        fake.port()
    )
}

fn web_search(rt: &hearth::runtime::Runtime, args: Value) -> Result<Value, String> {
    rt.tools.call("web_search", args).map_err(|e| e.to_string())
}

/// `hearth tool call web_search ARGS`.
fn web_search_cli(h: &Hearth, args: &Value) -> hearth_tests::Run {
    h.cmd(&["tool", "call", "web_search", &args.to_string()])
}

#[test]
fn duckduckgo_results_are_parsed_with_links_unwrapped_and_ads_skipped() {
    let fake = FakeSearch::duckduckgo(web_corpus());
    let h = Hearth::with_plugins(&[plugin("web")], &ddg_web(&fake));
    let rt = h.runtime();
    let got = web_search(&rt, json!({"query": "async  rust", "count": 2})).unwrap();
    assert_eq!(
        got,
        json!({
            "query": "async rust",
            "backend": "duckduckgo",
            "results": [
                {
                    // The <b> marks are gone; the link is the page itself,
                    // not DuckDuckGo's /l/?uddg= redirect, its query intact.
                    "title": "Async Rust: a tour",
                    "url": "https://rust.example/async-tour?lang=en&v=2",
                    "snippet": "Futures, executors and async/await in Rust, step by step.",
                },
                {
                    "title": "Rust & async I/O",
                    "url": "https://blog.example/rust-io",
                    "snippet": "Why async Rust needs a runtime: it's about waking tasks.",
                },
            ],
            "note": CAVEAT,
        })
    );
    // Without count, the default of 5; the ad the page opens with is not
    // among them, nor any link of DuckDuckGo's own.
    let all = web_search(&rt, json!({"query": "async rust"})).unwrap();
    let urls: Vec<&str> = all["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "https://rust.example/async-tour?lang=en&v=2",
            "https://blog.example/rust-io",
            "https://book.example/async",
        ]
    );
    // What went over the wire: the form its page posts, no region chosen.
    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        (sent[0].method.as_str(), sent[0].path.as_str()),
        ("POST", "/html/")
    );
    assert_eq!(sent[0].param("q"), Some("async rust"));
    assert_eq!(sent[0].param("kl"), Some("wt-wt"));
    assert_eq!(sent[0].param("df"), None);
    assert_eq!(
        sent[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    // freshness is DuckDuckGo's df, and the note says it is approximate.
    let week = web_search(&rt, json!({"query": "async rust", "freshness": "week"})).unwrap();
    assert_eq!(week["results"].as_array().unwrap().len(), 1, "{week}");
    assert_eq!(fake.requests()[2].param("df"), Some("w"));
    assert_eq!(
        week["note"],
        "Key-less DuckDuckGo: rougher results, no dates, an approximate time filter."
    );
    // A region, when the owner sets one, is its kl.
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!("{}duckduckgo_region = \"de-de\"\n", ddg_web(&fake)),
    );
    web_search(&h.runtime(), json!({"query": "gardening"})).unwrap();
    assert_eq!(fake.requests()[3].param("kl"), Some("de-de"));
}

#[test]
fn duckduckgo_rate_limiting_is_said_plainly_and_backed_off() {
    let fake = FakeSearch::duckduckgo(web_corpus());
    let h = Hearth::with_plugins(&[plugin("web")], &ddg_web(&fake));
    let rt = h.runtime();
    let label = format!("duckduckgo (127.0.0.1:{})", fake.port());
    fake.limit_per_window(1, Duration::from_secs(600));
    web_search(&rt, json!({"query": "async rust"})).unwrap();
    // The second search gets the bot check (HTTP 202, the anomaly page).
    let err = web_search(&rt, json!({"query": "async rust"})).unwrap_err();
    assert_eq!(
        err,
        format!("web_search failed: {label} answered its bot check (HTTP 202). {RATE_LIMITED}")
    );
    assert_eq!(fake.requests().len(), 2);
    // Then hearth asks nothing for a while: asking again at once would
    // prolong the block. The answer says so, in the same plain words.
    let err = web_search(&rt, json!({"query": "gardening"})).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "web_search failed: {label} was not asked: it answered its bot check "
        )) && err.ends_with(RATE_LIMITED),
        "{err}"
    );
    assert_eq!(
        fake.requests().len(),
        2,
        "a request went out while backing off"
    );

    // The same page with 200 is the same block.
    let fake = FakeSearch::duckduckgo(web_corpus());
    fake.anomaly_with_200(true);
    fake.limit_per_window(0, Duration::from_secs(600));
    let h = Hearth::with_plugins(&[plugin("web")], &ddg_web(&fake));
    let err = web_search(&h.runtime(), json!({"query": "async rust"})).unwrap_err();
    assert!(
        err.contains("answered its bot check (HTTP 200). ") && err.ends_with(RATE_LIMITED),
        "{err}"
    );
}

#[test]
fn duckduckgo_finding_nothing_says_so_plainly() {
    let fake = FakeSearch::duckduckgo(web_corpus());
    let h = Hearth::with_plugins(&[plugin("web")], &ddg_web(&fake));
    let rt = h.runtime();
    let got = web_search(&rt, json!({"query": "quantum knitting"})).unwrap();
    assert_eq!(
        got,
        json!({
            "query": "quantum knitting",
            "backend": "duckduckgo",
            "results": [],
            "note": "No results for \"quantum knitting\". Try other or fewer words.",
        })
    );
    let got = web_search(&rt, json!({"query": "rust book", "freshness": "day"})).unwrap();
    assert_eq!(
        got["note"],
        "No results for \"rust book\" from the past day. Try other or fewer words, or a longer freshness."
    );
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn the_bundled_config_searches_with_no_key() {
    let fake = FakeSearch::duckduckgo(web_corpus());
    // The bundled config as it ships, with only DuckDuckGo's address put
    // in (the fake's, allow-listed): no key, no search backend.
    let h = Hearth::exact(&format!("{}\n{}", bundled_config(), ddg_web(&fake)));
    let got = web_search_cli(&h, &json!({"query": "async rust", "count": 1})).json();
    assert_eq!(got["backend"], "duckduckgo", "{got}");
    assert_eq!(
        got["results"],
        json!([{
            "title": "Async Rust: a tour",
            "url": "https://rust.example/async-tour?lang=en&v=2",
            "snippet": "Futures, executors and async/await in Rust, step by step.",
        }])
    );
    // Its description says nothing of setting up: the model just searches.
    let tools = h.cmd(&["tools", "--json"]).json();
    let spec = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["spec"]["name"] == "web_search")
        .map(|t| t["spec"].clone())
        .expect("web_search is offered");
    assert_eq!(
        spec["description"],
        "Searches the web; read a result with web_fetch."
    );
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn duckduckgos_address_goes_through_the_egress_guard() {
    let fake = FakeSearch::duckduckgo(web_corpus());
    // Pointed at loopback and not allow-listed: refused before anything
    // is sent, with how to allow it.
    let h = Hearth::exact(&format!(
        "{}\n[plugins.web]\nduckduckgo_url = \"{}\"\n",
        bundled_config(),
        fake.duckduckgo_url()
    ));
    let out = web_search_cli(&h, &json!({"query": "async rust"})).fails();
    assert!(
        out.contains(&format!(
            "web_search failed: duckduckgo (127.0.0.1:{port}) was not asked: 127.0.0.1 is a loopback \
             address; allow it with [plugins.web] allow_hosts = [\"127.0.0.1:{port}\"]",
            port = fake.port()
        )),
        "{out}"
    );
    assert!(fake.requests().is_empty());
}

#[test]
fn a_configured_backend_replaces_duckduckgo_or_falls_back_to_it() {
    let ddg = FakeSearch::duckduckgo(web_corpus());
    let searxng = FakeSearch::searxng(web_corpus());
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!(
            "{}[plugins.web.search]\nbackend = \"searxng\"\nbase_url = \"{}\"\n",
            ddg_web(&ddg),
            searxng.base_url()
        ),
    );
    let got = web_search(&h.runtime(), json!({"query": "async rust"})).unwrap();
    assert_eq!(got["backend"], "searxng");
    assert!(ddg.requests().is_empty());

    // Listed after a SearXNG that is down, DuckDuckGo answers instead,
    // and the answer names the one that failed.
    let down = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!(
            "{}[[plugins.web.search]]\nbackend = \"searxng\"\nbase_url = \"http://127.0.0.1:{down}\"\n\
             [[plugins.web.search]]\nbackend = \"duckduckgo\"\n",
            ddg_web(&ddg)
        ),
    );
    let got = web_search(&h.runtime(), json!({"query": "async rust"})).unwrap();
    assert_eq!(got["backend"], "duckduckgo");
    assert_eq!(got["results"].as_array().unwrap().len(), 3);
    assert!(
        got["failed_backends"][0]
            .as_str()
            .unwrap()
            .starts_with(&format!("searxng (127.0.0.1:{down}) cannot be reached")),
        "{got}"
    );
    assert_eq!(ddg.requests().len(), 1);
}
