//! Benchmark: what the host adds to a turn, with a model that answers at once.
//!
//! The release daemon runs against the fake model server, with 100
//! conversations active. For each measured turn:
//! - plain turn: (model request arrives − owner message sent) + (reply
//!   received − model answer written): the host's time on both sides;
//! - tool turn (the model calls `echo`, then answers): the gap between the
//!   model's first answer and its second request — parsing, storing, the
//!   tool call through the registry and the plugin ABI, building the next
//!   prompt — which is what one tool call adds beyond the model's time.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench turn_overhead`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use serde_json::{Value, json};

const CONVERSATIONS: usize = 100;
const TURNS: usize = 300;

fn main() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&format!(
        // The tool turn calls `echo`, an example tool.
        "examples = true\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\napi_key_env = \"HEARTH_BENCH_KEY\"\n",
        fake.url()
    ));
    let mut daemon = h.bench_daemon();
    let socket = h.home().join("hearth.sock");
    let started = Instant::now();
    while UnixStream::connect(&socket).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut client = Client::connect(&h);
    for c in 0..CONVERSATIONS {
        client.subscribe(&format!("conv-{c}"));
    }
    // Open every conversation once.
    for c in 0..CONVERSATIONS {
        fake.push(anthropic_text("hello"));
        client.turn(&format!("conv-{c}"), "hi");
    }

    let mut plain = Vec::with_capacity(TURNS);
    let mut inbound = Vec::with_capacity(TURNS);
    let mut outbound = Vec::with_capacity(TURNS);
    for t in 0..TURNS {
        fake.push(anthropic_text("ok"));
        let sent = Instant::now();
        client.turn(&format!("conv-{}", t % CONVERSATIONS), "a message");
        let done = Instant::now();
        let arrived = *fake.received().last().expect("a request");
        let answered = *fake.answered().last().expect("an answer");
        inbound.push(arrived - sent);
        outbound.push(done - answered);
        plain.push((arrived - sent) + (done - answered));
    }

    let mut tool_gap = Vec::with_capacity(TURNS);
    for t in 0..TURNS {
        fake.push(anthropic_tool_use(
            None,
            &format!("toolu_{t}"),
            "echo",
            &json!({"text": "x"}),
        ));
        fake.push(anthropic_text("done"));
        client.turn(&format!("conv-{}", t % CONVERSATIONS), "use a tool");
        let received = fake.received();
        let answered = fake.answered();
        let second_request = received[received.len() - 1];
        let first_answer = answered[answered.len() - 2];
        tool_gap.push(second_request - first_answer);
    }

    let (p50, p99) = percentiles(&mut plain);
    let (t50, t99) = percentiles(&mut tool_gap);
    let (i50, _) = percentiles(&mut inbound);
    let (o50, _) = percentiles(&mut outbound);
    println!(
        "turn_overhead: {TURNS} turns over {CONVERSATIONS} active conversations, release daemon"
    );
    println!(
        "  host time per plain turn   median {:>7.3} ms   p99 {:>7.3} ms",
        ms(p50),
        ms(p99)
    );
    println!(
        "    message sent -> model asked   median {:>7.3} ms",
        ms(i50)
    );
    println!(
        "    model answered -> reply read  median {:>7.3} ms",
        ms(o50)
    );
    println!(
        "  one tool call in a turn    median {:>7.3} ms   p99 {:>7.3} ms",
        ms(t50),
        ms(t99)
    );
    println!(
        "figure: plain turn host time median: {:.3} ms (target <= 1)",
        ms(p50)
    );
    println!(
        "figure: plain turn host time p99: {:.3} ms (target <= 5)",
        ms(p99)
    );
    println!(
        "figure: one tool call in a turn median: {:.3} ms (target <= 0.5)",
        ms(t50)
    );
    let _ = daemon.kill();
    let _ = daemon.wait();
}

struct Client {
    stream: UnixStream,
    lines: std::io::Lines<BufReader<UnixStream>>,
}

impl Client {
    fn connect(h: &Hearth) -> Client {
        let stream = UnixStream::connect(h.home().join("hearth.sock")).expect("connect");
        let lines = BufReader::new(stream.try_clone().expect("clone")).lines();
        let mut client = Client { stream, lines };
        client.send(hearth_tests::control::hello(h.home()));
        client.until(|m| m["op"] == "hello");
        client
    }

    fn subscribe(&mut self, chat: &str) {
        self.send(json!({ "op": "subscribe", "chat": chat }));
        self.until(|m| m["op"] == "subscribed");
    }

    /// Sends a message and waits for its reply.
    fn turn(&mut self, chat: &str, text: &str) {
        self.send(json!({ "op": "chat", "chat": chat, "text": text }));
        let mut key = None;
        let mut early = Vec::new();
        loop {
            let m = self.next();
            match m["op"].as_str() {
                Some("accepted") => key = m["key"].as_str().map(str::to_owned),
                Some("reply") => early.push(m),
                _ => {}
            }
            if key.is_some()
                && early
                    .iter()
                    .any(|r| r["in_reply_to"].as_str() == key.as_deref())
            {
                return;
            }
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stream, "{message}").expect("send");
    }

    fn until(&mut self, pred: impl Fn(&Value) -> bool) {
        while !pred(&self.next()) {}
    }

    fn next(&mut self) -> Value {
        let line = self
            .lines
            .next()
            .expect("the daemon closed the socket")
            .expect("read");
        serde_json::from_str(&line).expect("a JSON line")
    }
}

fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let n = samples.len();
    (samples[n / 2], samples[(n * 99 / 100).min(n - 1)])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
