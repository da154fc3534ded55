//! Prompt caching end to end: the real daemon against fakes that keep a
//! prompt cache as Anthropic and OpenAI document it (`support/prompt_cache.rs`).
//! A conversation with a tool call and a new memory in the middle must
//! have everything but its newest message read from the cache; a
//! scheduled task's fresh session, a worker and a group member reuse what
//! they share; the
//! marks follow `[llm] prompt_cache` and `cache_ttl`; and a cache break is
//! logged once, naming what changed.

use std::time::Duration;

use hearth_tests::fake_llm::{
    FakeLlm, Reply, anthropic_text, anthropic_tool_use, openai_text, openai_tool_call,
    system_prompt,
};
use hearth_tests::prompt_cache::{CacheOutcome, hit_share};
use hearth_tests::scenarios::{bundled_config, group_mission, script_worker, worker_outcomes};
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

const KEY: &str = "sk-test";

fn home(fake: &FakeLlm, provider: &str, extra: &str) -> Hearth {
    let base = match provider {
        "openai" => format!("{}/v1", fake.url()),
        _ => fake.url(),
    };
    Hearth::new(&format!(
        "[llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n{extra}"
    ))
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", KEY);
    })
}

/// A daemon whose model is a fake keeping a prompt cache, under `extra`
/// in `[llm]`.
fn caching(extra: &str) -> (FakeLlm, Hearth, Daemon) {
    let (fake, h, daemon) = started(extra);
    fake.keep_prompt_cache();
    (fake, h, daemon)
}

/// A daemon whose model is an Anthropic fake, under `extra` in `[llm]`.
fn started(extra: &str) -> (FakeLlm, Hearth, Daemon) {
    let fake = FakeLlm::start();
    let h = home(&fake, "anthropic", extra);
    let daemon = start(&h);
    (fake, h, daemon)
}

/// Sends each message, the model answering each with its own text.
fn talk(fake: &FakeLlm, h: &Hearth, messages: &[&str]) {
    for text in messages {
        fake.push(anthropic_text(&format!("answer to {text}")));
        h.chat(text).ok();
    }
}

