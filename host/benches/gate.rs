//! Benchmark: one gate decision (the owner check, the hard gate, the soft
//! gate) for a contact's message, with 10,000 contacts in the table.
//!
//! The store, the contact directory and the gate are the daemon's own;
//! the allow-list holds every contact's id, as a channel's would if all of
//! them were let in. Messages from contacts spread over the table are
//! judged round by round; the figure is the median cost of one decision.
//!
//! Run with `cargo bench -p hearth --bench gate`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth::config::OwnerConfig;
use hearth::people::People;
use hearth::router::{Admission, Gate};
use hearth::store::{Cold, Store};
use hearth_sdk::protocol::{ChannelSpec, InboundMessage};

const CONTACTS: usize = 10_000;
const ROUNDS: usize = 101;
const DECISIONS_PER_ROUND: usize = 2_000;

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    let db = home.path().join("hearth.db");
    let store = Store::open(&db).expect("store");
    let ids: Vec<String> = (0..CONTACTS).map(|i| (5_000_000 + i).to_string()).collect();
    {
        let tx = store.conn().unchecked_transaction().expect("tx");
        for (i, id) in ids.iter().enumerate() {
            tx.execute(
                "INSERT INTO contacts (display_name, agent_id, created_at_ms, updated_at_ms) \
                 VALUES (?1, 1, 0, 0)",
                [format!("contact {i}")],
            )
            .expect("contact");
            tx.execute(
                "INSERT INTO contact_identities (contact_id, channel, native_id, created_at_ms) \
                 VALUES (last_insert_rowid(), 'telegram', ?1, 0)",
                [id],
            )
            .expect("identity");
        }
        tx.commit().expect("commit");
    }
    let people = Arc::new(People::open(Cold::open(&db).expect("cold")).expect("people"));
    let owner = OwnerConfig {
        identities: BTreeMap::from([("telegram".to_owned(), vec!["1001".to_owned()])]),
        ..OwnerConfig::default()
    };
    let gate = Gate::new(owner, Some(people));
    let mut allowed = ids.clone();
    allowed.push("1001".into());
    let spec = ChannelSpec {
        name: "telegram".into(),
        allowed,
        ..ChannelSpec::default()
    };
    let messages: Vec<InboundMessage> = ids
        .iter()
        .step_by(CONTACTS / 100)
        .map(|id| InboundMessage {
            channel: "telegram".into(),
            idempotency_key: "1".into(),
            sender: id.clone(),
            chat: Some(id.clone()),
            text: "hi".into(),
            attachments: Vec::new(),
            sender_name: None,
        })
        .collect();
    assert!(matches!(
        gate.admit(&messages[0], Some(&spec)),
        Admission::Contact { .. }
    ));

    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for i in 0..DECISIONS_PER_ROUND {
            let message = &messages[i % messages.len()];
            black_box(gate.admit(black_box(message), Some(&spec)));
        }
        samples.push(start.elapsed() / DECISIONS_PER_ROUND as u32);
    }
    samples.sort();
    let median = samples[ROUNDS / 2];
    println!(
        "gate: {CONTACTS} contacts, median per decision over {ROUNDS} rounds of {DECISIONS_PER_ROUND}"
    );
    println!("  a contact's message admitted  {:>8.3} µs", micros(median));
    println!(
        "figure: gate decision median (10,000 contacts): {:.3} µs (target <= 5)",
        micros(median)
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
