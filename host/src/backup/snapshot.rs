//! A consistent copy of a live SQLite database, through SQLite's online
//! backup API.
//!
//! The copy runs inside one read transaction on the source: in WAL mode
//! that pins a snapshot, so every page comes from the same instant, and
//! it blocks no writer (the daemon keeps committing to the WAL meanwhile;
//! only checkpoints wait past the snapshot). Without the pinned snapshot,
//! each write by another connection would restart the backup, and under
//! steady load it might never finish. Pages are copied in steps, so the
//! copy holds no lock of its own for long. Both of hearth's databases are
//! in WAL mode; one in rollback-journal mode would make its writers wait
//! for the whole copy.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

/// Copies the database at `source` into a new file `target`; returns the
/// source's `PRAGMA user_version` in the copied snapshot.
pub fn copy(source: &Path, target: &Path) -> rusqlite::Result<i64> {
    let src = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    src.busy_timeout(Duration::from_secs(10))?;
    // The first read inside the transaction takes the snapshot; every step
    // below reads from it.
    src.execute_batch("BEGIN DEFERRED")?;
    let version: i64 = src.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let _tables: i64 = src.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    let mut dst = Connection::open(target)?;
    {
        let backup = Backup::new(&src, &mut dst)?;
        let mut busy_since: Option<Instant> = None;
        loop {
            match backup.step(STEP_PAGES)? {
                StepResult::Done => break,
                StepResult::More => busy_since = None,
                _ => {
                    let since = *busy_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > BUSY_LIMIT {
                        return Err(rusqlite::Error::SqliteFailure(
                            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                            Some(format!(
                                "{} stayed locked for {} s",
                                source.display(),
                                BUSY_LIMIT.as_secs()
                            )),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
    src.execute_batch("COMMIT")?;
    dst.close().map_err(|(_, e)| e)?;
    Ok(version)
}

/// Pages copied per step (4 MiB at the default page size).
const STEP_PAGES: i32 = 1024;
/// How long the copy waits, in all, for a source that answers busy.
const BUSY_LIMIT: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer commits all through the copy; the copy is one consistent
    /// instant: every row a committed transaction wrote, or none of them.
    #[test]
    fn a_copy_under_steady_writes_is_one_consistent_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA user_version = 7; \
             CREATE TABLE t (batch INTEGER, n INTEGER, pad BLOB);",
        )
        .unwrap();
        // Enough pages that the copy takes several steps.
        for batch in 0..40 {
            let tx = conn.unchecked_transaction().unwrap();
            for n in 0..100 {
                tx.execute("INSERT INTO t VALUES (?1, ?2, zeroblob(1000))", [batch, n])
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (path, stop) = (path.clone(), std::sync::Arc::clone(&stop));
            std::thread::spawn(move || {
                let conn = Connection::open(&path).unwrap();
                conn.busy_timeout(Duration::from_secs(5)).unwrap();
                let mut batch = 1000;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let tx = conn.unchecked_transaction().unwrap();
                    for n in 0..100 {
                        tx.execute("INSERT INTO t VALUES (?1, ?2, zeroblob(1000))", [batch, n])
                            .unwrap();
                    }
                    tx.commit().unwrap();
                    batch += 1;
                }
                batch - 1000
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        let target = dir.path().join("copy.db");
        let version = copy(&path, &target).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let written = writer.join().unwrap();
        assert!(written > 0, "the writer was blocked throughout");
        assert_eq!(version, 7);
        let copied = Connection::open(&target).unwrap();
        let ok: String = copied
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let torn: i64 = copied
            .query_row(
                "SELECT count(*) FROM (SELECT batch FROM t GROUP BY batch HAVING count(*) != 100)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(torn, 0, "a transaction was copied in part");
    }
}
