//! WAL checkpoints off the committing thread.
//!
//! SQLite's automatic checkpoint runs inside the commit that pushes the
//! WAL past its threshold: that commit copies the WAL into the database
//! and syncs it, milliseconds in which a turn, an inbox write or a tool
//! call's audit waits. It was the p99 of a turn. Every connection hearth
//! opens replaces it with a hook that only notices the WAL's size and, past
//! the threshold, hands the checkpoint to a short-lived thread with its own
//! connection. A `PASSIVE` checkpoint there never blocks readers or
//! writers; if a reader keeps it from finishing, a later commit asks again.
//!
//! No thread runs while nothing needs checkpointing: one is started for a
//! checkpoint and ends with it. A WAL the readers keep from being reset
//! stays past the threshold; a new checkpoint is then asked for only
//! once another threshold's worth of pages has come since the last one.
//! Asking at every commit past it, as SQLite's own checkpoint does (cheap
//! for SQLite: the pages are already copied), started a thread, a
//! connection and an fsync every 100 ms of a busy daemon, on a path with
//! nothing left to copy.

use std::collections::HashMap;
use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::hooks::Wal;

/// WAL size, in pages, past which a checkpoint is started (SQLite's own
/// default for its automatic checkpoint).
pub const PAGES: c_int = 1000;
/// The least time between two checkpoint threads for one database: a
/// reader that keeps the WAL from being reset must not make every commit
/// start a thread.
const MIN_GAP: Duration = Duration::from_millis(100);

/// Replaces `conn`'s automatic checkpoint with a request to the
/// checkpoint thread of the database at `path`.
pub fn install(conn: &mut Connection, path: &Path) -> rusqlite::Result<()> {
    let path = path.to_owned();
    conn.wal_hook(Some(move |_: &mut Wal, pages: c_int| {
        if pages >= PAGES {
            request(&path, pages);
        }
        Ok(())
    }))
}

/// One database's checkpoints.
#[derive(Clone, Copy)]
struct Checkpoints {
    /// When the last thread started.
    started: Instant,
    /// Whether it is still running.
    running: bool,
    /// The WAL's size, in pages, when it was asked for.
    at: c_int,
    /// Threads started so far.
    count: usize,
}

/// Per database, its checkpoints.
static STATE: Mutex<Option<HashMap<PathBuf, Checkpoints>>> = Mutex::new(None);

/// A commit left the WAL at `pages`, past the threshold.
fn request(path: &Path, pages: c_int) {
    let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
    let map = state.get_or_insert_with(HashMap::new);
    let now = Instant::now();
    let mut count = 0;
    if let Some(last) = map.get_mut(path) {
        if pages < last.at {
            // The WAL was reset since: its pages are all new.
            last.at = 0;
        }
        if last.running || now.duration_since(last.started) < MIN_GAP || pages - last.at < PAGES {
            return;
        }
        count = last.count;
    }
    let asked = Checkpoints {
        started: now,
        running: true,
        at: pages,
        count: count + 1,
    };
    map.insert(path.to_owned(), asked);
    let owned = path.to_owned();
    let spawned = std::thread::Builder::new()
        .name("hearth-checkpoint".into())
        .spawn(move || {
            checkpoint(&owned);
            let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = state.get_or_insert_with(HashMap::new).get_mut(&owned) {
                entry.running = false;
            }
        });
    if let Err(e) = spawned {
        // The next commit past the threshold asks again.
        tracing::warn!("cannot start a checkpoint thread: {e}");
        map.insert(
            path.to_owned(),
            Checkpoints {
                running: false,
                at: 0,
                ..asked
            },
        );
    }
}

fn checkpoint(path: &Path) {
    let result = Connection::open(path).and_then(|conn| {
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        })
    });
    match result {
        Ok((log, done)) => tracing::debug!(log, done, "WAL checkpoint"),
        Err(e) => tracing::warn!(path = %path.display(), "WAL checkpoint failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checkpoint threads started for the database at `path`.
    fn started(path: &Path) -> usize {
        let state = STATE.lock().unwrap_or_else(|p| p.into_inner());
        state
            .as_ref()
            .and_then(|map| map.get(path))
            .map_or(0, |c| c.count)
    }

    /// Waits until no checkpoint of the database at `path` is running.
    fn settled(path: &Path) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let running = STATE
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .and_then(|map| map.get(path))
                .is_some_and(|c| c.running);
            if !running {
                return;
            }
            assert!(Instant::now() < deadline, "the checkpoint never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_wal_a_reader_keeps_from_resetting_is_not_checkpointed_at_every_commit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("hearth.db");
        crate::store::Store::open(&path).expect("store");
        let conn = crate::store::open_connection(&path).expect("conn");
        conn.execute_batch("CREATE TABLE t (x BLOB)")
            .expect("table");
        // A reader holding its snapshot: the WAL cannot be reset under it.
        let reader = crate::store::open_connection(&path).expect("reader");
        reader
            .execute_batch("BEGIN; SELECT count(*) FROM t;")
            .expect("read");
        let insert = || {
            conn.execute("INSERT INTO t VALUES (zeroblob(4000))", [])
                .expect("insert");
        };
        // Each insert adds a few pages; a threshold's worth starts one.
        let mut inserts = 0;
        while started(&path) == 0 {
            insert();
            inserts += 1;
            assert!(inserts <= PAGES, "no checkpoint past the threshold");
        }
        settled(&path);
        // Commits past the threshold, spread over several of the gaps
        // between threads, but far fewer new pages than a threshold.
        for _ in 0..30 {
            insert();
            std::thread::sleep(MIN_GAP / 10);
        }
        settled(&path);
        assert_eq!(started(&path), 1, "a checkpoint with nothing new to copy");
        // Another threshold's worth does start one.
        for _ in 0..inserts {
            insert();
        }
        settled(&path);
        assert_eq!(started(&path), 2);
        reader.execute_batch("COMMIT").expect("end the read");
    }

    #[test]
    fn a_growing_wal_is_checkpointed_by_the_thread() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("hearth.db");
        crate::store::Store::open(&path).expect("store");
        let conn = crate::store::open_connection(&path).expect("conn");
        conn.execute_batch("CREATE TABLE t (x BLOB)")
            .expect("table");
        // Each row is about a page; well past the threshold in all.
        for _ in 0..(PAGES + 200) {
            conn.execute("INSERT INTO t VALUES (zeroblob(4000))", [])
                .expect("insert");
        }
        // Pages reach the database file only through a checkpoint, and the
        // test runs none itself: a file of a megabyte or more shows the
        // thread ran.
        let want = 1 << 20;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::metadata(&path).expect("size").len() < want {
            assert!(Instant::now() < deadline, "the WAL was never checkpointed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
