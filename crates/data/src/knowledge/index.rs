//! Keeping the search index in step: messages waiting in
//! `message_index_queue` (a trigger puts each there in the transaction
//! that stores it) are moved into the FTS5 index in batches.
//!
//! Writing into FTS5 costs about 70 µs per transaction, and a turn commits
//! two or more; a queue row costs a few. So the turn only queues, and the
//! queue is drained off its path: by [`Indexer::run`] a short while after
//! turns stop, and by every search before it reads, so a search always
//! sees every stored message.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::Notify;

use super::recall::Recall;
use hearth_base::store::Cold;

/// The most messages indexed in one transaction.
const BATCH: i64 = 2_000;
/// How long after the last poke the indexer drains: a burst of turns is
/// indexed once, after it.
const SETTLE: Duration = Duration::from_secs(2);

/// The text of message `m`'s content that is indexed: its text blocks and
/// each tool result cut to 2,000 characters, one per line.
pub(super) const BODY: &str = "(SELECT group_concat(piece, char(10)) FROM (
        SELECT CASE json_extract(value, '$.type')
                   WHEN 'text' THEN json_extract(value, '$.text')
                   WHEN 'tool_result' THEN substr(json_extract(value, '$.content'), 1, 2000)
               END AS piece
        FROM json_each(CASE WHEN json_valid(m.content) THEN m.content ELSE '[]' END))
    WHERE piece IS NOT NULL AND piece != '')";

/// Indexes every queued message; returns how many.
pub fn drain(conn: &Connection) -> rusqlite::Result<usize> {
    let mut total = 0;
    loop {
        let tx = conn.unchecked_transaction()?;
        let moved = tx.execute(
            &format!(
                "INSERT INTO message_index (rowid, body) \
                 SELECT m.id, {BODY} FROM message_index_queue q JOIN messages m ON m.id = q.message_id \
                 ORDER BY q.message_id LIMIT ?1"
            ),
            [BATCH],
        )?;
        tx.execute(
            "DELETE FROM message_index_queue WHERE message_id IN \
             (SELECT message_id FROM message_index_queue ORDER BY message_id LIMIT ?1)",
            [moved as i64],
        )?;
        tx.commit()?;
        total += moved;
        if (moved as i64) < BATCH {
            return Ok(total);
        }
    }
}

/// The background indexer: drains the queue once turns have settled.
pub struct Indexer {
    cold: Cold,
    /// Poked after a turn stores messages.
    pub poke: Notify,
    /// Woken after each drain: the embeddings' indexer, whose queue the
    /// same turns filled.
    recall: Option<Arc<Recall>>,
}

impl Indexer {
    /// An indexer on the shared cold connection.
    pub fn new(cold: Cold) -> Indexer {
        Indexer {
            cold,
            poke: Notify::new(),
            recall: None,
        }
    }

    /// The same, waking `recall`'s indexer after each drain.
    pub fn waking(mut self, recall: Option<Arc<Recall>>) -> Indexer {
        self.recall = recall;
        self
    }

    /// Drains after each burst of turns, for as long as the daemon runs;
    /// first whatever a crash left queued.
    pub async fn run(self: Arc<Self>) {
        loop {
            let indexer = Arc::clone(&self);
            let drained = tokio::task::spawn_blocking(move || drain(&indexer.cold.lock())).await;
            match drained {
                Ok(Ok(0)) => {}
                Ok(Ok(n)) => tracing::debug!(messages = n, "messages indexed for search"),
                Ok(Err(e)) => tracing::warn!("cannot index messages for search: {e}"),
                Err(e) => tracing::warn!("the indexer was lost: {e}"),
            }
            if let Some(recall) = &self.recall {
                recall.wake();
            }
            self.poke.notified().await;
            // Every poke during the wait is the same burst.
            loop {
                tokio::select! {
                    () = tokio::time::sleep(SETTLE) => break,
                    () = self.poke.notified() => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_messages_are_indexed_once_and_deletes_leave_neither() {
        let dir = tempfile::tempdir().unwrap();
        let store = hearth_base::store::Store::open(&dir.path().join("hearth.db")).unwrap();
        let conn = store.conn();
        conn.execute(
            "INSERT INTO sessions (agent_id, channel, chat, started_at_ms) VALUES (1, 'local', 't', 0)",
            [],
        )
        .unwrap();
        let contents = [
            r#"[{"type":"text","text":"a heron"}]"#,
            r#"[{"type":"tool_use","id":"x","name":"echo","input":{}}]"#,
            r#"[{"type":"tool_result","tool_use_id":"x","content":"the result"}]"#,
            "not json",
        ];
        for content in contents {
            conn.execute(
                "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (1, 'user', ?1, 0)",
                [content],
            )
            .unwrap();
        }
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count("SELECT count(*) FROM message_index_queue"), 4);
        assert_eq!(drain(conn).unwrap(), 4);
        assert_eq!(drain(conn).unwrap(), 0);
        assert_eq!(count("SELECT count(*) FROM message_index"), 4);
        assert_eq!(
            count("SELECT rowid FROM message_index WHERE message_index MATCH 'result'"),
            3
        );
        conn.execute("DELETE FROM messages WHERE id IN (1, 3)", [])
            .unwrap();
        assert_eq!(count("SELECT count(*) FROM message_index"), 2);
        conn.execute(
            "INSERT INTO message_index (message_index, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
    }
}
