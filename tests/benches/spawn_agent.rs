//! Benchmark: what the host adds to a `spawn_agent` round trip, with a
//! model that answers at once.
//!
//! The release daemon runs against the fake model server. Each round the
//! main agent asks for one worker, the worker answers at once, and the
//! main agent answers the owner. The host's share of the round trip is the
//! sum of two gaps: from the main agent's tool call being written to the
//! worker's request arriving (starting the worker: its row, its session,
//! its prompt), and from the worker's answer being written to the main
//! agent's next request arriving (storing the result, the tool result, the
//! next prompt).
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench spawn_agent`.

use std::time::Duration;

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use serde_json::json;

const ROUNDS: usize = 200;
const WORKER: &str = "You are a worker of hearth";

fn main() {
    let fake = FakeLlm::start();
    // Compaction is kept out (its summary call would take an answer
    // scripted for a round), and a fresh conversation starts every ten
    // rounds, so the measure is of the round trip, not of a growing
    // history.
    let h = Hearth::new(&format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\napi_key_env = \"HEARTH_BENCH_KEY\"\n\
         [agent]\ncompact_after_messages = 100000\ncompact_after_chars = 100000000\n",
        fake.url()
    ));
    let mut daemon = h.bench_daemon();
    let socket = h.home().join("hearth.sock");
    let started = std::time::Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut overhead = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        if round % 10 == 0 {
            h.cmd(&["chat", "-m", "/new", "--timeout", "60"]).ok();
        }
        fake.push(anthropic_tool_use(
            None,
            &format!("w{round}"),
            "spawn_agent",
            &json!({ "spec": {}, "task": format!("task {round}") }),
        ));
        fake.push_for(WORKER, anthropic_text("worked"));
        fake.push(anthropic_text("done"));
        h.cmd(&["chat", "-m", "delegate", "--timeout", "60"]).ok();
        let received = fake.received();
        let answered = fake.answered();
        let n = received.len();
        let (worker_asked, main_asked_again) = (received[n - 2], received[n - 1]);
        let (main_called, worker_answered) = (answered[n - 3], answered[n - 2]);
        let host = (worker_asked - main_called) + (main_asked_again - worker_answered);
        if host > Duration::from_millis(100) {
            println!(
                "  slow round {round}: worker asked after {:?}, main asked again after {:?}",
                worker_asked - main_called,
                main_asked_again - worker_answered
            );
        }
        overhead.push(host);
    }
    overhead.sort();
    let median = overhead[ROUNDS / 2];
    let p99 = overhead[(ROUNDS * 99 / 100).min(ROUNDS - 1)];
    println!("spawn_agent: {ROUNDS} round trips, release daemon, instant fake model");
    println!(
        "  host time per round trip   median {:>7.3} ms   p99 {:>7.3} ms",
        ms(median),
        ms(p99)
    );
    println!(
        "figure: spawn_agent round trip host overhead median: {:.3} ms (target <= 3)",
        ms(median)
    );
    let _ = daemon.kill();
    let _ = daemon.wait();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
