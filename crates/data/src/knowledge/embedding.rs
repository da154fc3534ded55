//! Keeping the vectors in step: items waiting in `embedding_queue` (a
//! trigger queues each message, memory and scratchpad entry in the
//! transaction that stores or changes it, while a model is configured)
//! are embedded in batches, off every turn's path, the way `index`
//! keeps the FTS5 index.
//!
//! The endpoint may be down, slow, rate limiting or wrong: a batch that
//! fails stays queued and the indexer waits (doubling from a second to
//! five minutes, or the endpoint's `Retry-After`) before trying again; an
//! answer that is not usable (too many vectors, the wrong length, NaN)
//! is refused and counted the same. A text the endpoint refuses (a 400
//! for one input) is tried alone, then again less and less often, so it
//! holds up nothing else. Nothing is dropped but what has no text. The
//! store's lock is never held across a request.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::index::BODY;
use super::recall::Recall;
use super::vectors;
use hearth_base::embed::EmbedError;
use hearth_base::store::{Cold, now_ms};

/// The most characters of an item that are embedded: what every common
/// model takes whole (the rest of a long entry rarely changes its gist).
pub const MAX_TEXT_CHARS: usize = 2_000;
/// The first wait after a failed batch; it doubles up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait between tries while the endpoint fails.
const MAX_WAIT: Duration = Duration::from_secs(300);
/// The longest a refused text waits before it is tried again.
const MAX_REFUSED_WAIT_MS: i64 = 24 * 3_600_000;

/// Sets the store up for `recall`'s model, or for none: with a model, the
/// triggers queue what is stored, vectors of another model (or length)
/// are deleted, everything without a vector is queued and what was
/// refused is tried again; without one,
/// the queue is emptied (the vectors are kept, should the same model
/// come back). Returns how many items were queued.
pub fn configure(
    conn: &Connection,
    model: Option<&str>,
    dims: Option<usize>,
) -> rusqlite::Result<usize> {
    let tx = conn.unchecked_transaction()?;
    let Some(model) = model else {
        tx.execute_batch("DELETE FROM embedding_model; DELETE FROM embedding_queue;")?;
        tx.commit()?;
        return Ok(0);
    };
    tx.execute(
        "INSERT OR REPLACE INTO embedding_model (id, model) VALUES (1, ?1)",
        [model],
    )?;
    // A restart (after the config or the endpoint was fixed) tries what
    // was refused again at once.
    tx.execute(
        "UPDATE embedding_queue SET attempts = 0, next_try_ms = 0 WHERE attempts > 0",
        [],
    )?;
    tx.execute(
        "DELETE FROM embeddings WHERE model != ?1 OR (?2 IS NOT NULL AND dims != ?2)",
        params![model, dims.map(|d| d as i64)],
    )?;
    let mut queued = 0;
    for (kind, table) in [
        ("message", "messages"),
        ("memory", "memory"),
        ("scratchpad", "scratchpad"),
    ] {
        queued += tx.execute(
            &format!(
                "INSERT OR IGNORE INTO embedding_queue (kind, item_id) \
                 SELECT ?1, t.id FROM {table} t WHERE NOT EXISTS \
                 (SELECT 1 FROM embeddings e WHERE e.kind = ?1 AND e.item_id = t.id)"
            ),
            [kind],
        )?;
    }
    tx.commit()?;
    Ok(queued)
}

/// What one step of the indexer came to.
#[derive(Debug)]
pub enum Step {
    /// This many items were embedded and stored (or dropped, having no
    /// text).
    Done(usize),
    /// Nothing is due; the earliest retry is at this instant (ms), if any
    /// is waiting.
    Idle(Option<i64>),
    /// The endpoint failed; wait (as long as it said, if it did).
    Failed(EmbedError),
}

