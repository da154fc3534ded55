//! Benchmark: building the system prompt for an agent with 200 memories
//! and 500 scratchpad titles, as every step of a turn does: reading the
//! notes from the store and writing the prompt.
//!
//! Run with `cargo bench -p hearth --bench prompt`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hearth::agent::profiles;
use hearth::agent::prompt::{ContextParts, DEFAULT_IDENTITY, PromptParts, context, system_prompt};
use hearth::knowledge::notes::Notes;
use hearth::store::{Store, open_connection};

const ROUNDS: usize = 1_001;

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    let db = home.path().join("hearth.db");
    let store = Store::open(&db).expect("store");
    let notes = Notes::new(open_connection(&db).expect("connection"));
    for i in 0..200 {
        notes
            .add_memory(
                1,
                &format!("memory {i}: the owner prefers things done a certain way, number {i}"),
            )
            .expect("memory");
    }
    for i in 0..500 {
        notes
            .add_entry(
                1,
                &format!("Scratchpad entry {i} about a project"),
                "a body that stays out of the prompt",
            )
            .expect("entry");
    }
    let profile = profiles::get(store.conn(), 1)
        .expect("read")
        .expect("main agent");
    let skills: Vec<(String, String)> = (0..20)
        .map(|i| (format!("skill{i}"), "does something useful".to_owned()))
        .collect();
    let mut samples = Vec::with_capacity(ROUNDS);
    let mut size = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let read = notes.for_prompt(1).expect("notes");
        let fixed = system_prompt(&PromptParts {
            identity: DEFAULT_IDENTITY,
            profile: &profile,
            owner: Some("Sam"),
            skills: skills.clone(),
            secrets: &[],
        });
        let context = context(&ContextParts {
            notes: &read,
            notepad: Some("Plan: finish the garden list."),
            summary: None,
        });
        let prompt = (fixed, context);
        samples.push(start.elapsed());
        size = prompt.0.len() + prompt.1.len();
        black_box(prompt);
    }
    samples.sort();
    println!(
        "prompt: 200 memories, 500 scratchpad titles, 20 skills; {ROUNDS} rounds; {size} bytes"
    );
    println!(
        "  read the notes and build the prompt   median {:>7.3} ms   p99 {:>7.3} ms",
        ms(samples[ROUNDS / 2]),
        ms(samples[ROUNDS * 99 / 100])
    );
    println!(
        "figure: prompt with 200 memories and 500 titles median: {:.3} ms (target <= 1)",
        ms(samples[ROUNDS / 2])
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
