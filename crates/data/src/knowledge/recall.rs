//! `Recall`: what recall by meaning holds while the daemon runs, the
//! endpoint (`hearth_base::embed::Embed`), the settings of
//! `[memory.embeddings]` and the messages' vectors in memory, shared by
//! the background indexer (`embedding`) and the searches (`hybrid`).
//! Without `[memory.embeddings]` there is none, and search is by keyword.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::Notify;

use super::vectors::{self, MessageVectors};
use hearth_base::embed::{Embed, EmbedError, EmbeddingsConfig};
use hearth_base::store::Cold;

/// Recall by meaning, as configured.
pub struct Recall {
    embed: Arc<dyn Embed>,
    /// `[memory.embeddings]`.
    pub config: EmbeddingsConfig,
    messages: Mutex<MessageVectors>,
    /// Wakes the indexer: something was queued.
    wake: Notify,
}

impl Recall {
    /// Recall through `embed`, with `config`'s settings.
    pub fn new(embed: Arc<dyn Embed>, config: &EmbeddingsConfig) -> Recall {
        Recall {
            embed,
            config: config.clone(),
            messages: Mutex::new(MessageVectors::default()),
            wake: Notify::new(),
        }
    }

    /// The model every vector here is made by.
    pub fn model(&self) -> &str {
        self.embed.model()
    }

    /// Tells the indexer that items were queued (it embeds them soon).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits for [`Recall::wake`].
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Embeds `texts` for the index, within `timeout_ms`.
    pub fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed
            .embed(texts, Duration::from_millis(self.config.timeout_ms))
    }

    /// The vector of a search's `text`, normalized, within the short
    /// `query_timeout_ms`: a search that cannot have it answers by
    /// keyword. Call it before taking the store's lock.
    pub fn query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let timeout = Duration::from_millis(self.config.query_timeout_ms);
        let vector = self
            .embed
            .embed(&[text.trim().to_owned()], timeout)?
            .into_iter()
            .next()
            .ok_or_else(|| EmbedError::Malformed("no vector for the query".into()))?;
        vectors::normalized(&vector)
            .ok_or_else(|| EmbedError::Malformed("the query's vector has no length".into()))
    }

    /// The `k` messages most like `query`, at least `min_similarity`
    /// alike, best first; only agent `agent`'s sessions when given. The
    /// vectors stored since the last search are read first.
    pub fn messages_like(
        &self,
        conn: &Connection,
        query: &[f32],
        agent: Option<i64>,
        k: usize,
    ) -> rusqlite::Result<Vec<(i64, f32)>> {
        let mut held = self.messages.lock().unwrap_or_else(|p| p.into_inner());
        held.refresh(conn, self.model(), i64::MAX)?;
        Ok(held.nearest(query, agent, self.config.min_similarity, k))
    }

    /// Reads every stored vector of the messages into memory, a few
    /// thousand at a time, each under the store's lock for a moment only:
    /// done at start, so the first search does not read them all while
    /// holding the lock.
    pub fn warm(&self, cold: &Cold) -> rusqlite::Result<usize> {
        const CHUNK: i64 = 4_000;
        let mut total = 0;
        loop {
            let conn = cold.lock();
            let mut held = self.messages.lock().unwrap_or_else(|p| p.into_inner());
            let read = held.refresh(&conn, self.model(), CHUNK)?;
            total += read;
            if (read as i64) < CHUNK {
                return Ok(total);
            }
        }
    }

    /// Agent `agent`'s memories (`kind` "memory") or scratchpad entries
    /// most like `query`, best first.
    pub fn notes_like(
        &self,
        conn: &Connection,
        kind: &str,
        agent: i64,
        query: &[f32],
        k: usize,
    ) -> rusqlite::Result<Vec<(i64, f32)>> {
        vectors::notes_like(
            conn,
            kind,
            agent,
            self.model(),
            query,
            self.config.min_similarity,
            k,
        )
    }
}
