//! The audit's writer thread: rows are committed in batches, off the
//! caller's thread.
//!
//! Why a thread: a commit in WAL mode costs tens of microseconds (the WAL
//! append and the lock dance), while a tool call through the registry is
//! otherwise a microsecond or two. The caller only appends its row to a
//! queue in memory and, if the writer sleeps, wakes it; the writer takes
//! everything queued and commits it as one transaction with one prepared
//! statement. Under load the queue fills while a commit runs, so batches
//! grow by themselves; when idle, the writer sleeps on a condition variable
//! (no timer ticks in an idle daemon).
//!
//! What this costs the audit's promise: a row is in memory for the moment
//! between its call's end and the writer's next commit (half a millisecond
//! of lingering plus the commit, unless the disk stalls). `Audit::close` (a clean stop) and
//! `Audit::flush` wait for every queued row; a crash (kill -9, power cut)
//! in that moment loses the rows of the calls that ended in it. The queue
//! is bounded: when it is full, callers wait for the writer rather than
//! drop a row.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use hearth_base::store::Cold;
use rusqlite::{Connection, params};

/// One row as it will be stored (already redacted); the fields are the
/// `audit` table's columns.
pub struct Row {
    pub at_ms: i64,
    pub caller: String,
    pub tool: String,
    pub args: String,
    pub fingerprint: String,
    pub decision: &'static str,
    pub reason: Option<String>,
    pub approval: Option<&'static str>,
    pub approver: Option<String>,
    pub outcome: &'static str,
    pub detail: Option<String>,
    pub duration_ms: f64,
}

/// The queue and the thread that empties it.
pub struct Writer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Rows waiting before callers are made to wait: generous, since a row is
/// a few hundred bytes, and only reached if the disk stalls.
const MAX_PENDING: usize = 4096;
/// How long the writer waits after the first row of a batch before it
/// commits: a bound on what a crash can lose, and what makes a burst of
/// calls one transaction.
const LINGER: std::time::Duration = std::time::Duration::from_micros(500);

struct Shared {
    /// The shared cold connection: a few rows a tool call.
    conn: Cold,
    queue: Mutex<Queue>,
    /// The writer waits here for rows.
    wake: Condvar,
    /// Callers wait here for space, and `flush` for commits.
    committed: Condvar,
}

#[derive(Default)]
struct Queue {
    rows: Vec<Row>,
    /// Rows ever queued.
    queued: u64,
    /// Rows ever written (or given up on, with an error logged).
    written: u64,
    /// The writer is asleep and needs a wake-up.
    idle: bool,
    /// The writer has stopped: rows are written in place.
    closed: bool,
}

impl Writer {
    /// Starts the writer on `conn`. Without a thread (the system refused
    /// one) rows are written in place, as after `close`.
    pub fn start(conn: Cold) -> Writer {
        let shared = Arc::new(Shared {
            conn,
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            committed: Condvar::new(),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("hearth-audit".into())
                .spawn(move || shared.run())
        };
        let thread = match thread {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::warn!("cannot start the audit writer, writing in place: {e}");
                lock(&shared.queue).closed = true;
                None
            }
        };
        Writer {
            shared,
            thread: Mutex::new(thread),
        }
    }

    /// Queues `row` for the next commit.
    pub fn push(&self, row: Row) {
        let mut queue = lock(&self.shared.queue);
        if queue.closed {
            drop(queue);
            write(&self.shared.conn.lock(), std::slice::from_ref(&row));
            return;
        }
        while queue.rows.len() >= MAX_PENDING && !queue.closed {
            queue = wait(&self.shared.committed, queue);
        }
        queue.rows.push(row);
        queue.queued += 1;
        if queue.idle {
            queue.idle = false;
            self.shared.wake.notify_one();
        }
    }

    /// Waits until every row queued so far is committed.
    pub fn flush(&self) {
        let mut queue = lock(&self.shared.queue);
        let target = queue.queued;
        while queue.written < target && !queue.closed {
            queue = wait(&self.shared.committed, queue);
        }
    }

    /// Commits what is queued and stops the thread; later rows are written
    /// in place.
    pub fn close(&self) {
        lock(&self.shared.queue).closed = true;
        self.shared.wake.notify_one();
        if let Some(handle) = lock(&self.thread).take()
            && handle.join().is_err()
        {
            tracing::error!("the audit writer panicked");
        }
        // Rows a panicking writer left behind still get their chance.
        let rows = std::mem::take(&mut lock(&self.shared.queue).rows);
        if !rows.is_empty() {
            write(&self.shared.conn.lock(), &rows);
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
                    queue = wait(&self.wake, queue);
                }
                queue.idle = false;
                if !queue.closed {
                    // Let a burst gather into one commit: calls that end
                    // while the writer lingers cost no wake-up at all.
                    drop(queue);
                    std::thread::sleep(LINGER);
                    queue = lock(&self.queue);
                }
                // Swap, so the queue keeps the capacity the last batch
                // freed instead of growing a new vector each time.
                std::mem::swap(&mut queue.rows, &mut batch);
            }
            write(&self.conn.lock(), &batch);
            let mut queue = lock(&self.queue);
            queue.written += batch.len() as u64;
            batch.clear();
            self.committed.notify_all();
        }
    }
}

/// Inserts `rows` in one transaction. A failure is logged, not returned:
/// the calls have already happened, and nothing the caller could do would
/// undo them.
fn write(conn: &Connection, rows: &[Row]) {
    let result = (|| -> rusqlite::Result<()> {
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO audit (at_ms, caller, tool, args, fingerprint, decision, reason, \
                 approval, approver, outcome, detail, duration_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?;
            for row in rows {
                insert.execute(params![
                    row.at_ms,
                    row.caller,
                    row.tool,
                    row.args,
                    row.fingerprint,
                    row.decision,
                    row.reason,
                    row.approval,
                    row.approver,
                    row.outcome,
                    row.detail,
                    row.duration_ms,
                ])?;
            }
        }
        tx.commit()
    })();
    if let Err(e) = result {
        tracing::error!(rows = rows.len(), "cannot write audit records: {e}");
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize) -> Row {
        Row {
            at_ms: i as i64,
            caller: "local".into(),
            tool: format!("tool{i}"),
            args: "{}".into(),
            fingerprint: "f".into(),
            decision: "allow",
            reason: None,
            approval: None,
            approver: None,
            outcome: "ok",
            detail: None,
            duration_ms: 0.0,
        }
    }

    fn count(path: &std::path::Path) -> i64 {
        let conn = Connection::open(path).expect("open");
        conn.query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
            .expect("count")
    }

    fn writer() -> (tempfile::TempDir, std::path::PathBuf, Writer) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("hearth.db");
        hearth_base::store::Store::open(&path).expect("store");
        let writer = Writer::start(hearth_base::store::Cold::open(&path).expect("conn"));
        (dir, path, writer)
    }

    #[test]
    fn rows_from_many_threads_are_all_committed_by_flush() {
        let (_dir, path, writer) = writer();
        std::thread::scope(|s| {
            for t in 0..4 {
                let writer = &writer;
                s.spawn(move || (0..500).for_each(|i| writer.push(row(t * 1000 + i))));
            }
        });
        writer.flush();
        assert_eq!(count(&path), 2000);
    }

    #[test]
    fn close_commits_the_queue_and_later_rows_are_written_in_place() {
        let (_dir, path, writer) = writer();
        (0..100).for_each(|i| writer.push(row(i)));
        writer.close();
        assert_eq!(count(&path), 100);
        writer.push(row(100));
        assert_eq!(count(&path), 101, "a row after close is written at once");
        writer.flush();
    }
}
