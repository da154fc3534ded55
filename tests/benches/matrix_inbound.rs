//! Benchmark: 1,200 inbound Matrix messages through the fake homeserver,
//! and the idle memory a configured Matrix channel adds.
//!
//! The release daemon runs with the real Matrix plugin against the fake
//! homeserver and the fake model. Messages go one at a time, each answered
//! before the next: first 1,000 back to back (each sent as soon as the
//! previous reply arrived, a warm daemon), then 200 each after 50 ms of
//! quiet, as an owner's messages always arrive (the daemon's threads
//! asleep, so the message pays their wake-ups). For each: host overhead =
//! (the reply's `PUT .../send/m.room.message/...` arrives − the `/sync`
//! answer carrying the message was written to the bot) − (the model's
//! answer written − the model's request arrived): the sync read, the gate,
//! the inbox, the turn, the outbox, the HTML rendering and the send. Each
//! phase has its figure. All 1,200 must be answered once.
//!
//! Then the idle VmRSS of the daemon with the channel syncing against the
//! same config with `enabled = false`, medians of three alternating runs
//! of five seconds.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench matrix_inbound`.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, anthropic_text};
use hearth_tests::fake_matrix::FakeMatrix;
use hearth_tests::{Hearth, bench, plugin};

/// The messages sent back to back; `bench::AFTER_IDLE` more follow.
const MESSAGES: usize = 1000;
/// Users the messages rotate over, each in a room of their own (twelve
/// messages each, so no conversation is long enough to be compacted); all
/// are allowed, so all are the owner.
const USERS: usize = 100;
const TOKEN: &str = "matrix-bench-token";
const IDLE: Duration = Duration::from_secs(5);
const PAIRS: usize = 3;

fn user(n: usize) -> String {
    format!("@user{}:fake.example", n % USERS)
}

fn room(n: usize) -> String {
    format!("!room{}:fake.example", n % USERS)
}

fn config(matrix: &FakeMatrix, llm: &FakeLlm, extra: &str) -> String {
    let users: Vec<String> = (0..USERS).map(|u| format!("{:?}", user(u))).collect();
    format!(
        "[plugins.matrix]\nhomeserver = {:?}\ntoken = {TOKEN:?}\nallowed_user_ids = [{}]\n{extra}\
         [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_BENCH_KEY\"\n",
        matrix.url,
        users.join(", "),
        llm.url()
    )
}

fn main() {
    let matrix = FakeMatrix::start(TOKEN);
    let llm = FakeLlm::start();
    let h = Hearth::with_plugins(&[plugin("matrix")], &config(&matrix, &llm, ""));
    let mut daemon = h.bench_daemon();
    // The first sync reads no history; the second is the live long poll.
    assert!(
        matrix.wait_syncs(2, Duration::from_secs(20)),
        "the bot did not sync"
    );

    let all = MESSAGES + bench::AFTER_IDLE;
    let mut overhead = Vec::with_capacity(all);
    let whole = Instant::now();
    for n in 0..all {
        llm.push(anthropic_text(&format!("reply **{n}**")));
        if n >= MESSAGES {
            std::thread::sleep(bench::IDLE_GAP);
        }
        matrix.say(&room(n), &user(n), &format!("message {n}"));
        let sent = matrix.wait_sent(n + 1, Duration::from_secs(30));
        assert_eq!(sent.len(), n + 1, "message {n} was not answered");
        let arrived = sent[n].received;
        let written = matrix.last_written().expect("the message was written");
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
    let sent = matrix.wait_sent(all, Duration::from_secs(1));
    let mut texts: Vec<_> = sent
        .iter()
        .map(|s| s.content["body"].as_str().unwrap_or_default().to_owned())
        .collect();
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
        "matrix inbound: {all} messages ({MESSAGES} back to back, {} after {} ms idle), \
         all answered once, in {:.1} s",
        bench::AFTER_IDLE,
        bench::IDLE_GAP.as_millis(),
        total.as_secs_f64()
    );
    bench::print_inbound("matrix", &overhead, MESSAGES);

    let (on, off) = bench::idle_rss_on_off(PAIRS, IDLE, |extra| {
        let matrix = FakeMatrix::start(TOKEN);
        let llm = FakeLlm::start();
        let h = Hearth::with_plugins(&[plugin("matrix")], &config(&matrix, &llm, extra));
        let daemon = h.bench_daemon();
        if extra.is_empty() {
            assert!(matrix.wait_syncs(2, Duration::from_secs(20)));
        }
        (daemon, (matrix, llm, h))
    });
    println!(
        "idle VmRSS: {:.2} MiB with Matrix syncing, {:.2} MiB with it switched off",
        on as f64 / 1024.0,
        off as f64 / 1024.0
    );
    println!(
        "figure: idle VmRSS added by a syncing Matrix channel: {:.3} MB (target <= 5)",
        on.saturating_sub(off) as f64 * 1024.0 / 1e6
    );
}
