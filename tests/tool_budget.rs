//! The tools every model call pays for: the bundled config's `tools`
//! array stays within its budget (characters of compact JSON, as the
//! Anthropic request body has it), offers no example or fixture tool
//! and none of the old memory aliases, and keeps each description short.
//! The examples come back when the owner turns them on.
//!
//! The size and count are printed (`tool_budget: N tools, M characters`)
//! so a benchmark line can be built from them.

use hearth_tests::fake_llm::{FakeLlm, anthropic_text};
use hearth_tests::{Hearth, scenarios};
use serde_json::Value;

/// The most characters the bundled config's `tools` array may take: 44
/// tools with the bounds the host checks left out of the model's copy
/// (`tools::offered`). With the system prompt it keeps a first call
/// under 6,000 tokens (`tests/prompt_cache.rs`). It was 14,500 for 43;
/// the browser (one tool for fifteen actions, offered only where a
/// Chromium is installed) added 870.
const BUDGET: usize = 15_000;
/// The longest description a tool may have.
const MAX_DESCRIPTION: usize = 300;
/// The longest first sentence of a description: what the tool does.
const MAX_FIRST_SENTENCE: usize = 120;
/// Tools that exist to show or test the plugin and script interfaces.
const EXAMPLES: [&str; 5] = ["echo", "echo_panic", "hello", "convert_many", "notes"];
/// The memory tools `manage_knowledge` replaced.
const MERGED: [&str; 3] = ["remember", "recall", "forget"];

/// The bundled config, as a newcomer runs it, with a model: the fake one.
/// `extra` goes first, among the top-level keys.
fn bundled_config(fake: &FakeLlm, extra: &str) -> String {
    format!(
        "{extra}{}\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\n",
        scenarios::bundled_config(),
        fake.url()
    )
}

/// The `tools` array of the first model call the daemon makes for one
/// message, under `config`.
fn tools_sent(config: impl Fn(&FakeLlm) -> String) -> Vec<Value> {
    let fake = FakeLlm::start();
    fake.push(anthropic_text("Hello."));
    let h = Hearth::exact(&config(&fake));
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "test-key");
    });
    assert_eq!(h.chat("hello").ok().trim(), "Hello.");
    let requests = fake.requests();
    requests[0].body["tools"]
        .as_array()
        .expect("a tools array")
        .clone()
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

#[test]
fn the_bundled_tools_fit_the_budget() {
    let tools = tools_sent(|fake| bundled_config(fake, ""));
    let size = Value::Array(tools.clone()).to_string().chars().count();
    println!("tool_budget: {} tools, {size} characters", tools.len());
    let offered = names(&tools);
    for name in EXAMPLES.iter().chain(&MERGED) {
        assert!(!offered.contains(name), "{name} is offered: {offered:?}");
    }
    assert!(offered.contains(&"manage_knowledge"), "{offered:?}");
    for tool in &tools {
        let description = tool["description"].as_str().unwrap_or_default();
        let first = description
            .split(['\n', ';'])
            .next()
            .and_then(|line| line.split(". ").next())
            .unwrap_or_default();
        assert!(
            description.chars().count() <= MAX_DESCRIPTION
                && first.chars().count() <= MAX_FIRST_SENTENCE,
            "{}'s description is too long ({} characters, first sentence {}): {description}",
            tool["name"],
            description.chars().count(),
            first.chars().count()
        );
    }
    let mut largest: Vec<(usize, &str)> = tools
        .iter()
        .map(|t| {
            (
                t.to_string().chars().count(),
                t["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    largest.sort_unstable_by(|a, b| b.cmp(a));
    assert!(
        size <= BUDGET,
        "the tools array is {size} characters, over the {BUDGET}-character budget; \
         the largest: {:?}",
        &largest[..largest.len().min(10)]
    );
}

#[test]
fn the_examples_are_offered_when_the_owner_turns_them_on() {
    let tools = tools_sent(|fake| bundled_config(fake, "examples = true\n"));
    let offered = names(&tools);
    for name in EXAMPLES {
        assert!(
            offered.contains(&name),
            "{name} is not offered: {offered:?}"
        );
    }
}
