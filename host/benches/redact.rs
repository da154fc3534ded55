//! Benchmark: redacting the owner's secrets from what a tool returns.
//!
//! Every tool result and error, every audit row and every log line passes
//! through the [`Redactor`], almost always holding no secret at all. With
//! ten secrets known, this times a clean 4 KiB tool output, the same
//! output with one secret in it (as written, and inside a URL), a clean
//! log line, and a clean JSON result checked the way the audit checks
//! its arguments. Prints the median per call and `figure:` lines for
//! `scripts/bench-all`.
//!
//! Run with `cargo bench -p hearth --bench redact`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hearth::secrets::Redactor;
use serde_json::json;

const ROUNDS: usize = 101;
const CALLS_PER_ROUND: usize = 2_000;

fn main() {
    let values: Vec<(String, String)> = (0..10)
        .map(|i| (format!("TOKEN_{i}"), format!("sk-live-{i:02}-f3a9c1d7e5b2")))
        .collect();
    let redactor = Redactor::new(values.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let line = "total 48\ndrwxr-xr-x  5 owner owner 4096 Nov 26 23:30 project/\n\
                -rw-r--r--  1 owner owner  812 Nov 26 23:31 notes.md\n";
    let clean: String = line.repeat(4096 / line.len() + 1);
    let dirty = format!("{clean}Authorization: Bearer {}\n", values[3].1);
    let in_url = format!(
        "{clean}GET https://api.example.com/v1?key={}\n",
        values[7].1.replace('-', "%2D")
    );
    let log_line = r#"{"timestamp":"2026-11-26T23:30:00Z","level":"INFO","fields":{"message":"tool call","tool":"shell_exec","ms":12.5}}"#;
    let result = json!({
        "exit_code": 0,
        "stdout": clean,
        "stderr": "",
        "cwd": "/home/owner/project",
        "truncated": false,
    });
    assert!(redactor.redact_text(&dirty).contains("[secret:TOKEN_3]"));
    assert!(redactor.redact_text(&in_url).contains("[secret:TOKEN_7]"));
    assert!(redactor.redacted(&result).is_none());

    println!("redact: 10 secrets, median per call over {ROUNDS} rounds of {CALLS_PER_ROUND}");
    let clean_text = median(|| {
        black_box(redactor.redact_text(black_box(&clean)));
    });
    println!("  clean 4 KiB text        {:>8.3} µs", micros(clean_text));
    let with_secret = median(|| {
        black_box(redactor.redact_text(black_box(&dirty)));
    });
    println!("  4 KiB, one secret       {:>8.3} µs", micros(with_secret));
    let url = median(|| {
        black_box(redactor.redact_text(black_box(&in_url)));
    });
    println!("  4 KiB, one in a URL     {:>8.3} µs", micros(url));
    let log = median(|| {
        black_box(redactor.redact_text(black_box(log_line)));
    });
    println!("  clean log line          {:>8.3} µs", micros(log));
    let json = median(|| {
        black_box(redactor.redacted(black_box(&result)));
    });
    println!("  clean 4 KiB JSON result {:>8.3} µs", micros(json));
    // The limits: the plain substring search this replaced took about
    // 1.1 µs and 0.08 µs here, finding far fewer forms.
    println!(
        "figure: redact clean 4 KiB text median: {:.3} µs (target <= 2)",
        micros(clean_text)
    );
    println!(
        "figure: redact clean log line median: {:.3} µs (target <= 1)",
        micros(log)
    );
}

/// The median time of one call of `f`.
fn median(mut f: impl FnMut()) -> Duration {
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..CALLS_PER_ROUND {
            f();
        }
        samples.push(start.elapsed() / CALLS_PER_ROUND as u32);
    }
    samples.sort();
    samples[ROUNDS / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
