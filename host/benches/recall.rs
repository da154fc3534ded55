//! Benchmark: `search_history` over 100,000 stored messages with vectors,
//! by keyword and by keyword and meaning together (recall by meaning).
//!
//! A real store is filled with 1,000 sessions of 100 messages of ordinary
//! chat, each with a 384-number vector (the size of common small local
//! models) in `embeddings`, as the indexer stores them. The query's own
//! vector comes from an in-process stand-in for the endpoint, so the
//! figure is hearth's part of a search: the FTS5 query, the dot products
//! over every message's vector, the fusion and the hits' details (a
//! real endpoint adds its round trip, bounded by `query_timeout_ms`).
//! The figures are medians over many queries; the first hybrid search,
//! which reads every vector into memory, is shown on its own.
//!
//! Run with `cargo bench -p hearth --bench recall`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/history.rs"]
mod history;

use hearth::knowledge::hybrid;
use hearth::knowledge::index::drain;
use hearth::knowledge::recall::Recall;
use hearth::knowledge::search::Query;
use hearth::knowledge::vectors;
use hearth::store::Store;
use hearth_base::embed::{Embed, EmbedError, EmbeddingsConfig};
use history::{PER_SESSION, SESSIONS};

const DIMS: usize = 384;
const ROUNDS: usize = 41;

/// Vectors from words: each word adds a pseudo-random direction of its
/// own, so texts sharing words are alike, as with a real model.
struct Words;

impl Embed for Words {
    fn model(&self) -> &str {
        "bench-384"
    }

    fn embed(&self, texts: &[String], _: Duration) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| vector(t)).collect())
    }
}

fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0_f32; DIMS];
    for word in text.split_whitespace() {
        let mut seed = word.bytes().fold(1469598103934665603_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(1099511628211)
        });
        for x in v.iter_mut() {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *x += ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5;
        }
    }
    v
}

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&home.path().join("hearth.db")).expect("store");
    let started = Instant::now();
    history::fill(store.conn(), |tx, id, text| {
        let unit = vectors::normalized(&vector(text)).expect("a vector");
        tx.execute(
            "INSERT INTO embeddings (kind, item_id, model, dims, vector) VALUES ('message', ?1, 'bench-384', ?2, ?3)",
            rusqlite::params![id, DIMS as i64, vectors::to_blob(&unit)],
        )
        .expect("vector");
    });
    let fill = started.elapsed();
    drain(store.conn()).expect("drain");
    let config = EmbeddingsConfig {
        base_url: "http://127.0.0.1:1/v1".into(),
        model: "bench-384".into(),
        api_key_env: None,
        api_key_secret: None,
        secrets_home: home.path().to_owned(),
        dimensions: Some(DIMS),
        batch_size: 64,
        timeout_ms: 30_000,
        query_timeout_ms: 2_000,
        min_similarity: 0.25,
    };
    let recall = Recall::new(Arc::new(Words), &config);
    let queries = ["blue heron nests", "plumber", "garden budget doctor"];
    let run = |text: &str, hybrid: bool| {
        let query = Query {
            text,
            limit: 10,
            ..Query::default()
        };
        let start = Instant::now();
        let (recall, vector) = if hybrid {
            (Some(&recall), Some(recall.query(text)))
        } else {
            (None, None)
        };
        let found = hybrid::search(store.conn(), &query, recall, vector).expect("search");
        let took = start.elapsed();
        assert_eq!(found.hybrid, hybrid);
        black_box(found);
        took
    };
    let first = run(queries[0], true);
    // The part that is new: the dot products over every vector.
    let vectors_only = |text: &str| {
        let vector = recall.query(text).expect("a vector");
        let start = Instant::now();
        black_box(
            recall
                .messages_like(store.conn(), &vector, None, 30)
                .expect("nearest"),
        );
        start.elapsed()
    };
    let mut nearest = Vec::new();
    let mut keyword = Vec::new();
    let mut both = Vec::new();
    for _ in 0..ROUNDS {
        for text in queries {
            keyword.push(run(text, false));
            both.push(run(text, true));
            nearest.push(vectors_only(text));
        }
    }
    keyword.sort();
    both.sort();
    nearest.sort();
    println!(
        "recall: {} messages with {DIMS}-number vectors (stored in {:.1} s), {ROUNDS} rounds of {} queries",
        SESSIONS * PER_SESSION,
        fill.as_secs_f64(),
        queries.len()
    );
    println!(
        "  first hybrid search (reads every vector): {:.1} ms",
        ms(first)
    );
    println!(
        "  keyword  median {:>7.3} ms   max {:>7.3} ms",
        ms(keyword[keyword.len() / 2]),
        ms(keyword[keyword.len() - 1])
    );
    println!(
        "  hybrid   median {:>7.3} ms   max {:>7.3} ms",
        ms(both[both.len() / 2]),
        ms(both[both.len() - 1])
    );
    println!(
        "  nearest  median {:>7.3} ms   max {:>7.3} ms   (the vectors alone)",
        ms(nearest[nearest.len() / 2]),
        ms(nearest[nearest.len() - 1])
    );
    println!(
        "figure: keyword query over 100,000 messages: {:.3} ms (target <= 10)",
        ms(keyword[keyword.len() / 2])
    );
    println!(
        "figure: hybrid query over 100,000 messages: {:.3} ms (target <= 50)",
        ms(both[both.len() / 2])
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
