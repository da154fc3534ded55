//! The `usage` table: rows written in batches by a thread of their own, and
//! the sums the budget and the reports read.
//!
//! Why a thread: a WAL commit costs tens of microseconds, a tenth of a
//! plain turn's whole host time, while a model call's row can wait. The
//! caller appends the row to a queue in memory; the writer lingers a few
//! milliseconds so the rows of a busy moment share one transaction, then
//! commits them on the shared cold connection. The daily budget never
//! waits for it: the `Meter` keeps today's count in memory. `flush` (the
//! reports) and `close` (a clean stop) cut the linger short and wait for
//! the commit; a crash can lose the rows of its last few milliseconds.
//! The thread starts with the first row, so a daemon that never calls a
//! model never has it.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};

use super::Kind;
use super::period::Span;
use crate::llm::Usage;
use hearth_base::store::Cold;

/// One model call, as it is stored.
pub(super) struct Row {
    pub at_ms: i64,
    pub agent: i64,
    pub session: Option<i64>,
    pub inbox: Option<i64>,
    pub kind: Kind,
    pub provider: &'static str,
    pub model: String,
    pub usage: Usage,
}

/// One model's calls over a span.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelTotals {
    /// The wire format.
    pub provider: String,
    /// The model.
    pub model: String,
    /// How many calls.
    pub calls: u64,
    /// Their tokens, added up.
    pub usage: Usage,
}

/// Every token recorded in `span`.
pub fn tokens_in(conn: &Connection, span: Span) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "SELECT coalesce(sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens), 0) \
         FROM usage WHERE at_ms >= ?1 AND at_ms < ?2",
    )?
    .query_row(params![span.start_ms, span.end_ms], |r| r.get::<_, i64>(0))
    .map(|n| n.max(0) as u64)
}

/// Each model's calls in `span`, the most tokens first.
pub fn by_model(conn: &Connection, span: Span) -> rusqlite::Result<Vec<ModelTotals>> {
    let mut stmt = conn.prepare_cached(
        "SELECT provider, model, count(*), sum(input_tokens), sum(output_tokens), \
                sum(cache_read_tokens), sum(cache_write_tokens) \
         FROM usage WHERE at_ms >= ?1 AND at_ms < ?2 GROUP BY provider, model \
         ORDER BY sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) DESC, model",
    )?;
    let count = |r: &rusqlite::Row<'_>, i| r.get::<_, i64>(i).map(|n| n.max(0) as u64);
    stmt.query_map(params![span.start_ms, span.end_ms], |r| {
        Ok(ModelTotals {
            provider: r.get(0)?,
            model: r.get(1)?,
            calls: count(r, 2)?,
            usage: Usage {
                input_tokens: count(r, 3)?,
                output_tokens: count(r, 4)?,
                cache_read_tokens: count(r, 5)?,
                cache_write_tokens: count(r, 6)?,
            },
        })
    })?
    .collect()
}

/// How long the writer waits after a batch's first row before it commits.
const LINGER: Duration = Duration::from_millis(10);

/// The queue and the thread that empties it.
pub(super) struct Writer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    cold: Cold,
    queue: Mutex<Queue>,
    /// The writer waits here for rows, and while it lingers.
    wake: Condvar,
    /// `flush` waits here for commits.
    committed: Condvar,
}

#[derive(Default)]
struct Queue {
    rows: Vec<Row>,
    /// Rows ever queued.
    queued: u64,
    /// Rows ever committed (or given up on, with an error logged).
    written: u64,
    /// Someone waits for the queue: commit without lingering.
    hurry: bool,
    /// The writer waits for rows and needs a wake-up (while it lingers, a
    /// row joins the batch without one).
    idle: bool,
    /// Whether the thread has been started.
    started: bool,
    /// No thread (stopped, or the system refused one): rows are written
    /// in place.
    closed: bool,
}

impl Writer {
    /// A writer committing on `cold`; its thread starts with the first row.
    pub(super) fn new(cold: Cold) -> Writer {
        Writer {
            shared: Arc::new(Shared {
                cold,
                queue: Mutex::new(Queue::default()),
                wake: Condvar::new(),
                committed: Condvar::new(),
            }),
            thread: Mutex::new(None),
        }
    }

    /// Queues `row` for the next commit.
    pub(super) fn push(&self, row: Row) {
        let mut queue = lock(&self.shared.queue);
        if !queue.closed && !queue.started {
            queue.started = true;
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("hearth-usage".into())
                .spawn(move || shared.run());
            match spawned {
                Ok(handle) => *lock(&self.thread) = Some(handle),
                Err(e) => {
                    tracing::warn!("cannot start the usage writer, writing in place: {e}");
                    queue.closed = true;
                }
            }
        }
        if queue.closed {
            drop(queue);
            write(&self.shared.cold.lock(), std::slice::from_ref(&row));
            return;
        }
        queue.rows.push(row);
        queue.queued += 1;
        if queue.idle {
            queue.idle = false;
            self.shared.wake.notify_one();
        }
    }