/// Embeds the next batch of the queue: reads it, asks the endpoint with
/// the lock released, and stores the vectors of the items still as they
/// were sent.
pub fn step(recall: &Recall, cold: &Cold) -> rusqlite::Result<Step> {
    let now = now_ms();
    let batch = {
        let conn = cold.lock();
        let batch = due(&conn, now, recall.config.batch_size)?;
        if batch.is_empty() {
            let next: Option<i64> =
                conn.query_row("SELECT min(next_try_ms) FROM embedding_queue", [], |r| {
                    r.get(0)
                })?;
            return Ok(Step::Idle(next));
        }
        let mut items = Vec::with_capacity(batch.len());
        let mut empty = Vec::new();
        for (kind, id, attempts) in batch {
            match text_of(&conn, &kind, id)? {
                Some(text) => items.push((kind, id, attempts, text)),
                None => empty.push((kind, id)),
            }
        }
        for (kind, id) in &empty {
            conn.execute(
                "DELETE FROM embedding_queue WHERE kind = ?1 AND item_id = ?2",
                params![kind, id],
            )?;
        }
        if items.is_empty() {
            return Ok(Step::Done(empty.len()));
        }
        items
    };
    let texts: Vec<String> = batch.iter().map(|(_, _, _, t)| t.clone()).collect();
    let vectors = match recall.embed_batch(&texts) {
        Ok(vectors) => vectors,
        Err(e) if !e.transient() => {
            refused(&cold.lock(), &batch, now, &e)?;
            return Ok(Step::Done(0));
        }
        Err(e) => return Ok(Step::Failed(e)),
    };
    let conn = cold.lock();
    let tx = conn.unchecked_transaction()?;
    let mut stored = 0;
    for ((kind, id, _, sent), vector) in batch.iter().zip(vectors) {
        // Changed or deleted while it was away: what is queued now wins.
        if text_of(&tx, kind, *id)?.as_deref() != Some(sent.as_str()) {
            continue;
        }
        let Some(unit) = vectors::normalized(&vector) else {
            continue;
        };
        tx.execute(
            "INSERT OR REPLACE INTO embeddings (kind, item_id, model, dims, vector) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                kind,
                id,
                recall.model(),
                unit.len() as i64,
                vectors::to_blob(&unit)
            ],
        )?;
        tx.execute(
            "DELETE FROM embedding_queue WHERE kind = ?1 AND item_id = ?2",
            params![kind, id],
        )?;
        stored += 1;
    }
    tx.commit()?;
    Ok(Step::Done(stored))
}

