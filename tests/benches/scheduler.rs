//! Benchmark: the scheduler's two figures.
//!
//! - *Next run for 10,000 jobs*: the next run of each of 10,000 jobs (40
//!   common expressions in 5 zones), computed as a firing pass does:
//!   each distinct schedule parsed once, then every job's next run; the
//!   figure is the median time for all 10,000.
//! - *Firing latency*: the release daemon, with 300 one-shot jobs due
//!   20 ms apart, stores each firing in the inbox; the figure is the p99
//!   of (stored at − due at), in milliseconds as the inbox records them.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench scheduler`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hearth::schedule::{Parsed, Schedule};
use hearth_tests::Hearth;

const JOBS: usize = 10_000;
const ROUNDS: usize = 21;
const FIRINGS: i64 = 300;

fn main() {
    next_runs();
    firing_latency();
}

fn next_runs() {
    // 40 expressions people and agents write, in 5 zones: 200 distinct
    // schedules over 10,000 jobs, as a pass over many due jobs meets them.
    let mut expressions: Vec<String> = (0..24).map(|h| format!("0 {h} * * *")).collect();
    expressions.extend((6..12).map(|h| format!("30 {h} * * MON-FRI")));
    expressions.extend(
        [
            "*/15 * * * *",
            "@daily",
            "@weekly",
            "0 12 31 * *",
            "0 0 29 2 *",
            "5 4 * * SUN",
            "0 9 1 * *",
            "0 18 * * FRI",
            "30 2 * * *",
            "0 */2 * * *",
        ]
        .map(str::to_owned),
    );
    let zones = [
        "Europe/Berlin",
        "America/New_York",
        "UTC",
        "Asia/Tokyo",
        "Australia/Sydney",
    ];
    let jobs: Vec<(&str, &str)> = (0..JOBS)
        .map(|i| {
            (
                expressions[i % expressions.len()].as_str(),
                zones[i % zones.len()],
            )
        })
        .collect();
    let after: jiff::Timestamp = "2026-11-24T12:00:00Z".parse().expect("instant");
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let mut parsed = Parsed::default();
        for (expr, zone) in &jobs {
            black_box(
                parsed
                    .next_after(Some(expr), zone, None, after)
                    .expect("valid"),
            );
        }
        samples.push(start.elapsed());
    }
    samples.sort();
    let median = samples[ROUNDS / 2];
    // What one distinct expression costs to parse, for the record.
    let start = Instant::now();
    for i in 0..1_000 {
        black_box(Schedule::cron(&format!("{} {} * * *", i % 60, i % 24), "UTC").expect("valid"));
    }
    let parse = start.elapsed() / 1_000;
    println!(
        "scheduler: next run for {JOBS} jobs ({} expressions x {} zones), {ROUNDS} rounds",
        expressions.len(),
        zones.len()
    );
    println!(
        "  all {JOBS} jobs   median {:>8.3} ms   min {:>8.3} ms   (parsing one expression: {:.1} µs)",
        ms(median),
        ms(samples[0]),
        parse.as_secs_f64() * 1e6
    );
    println!(
        "figure: next run for 10,000 jobs median: {:.3} ms (target <= 20)",
        ms(median)
    );
}

fn firing_latency() {
    let h = Hearth::new("[scripts]\nwatch = false\n");
    h.cmd(&["schedule", "list"]).ok();
    let start = hearth::store::now_ms() + 3_000;
    {
        let db = h.db();
        let tx = db.unchecked_transaction().expect("tx");
        for i in 0..FIRINGS {
            let due = start + i * 20;
            tx.execute(
                "INSERT INTO jobs (kind, zone, at_ms, text, agent_id, next_run_ms, created_at_ms, updated_at_ms) \
                 VALUES ('task', 'UTC', ?1, 'bench', 1, ?1, 0, 0)",
                [due],
            )
            .expect("job");
        }
        tx.commit().expect("commit");
    }
    let mut daemon = h.bench_daemon();
    let deadline = Instant::now() + Duration::from_secs(60);
    let count = || -> i64 {
        h.db()
            .query_row(
                "SELECT count(*) FROM inbox WHERE source = 'scheduler'",
                [],
                |r| r.get(0),
            )
            .expect("count")
    };
    while count() < FIRINGS {
        assert!(Instant::now() < deadline, "the jobs did not all fire");
        std::thread::sleep(Duration::from_millis(100));
    }
    let db = h.db();
    let mut stmt = db
        .prepare(
            "SELECT inbox.received_at_ms - jobs.at_ms FROM inbox JOIN jobs ON jobs.id = inbox.job_id \
             WHERE inbox.source = 'scheduler'",
        )
        .expect("query");
    let mut late: Vec<i64> = stmt
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("latencies");
    late.sort_unstable();
    let p = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize];
    println!("scheduler: firing latency, {FIRINGS} one-shot jobs due 20 ms apart, release daemon");
    println!(
        "  due -> stored in the inbox   median {} ms   p99 {} ms   max {} ms",
        p(0.5),
        p(0.99),
        late[late.len() - 1]
    );
    println!("figure: firing latency p99: {} ms (target <= 50)", p(0.99));
    let _ = daemon.kill();
    let _ = daemon.wait();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