/// One provider's replies, so one conversation runs on both.
struct Speaks(&'static str);

impl Speaks {
    fn text(&self, text: &str) -> Reply {
        match self.0 {
            "openai" => openai_text(text),
            _ => anthropic_text(text),
        }
    }

    fn tool(&self, id: &str, name: &str, input: &Value) -> Reply {
        match self.0 {
            "openai" => openai_tool_call(id, name, input),
            _ => anthropic_tool_use(None, id, name, input),
        }
    }
}

/// Each call's outcome in a line, for messages.
fn shares(outcomes: &[CacheOutcome]) -> Vec<String> {
    outcomes
        .iter()
        .map(|o| format!("{}/{} read, {} written", o.read, o.total, o.written))
        .collect()
}

#[test]
fn a_conversation_reads_all_but_its_newest_message_from_the_cache() {
    for provider in ["anthropic", "openai"] {
        let fake = FakeLlm::start();
        fake.keep_prompt_cache();
        let speaks = Speaks(provider);
        let h = home(&fake, provider, "");
        let _daemon = start(&h);
        fake.push(speaks.text("Hello."));
        fake.push(speaks.tool(
            "call_1",
            "manage_knowledge",
            &json!({"tier": "memory", "action": "add", "text": "Sam takes tea with lemon"}),
        ));
        fake.push(speaks.text("Noted."));
        fake.push(speaks.text("4."));
        fake.push(speaks.text("You're welcome."));
        for text in [
            "hello",
            "remember that I take tea with lemon",
            "what is 2+2?",
            "thanks",
        ] {
            h.chat(text).ok();
        }
        let outcomes = fake.cache_outcomes();
        assert_eq!(outcomes.len(), 5, "{provider}: {:?}", shares(&outcomes));
        let share = hit_share(&outcomes);
        assert!(
            share >= 0.9,
            "{provider}: {share:.3} of calls 2..5 read from the cache: {:?}",
            shares(&outcomes)
        );
        // Every call after the first reads all but what is new since the
        // one before.
        for (i, o) in outcomes.iter().enumerate().skip(1) {
            assert!(
                o.read as f64 >= 0.85 * o.total as f64,
                "{provider}: call {} read only {} of {}: {:?}",
                i + 1,
                o.read,
                o.total,
                shares(&outcomes)
            );
        }
        // The memory added in the middle left the prompt before the
        // conversation as it was; the next conversation has it.
        let requests = fake.requests();
        let first = system_prompt(&requests[0].body);
        for r in &requests[1..] {
            assert_eq!(system_prompt(&r.body), first, "{provider}");
            assert_eq!(r.body["tools"], requests[0].body["tools"], "{provider}");
        }
        assert!(!first.contains("Sam takes tea"), "{provider}: {first}");
        h.chat("/new").ok();
        fake.push(speaks.text("Hi again."));
        h.chat("hi").ok();
        let next = fake.requests();
        let next = system_prompt(&next.last().unwrap().body);
        assert!(
            next.contains("Sam takes tea with lemon"),
            "{provider}: {next}"
        );
    }
}

#[test]
fn anthropic_requests_are_marked_at_four_places_and_openai_ones_carry_the_agents_key() {
    let (fake, h, _daemon) = started("");
    talk(&fake, &h, &["first", "second"]);
    let body = &fake.requests()[1].body;
    let ephemeral = json!({"type": "ephemeral"});
    let system = body["system"].as_array().expect("system blocks");
    assert_eq!(system.len(), 2, "the fixed prompt and the context");
    for block in system {
        assert_eq!(block["cache_control"], ephemeral, "{block}");
    }
    let messages = body["messages"].as_array().unwrap();
    let marked: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m["content"]
                .as_array()
                .and_then(|c| c.last())
                .is_some_and(|b| b["cache_control"] == ephemeral)
        })
        .map(|(i, _)| i)
        .collect();
    // The previous call ended at the first message; this one at the third.
    assert_eq!(marked, [0, 2], "{messages:?}");
    assert_eq!(body.to_string().matches("cache_control").count(), 4);
    assert_eq!(fake.requests()[1].header("anthropic-beta"), None);

    // OpenAI's own API is the only one told the key unless the config
    // says so.
    let fake = FakeLlm::start();
    let h = home(&fake, "openai", "prompt_cache_key = true\n");
    let _daemon = start(&h);
    fake.push(openai_text("one"));
    h.chat("first").ok();
    let body = &fake.requests()[0].body;
    assert_eq!(body["prompt_cache_key"], "hearth-agent-1", "{body}");
    assert!(!body.to_string().contains("cache_control"));
    let fake = FakeLlm::start();
    let h = home(&fake, "openai", "");
    let _daemon = start(&h);
    fake.push(openai_text("one"));
    h.chat("first").ok();
    assert_eq!(fake.requests()[0].body.get("prompt_cache_key"), None);
}

#[test]
fn the_ttl_and_turning_caching_off_follow_the_config() {
    let (fake, h, _daemon) = started("cache_ttl = \"1h\"\n");
    talk(&fake, &h, &["first"]);
    let request = &fake.requests()[0];
    assert_eq!(
        request.body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(
        request.header("anthropic-beta"),
        Some("extended-cache-ttl-2025-04-11")
    );

    let (fake, h, _daemon) = caching("prompt_cache = false\n");
    talk(&fake, &h, &["first", "second"]);
    assert!(
        !fake.requests()[1]
            .body
            .to_string()
            .contains("cache_control"),
        "no marks"
    );
    assert!(fake.cache_outcomes().iter().all(|o| o.read == 0));

    for (value, why) in [
        ("\"10m\"", "must be \"5m\" or \"1h\", not \"10m\""),
        ("5", "invalid type"),
    ] {
        let fake = FakeLlm::start();
        let h = home(&fake, "anthropic", &format!("cache_ttl = {value}\n"));
        let out = h.cmd(&["check"]);
        let said = format!("{}{}", out.stdout, out.stderr);
        assert!(!out.status.success(), "{said}");
        assert!(said.contains("cache_ttl") && said.contains(why), "{said}");
    }
}

#[test]
fn a_scheduled_tasks_fresh_session_reads_the_main_agents_fixed_prefix() {
    let (fake, h, _daemon) = caching("");
    talk(&fake, &h, &["hello"]);
    fake.push(anthropic_text("Nothing new."));
    let added = h.cmd(&[
        "tool",
        "call",
        "manage_schedule",
        &json!({"action": "add", "kind": "task", "in": "1s", "text": "anything new?"}).to_string(),
    ]);
    assert!(added.status.success(), "{}", added.stderr);
    assert!(fake.wait_for_requests(2, Duration::from_secs(30)));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while fake.cache_outcomes().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the task's call never ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let outcomes = fake.cache_outcomes();
    let (main, task) = (&outcomes[0], &outcomes[1]);
    // The tools and the fixed prompt: the first breakpoint.
    let fixed = main.breakpoint_positions[0];
    assert!(fixed >= 1024, "{main:?}");
    // It read at least that (the context too, when it is the same).
    assert!(
        task.read >= fixed,
        "the task read the fixed prefix: {task:?}"
    );
    let requests = fake.requests();
    assert_eq!(
        requests[1].body["system"][0], requests[0].body["system"][0],
        "the same fixed prompt"
    );
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains("from the scheduler"),
        "who asks is in the message"
    );
}

