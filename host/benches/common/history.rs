//! The store the search benches share: 1,000 sessions of 100 messages of
//! ordinary chat (100,000 in all), one of them a rare phrase the benches
//! look for. Each bench that includes it (`#[path]`) fills its own store
//! through [`fill`], which hands every message to `also` inside the same
//! transaction (the recall bench stores its vector there).

use rusqlite::Transaction;
use serde_json::json;

/// Sessions in the store.
pub const SESSIONS: i64 = 1_000;
/// Messages per session.
pub const PER_SESSION: i64 = 100;

/// Fills `conn` with the sessions and messages in one transaction; calls
/// `also(tx, message_id, text)` after each message is stored.
pub fn fill(conn: &rusqlite::Connection, mut also: impl FnMut(&Transaction<'_>, i64, &str)) {
    let words = [
        "plants", "train", "plumber", "weather", "forecast", "invoice", "dinner", "meeting",
        "garden", "backup", "server", "holiday", "birthday", "recipe", "doctor", "budget",
    ];
    let tx = conn.unchecked_transaction().expect("tx");
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
            also(&tx, tx.last_insert_rowid(), &text);
        }
    }
    tx.commit().expect("commit");
}
