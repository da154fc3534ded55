//! `/model` and `hearth model`: the owner sees the configured models and
//! switches the conversation among them; the next request to the fake
//! model names the chosen one, the choice outlives a restart, and a model
//! the config does not name is refused with the list.

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text};

fn config(fake: &FakeLlm) -> String {
    format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"big-model\"\nfallback_models = [\"small-model\"]\n\
         base_url = \"{}\"\napi_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n",
        fake.url()
    )
}

/// The `model` of the last request the fake model got.
fn last_model(fake: &FakeLlm) -> String {
    let requests = fake.requests();
    let last = requests.last().expect("a model request");
    last.body["model"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn the_owner_switches_the_model_from_chat_and_from_the_terminal() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&config(&fake));
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });

    let shown = h.chat("/model").ok().to_owned();
    for part in [
        "Model: big-model ([llm] model)",
        "- big-model",
        "- small-model",
        "/model NAME switches",
    ] {
        assert!(shown.contains(part), "{part:?} in:\n{shown}");
    }
    fake.push(anthropic_text("one"));
    assert_eq!(h.chat("hello").ok().trim(), "one");
    assert_eq!(last_model(&fake), "big-model");

    let switched = h.chat("/model small-model").ok().to_owned();
    assert!(
        switched.starts_with("Model: small-model from the next message"),
        "{switched}"
    );
    fake.push(anthropic_text("two"));
    assert_eq!(h.chat("again").ok().trim(), "two");
    assert_eq!(last_model(&fake), "small-model");

    let refused = h.chat("/model huge-model").ok().to_owned();
    assert!(
        refused.contains(
            "\"huge-model\" is not a configured model (configured: big-model, small-model)"
        ),
        "{refused}"
    );
    let help = h.chat("/help").ok().to_owned();
    assert!(help.contains("/model [NAME | default]"), "{help}");

    // The terminal writes the same choice, which the running daemon reads
    // at the next message.
    let back = h.cmd(&["model", "default"]).ok().to_owned();
    assert!(back.contains("Model: big-model ([llm] model)"), "{back}");
    fake.push(anthropic_text("three"));
    assert_eq!(h.chat("once more").ok().trim(), "three");
    assert_eq!(last_model(&fake), "big-model");

    let bad = h.cmd(&["model", "huge-model"]).fails();
    assert!(
        bad.contains("\"huge-model\" is not a configured model"),
        "{bad}"
    );

    // The choice outlives a restart.
    h.cmd(&["model", "small-model"]).ok();
    drop(daemon);
    let _daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    assert!(h.cmd(&["model"]).ok().starts_with("Model: small-model\n"));
    fake.push(anthropic_text("four"));
    assert_eq!(h.chat("after the restart").ok().trim(), "four");
    assert_eq!(last_model(&fake), "small-model");
}
