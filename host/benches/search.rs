//! Benchmark: `search_history` over 100,000 stored messages.
//!
//! A real store is filled with 1,000 sessions of 100 messages of ordinary
//! chat; searches for a rare phrase, a common word, and several words run
//! round by round through the same code the tool uses. The figure is the
//! median time of one search.
//!
//! Run with `cargo bench -p hearth --bench search`.

use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "common/history.rs"]
mod history;

use hearth::knowledge::index::drain;
use hearth::knowledge::search::{Query, search};
use hearth::store::Store;
use history::{PER_SESSION, SESSIONS};

const ROUNDS: usize = 51;

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&home.path().join("hearth.db")).expect("store");
    let started = Instant::now();
    history::fill(store.conn(), |_, _, _| {});
    let fill = started.elapsed();
    // What the indexer (or the first search) does with the queue.
    let started = Instant::now();
    let indexed = drain(store.conn()).expect("drain");
    let index = started.elapsed();
    assert_eq!(indexed as i64, SESSIONS * PER_SESSION);
    let queries = ["blue heron nests", "plumber", "garden budget doctor"];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(ROUNDS); queries.len()];
    for _ in 0..ROUNDS {
        for (q, text) in queries.iter().enumerate() {
            let query = Query {
                text,
                limit: 10,
                ..Query::default()
            };
            let start = Instant::now();
            let hits = search(store.conn(), &query).expect("search");
            samples[q].push(start.elapsed());
            black_box(hits);
        }
    }
    println!(
        "search: {} messages (stored in {:.1} s, indexed from the queue in {:.1} s), {ROUNDS} rounds",
        SESSIONS * PER_SESSION,
        fill.as_secs_f64(),
        index.as_secs_f64()
    );
    let mut all = Vec::new();
    for (q, text) in queries.iter().enumerate() {
        samples[q].sort();
        println!(
            "  {:<24} median {:>7.3} ms   max {:>7.3} ms",
            format!("{text:?}"),
            ms(samples[q][ROUNDS / 2]),
            ms(samples[q][ROUNDS - 1])
        );
        all.extend(samples[q].iter().copied());
    }
    all.sort();
    println!(
        "figure: search_history over 100,000 messages median: {:.3} ms (target <= 10)",
        ms(all[all.len() / 2])
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
