//! Benchmark: 1,200 inbound Telegram messages through the fake Bot API.
//!
//! The release daemon runs with the real Telegram plugin against the fake
//! Bot API and the fake model. Messages go one at a time, each answered
//! before the next, so every latency is one message's alone: first 1,000
//! back to back (each pushed as soon as the previous reply arrived, a warm
//! daemon), then 200 each after 50 ms of quiet, as an owner's messages
//! always arrive (the daemon's threads asleep, so the message pays their
//! wake-ups). For each: host overhead = (the reply's `sendMessage` arrives
//! − the update is pushed to the waiting long poll) − (the model's answer
//! written − the model's request arrived). That is everything hearth adds:
//! the poll answer, the gate, storing in the inbox, the turn, the outbox,
//! the markdown conversion and the send. Each phase has its figure. It
//! then checks that all 1,200 were answered once, none lost or doubled.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench telegram_inbound`.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, anthropic_text};
use hearth_tests::fake_telegram::FakeTelegram;
use hearth_tests::{Hearth, bench, plugin};

/// The messages sent back to back; `bench::AFTER_IDLE` more follow.
const MESSAGES: usize = 1000;
/// Private chats the messages rotate over: twelve messages each, so no
/// conversation grows long enough to be compacted (a compaction is a model
/// call of its own, which this benchmark does not measure).
const CHATS: i64 = 100;
/// The first chat's id; they are all the owner's.
const FIRST_CHAT: i64 = 1001;

fn main() {
    let telegram = FakeTelegram::start("4242:bench-token");
    let llm = FakeLlm::start();
    let h = Hearth::with_plugins(
        &[plugin("telegram")],
        &format!(
            "[plugins.telegram]\ntoken = \"4242:bench-token\"\napi_url = {:?}\n\
             allowed_chat_ids = [{}]\npoll_timeout_s = 30\npace_chat_ms = 0\npace_global_per_s = 1000\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_BENCH_KEY\"\n",
            telegram.url(),
            (FIRST_CHAT..FIRST_CHAT + CHATS)
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            llm.url()
        ),
    );
    let mut daemon = h.bench_daemon();
    let started = Instant::now();
    while telegram.requests_for("getUpdates").is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the bot did not start polling"
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    let all = MESSAGES + bench::AFTER_IDLE;
    let mut overhead = Vec::with_capacity(all);
    let whole = Instant::now();
    for n in 0..all {
        llm.push(anthropic_text(&format!("reply **{n}**")));
        if n >= MESSAGES {
            std::thread::sleep(bench::IDLE_GAP);
        }
        // The long poll must be waiting, so the update is answered at once.
        wait_for_poll(&telegram);
        let pushed = Instant::now();
        let chat = FIRST_CHAT + n as i64 % CHATS;
        telegram.push_message(chat, chat, &format!("message {n}"));
        let sent = telegram.wait_for_sent(n + 1, Duration::from_secs(30));
        assert_eq!(sent.len(), n + 1, "message {n} was not answered");
        let arrived = telegram
            .requests_for("sendMessage")
            .last()
            .map(|r| r.received)
            .expect("a sendMessage");
        let model = *llm.received().last().expect("a model request");
        let answered = *llm.answered().last().expect("a model answer");
        let model_time = answered.saturating_duration_since(model);
        overhead.push(
            arrived
                .saturating_duration_since(pushed)
                .saturating_sub(model_time),
        );
    }
    let total = whole.elapsed();

    let sent = telegram.sent();
    let mut texts: Vec<_> = sent.iter().map(|s| s.text.clone()).collect();
    texts.sort();
    texts.dedup();
    assert_eq!(sent.len(), all, "a message was lost or answered twice");
    assert_eq!(texts.len(), all, "a reply was sent twice");
    assert_eq!(
        llm.received().len(),
        all,
        "a message reached the model twice"
    );

    println!(
        "telegram inbound: {all} messages ({MESSAGES} back to back, {} after {} ms idle), \
         all answered once, in {:.1} s",
        bench::AFTER_IDLE,
        bench::IDLE_GAP.as_millis(),
        total.as_secs_f64()
    );
    bench::print_inbound("telegram", &overhead, MESSAGES);
    let _ = daemon.kill();
    let _ = daemon.wait();
}

/// Waits until the bot's next long poll has confirmed the last update, so
/// it is open and waiting.
fn wait_for_poll(telegram: &FakeTelegram) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !telegram.pending_updates().is_empty() {
        assert!(Instant::now() < deadline, "the bot stopped polling");
        std::thread::yield_now();
    }
}
