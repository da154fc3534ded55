//! Benchmark: 1,200 inbound Discord direct messages through the fake
//! Discord, and the idle memory a configured Discord channel adds.
//!
//! The release daemon runs with the real Discord plugin against the fake
//! Gateway and REST API and the fake model. Messages go one at a time,
//! each answered before the next: first 1,000 back to back (each sent as
//! soon as the previous reply arrived, a warm daemon), then 200 each after
//! 50 ms of quiet, as an owner's messages always arrive (the daemon's
//! threads asleep, so the message pays their wake-ups). For each: host
//! overhead = (the reply's `POST .../messages` arrives − the
//! `MESSAGE_CREATE` was written to the bot's connection) − (the model's
//! answer written − the model's request arrived): the gateway read, the
//! gate, the inbox, the turn, the outbox, the split and the send. Each
//! phase has its figure. All 1,200 must be answered once.
//!
//! Then the idle VmRSS of the daemon with the channel connected against
//! the same config with `enabled = false`, medians of three alternating
//! runs of five seconds.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench discord_inbound`.

use std::time::{Duration, Instant};

use hearth_tests::fake_discord::FakeDiscord;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text};
use hearth_tests::{Hearth, bench, plugin};

/// The messages sent back to back; `bench::AFTER_IDLE` more follow.
const MESSAGES: usize = 1000;
/// Users the messages rotate over (twelve each, so no conversation is long
/// enough to be compacted); all are allowed, so all are the owner.
const USERS: u64 = 100;
const FIRST_USER: u64 = 100_000_000_000_000_000;
const TOKEN: &str = "discord-bench-token";
const IDLE: Duration = Duration::from_secs(5);
const PAIRS: usize = 3;

fn config(discord: &FakeDiscord, llm: &FakeLlm, extra: &str) -> String {
    let users: Vec<String> = (FIRST_USER..FIRST_USER + USERS)
        .map(|u| format!("\"{u}\""))
        .collect();
    format!(
        "[plugins.discord]\ntoken = {TOKEN:?}\napi_url = {:?}\ngateway_url = {:?}\n\
         allowed_user_ids = [{}]\n{extra}\
         [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_BENCH_KEY\"\n",
        discord.api_url,
        discord.gateway_url,
        users.join(", "),
        llm.url()
    )
}

fn main() {
    let discord = FakeDiscord::start(TOKEN);
    let llm = FakeLlm::start();
    let h = Hearth::with_plugins(&[plugin("discord")], &config(&discord, &llm, ""));
    let mut daemon = h.bench_daemon();
    assert!(
        discord.wait_connected(Duration::from_secs(20)),
        "the bot did not connect"
    );

    let all = MESSAGES + bench::AFTER_IDLE;
    let mut overhead = Vec::with_capacity(all);
    let whole = Instant::now();
    for n in 0..all {
        llm.push(anthropic_text(&format!("reply **{n}**")));
        let user = FIRST_USER + n as u64 % USERS;
        if n >= MESSAGES {
            std::thread::sleep(bench::IDLE_GAP);
        }
        discord.dm(&user.to_string(), &format!("message {n}"));
        let sent = discord.wait_sent(n + 1, Duration::from_secs(30));
        assert_eq!(sent.len(), n + 1, "message {n} was not answered");
        let arrived = sent[n].received;
        let written = discord.last_written().expect("the message was written");
        let model = *llm.received().last().expect("a model request");
        let answered = *llm.answered().last().expect("a model answer");
        let model_time = answered.saturating_duration_since(model);
        overhead.push(
            arrived
                .saturating_duration_since(written)
                .saturating_sub(model_time),
        );
    }
    let total = whole.elapsed();
    let sent = discord.wait_sent(all, Duration::from_secs(1));
    let mut texts: Vec<_> = sent.iter().map(|s| s.content.clone()).collect();
    texts.sort();
    texts.dedup();
    assert_eq!(sent.len(), all, "a message was lost or answered twice");
    assert_eq!(texts.len(), all, "a reply was sent twice");
    assert_eq!(
        llm.received().len(),
        all,
        "a message reached the model twice"
    );
    let _ = daemon.kill();
    let _ = daemon.wait();

    println!(
        "discord inbound: {all} messages ({MESSAGES} back to back, {} after {} ms idle), \
         all answered once, in {:.1} s",
        bench::AFTER_IDLE,
        bench::IDLE_GAP.as_millis(),
        total.as_secs_f64()
    );
    bench::print_inbound("discord", &overhead, MESSAGES);

    let (on, off) = bench::idle_rss_on_off(PAIRS, IDLE, |extra| {
        let discord = FakeDiscord::start(TOKEN);
        let llm = FakeLlm::start();
        let h = Hearth::with_plugins(&[plugin("discord")], &config(&discord, &llm, extra));
        let daemon = h.bench_daemon();
        if extra.is_empty() {
            assert!(discord.wait_connected(Duration::from_secs(20)));
        }
        (daemon, (discord, llm, h))
    });
    println!(
        "idle VmRSS: {:.2} MiB with Discord connected, {:.2} MiB with it switched off",
        on as f64 / 1024.0,
        off as f64 / 1024.0
    );
    println!(
        "figure: idle VmRSS added by a connected Discord channel: {:.3} MB (target <= 5)",
        on.saturating_sub(off) as f64 * 1024.0 / 1e6
    );
}
