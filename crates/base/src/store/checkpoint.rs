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
//! checkpoint and ends with it.

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
            request(&path);
        }
        Ok(())
    }))
}

/// Per database: when its last checkpoint thread started, and whether it
/// is still running.
static STATE: Mutex<Option<HashMap<PathBuf, (Instant, bool)>>> = Mutex::new(None);

fn request(path: &Path) {
    let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
    let map = state.get_or_insert_with(HashMap::new);
    let now = Instant::now();
    if let Some((started, running)) = map.get(path)
        && (*running || now.duration_since(*started) < MIN_GAP)
    {
        return;
    }
    map.insert(path.to_owned(), (now, true));
    let owned = path.to_owned();
    let spawned = std::thread::Builder::new()
        .name("hearth-checkpoint".into())
        .spawn(move || {
            checkpoint(&owned);
            let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = state.get_or_insert_with(HashMap::new).get_mut(&owned) {
                entry.1 = false;
            }
        });
    if let Err(e) = spawned {
        // The next commit past the threshold asks again.
        tracing::warn!("cannot start a checkpoint thread: {e}");
        map.insert(path.to_owned(), (now, false));
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
