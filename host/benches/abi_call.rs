//! Benchmark: what a tool call through the plugin C ABI adds over calling the
//! same Rust function directly.
//!
//! Three ways to run the echo tool with `{"text":"hi"}`, interleaved round by
//! round so machine noise hits all three alike:
//! - `direct`: `hearth_plugin_echo::echo_json` on a `serde_json::Value`;
//! - `abi`: `ActivePlugin::invoke` with the payload already serialized: the
//!   boundary itself (FFI, panic guard, sink copy, the plugin's JSON parsing);
//! - `registry`: `ToolRegistry::call`, the path every caller takes (schema
//!   validation, serialization, the boundary, parsing the result).
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth --bench abi_call`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hearth::config;
use hearth::runtime::Runtime;
use serde_json::json;

const ROUNDS: usize = 201;
const CALLS_PER_ROUND: u32 = 2_000;

fn main() {
    let target = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(PathBuf::from))
        .expect("bench binary lives in <profile>/deps");
    let plugin = target.join("libhearth_plugin_echo.so");
    assert!(
        plugin.is_file(),
        "build first: cargo build --release --workspace"
    );
    let home = tempfile::tempdir().expect("temp dir");
    let text = format!(
        "home = {:?}\n[plugins]\nexe_dir = false\npaths = [{:?}]\n",
        home.path().display().to_string(),
        plugin.display().to_string()
    );
    let rt = Runtime::start(config::parse(&text, None).expect("config")).expect("start");
    let echo = rt.plugins.active()[0].clone();
    let payload =
        serde_json::to_vec(&json!({ "tool": "echo", "args": { "text": "hi" } })).expect("payload");

    let mut direct = Vec::with_capacity(ROUNDS);
    let mut abi = Vec::with_capacity(ROUNDS);
    let mut registry = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        direct.push(per_call(|| {
            let args = json!({ "text": "hi" });
            black_box(hearth_plugin_echo::echo_json("", black_box(args)).expect("echo"));
        }));
        abi.push(per_call(|| {
            black_box(
                echo.invoke("tool.call", black_box(&payload))
                    .expect("invoke"),
            );
        }));
        registry.push(per_call(|| {
            let args = json!({ "text": "hi" });
            black_box(rt.tools.call("echo", black_box(args)).expect("call"));
        }));
    }
    let (d, a, r) = (median(direct), median(abi), median(registry));
    println!("abi_call: median per call over {ROUNDS} rounds of {CALLS_PER_ROUND} calls");
    println!("  direct Rust call        {:>8.3} µs", micros(d));
    println!("  through the C ABI       {:>8.3} µs", micros(a));
    println!("  through the registry    {:>8.3} µs", micros(r));
    println!(
        "  added by the ABI        {:>8.3} µs",
        micros(a) - micros(d)
    );
    println!(
        "  added by the registry   {:>8.3} µs",
        micros(r) - micros(d)
    );
    println!(
        "figure: registry tool call median (echo, policy, audit): {:.3} µs (target <= 5)",
        micros(r)
    );
    println!(
        "figure: added by the C ABI median: {:.3} µs (target <= 2)",
        micros(a) - micros(d)
    );
    rt.stop(Duration::from_secs(5)).expect("stop");
}

fn per_call(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..CALLS_PER_ROUND {
        f();
    }
    start.elapsed() / CALLS_PER_ROUND
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