/// Embeds the queue for as long as the daemon runs: first whatever is
/// missing for the configured model, then what is queued whenever it is
/// woken, waiting out the endpoint's failures.
pub async fn run(recall: Arc<Recall>, cold: Cold) {
    let setup = {
        let (recall, cold) = (Arc::clone(&recall), cold.clone());
        tokio::task::spawn_blocking(move || {
            let queued = configure(&cold.lock(), Some(recall.model()), recall.config.dimensions)?;
            recall.warm(&cold).map(|_| queued)
        })
        .await
    };
    match setup {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::info!(items = n, "queued for embedding"),
        Ok(Err(e)) => tracing::warn!("cannot set up embedding: {e}"),
        Err(e) => tracing::warn!("the embedding set-up was lost: {e}"),
    }
    let mut wait = FIRST_WAIT;
    let mut failing = false;
    // The last failure logged: a streak of the same one is logged once
    // (and again at the longest wait), a different one each time.
    let mut last_logged = String::new();
    loop {
        let stepped = {
            let (recall, cold) = (Arc::clone(&recall), cold.clone());
            tokio::task::spawn_blocking(move || step(&recall, &cold)).await
        };
        match stepped {
            Ok(Ok(Step::Done(n))) => {
                if failing {
                    tracing::info!("the embeddings endpoint answers again");
                    failing = false;
                    last_logged.clear();
                }
                wait = FIRST_WAIT;
                tracing::debug!(items = n, "embedded");
            }
            Ok(Ok(Step::Idle(next))) => {
                let sleep = next.map(|at| (at - now_ms()).max(0) as u64 + 10);
                match sleep {
                    Some(ms) => {
                        tokio::select! {
                            () = recall.woken() => {}
                            () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        }
                    }
                    None => recall.woken().await,
                }
            }
            Ok(Ok(Step::Failed(e))) => {
                let pause = match &e {
                    EmbedError::RateLimited {
                        retry_after: Some(after),
                        ..
                    } => (*after).max(Duration::from_millis(100)),
                    _ => wait,
                };
                let said = e.to_string();
                if said != last_logged || wait >= MAX_WAIT {
                    last_logged = said;
                    tracing::warn!(
                        retry_in_ms = pause.as_millis() as u64,
                        "cannot embed for recall by meaning (kept queued): {e}"
                    );
                }
                failing = true;
                wait = (wait * 2).min(MAX_WAIT);
                tokio::time::sleep(pause).await;
            }
            Ok(Err(e)) => {
                tracing::warn!("the embedding queue failed: {e}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_WAIT);
            }
            Err(e) => {
                tracing::warn!("the embedding indexer was lost: {e}");
                return;
            }
        }
    }
}

/// The queued items due at `now`: a batch of fresh ones, or else one that
/// was refused before (tried alone).
fn due(conn: &Connection, now: i64, batch: usize) -> rusqlite::Result<Vec<(String, i64, i64)>> {
    let read = |sql: &str, limit: i64| -> rusqlite::Result<Vec<(String, i64, i64)>> {
        conn.prepare_cached(sql)?
            .query_map(params![now, limit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect()
    };
    let fresh = read(
        "SELECT kind, item_id, attempts FROM embedding_queue \
         WHERE attempts = 0 AND next_try_ms <= ?1 LIMIT ?2",
        batch as i64,
    )?;
    if !fresh.is_empty() {
        return Ok(fresh);
    }
    read(
        "SELECT kind, item_id, attempts FROM embedding_queue \
         WHERE attempts > 0 AND next_try_ms <= ?1 ORDER BY next_try_ms LIMIT ?2",
        1,
    )
}

/// Records the endpoint's refusal of `batch`: each of a batch is tried
/// alone next; one alone waits, longer after each refusal.
fn refused(
    conn: &Connection,
    batch: &[(String, i64, i64, String)],
    now: i64,
    e: &EmbedError,
) -> rusqlite::Result<()> {
    for (kind, id, attempts, _) in batch {
        let next = if batch.len() > 1 {
            now
        } else {
            tracing::warn!(
                kind,
                id,
                attempts = attempts + 1,
                "the embeddings endpoint refuses this item (kept queued): {e}"
            );
            now + (60_000_i64 << (*attempts).clamp(0, 20)).min(MAX_REFUSED_WAIT_MS)
        };
        conn.execute(
            "UPDATE embedding_queue SET attempts = attempts + 1, next_try_ms = ?3 \
             WHERE kind = ?1 AND item_id = ?2",
            params![kind, id, next],
        )?;
    }
    Ok(())
}

/// The text of item `id` of `kind` that is embedded, cut to
/// [`MAX_TEXT_CHARS`]; `None` when it is gone or has no text.
pub fn text_of(conn: &Connection, kind: &str, id: i64) -> rusqlite::Result<Option<String>> {
    let sql = match kind {
        "message" => format!("SELECT {BODY} FROM messages m WHERE m.id = ?1"),
        "memory" => "SELECT fact FROM memory WHERE id = ?1".to_owned(),
        _ => "SELECT title || char(10) || body FROM scratchpad WHERE id = ?1".to_owned(),
    };
    let text: Option<Option<String>> = conn
        .prepare_cached(&sql)?
        .query_row([id], |r| r.get(0))
        .optional()?;
    Ok(text.flatten().and_then(|t| {
        let t = t.trim();
        if t.is_empty() {
            return None;
        }
        Some(match t.char_indices().nth(MAX_TEXT_CHARS) {
            Some((at, _)) => t[..at].to_owned(),
            None => t.to_owned(),
        })
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use hearth_base::embed::{Embed, EmbeddingsConfig};

    /// An endpoint that answers from a script, then with each text's
    /// length as a 2-number vector; it records what it was sent.
    struct Scripted {
        next: Mutex<Vec<Result<(), EmbedError>>>,
        sent: Mutex<Vec<Vec<String>>>,
    }

    impl Embed for Scripted {
        fn model(&self) -> &str {
            "m1"
        }

        fn embed(&self, texts: &[String], _: Duration) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.sent.lock().unwrap().push(texts.to_vec());
            if let Some(Err(e)) = self.next.lock().unwrap().pop() {
                return Err(e);
            }
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    fn setup(
        script: Vec<Result<(), EmbedError>>,
    ) -> (tempfile::TempDir, Cold, Recall, Arc<Scripted>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        hearth_base::store::Store::open(&path).unwrap();
        let cold = Cold::open(&path).unwrap();
        let endpoint = Arc::new(Scripted {
            next: Mutex::new(script),
            sent: Mutex::new(Vec::new()),
        });
        let config = EmbeddingsConfig {
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "m1".into(),
            api_key_env: None,
            api_key_secret: None,
            secrets_home: std::path::PathBuf::new(),
            dimensions: None,
            batch_size: 2,
            timeout_ms: 1_000,
            query_timeout_ms: 1_000,
            min_similarity: 0.0,
        };
        let recall = Recall::new(Arc::clone(&endpoint) as Arc<dyn Embed>, &config);
        (dir, cold, recall, endpoint)
    }

    fn count(cold: &Cold, sql: &str) -> i64 {
        cold.lock().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn what_was_stored_before_is_queued_and_a_failure_keeps_it_queued() {
        let (_dir, cold, recall, endpoint) =
            setup(vec![Err(EmbedError::Unreachable("refused".into()))]);
        {
            let conn = cold.lock();
            for fact in ["tea with lemon", "a heron", "a third"] {
                conn.execute(
                    "INSERT INTO memory (agent_id, fact, created_at_ms) VALUES (1, ?1, 0)",
                    [fact],
                )
                .unwrap();
            }
            // Without a model nothing was queued.
            assert_eq!(configure(&conn, None, None).unwrap(), 0);
            assert_eq!(configure(&conn, Some("m1"), None).unwrap(), 3);
        }
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Failed(_)));
        assert_eq!(count(&cold, "SELECT count(*) FROM embedding_queue"), 3);
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Done(2)));
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Done(1)));
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Idle(None)));
        assert_eq!(count(&cold, "SELECT count(*) FROM embeddings"), 3);
        // A change queues it again; a new model embeds everything again.
        cold.lock()
            .execute("UPDATE memory SET fact = 'tea, no sugar' WHERE id = 1", [])
            .unwrap();
        assert_eq!(count(&cold, "SELECT count(*) FROM embeddings"), 2);
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Done(1)));
        assert_eq!(configure(&cold.lock(), Some("m2"), None).unwrap(), 3);
        assert_eq!(count(&cold, "SELECT count(*) FROM embeddings"), 0);
        cold.lock().execute("DELETE FROM memory", []).unwrap();
        assert_eq!(count(&cold, "SELECT count(*) FROM embedding_queue"), 0);
        assert_eq!(endpoint.sent.lock().unwrap()[0].len(), 2);
    }

    #[test]
    fn a_refused_batch_is_tried_one_by_one_and_a_refused_text_waits() {
        let refusal = || EmbedError::Refused {
            status: 400,
            message: "too long".into(),
        };
        // Popped from the end: the batch, then its first item alone.
        let (_dir, cold, recall, endpoint) = setup(vec![Err(refusal()), Err(refusal())]);
        {
            let conn = cold.lock();
            configure(&conn, Some("m1"), None).unwrap();
            for fact in ["one", "two"] {
                conn.execute(
                    "INSERT INTO memory (agent_id, fact, created_at_ms) VALUES (1, ?1, 0)",
                    [fact],
                )
                .unwrap();
            }
        }
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Done(0)));
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Done(0)));
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Done(1)));
        // The one refused alone waits its turn, still queued.
        assert!(matches!(step(&recall, &cold).unwrap(), Step::Idle(Some(_))));
        assert_eq!(
            count(&cold, "SELECT attempts FROM embedding_queue"),
            2,
            "{:?}",
            endpoint.sent.lock().unwrap()
        );
        assert_eq!(count(&cold, "SELECT count(*) FROM embeddings"), 1);
    }
}
