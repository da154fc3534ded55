//! Benchmark: what hearth adds to an MCP tool call over stdio.
//!
//! The plugin's scriptable test server (Node) runs as a stdio MCP server;
//! its `echo` tool answers at once. The same call is timed two ways, in
//! alternating rounds so a noisy machine weighs on both alike:
//! - through hearth: the registry (schema check, policy, audit), the
//!   plugin ABI, the MCP plugin (request id, pipe, reader thread, result
//!   mapping) and back;
//! - bare: this bench writes the JSON-RPC line to a second copy of the
//!   server itself and reads the answer line, which is the server's own
//!   time plus two pipe hops.
//!
//! The difference of the medians is the host's overhead (target ≤ 1 ms).
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench mcp_call`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use hearth_tests::bench::{measure, ms, percentiles};
use hearth_tests::{Hearth, plugin};
use serde_json::{Value, json};

const WARM_UP: usize = 50;
const RUNS: usize = 200;
const ROUNDS: usize = 5;

fn main() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/mcp/tests/fixtures/script_server.mjs")
        .display()
        .to_string();
    let h = Hearth::with_plugins(
        &[plugin("mcp")],
        &format!(
            "[plugins.mcp.servers.bench]\ncommand = \"node\"\nargs = [{script:?}]\nrisk = \"read\"\n"
        ),
    );
    let rt = h.runtime();
    let through_hearth = || {
        let answer = rt
            .tools
            .call("mcp.bench.echo", json!({"text": "x"}))
            .expect("mcp.bench.echo");
        assert_eq!(answer["text"], "echo: x");
    };
    let mut bare = Bare::start(&script);
    let mut hearth_samples = Vec::new();
    let mut bare_samples = Vec::new();
    for _ in 0..ROUNDS {
        hearth_samples.extend(measure(WARM_UP, RUNS, through_hearth));
        bare_samples.extend(measure(WARM_UP, RUNS, || bare.echo()));
    }
    let (h50, h90) = percentiles(&mut hearth_samples);
    let (b50, b90) = percentiles(&mut bare_samples);
    let overhead = h50.saturating_sub(b50);
    println!(
        "mcp_call: `echo` on a stdio server, {ROUNDS} alternating rounds of {RUNS} calls after {WARM_UP} warm-up calls"
    );
    println!(
        "  through hearth (registry, policy, ABI, plugin)  median {:>7.3} ms   p90 {:>7.3} ms",
        ms(h50),
        ms(h90)
    );
    println!(
        "  bare JSON-RPC line to the server                median {:>7.3} ms   p90 {:>7.3} ms",
        ms(b50),
        ms(b90)
    );
    println!(
        "figure: MCP stdio call, host overhead above the server's own time, median: {:.3} ms (target <= 1)",
        ms(overhead)
    );
    bare.stop();
    rt.stop(Duration::from_secs(5)).expect("stop the runtime");
}

/// The server driven directly: one JSON line out, one back.
struct Bare {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Bare {
    fn start(script: &str) -> Bare {
        let mut child = Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the test server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut bare = Bare {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        bare.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        bare.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        bare
    }

    fn echo(&mut self) {
        let answer = self.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        );
        assert_eq!(answer["result"]["content"][0]["text"], "echo: x");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("read an answer");
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
