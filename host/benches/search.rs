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

use hearth::knowledge::index::drain;
use hearth::knowledge::search::{Query, search};
use hearth::store::Store;
use serde_json::json;

const SESSIONS: i64 = 1_000;
const PER_SESSION: i64 = 100;
const ROUNDS: usize = 51;

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&home.path().join("hearth.db")).expect("store");
    let words = [
        "plants", "train", "plumber", "weather", "forecast", "invoice", "dinner", "meeting",
        "garden", "backup", "server", "holiday", "birthday", "recipe", "doctor", "budget",
    ];
    let started = Instant::now();
    {
        let tx = store.conn().unchecked_transaction().expect("tx");
        for s in 0..SESSIONS {
            tx.execute(
                "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (1, 'telegram', '1001', ?1)",
                [s],
            )
            .expect("session");
            let session = tx.last_insert_rowid();
            for m in 0..PER_SESSION {
                let i = (s * PER_SESSION + m) as usize;
                let text = if s == 500 && m == 42 {
                    "I saw the blue heron nests by the old mill".to_owned()
                } else {
                    format!(
                        "about the {} and the {} we said {} would do, item {i}",
                        words[i % words.len()],
                        words[(i / 7) % words.len()],
                        words[(i / 13) % words.len()]
                    )
                };
                tx.execute(
                    "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (?1, 'user', ?2, ?3)",
                    rusqlite::params![session, json!([{ "type": "text", "text": text }]).to_string(), i as i64],
                )
                .expect("message");
            }
        }
        tx.commit().expect("commit");
    }
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
