//! `[llm] thinking`: extended thinking end to end against the fake model,
//! which keeps Anthropic's rules for it (the budget within `max_tokens`;
//! a tool-asking answer's thinking sent back first, with its signature).
//! The thinking goes back to the model within the turn and is never shown
//! to the owner.

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{
    FakeLlm, anthropic_thinking_text, anthropic_thinking_tool_use, bad_thinking,
};
use serde_json::json;

fn config(fake: &FakeLlm, thinking: &str) -> String {
    format!(
        "examples = true\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\nmax_tokens = 8192\nthinking = {thinking}\n",
        fake.url()
    )
}

#[test]
fn thinking_goes_back_to_the_model_with_its_seal_and_never_to_the_owner() {
    let fake = FakeLlm::start();
    fake.push(anthropic_thinking_tool_use(
        "The owner wants an echo; the echo tool does that.",
        "sig-one",
        "toolu_01",
        "echo",
        &json!({"text": "hi"}),
    ));
    fake.push(anthropic_thinking_text(
        "The tool answered; say so.",
        "sig-two",
        "Echoed: hi.",
    ));
    let h = Hearth::new(&config(&fake, "2048"));
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });

    let reply = h.chat("echo hi").ok().to_owned();
    assert_eq!(reply.trim(), "Echoed: hi.");
    assert!(!reply.contains("owner wants"), "{reply}");

    let requests = fake.requests();
    assert_eq!(
        requests.len(),
        2,
        "the fake refused a request: {requests:?}"
    );
    assert_eq!(
        requests[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    // The fake answers a request breaking Anthropic's rules with a 400;
    // both here kept them.
    for r in &requests {
        assert!(bad_thinking(r).is_none(), "{}", r.body);
    }
    let messages = requests[1].body["messages"].as_array().unwrap();
    let asked = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .expect("the answer that asked for the tool");
    assert_eq!(
        asked["content"][0],
        json!({"type": "thinking", "thinking": "The owner wants an echo; the echo tool does that.", "signature": "sig-one"})
    );
    assert_eq!(asked["content"][1]["type"], "tool_use");
}

#[test]
fn adaptive_thinking_sends_no_budget_and_the_effort_asked_for() {
    let fake = FakeLlm::start();
    fake.push(anthropic_thinking_tool_use(
        "Use the echo tool.",
        "sig-a",
        "toolu_01",
        "echo",
        &json!({"text": "hi"}),
    ));
    fake.push(hearth_tests::fake_llm::anthropic_text("Done."));
    let h = Hearth::new(&config(&fake, "\"adaptive\"\nthinking_effort = \"medium\""));
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    assert_eq!(h.chat("echo hi").ok().trim(), "Done.");
    let requests = fake.requests();
    assert_eq!(
        requests.len(),
        2,
        "the fake refused a request: {requests:?}"
    );
    assert_eq!(requests[0].body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(
        requests[0].body["output_config"],
        json!({"effort": "medium"})
    );
    let messages = requests[1].body["messages"].to_string();
    assert!(messages.contains(r#""signature":"sig-a""#), "{messages}");
}

#[test]
fn without_thinking_no_budget_is_sent() {
    let fake = FakeLlm::start();
    fake.push(hearth_tests::fake_llm::anthropic_text("plain"));
    let h = Hearth::new(&config(&fake, "0"));
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    assert_eq!(h.chat("hello").ok().trim(), "plain");
    let body = &fake.requests()[0].body;
    assert!(body.get("thinking").is_none() && body.get("output_config").is_none());
}

#[test]
fn the_fake_refuses_what_anthropic_refuses() {
    let request = |body: serde_json::Value| hearth_tests::fake_llm::Recorded {
        method: "POST".into(),
        path: "/v1/messages".into(),
        headers: Vec::new(),
        body,
        received: std::time::Instant::now(),
    };
    let tool_use = json!({"type": "tool_use", "id": "t", "name": "echo", "input": {}});
    let thought = json!({"type": "thinking", "thinking": "x", "signature": "s"});
    let on = json!({"type": "enabled", "budget_tokens": 2048});
    let adaptive = json!({"type": "adaptive"});
    for (body, refused) in [
        (
            json!({"max_tokens": 4096, "thinking": {"type": "adaptive", "budget_tokens": 2048}, "messages": []}),
            Some("Extra inputs are not permitted"),
        ),
        (
            json!({"max_tokens": 4096, "thinking": adaptive, "messages": [{"role": "assistant", "content": [tool_use]}]}),
            None,
        ),
        (
            json!({"max_tokens": 4096, "thinking": adaptive, "messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}, tool_use]}]}),
            Some("signature: Field required"),
        ),
        (
            json!({"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 100}, "messages": []}),
            Some("greater than or equal to 1024"),
        ),
        (
            json!({"max_tokens": 2048, "thinking": on, "messages": []}),
            Some("must be greater than `thinking.budget_tokens`"),
        ),
        (
            json!({"max_tokens": 4096, "thinking": on, "messages": [{"role": "assistant", "content": [tool_use]}]}),
            Some("Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
        ),
        (
            json!({"max_tokens": 4096, "thinking": on, "messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}, tool_use]}]}),
            Some("signature: Field required"),
        ),
        (
            json!({"max_tokens": 4096, "thinking": on, "messages": [{"role": "assistant", "content": [thought, tool_use]}]}),
            None,
        ),
        (
            json!({"max_tokens": 4096, "messages": [{"role": "assistant", "content": [tool_use]}]}),
            None,
        ),
    ] {
        let verdict = bad_thinking(&request(body.clone()));
        match (refused, verdict) {
            (None, None) => {}
            (
                Some(why),
                Some(hearth_tests::fake_llm::Reply::Error {
                    status,
                    body: answer,
                    ..
                }),
            ) => {
                assert_eq!(status, 400, "{body}");
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains(why), "{why:?} in {message:?}");
            }
            (expected, got) => panic!("{body}: expected {expected:?}, got {got:?}"),
        }
    }
}