    /// Waits until every row queued so far is committed.
    pub(super) fn flush(&self) {
        let mut queue = lock(&self.shared.queue);
        let target = queue.queued;
        if queue.written < target {
            queue.hurry = true;
            self.shared.wake.notify_one();
        }
        while queue.written < target && !queue.closed {
            queue = self
                .shared
                .committed
                .wait(queue)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Commits what is queued and stops the thread; later rows are written
    /// in place.
    pub(super) fn close(&self) {
        lock(&self.shared.queue).closed = true;
        self.shared.wake.notify_one();
        if let Some(handle) = lock(&self.thread).take()
            && handle.join().is_err()
        {
            tracing::error!("the usage writer panicked");
        }
        // Rows a panicking writer left behind still get their chance.
        let rows = std::mem::take(&mut lock(&self.shared.queue).rows);
        if !rows.is_empty() {
            write(&self.shared.cold.lock(), &rows);
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn run(&self) {
        let mut batch = Vec::new();
        loop {
            {
                let mut queue = lock(&self.queue);
                while queue.rows.is_empty() {
                    if queue.closed {
                        return;
                    }
                    queue.idle = true;
                    queue = self.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
                }
                queue.idle = false;
                // Let the rows of a busy moment gather into one commit.
                let until = Instant::now() + LINGER;
                while !queue.hurry && !queue.closed {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    queue = self
                        .wake
                        .wait_timeout(queue, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                queue.hurry = false;
                // Swap, so the queue keeps the capacity the last batch freed.
                std::mem::swap(&mut queue.rows, &mut batch);
            }
            write(&self.cold.lock(), &batch);
            let mut queue = lock(&self.queue);
            queue.written += batch.len() as u64;
            batch.clear();
            self.committed.notify_all();
        }
    }
}

/// Inserts `rows` in one transaction. A failure is logged, not returned:
/// the calls have been made, and nothing the caller could do would help.
fn write(conn: &Connection, rows: &[Row]) {
    let result = (|| -> rusqlite::Result<()> {
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO usage (at_ms, agent_id, session_id, inbox_id, kind, provider, model, \
                 input_tokens, output_tokens, cache_read_tokens, cache_write_tokens) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            for row in rows {
                let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                insert.execute(params![
                    row.at_ms,
                    row.agent,
                    row.session,
                    row.inbox,
                    row.kind.name(),
                    row.provider,
                    row.model,
                    count(row.usage.input_tokens),
                    count(row.usage.output_tokens),
                    count(row.usage.cache_read_tokens),
                    count(row.usage.cache_write_tokens),
                ])?;
            }
        }
        tx.commit()
    })();
    if let Err(e) = result {
        tracing::error!(rows = rows.len(), "cannot record model usage: {e}");
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(at_ms: i64, model: &str, input: u64) -> Row {
        Row {
            at_ms,
            agent: 1,
            session: None,
            inbox: None,
            kind: Kind::Turn,
            provider: "anthropic",
            model: model.to_owned(),
            usage: Usage {
                input_tokens: input,
                output_tokens: 1,
                cache_read_tokens: 2,
                cache_write_tokens: 3,
            },
        }
    }

    fn store() -> (tempfile::TempDir, Cold) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        hearth_base::store::Store::open(&path).unwrap();
        let cold = Cold::open(&path).unwrap();
        (dir, cold)
    }

    #[test]
    fn rows_from_many_threads_are_committed_by_flush_and_summed_by_span() {
        let (_dir, cold) = store();
        let writer = Writer::new(cold.clone());
        std::thread::scope(|s| {
            for t in 0..4 {
                let writer = &writer;
                s.spawn(move || {
                    for i in 0..250 {
                        let model = if i % 2 == 0 { "a" } else { "b" };
                        writer.push(row(t * 1000 + i, model, 10));
                    }
                });
            }
        });
        writer.flush();
        let all = Span {
            start_ms: 0,
            end_ms: i64::MAX,
        };
        assert_eq!(tokens_in(&cold.lock(), all).unwrap(), 1000 * 16);
        let first = Span {
            start_ms: 0,
            end_ms: 1000,
        };
        assert_eq!(tokens_in(&cold.lock(), first).unwrap(), 250 * 16);
        let models = by_model(&cold.lock(), all).unwrap();
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].calls, 500);
        assert_eq!(models[0].usage.input_tokens, 5000);
        assert_eq!(models[0].usage.cache_write_tokens, 1500);
    }

    #[test]
    fn close_commits_the_queue_and_later_rows_are_written_in_place() {
        let (_dir, cold) = store();
        let writer = Writer::new(cold.clone());
        (0..10).for_each(|i| writer.push(row(i, "a", 1)));
        writer.close();
        let all = Span {
            start_ms: 0,
            end_ms: i64::MAX,
        };
        assert_eq!(tokens_in(&cold.lock(), all).unwrap(), 70);
        writer.push(row(11, "a", 1));
        assert_eq!(tokens_in(&cold.lock(), all).unwrap(), 77);
    }
}
