//! Benchmark: from the owner's `/stop` to a running command's process
//! group being gone.
//!
//! The release daemon runs the shell plugin against the fake model, which
//! asks for `shell_exec "sleep 600"` in every turn. Once the `sleep` runs
//! (found under `/proc`), the clock starts as `/stop` is written to the
//! control socket and stops when `kill(-pgid, 0)` first says ESRCH. That
//! covers storing `/stop`, waking the turn, cancelling the call's scope,
//! `tool.cancel` through the plugin ABI, the plugin killing the group and
//! reaping its leader. Prints the median, p90 and p99.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench stop_latency`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, anthropic_tool_use};
use hearth_tests::procs::{group_gone, wait_for_descendant};
use hearth_tests::{Hearth, plugin};
use serde_json::{Value, json};

const WARM_UP: usize = 5;
const RUNS: usize = 200;

fn main() {
    let fake = FakeLlm::start();
    let h = Hearth::with_plugins_in(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &[plugin("shell")],
        &format!(
            "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_BENCH_KEY\"\n",
            fake.url()
        ),
    );
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
    let mut client = Client::connect(&socket);

    let mut samples = Vec::with_capacity(RUNS);
    for run in 0..WARM_UP + RUNS {
        fake.push(anthropic_tool_use(
            None,
            &format!("toolu_{run}"),
            "shell_exec",
            &json!({ "command": "sleep 600", "timeout_s": 600 }),
        ));
        // A chat of its own per run: a fresh session, which never grows to
        // a compaction (which would ask the model).
        let chat = format!("bench-{run}");
        client.send(json!({ "op": "subscribe", "chat": chat }));
        client.until(|m| m["op"] == "subscribed");
        let waiting = client.chat(&chat, "wait ten minutes");
        let sleeper = wait_for_descendant(
            daemon.id() as i32,
            &["sleep", "600"],
            Duration::from_secs(20),
        );
        let asked = Instant::now();
        client.send(json!({ "op": "chat", "chat": chat, "text": "/stop" }));
        while !group_gone(sleeper.pgid) {
            assert!(
                asked.elapsed() < Duration::from_secs(10),
                "the group outlived /stop"
            );
            std::hint::spin_loop();
        }
        let took = asked.elapsed();
        let stop = client.accepted();
        client.replies(&[&waiting, &stop]);
        if run >= WARM_UP {
            samples.push(took);
        }
    }
    samples.sort();
    let at = |q: usize| samples[(RUNS * q / 100).min(RUNS - 1)];
    println!(
        "stop_latency: {RUNS} runs after {WARM_UP} warm-up runs, release daemon, production mode \
         (sleep under the kernel floor where there is Landlock)"
    );
    println!(
        "  /stop written -> process group gone   median {:>7.3} ms   p90 {:>7.3} ms   p99 {:>7.3} ms",
        ms(at(50)),
        ms(at(90)),
        ms(at(99))
    );
    println!(
        "figure: /stop to process group gone p99: {:.3} ms (target <= 200)",
        ms(at(99))
    );
    let _ = daemon.kill();
    let _ = daemon.wait();
}

/// A control-socket client, as `hearth chat` is.
struct Client {
    stream: UnixStream,
    lines: std::io::Lines<BufReader<UnixStream>>,
    replied: Vec<String>,
}

impl Client {
    fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).expect("connect");
        let lines = BufReader::new(stream.try_clone().expect("clone")).lines();
        let mut client = Client {
            stream,
            lines,
            replied: Vec::new(),
        };
        let home = socket.parent().expect("the socket is in the home");
        client.send(hearth_tests::control::hello(home));
        client.until(|m| m["op"] == "hello");
        client
    }

    /// Sends a message; its key, once accepted.
    fn chat(&mut self, chat: &str, text: &str) -> String {
        self.send(json!({ "op": "chat", "chat": chat, "text": text }));
        self.accepted()
    }

    /// The key of the next message accepted.
    fn accepted(&mut self) -> String {
        loop {
            let m = self.next();
            if m["op"] == "accepted" {
                return m["key"].as_str().expect("a key").to_owned();
            }
        }
    }

    /// Waits until the messages `keys` have their replies.
    fn replies(&mut self, keys: &[&String]) {
        while !keys.iter().all(|k| self.replied.contains(k)) {
            self.next();
        }
        self.replied.clear();
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
        let m: Value = serde_json::from_str(&line).expect("a JSON line");
        if m["op"] == "reply"
            && let Some(key) = m["in_reply_to"].as_str()
        {
            self.replied.push(key.to_owned());
        }
        m
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
