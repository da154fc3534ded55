//! Benchmark: what the owner pays per call, in tokens, against fakes that
//! keep a prompt cache as Anthropic and OpenAI document it
//! (`support/prompt_cache.rs`, four bytes to a token).
//!
//! With the bundled config (`config/hearth.toml`, in production mode so
//! that the memory the model saves does not wait for an approval, and the
//! canvas on a free port) and a model at the fake:
//! - the fixed overhead of a first call: the whole prompt of a
//!   conversation's first call, its one short message included;
//! - a conversation of five short messages, a tool call and a new memory
//!   in the second, then a minute boundary (waited for, up to a minute)
//!   before the last three: the share of input tokens read
//!   from the cache on the calls after the boundary, under Anthropic's
//!   rules and under OpenAI's automatic prefix rules;
//! - the same share for a worker's conversation (`spawn_agent`, three
//!   steps), a group member's (a one-deliverable mission), and what a
//!   scheduled task's fresh session reads of its first call (the main
//!   agent's fixed prefix).
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench prompt_cache`.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{
    FakeLlm, Reply, anthropic_text, anthropic_tool_use, openai_text, openai_tool_call,
};
use hearth_tests::prompt_cache::CacheOutcome;
use hearth_tests::scenarios::{bundled_config, group_mission, script_worker, worker_outcomes};
use hearth_tests::{Daemon, Hearth};
use serde_json::json;

fn main() {
    let conversations: Vec<Conversation> = ["anthropic", "openai"]
        .into_iter()
        .map(Conversation::start)
        .collect();
    for c in &conversations {
        c.say("hello", c.text("Hello! What can I do for you?"));
        // The tool call's answer is queued before the message is sent:
        // `say` waits for the whole turn.
        c.fake.push(c.tool(
            "call_1",
            "manage_knowledge",
            &json!({"tier": "memory", "action": "add", "text": "The owner takes tea with lemon"}),
        ));
        c.say(
            "remember that I take my tea with lemon",
            c.text("Noted: tea with lemon."),
        );
    }
    // The clock moves on: a prompt with the time in it would change here.
    let boundary = wait_for_the_next_minute();
    let before: Vec<usize> = conversations
        .iter()
        .map(|c| c.fake.cache_outcomes().len())
        .collect();
    for c in &conversations {
        for (text, answer) in [
            ("what is 17 times 23?", "391."),
            ("and what day is it?", "It is the day in the header."),
            ("thanks", "You're welcome."),
        ] {
            c.say(text, c.text(answer));
        }
    }
    let first = &conversations[0].fake.cache_outcomes()[0];
    println!(
        "main conversation: 5 messages, a tool call and a new memory, a minute boundary at {boundary}"
    );
    println!(
        "figure: fixed overhead of a first call (tools and system prompt, one short message): {} tokens (target <= 6000)",
        first.total
    );
    for (c, before) in conversations.iter().zip(before) {
        let outcomes = c.fake.cache_outcomes();
        print_calls(c.provider, &outcomes);
        println!(
            "figure: {} share of input tokens from the cache after a minute boundary: {:.1} % (target >= 90)",
            c.provider,
            share(&outcomes[before..]) * 100.0
        );
        println!(
            "  {}: calls 2..{}: {:.1} %",
            c.provider,
            outcomes.len(),
            share(&outcomes[1..]) * 100.0
        );
    }
    scheduled_task(&conversations[0]);
    worker();
    group_member();
}

/// One daemon with the bundled config, its model at a caching fake.
struct Conversation {
    provider: &'static str,
    fake: FakeLlm,
    h: Hearth,
    _daemon: Daemon,
}

impl Conversation {
    fn start(provider: &'static str) -> Conversation {
        let fake = FakeLlm::start();
        fake.keep_prompt_cache();
        let h = bundled(&fake, provider);
        let daemon = start(&h);
        Conversation {
            provider,
            fake,
            h,
            _daemon: daemon,
        }
    }

    fn text(&self, text: &str) -> Reply {
        match self.provider {
            "openai" => openai_text(text),
            _ => anthropic_text(text),
        }
    }

    fn tool(&self, id: &str, name: &str, input: &serde_json::Value) -> Reply {
        match self.provider {
            "openai" => openai_tool_call(id, name, input),
            _ => anthropic_tool_use(None, id, name, input),
        }
    }

    fn say(&self, text: &str, answer: Reply) {
        self.fake.push(answer);
        self.h.chat(text).ok();
    }
}

/// The bundled config, in production mode, its canvas on a free port,
/// with `[llm]` at the fake.
fn bundled(fake: &FakeLlm, provider: &str) -> Hearth {
    let config = bundled_config().replace("mode = \"development\"", "mode = \"production\"");
    let base = match provider {
        "openai" => format!("{}/v1", fake.url()),
        _ => fake.url(),
    };
    Hearth::exact(&format!(
        "{config}\n[llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
         api_key_env = \"HEARTH_BENCH_KEY\"\nmax_retries = 0\n"
    ))
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_BENCH_KEY", "bench-key");
    })
}

/// Sleeps until the wall clock's minute changes; the new minute.
fn wait_for_the_next_minute() -> String {
    let minute = || jiff::Zoned::now().strftime("%H:%M").to_string();
    let now = minute();
    while minute() == now {
        std::thread::sleep(Duration::from_millis(200));
    }
    minute()
}

/// Read from the cache over all of `outcomes`.
fn share(outcomes: &[CacheOutcome]) -> f64 {
    let (read, total) = outcomes
        .iter()
        .fold((0, 0), |(r, t), o| (r + o.read, t + o.total));
    if total == 0 {
        0.0
    } else {
        read as f64 / total as f64
    }
}

fn print_calls(what: &str, outcomes: &[CacheOutcome]) {
    for (i, o) in outcomes.iter().enumerate() {
        println!(
            "  {what} call {}: {} tokens, {} read from the cache, {} written",
            i + 1,
            o.total,
            o.read,
            o.written
        );
    }
}

fn wait_outcomes(fake: &FakeLlm, n: usize) -> Vec<CacheOutcome> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while fake.cache_outcomes().len() < n {
        assert!(Instant::now() < deadline, "{n} calls never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    fake.cache_outcomes()
}

/// A task set for a second from now runs in a fresh session: its first
/// call reads the prefix the main conversation wrote.
fn scheduled_task(main: &Conversation) {
    let before = main.fake.cache_outcomes().len();
    main.fake.push(main.text("Nothing new this morning."));
    main.h
        .cmd(&[
            "tool",
            "call",
            "manage_schedule",
            &json!({"action": "add", "kind": "task", "in": "1s", "text": "anything I should know this morning?"})
                .to_string(),
        ])
        .ok();
    let outcomes = wait_outcomes(&main.fake, before + 1);
    let task = &outcomes[before];
    println!(
        "  scheduled task's first call: {} tokens, {} read from the cache",
        task.total, task.read
    );
    println!(
        "figure: scheduled task's fresh session, share of its first call from the cache: {:.1} % (target >= 90)",
        task.read as f64 / task.total as f64 * 100.0
    );
}

/// A worker with a handful of tools takes three steps.
fn worker() {
    let fake = FakeLlm::start();
    fake.keep_prompt_cache();
    let h = bundled(&fake, "anthropic");
    let _daemon = start(&h);
    script_worker(&fake, &h, 3);
    h.chat("look in the empty folder").ok();
    let worker = worker_outcomes(&fake);
    print_calls("worker", &worker);
    println!(
        "figure: worker's conversation, share of calls 2..{} from the cache: {:.1} % (target >= 90)",
        worker.len(),
        share(&worker[1..]) * 100.0
    );
}

/// A mission of one deliverable: the member's calls after its first.
fn group_member() {
    let fake = FakeLlm::start();
    fake.keep_prompt_cache();
    let h = bundled(&fake, "anthropic");
    let _daemon = start(&h);
    let member = group_mission(&fake, &h);
    print_calls("member", &member);
    println!(
        "figure: group member's conversation, share of calls 2..{} from the cache: {:.1} % (target >= 90)",
        member.len(),
        share(&member[1..]) * 100.0
    );
}