#[test]
fn a_workers_calls_read_its_own_conversation_from_the_cache() {
    let (fake, h, _daemon) = caching("");
    script_worker(&fake, &h, 2);
    h.chat("look in the empty folder").ok();
    let worker = worker_outcomes(&fake);
    assert_eq!(worker.len(), 3, "{:?}", shares(&worker));
    let share = hit_share(&worker);
    assert!(share >= 0.9, "{share:.3}: {:?}", shares(&worker));
}

#[test]
fn a_group_members_calls_read_its_own_conversation_from_the_cache() {
    let (fake, h, _daemon) = caching("");
    let member = group_mission(&fake, &h);
    assert!(member.len() >= 2, "{:?}", shares(&member));
    let share = hit_share(&member);
    assert!(share >= 0.9, "{share:.3}: {:?}", shares(&member));
}

#[test]
fn a_cache_break_is_logged_once_with_what_changed() {
    let (fake, h, daemon) = caching("");
    talk(&fake, &h, &["first", "second"]);
    // A new tool: the tools come first, so nothing after them is read.
    std::fs::create_dir_all(h.home().join("tools")).unwrap();
    std::fs::write(
        h.home().join("tools/shout.lua"),
        "return { name = 'shout', description = 'Says it loud', run = function() return 'HI' end }\n",
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !h.chat("/tools").ok().contains("shout") {
        assert!(
            std::time::Instant::now() < deadline,
            "hot reload never came"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    talk(&fake, &h, &["third"]);
    let line = daemon.wait_for_log(
        |l| l.contains("the prompt cache broke"),
        Duration::from_secs(10),
    );
    assert!(line.contains("changed: the tools"), "{line}");
    assert!(!line.contains("earlier messages"), "{line}");
    talk(&fake, &h, &["fourth"]);
    let breaks = daemon
        .logs()
        .iter()
        .filter(|l| l.contains("the prompt cache broke"))
        .count();
    assert_eq!(breaks, 1, "logged once: {:?}", daemon.logs());
    let status = h.chat("/status").ok().to_owned();
    assert!(
        status.contains("tokens of tools and instructions per call")
            && status.contains("read from the cache"),
        "{status}"
    );
}

#[test]
fn the_bundled_configs_first_call_costs_at_most_6000_tokens() {
    let fake = FakeLlm::start();
    fake.keep_prompt_cache();
    let h = Hearth::exact(&format!(
        "{}\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n",
        bundled_config(),
        fake.url()
    ));
    let _daemon = start(&h);
    fake.push(anthropic_text("Hello."));
    h.chat("hello").ok();
    let first = &fake.cache_outcomes()[0];
    println!("the first call: {} tokens", first.total);
    assert!(first.total <= 6000, "{first:?}");
    // Nothing in it changes by the minute: no clock.
    let system = system_prompt(&fake.requests()[0].body);
    assert!(!system.contains("Current date"), "{system}");
}
