//! Usage and budgets end to end: the real daemon against the fake model,
//! which reports token counts (cache reads and writes too) the way the
//! Anthropic and OpenAI APIs do; the `usage` rows, `/usage`, `hearth usage`
//! and the budgets that stop a turn.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{
    FakeLlm, Tokens, anthropic_text, anthropic_tool_use, openai_text, openai_tool_call, reporting,
};
use hearth_tests::telegram_home::{OWNER, TelegramHome};
use hearth_tests::{Daemon, Hearth};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
/// How every worker's system prompt starts.
const WORKER: &str = "You are a worker of hearth";
/// A zone fourteen hours ahead of UTC: its day is not UTC's.
const ZONE: &str = "Pacific/Kiritimati";

fn config(fake: &FakeLlm, provider: &str, extra: &str) -> String {
    let base = match provider {
        "openai" => format!("{}/v1", fake.url()),
        _ => fake.url(),
    };
    format!(
        // The example tools (echo) are offered only when the config turns them on.
        "examples = true\n[llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n\
         [owner]\ntimezone = \"{ZONE}\"\n{extra}"
    )
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

fn tokens(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// `12345` as `12,345`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One stored `usage` row.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    agent: i64,
    session: Option<i64>,
    inbox: Option<i64>,
    kind: String,
    provider: String,
    model: String,
    tokens: Tokens,
}

fn rows(h: &Hearth) -> Vec<Row> {
    let db = h.db();
    let mut stmt = db
        .prepare(
            "SELECT agent_id, session_id, inbox_id, kind, provider, model, input_tokens, \
             output_tokens, cache_read_tokens, cache_write_tokens FROM usage ORDER BY id",
        )
        .unwrap();
    let count = |r: &rusqlite::Row<'_>, i| r.get::<_, i64>(i).map(|n| n as u64);
    stmt.query_map([], |r| {
        Ok(Row {
            agent: r.get(0)?,
            session: r.get(1)?,
            inbox: r.get(2)?,
            kind: r.get(3)?,
            provider: r.get(4)?,
            model: r.get(5)?,
            tokens: tokens(count(r, 6)?, count(r, 7)?, count(r, 8)?, count(r, 9)?),
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Waits until the daemon's writer has committed `n` rows.
fn wait_for_rows(h: &Hearth, n: usize) -> Vec<Row> {
    wait_until(&format!("{n} usage rows"), || rows(h).len() >= n);
    rows(h)
}

/// `hearth usage ARGS --json`.
fn usage_json(h: &Hearth, args: &[&str]) -> Value {
    let mut all = vec!["usage"];
    all.extend_from_slice(args);
    all.push("--json");
    h.cmd(&all).json()
}

/// Stores a usage row at `at_ms`, as a daemon would have.
fn seed(h: &Hearth, at_ms: i64, model: &str, t: Tokens) {
    h.db()
        .execute(
            "INSERT INTO usage (at_ms, agent_id, kind, provider, model, input_tokens, \
             output_tokens, cache_read_tokens, cache_write_tokens) \
             VALUES (?1, 1, 'turn', 'anthropic', ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                at_ms,
                model,
                t.input as i64,
                t.output as i64,
                t.cache_read as i64,
                t.cache_write as i64
            ],
        )
        .unwrap();
}

/// Midnight today and at the start of this month in [`ZONE`], and
/// tomorrow's date there, as the test reckons them.
fn local_bounds() -> (i64, i64, String) {
    let now = Timestamp::now().to_zoned(TimeZone::get(ZONE).unwrap());
    let today = now.date();
    let ms = |d: jiff::civil::Date| {
        d.to_zoned(TimeZone::get(ZONE).unwrap())
            .unwrap()
            .timestamp()
            .as_millisecond()
    };
    (
        ms(today),
        ms(today.first_of_month()),
        today.tomorrow().unwrap().to_string(),
    )
}

#[test]
fn every_model_call_is_recorded_and_adds_up_to_what_the_model_reported() {
    let fake = FakeLlm::start();
    // Turn one: a worker, then the answer.
    fake.push(reporting(
        anthropic_tool_use(
            None,
            "w1",
            "spawn_agent",
            &json!({"spec": {"allowed_tools": []}, "task": "look it up"}),
        ),
        tokens(120, 30, 4000, 900),
    ));
    fake.push_for(
        WORKER,
        reporting(anthropic_text("found it"), tokens(80, 12, 0, 600)),
    );
    fake.push(reporting(anthropic_text("one"), tokens(150, 5, 4000, 0)));
    // Turn two, plain; turn three crosses the compaction limit: the step
    // before it, the summary, then the answer.
    fake.push(reporting(anthropic_text("two"), tokens(160, 6, 4100, 0)));
    fake.push(reporting(anthropic_text("ok"), tokens(170, 2, 4100, 0)));
    fake.push(reporting(
        anthropic_text("Summary: one and two."),
        tokens(300, 9, 0, 0),
    ));
    fake.push(reporting(anthropic_text("three"), tokens(90, 4, 0, 700)));
    let h = Hearth::new(&config(
        &fake,
        "anthropic",
        "[agent]\ncompact_after_messages = 4\nkeep_recent_messages = 2\n",
    ));
    let daemon = start(&h);
    for (text, answer) in [("first", "one"), ("second", "two"), ("third", "three")] {
        assert_eq!(h.chat(text).ok().trim(), answer);
    }

    let reported = fake.reported();
    assert_eq!(reported.len(), 7, "every call answered");
    let rows = wait_for_rows(&h, 7);
    assert_eq!(rows.len(), 7, "{rows:#?}");
    let stored: Tokens = rows.iter().map(|r| r.tokens).sum();
    assert_eq!(stored, reported.iter().copied().sum::<Tokens>());
    assert_eq!(stored, tokens(1070, 68, 16200, 2200));
    // Each call as the model reported it, in the order they answered.
    let mut by_call: Vec<Tokens> = rows.iter().map(|r| r.tokens).collect();
    let mut sent = reported.clone();
    by_call.sort_by_key(|t| (t.input, t.output));
    sent.sort_by_key(|t| (t.input, t.output));
    assert_eq!(by_call, sent);
    let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    for kind in ["turn", "worker", "pre_compaction", "compaction"] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    assert_eq!(kinds.iter().filter(|k| **k == "turn").count(), 4);
    for row in &rows {
        assert_eq!(
            (row.agent, row.provider.as_str(), row.model.as_str()),
            (1, "anthropic", "fake-model")
        );
        assert!(row.session.is_some() && row.inbox.is_some(), "{row:?}");
    }
    // The worker's call is in its own session, counted toward the turn
    // that spawned it.
    let worker = rows.iter().find(|r| r.kind == "worker").unwrap();
    let (worker_session, worker_turn): (i64, i64) = h
        .db()
        .query_row("SELECT session_id, caller_inbox_id FROM workers", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (worker.session, worker.inbox),
        (Some(worker_session), Some(worker_turn))
    );
    let first_turn = rows.iter().find(|r| r.kind == "turn").unwrap();
    assert_eq!(first_turn.inbox, Some(worker_turn));
    assert_ne!(first_turn.session, Some(worker_session));

    // `hearth usage` reads the same, while the daemon runs; fake-model has
    // no price until the config gives it one.
    let report = usage_json(&h, &[]);
    let today = &report["periods"][0];
    assert_eq!(today["period"], "day");
    assert_eq!(report["periods"][1]["period"], "month");
    assert_eq!(today["calls"], 7);
    assert_eq!(today["total_tokens"], stored.total());
    let model = &today["models"][0];
    assert_eq!(
        (
            &model["model"],
            &model["provider"],
            &model["input_tokens"],
            &model["output_tokens"],
            &model["cache_read_tokens"],
            &model["cache_write_tokens"]
        ),
        (
            &json!("fake-model"),
            &json!("anthropic"),
            &json!(1070),
            &json!(68),
            &json!(16200),
            &json!(2200)
        )
    );
    assert_eq!(model["cost_usd"], Value::Null);
    assert_eq!(today["unpriced"], json!(["fake-model"]));
    let text = h.cmd(&["usage"]).ok().to_owned();
    assert!(
        text.contains("fake-model (anthropic): 7 calls; 1,070 in, 16,200 cache read, 2,200 cache write, 68 out, 83% cached; no price"),
        "{text}"
    );

    let priced = format!(
        "{}\n[prices.\"fake-model\"]\ninput = 3\noutput = 15\ncache_read = 0.3\ncache_write = 3.75\n",
        std::fs::read_to_string(h.config()).unwrap()
    );
    h.write_config(&priced);
    // `hearth usage` asks the running daemon, which prices with the config
    // it runs: new prices count from the reload on.
    daemon.signal(libc::SIGHUP);
    daemon.wait_for_log(|l| l.contains("\"message\":\"config reloaded\""), WAIT);
    let report = usage_json(&h, &["--day"]);
    assert_eq!(report["periods"].as_array().unwrap().len(), 1);
    let cost = report["periods"][0]["cost_usd"].as_f64().unwrap();
    let want = (1070.0 * 3.0 + 68.0 * 15.0 + 16200.0 * 0.3 + 2200.0 * 3.75) / 1e6;
    assert!((cost - want).abs() < 1e-12, "{cost} vs {want}");
}

#[test]
fn a_sub_agents_turn_is_recorded_as_its_own() {
    let fake = FakeLlm::start();
    let marker = "You are helper, one of the agents";
    fake.push(anthropic_tool_use(
        None,
        "ask",
        "send_agent_message",
        &json!({"agent": "helper", "text": "What is 2+2?"}),
    ));
    fake.push(anthropic_text("I asked helper."));
    fake.push_for(marker, reporting(anthropic_text("4"), tokens(77, 3, 0, 0)));
    fake.push(anthropic_text("helper says 4"));
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let _daemon = start(&h);
    h.cmd(&[
        "tool",
        "call",
        "manage_agents",
        &json!({"action": "create", "name": "helper", "allowed_tools": [],
                "system_prompt": "You are the helper test agent."})
        .to_string(),
    ])
    .ok();
    let helper: i64 = h
        .db()
        .query_row("SELECT id FROM agents WHERE name = 'helper'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let listener = h.listen();
    h.chat("ask helper").ok();
    listener.wait_for(2, WAIT);

    let rows = wait_for_rows(&h, 4);
    assert_eq!(fake.reported().len(), 4);
    let stored: Tokens = rows.iter().map(|r| r.tokens).sum();
    assert_eq!(stored, fake.reported().into_iter().sum::<Tokens>());
    let helpers: Vec<&Row> = rows.iter().filter(|r| r.agent == helper).collect();
    assert_eq!(helpers.len(), 1, "{rows:#?}");
    assert_eq!(helpers[0].tokens, tokens(77, 3, 0, 0));
    assert_eq!(helpers[0].kind, "turn");
    assert_eq!(rows.iter().filter(|r| r.agent == 1).count(), 3);
}

#[test]
fn openai_cached_tokens_are_split_off_the_prompt_and_usage_shows_the_cost() {
    let fake = FakeLlm::start();
    fake.push(reporting(
        openai_tool_call("call_1", "echo", &json!({"text": "hi"})),
        tokens(200, 30, 800, 0),
    ));
    fake.push(reporting(openai_text("done"), tokens(300, 40, 900, 0)));
    let h = Hearth::new(&config(
        &fake,
        "openai",
        "[prices.\"fake-model\"]\ninput = 2.0\noutput = 8.0\ncache_read = 0.5\n",
    ));
    let _daemon = start(&h);
    assert_eq!(h.chat("go").ok().trim(), "done");
    let stored: Vec<Tokens> = wait_for_rows(&h, 2).iter().map(|r| r.tokens).collect();
    // prompt_tokens 1000 with 800 cached: 200 read afresh.
    assert_eq!(stored, [tokens(200, 30, 800, 0), tokens(300, 40, 900, 0)]);
    assert_eq!(stored, fake.reported());

    let help = h.chat("/help").ok().to_owned();
    assert!(
        help.contains("/usage - tokens and estimated cost"),
        "{help}"
    );
    let shown = h.chat("/usage").ok().to_owned();
    // (500 × 2 + 70 × 8 + 1,700 × 0.5) / 1,000,000 = $0.00241
    let today = format!(", {ZONE}): 2,270 tokens in 2 model calls, about $0.0024");
    for part in [
        "Today (",
        &today,
        "This month (",
        "- fake-model (openai): 2 calls; 500 in, 1,700 cache read, 70 out, 77% cached; $0.0024",
        "; 77% of the prompt read from the cache",
        "Every call starts with about ",
        "Daily budget: none",
        "Per turn: no limit",
        "Costs are estimates",
    ] {
        assert!(shown.contains(part), "{part:?} in:\n{shown}");
    }
}

#[test]
fn hearth_usage_counts_by_the_owners_day_and_month_and_prices_known_models() {
    let h = Hearth::new(&format!(
        "[owner]\ntimezone = \"{ZONE}\"\n[agent]\ndaily_token_budget = 5000000\n\
         max_tokens_per_turn = 200000\n"
    ));
    // No store yet: nothing recorded, which is an answer too.
    let empty = usage_json(&h, &[]);
    assert_eq!(empty["periods"][0]["calls"], 0);
    let raw = h.cmd(&["usage", "--json"]).ok().to_owned();
    assert!(
        raw.contains("\"cost_usd\": 0.0") && !raw.contains("-0.0"),
        "{raw}"
    );
    assert_eq!(empty["zone"], ZONE);
    h.cmd(&["audit"]).ok();
    let (midnight, month_start, tomorrow) = local_bounds();
    let now = Timestamp::now().as_millisecond();
    // (when, model, tokens): each a power of ten, so the sums show which
    // rows were counted.
    let rows = [
        (
            now - 1_000,
            "claude-sonnet-4-5-20250929",
            tokens(1, 0, 0, 0),
        ),
        (midnight, "claude-sonnet-4-5-20250929", tokens(10, 0, 0, 0)),
        (midnight, "mystery-model", tokens(0, 100, 0, 0)),
        (
            midnight - 1,
            "claude-sonnet-4-5-20250929",
            tokens(1000, 0, 0, 0),
        ),
        (
            month_start,
            "claude-sonnet-4-5-20250929",
            tokens(0, 0, 10_000, 0),
        ),
        (
            month_start - 1,
            "claude-sonnet-4-5-20250929",
            tokens(0, 0, 0, 100_000),
        ),
    ];
    for (at, model, t) in rows {
        seed(&h, at, model, t);
    }
    let sum = |pick: &dyn Fn(i64) -> bool, model: Option<&str>| -> Tokens {
        rows.iter()
            .filter(|(at, m, _)| pick(*at) && model.is_none_or(|want| want == *m))
            .map(|(_, _, t)| *t)
            .sum()
    };
    let in_day = |at: i64| at >= midnight;
    let in_month = |at: i64| at >= month_start;

    let both = usage_json(&h, &[]);
    for (i, (which, pick)) in [
        ("day", &in_day as &dyn Fn(i64) -> bool),
        ("month", &in_month),
    ]
    .into_iter()
    .enumerate()
    {
        let period = &both["periods"][i];
        assert_eq!(period["period"], which);
        assert_eq!(period["total_tokens"], sum(pick, None).total(), "{which}");
        let sonnet = period["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == "claude-sonnet-4-5-20250929")
            .unwrap();
        let t = sum(pick, Some("claude-sonnet-4-5-20250929"));
        let want =
            (t.input as f64 * 3.0 + t.cache_read as f64 * 0.3 + t.cache_write as f64 * 3.75) / 1e6;
        let cost = sonnet["cost_usd"].as_f64().unwrap();
        assert!((cost - want).abs() < 1e-12, "{which}: {cost} vs {want}");
        assert_eq!(period["unpriced"], json!(["mystery-model"]), "{which}");
    }
    assert_eq!(both["budgets"]["daily_token_budget"], 5_000_000);
    assert_eq!(both["budgets"]["used_today"], sum(&in_day, None).total());
    assert_eq!(both["budgets"]["max_tokens_per_turn"], 200_000);
    assert!(
        both["budgets"]["resets_at_local"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{tomorrow} 00:00")),
        "{}",
        both["budgets"]
    );
    let day = usage_json(&h, &["--day"]);
    assert_eq!(day["periods"].as_array().unwrap().len(), 1);
    assert_eq!(day["periods"][0]["period"], "day");
    let month = usage_json(&h, &["--month"]);
    assert_eq!(month["periods"][0]["period"], "month");

    let text = h.cmd(&["usage", "--day"]).ok().to_owned();
    let today = sum(&in_day, None).total();
    let calls = rows.iter().filter(|(at, _, _)| in_day(*at)).count();
    assert!(
        text.contains(&format!(
            ", {ZONE}): {} tokens in {calls} model calls",
            grouped(today)
        )),
        "{text}"
    );
    assert!(text.contains("without mystery-model (no price)"), "{text}");
    assert!(
        text.contains(&format!(
            "Daily budget ([agent] daily_token_budget): {} of 5,000,000 tokens used",
            grouped(today)
        )),
        "{text}"
    );

    // Bad flags are refused, naming the flag.
    let both_flags = h.cmd(&["usage", "--day", "--month"]).fails();
    assert!(
        both_flags.contains("--month") && both_flags.contains("cannot be used with"),
        "{both_flags}"
    );
    let unknown = h.cmd(&["usage", "--week"]).fails();
    assert!(unknown.contains("--week"), "{unknown}");
}

#[test]
fn the_daily_budget_stops_a_turn_and_says_which_how_much_and_when_it_resets() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(
        &fake,
        "anthropic",
        "[agent]\ndaily_token_budget = 1000\n",
    ));
    // Yesterday's calls (in the owner's zone) are not today's.
    h.cmd(&["audit"]).ok();
    let (midnight, _, tomorrow) = local_bounds();
    seed(&h, midnight - 1, "fake-model", tokens(1_000_000, 0, 0, 0));
    let _daemon = start(&h);

    fake.push(reporting(
        anthropic_tool_use(None, "e1", "echo", &json!({"text": "a"})),
        tokens(300, 100, 0, 0),
    ));
    fake.push(reporting(
        anthropic_text("first done"),
        tokens(300, 100, 0, 0),
    ));
    assert_eq!(h.chat("first").ok().trim(), "first done");

    // The step that crosses the budget asked for a tool: it does not run.
    fake.push(reporting(
        anthropic_tool_use(None, "e2", "echo", &json!({"text": "b"})),
        tokens(200, 100, 0, 0),
    ));
    let reply = h.chat("second").ok().to_owned();
    let expected = format!(
        "I stopped: the daily token budget ([agent] daily_token_budget) of 1,000 tokens is used \
         up, 1,100 tokens since midnight ({ZONE}). It resets at {tomorrow} 00:00"
    );
    assert!(reply.contains(&expected), "{reply}\nwanted: {expected}");
    assert_eq!(fake.requests().len(), 3);
    let echoes: i64 = h
        .db()
        .query_row("SELECT count(*) FROM audit WHERE tool = 'echo'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(echoes, 1, "the tool of the step over budget did not run");

    // Spent before the turn starts: the model is not asked at all.
    let reply = h.chat("third").ok().to_owned();
    assert!(reply.contains(&expected), "{reply}");
    assert_eq!(fake.requests().len(), 3);
    let used = usage_json(&h, &["--day"]);
    assert_eq!(used["budgets"]["used_today"], 1100);
}

#[test]
fn max_tokens_per_turn_stops_a_turn_and_the_next_starts_a_fresh_count() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(
        &fake,
        "anthropic",
        "[agent]\nmax_tokens_per_turn = 500\n",
    ));
    let _daemon = start(&h);
    for id in ["e1", "e2"] {
        fake.push(reporting(
            anthropic_tool_use(None, id, "echo", &json!({"text": id})),
            tokens(250, 50, 0, 0),
        ));
    }
    let reply = h.chat("loop").ok().to_owned();
    assert!(
        reply.contains(
            "I stopped: this turn reached its token limit ([agent] max_tokens_per_turn) of 500 \
             tokens, with 600 used."
        ),
        "{reply}"
    );
    assert_eq!(fake.requests().len(), 2);
    fake.push(reporting(anthropic_text("fresh"), tokens(450, 40, 0, 0)));
    assert_eq!(h.chat("again").ok().trim(), "fresh");
}

#[test]
fn a_worker_counts_toward_the_daily_budget_and_stops_at_it() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(
        &fake,
        "anthropic",
        "[agent]\ndaily_token_budget = 1000\n",
    ));
    let _daemon = start(&h);
    fake.push(reporting(
        anthropic_tool_use(
            None,
            "w1",
            "spawn_agent",
            &json!({"spec": {"allowed_tools": ["echo"]}, "task": "spend"}),
        ),
        tokens(100, 0, 0, 0),
    ));
    fake.push_for(
        WORKER,
        reporting(
            anthropic_tool_use(Some("half way"), "e1", "echo", &json!({"text": "x"})),
            tokens(950, 0, 0, 0),
        ),
    );
    let reply = h.chat("delegate").ok().to_owned();
    assert!(
        reply.contains("the daily token budget ([agent] daily_token_budget) of 1,000 tokens is used up, 1,050 tokens"),
        "{reply}"
    );
    assert_eq!(
        fake.requests().len(),
        2,
        "neither the worker nor the turn went on"
    );
    let result: String = h
        .db()
        .query_row("SELECT result FROM workers", [], |r| r.get(0))
        .unwrap();
    assert!(
        result.contains(
            "[the worker stopped at the daily token budget ([agent] daily_token_budget) of 1,000 \
             tokens (1,050 used today"
        ) && result.contains("half way"),
        "{result}"
    );
    let kinds: Vec<String> = wait_for_rows(&h, 2).into_iter().map(|r| r.kind).collect();
    assert_eq!(kinds, ["turn", "worker"]);
}

#[test]
fn a_tasks_own_budget_still_stops_it_and_counts_its_workers() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(&fake, "anthropic", ""));
    let _daemon = start(&h);
    let job = h
        .cmd(&[
            "tool",
            "call",
            "manage_schedule",
            &json!({"action": "add", "kind": "task", "text": "spend", "in": "1h",
                    "token_budget": 1000})
            .to_string(),
        ])
        .json();
    let id = job["id"].as_i64().unwrap();
    fake.push(reporting(
        anthropic_tool_use(
            None,
            "w1",
            "spawn_agent",
            &json!({"spec": {}, "task": "help"}),
        ),
        tokens(400, 0, 0, 0),
    ));
    fake.push_for(
        WORKER,
        reporting(anthropic_text("helped"), tokens(500, 0, 0, 0)),
    );
    fake.push(reporting(
        anthropic_tool_use(None, "e1", "echo", &json!({"text": "x"})),
        tokens(200, 0, 0, 0),
    ));
    h.cmd(&["schedule", "run", &id.to_string()]).ok();
    // The turn's own steps (600) are under the budget; with its worker's
    // (500) they are over it.
    let text = "I stopped: this task's token budget of 1,000 is used up (1,100 tokens so far).";
    wait_until("the task's answer", || {
        h.db()
            .query_row("SELECT count(*) FROM outbox WHERE text = ?1", [text], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
            == 1
    });
    assert_eq!(fake.requests().len(), 3);
}

#[test]
fn a_contact_hears_only_that_the_agent_cannot_answer_and_the_owner_is_told_once() {
    let s = TelegramHome::new("", "[agent]\ndaily_token_budget = 100\n");
    let _daemon = s.start();
    let alex = 2002;
    s.tool(
        "manage_agents",
        json!({"action": "create", "name": "shopping", "allowed_tools": [],
               "system_prompt": "You are the shopping agent."}),
    );
    s.tool(
        "manage_contacts",
        json!({"action": "add", "name": "Alex", "agent": "shopping"}),
    );
    s.tool(
        "manage_contacts",
        json!({"action": "add_identity", "name": "Alex", "channel": "telegram",
               "id": alex.to_string()}),
    );
    s.llm.push(reporting(
        anthropic_text("Noted, Sam."),
        tokens(150, 10, 0, 0),
    ));
    s.telegram.push_message(OWNER, OWNER, "hello");
    s.wait_sent_to(OWNER, 1);

    s.telegram.push_message(alex, alex, "what is on the list?");
    let to_alex = s.wait_sent_to(alex, 1);
    assert_eq!(
        to_alex[0].text,
        "I can't answer right now; please try again later."
    );
    let to_owner = s.wait_sent_to(OWNER, 2);
    let notice = &to_owner[1].text;
    assert!(
        notice.contains("shopping could not answer Alex on telegram")
            && notice.contains("daily token budget ([agent] daily_token_budget) of 100 tokens")
            && notice.contains("160 tokens since midnight"),
        "{notice}"
    );
    // Once a day: the second refusal is not reported again.
    s.telegram.push_message(alex, alex, "hello?");
    s.wait_sent_to(alex, 2);
    s.polled(2);
    assert_eq!(s.sent_to(OWNER).len(), 2, "{:#?}", s.sent_to(OWNER));
    assert_eq!(s.llm.requests().len(), 1);
}

#[test]
fn bad_budgets_and_prices_are_refused_naming_the_key_and_a_reload_keeps_serving() {
    // (config, the key named, what is said)
    let cases = [
        (
            "[agent]\ndaily_token_budget = 0\n",
            "agent.daily_token_budget",
            "at least 1",
        ),
        (
            "[agent]\nmax_tokens_per_turn = 0\n",
            "agent.max_tokens_per_turn",
            "at least 1",
        ),
        (
            "[agent]\ndaily_token_budget = -5\n",
            "daily_token_budget",
            "",
        ),
        (
            "[prices.\"m\"]\ninput = -1\noutput = 2\n",
            "prices.\"m\".input",
            "0 or more",
        ),
        (
            "[prices.\"m\"]\ninput = 1\noutput = 2\ncache_read = nan\n",
            "prices.\"m\".cache_read",
            "not a price",
        ),
        ("[prices.\"m\"]\ninput = 1\n", "output", "missing"),
        (
            "[prices.\"m\"]\ninput = 1\noutput = 2\ncache_rd = 1\n",
            "cache_rd",
            "unknown",
        ),
        (
            "[prices.\"m\"]\ninput = \"cheap\"\noutput = 2\n",
            "input",
            "",
        ),
        (
            "[prices.\"\"]\ninput = 1\noutput = 2\n",
            "prices",
            "must not be empty",
        ),
    ];
    for (text, key, said) in cases {
        let h = Hearth::new(text);
        let out = h.cmd(&["usage"]).fails();
        assert!(
            out.contains("hearth.toml") && out.contains(key) && out.contains(said),
            "{text}: {out}"
        );
    }

    // A reload with a bad price table is refused and the daemon serves on;
    // a good one applies new budgets at once.
    let fake = FakeLlm::start();
    let good = config(&fake, "anthropic", "");
    let h = Hearth::new(&good);
    let good = std::fs::read_to_string(h.config()).unwrap();
    let daemon = start(&h);
    h.write_config(&format!(
        "{good}[prices.\"fake-model\"]\ninput = -3\noutput = 1\n"
    ));
    daemon.signal(libc::SIGHUP);
    daemon.wait_for_log(
        |l| l.contains("config reload refused") && l.contains("prices"),
        WAIT,
    );
    // The command line reads the file too: it gets the good one back.
    h.write_config(&good);
    fake.push(reporting(
        anthropic_text("still here"),
        tokens(40, 10, 0, 0),
    ));
    assert_eq!(h.chat("hi").ok().trim(), "still here");
    h.write_config(&format!("{good}[agent]\ndaily_token_budget = 50\n"));
    daemon.signal(libc::SIGHUP);
    daemon.wait_for_log(|l| l.contains("\"message\":\"config reloaded\""), WAIT);
    let reply = h.chat("more").ok().to_owned();
    assert!(
        reply.contains("daily token budget ([agent] daily_token_budget) of 50 tokens"),
        "{reply}"
    );
}
