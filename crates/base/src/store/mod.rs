//! The SQLite store: `$HEARTH_HOME/hearth.db`, in WAL mode, with numbered
//! migrations tracked in `PRAGMA user_version`.
//!
//! One file holds everything the daemon must not lose. WAL lets readers run
//! beside the single writer, and `synchronous = NORMAL` is durable across a
//! process crash (the case that matters for a daemon) while keeping commits
//! cheap. A database written by a newer hearth is refused rather than
//! guessed at. Checkpoints run on a thread of their own (`checkpoint`), not
//! inside whichever commit fills the WAL.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

mod checkpoint;
mod cold;

pub use cold::Cold;

/// The migrations, in order; migration N brings `user_version` to N.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_kv.sql"),
    include_str!("migrations/0003_agent.sql"),
    include_str!("migrations/0004_confirmations.sql"),
    include_str!("migrations/0005_policy.sql"),
    include_str!("migrations/0006_outbox_files.sql"),
    include_str!("migrations/0007_people.sql"),
    include_str!("migrations/0008_jobs.sql"),
    include_str!("migrations/0009_search.sql"),
    include_str!("migrations/0010_notes.sql"),
    include_str!("migrations/0011_identity.sql"),
    include_str!("migrations/0012_notepad.sql"),
    include_str!("migrations/0013_versions.sql"),
    include_str!("migrations/0014_pages.sql"),
    include_str!("migrations/0015_usage.sql"),
    include_str!("migrations/0016_usage_summary.sql"),
    include_str!("migrations/0017_groups.sql"),
    include_str!("migrations/0018_embeddings.sql"),
    include_str!("migrations/0019_capture.sql"),
];

/// The schema version this build writes and reads: the last migration's
/// number (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The schema after the last migration, which creates a fresh store.
const SCHEMA: &str = include_str!("schema.sql");

/// The database file name inside `$HEARTH_HOME`.
pub const FILE_NAME: &str = "hearth.db";

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// Why the store could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory for the database could not be created.
    #[error("cannot create {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// SQLite refused to open the file, or it is not a database.
    #[error("cannot open database {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A migration failed; the database is left at the version it had before
    /// this start (pending migrations commit together).
    #[error("database {path}: migration {version} failed: {source}")]
    Migration {
        /// The file.
        path: PathBuf,
        /// The migration that failed.
        version: usize,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The database was written by a newer hearth.
    #[error(
        "database {path} has schema version {found}, newer than this hearth knows ({known}): \
         upgrade hearth, or restore a backup made for this version"
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest this build knows.
        known: usize,
    },
    /// The copy kept before migrating an older store could not be made;
    /// the store is left as it was.
    #[error(
        "cannot keep a copy of the database before upgrading its schema, at {path}: {source}; \
         the database is unchanged: free some space (or fix the folder's permissions) and \
         start again"
    )]
    PreUpgradeCopy {
        /// Where the copy was to go.
        path: PathBuf,
        /// SQLite's or the file system's error.
        source: std::io::Error,
    },
    /// Any other SQLite error.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_owned(),
                source,
            })?;
        }
        // Kept for migrations, the stop's checkpoint and the odd CLI query.
        let conn = open_cold_connection(path)?;
        migrate(&conn, path)?;
        Ok(Store {
            conn,
            path: path.to_owned(),
        })
    }

    /// The connection, for the modules that own their tables.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the connection, checkpointing the WAL into the main file.
    pub fn close(self) -> Result<(), StoreError> {
        // Move everything into the database file and empty the WAL, even
        // though other connections (the policy's, a leaked plugin bridge's)
        // may still be open: SQLite deletes the WAL only when the last
        // connection closes, and a clean stop should leave one
        // self-contained file.
        let _busy_log_pages: (i64, i64, i64) = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(StoreError::Sqlite)?;
        self.conn.close().map_err(|(_, e)| StoreError::Sqlite(e))
    }
}

/// Opens another connection to an existing store, for a thread that writes
/// on its own (the inbox writer).
pub fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    open_with(path, false)
}

/// Opens a connection for a cold path, one that runs a statement now and
/// then (standing grants, confirmation records, control-socket messages,
/// the Lua kv store). It gives up SQLite's per-connection lookaside
/// allocator (about 120 KiB, taken at open whether used or not) and keeps
/// a small page cache: an idle daemon holds several such connections.
pub fn open_cold_connection(path: &Path) -> Result<Connection, StoreError> {
    open_with(path, true)
}

fn open_with(path: &Path, cold: bool) -> Result<Connection, StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let mut conn = Connection::open(path).map_err(open_err)?;
    if cold {
        // SAFETY: the handle is valid while `conn` lives; no statement has
        // run yet, so no lookaside slot is in use (SQLite's precondition),
        // and the variadic arguments are the documented (void*, int, int).
        let code = unsafe {
            rusqlite::ffi::sqlite3_db_config(
                conn.handle(),
                rusqlite::ffi::SQLITE_DBCONFIG_LOOKASIDE,
                std::ptr::null_mut::<std::ffi::c_void>(),
                0,
                0,
            )
        };
        if code != rusqlite::ffi::SQLITE_OK {
            tracing::debug!(code, "lookaside left on for a cold connection");
        }
        conn.execute_batch("PRAGMA cache_size = -256")
            .map_err(open_err)?;
    }
    conn.busy_handler(Some(wait_for_lock)).map_err(open_err)?;
    // `journal_mode` answers with a row, so it is read, not executed; this is
    // also the first statement that touches the file, so a file that is not
    // a database fails here with SQLite's "file is not a database".
    let _mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(open_err)?;
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
        .map_err(open_err)?;
    checkpoint::install(&mut conn, path).map_err(open_err)?;
    Ok(conn)
}

/// SQLite's own busy timeout sleeps at least a millisecond per retry, which
/// is the whole budget of a turn. Writers here hold the lock for tens of
/// microseconds, so retry every 50 µs at first, then every millisecond, and
/// give up after about five seconds.
fn wait_for_lock(attempt: i32) -> bool {
    const FAST: i32 = 2_000;
    let wait = if attempt < FAST {
        Duration::from_micros(50)
    } else {
        Duration::from_millis(1)
    };
    if attempt >= FAST + 4_900 {
        return false;
    }
    std::thread::sleep(wait);
    true
}

/// The main agent's id: the `agents` row the schema seeds, which answers
/// the owner.
pub const MAIN_AGENT: i64 = 1;

/// Milliseconds since the Unix epoch, the time unit of every table.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn migrate(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > MIGRATIONS.len() as i64 {
        return Err(StoreError::TooNew {
            path: path.to_owned(),
            found: current,
            known: MIGRATIONS.len(),
        });
    }
    if current <= 0 {
        return create_fresh(conn, path);
    }
    if current < MIGRATIONS.len() as i64 {
        keep_pre_upgrade_copy(conn, path, current)?;
    }
    // All pending migrations and the version bump commit together: a crash
    // mid-way leaves the previous version intact.
    let tx = conn
        .unchecked_transaction()
        .map_err(|source| migration_error(path, current as usize + 1, source))?;
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = index + 1;
        tx.execute_batch(sql)
            .and_then(|()| tx.pragma_update(None, "user_version", version as i64))
            .map_err(|source| migration_error(path, version, source))?;
    }
    tx.commit()
        .map_err(|source| migration_error(path, MIGRATIONS.len(), source))?;
    Ok(())
}

/// The folder, beside the database, where the copy made before each schema
/// upgrade is kept: an upgrade can be undone by putting it back.
pub const PRE_UPGRADE_DIR: &str = "backups/pre-upgrade";

/// Copies the store as it is (schema `version`) into [`PRE_UPGRADE_DIR`]
/// before the migrations change it. `VACUUM INTO` writes a consistent,
/// compact copy; nothing else writes while the store opens.
fn keep_pre_upgrade_copy(conn: &Connection, path: &Path, version: i64) -> Result<(), StoreError> {
    let dir = path
        .parent()
        .unwrap_or(Path::new("."))
        .join(PRE_UPGRADE_DIR);
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    let copy = dir.join(format!("hearth-schema{version}-{stamp}.db"));
    let fail = |source| StoreError::PreUpgradeCopy {
        path: copy.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let target = copy.to_str().ok_or_else(|| {
        fail(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path is not UTF-8",
        ))
    })?;
    conn.execute("VACUUM INTO ?1", [target])
        .map_err(|e| fail(std::io::Error::other(e)))?;
    tracing::info!(
        copy = %copy.display(),
        from = version,
        to = MIGRATIONS.len(),
        "kept a copy of the database before upgrading its schema"
    );
    Ok(())
}

/// Creates the schema of a new store from `schema.sql`, at the last
/// migration's version, in one transaction.
fn create_fresh(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let version = MIGRATIONS.len();
    let tx = conn
        .unchecked_transaction()
        .map_err(|source| migration_error(path, version, source))?;
    tx.execute_batch(SCHEMA)
        .and_then(|()| tx.pragma_update(None, "user_version", version as i64))
        .and_then(|()| tx.commit())
        .map_err(|source| migration_error(path, version, source))
}

fn migration_error(path: &Path, version: usize, source: rusqlite::Error) -> StoreError {
    StoreError::Migration {
        path: path.to_owned(),
        version,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lookaside slots a connection holds (`SQLITE_DBSTATUS_LOOKASIDE_USED`).
    fn lookaside_in_use(conn: &Connection) -> i32 {
        let (mut current, mut highest) = (0, 0);
        // SAFETY: a valid handle and two out-pointers, as documented.
        let code = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                conn.handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_LOOKASIDE_USED,
                &mut current,
                &mut highest,
                0,
            )
        };
        assert_eq!(code, rusqlite::ffi::SQLITE_OK);
        highest
    }

    #[test]
    fn an_older_store_is_copied_as_it_was_before_its_migrations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        let old = MIGRATIONS.len() - 1;
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..old] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", old as i64)
                .unwrap();
            conn.execute(
                "INSERT INTO kv (namespace, key, value, updated_at_ms) VALUES ('s', 'k', 'v', 0)",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store
                .conn()
                .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
                .unwrap(),
            SCHEMA_VERSION
        );
        let copies: Vec<_> = std::fs::read_dir(dir.path().join(PRE_UPGRADE_DIR))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(copies.len(), 1, "{copies:?}");
        let name = copies[0].file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("hearth-schema{old}-")), "{name}");
        let copy = Connection::open(&copies[0]).unwrap();
        let (version, value): (i64, String) = copy
            .query_row(
                "SELECT (SELECT user_version FROM pragma_user_version), value FROM kv",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((version, value.as_str()), (old as i64, "v"));
        // A store already current is not copied again.
        drop(store);
        Store::open(&path).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path().join(PRE_UPGRADE_DIR))
                .unwrap()
                .count(),
            1
        );
    }

    #[test]
    fn a_cold_connection_has_no_lookaside_and_a_small_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        let store = Store::open(&path).unwrap();
        let hot = open_connection(&path).unwrap();
        let cold = open_cold_connection(&path).unwrap();
        for conn in [store.conn(), &hot, &cold] {
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap();
        }
        assert!(lookaside_in_use(&hot) > 0);
        assert_eq!(lookaside_in_use(&cold), 0);
        assert_eq!(lookaside_in_use(store.conn()), 0);
        let cache: i64 = cold
            .query_row("PRAGMA cache_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(cache, -256);
    }

    #[test]
    fn fresh_database_is_migrated_to_the_latest_version_in_wal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("sub/hearth.db")).unwrap();
        let version: i64 = store
            .conn()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let mode: String = store
            .conn()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        store.close().unwrap();
        // Reopening runs no migration twice.
        Store::open(&dir.path().join("sub/hearth.db")).unwrap();
    }

    /// Everything about a schema that code can observe: each table's columns
    /// (order, type, null, default, key), foreign keys and indexes (with
    /// their origin and columns), each index's definition, and the rows the
    /// schema seeds.
    fn shape(conn: &Connection) -> Vec<String> {
        let rows = |sql: &str| -> Vec<Vec<rusqlite::types::Value>> {
            let mut stmt = conn.prepare(sql).unwrap();
            let width = stmt.column_count();
            stmt.query_map([], |r| (0..width).map(|i| r.get(i)).collect())
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let text = |v: &rusqlite::types::Value| match v {
            rusqlite::types::Value::Text(t) => t.clone(),
            other => format!("{other:?}"),
        };
        let mut shape = Vec::new();
        let mut dump = |rows: Vec<Vec<rusqlite::types::Value>>| {
            shape.extend(rows.iter().map(|r| format!("{r:?}")));
        };
        let objects = rows(
            "SELECT type, name, ifnull(sql, '') FROM sqlite_schema \
             WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        );
        let mut described = Vec::new();
        for object in &objects {
            let (kind, name) = (text(&object[0]), text(&object[1]));
            if kind == "table" {
                described.push(format!("table {name}"));
                dump(rows(&format!("PRAGMA table_xinfo('{name}')")));
                dump(rows(&format!(
                    "SELECT * FROM pragma_foreign_key_list('{name}')"
                )));
                let indexes = rows(&format!(
                    "SELECT name, \"unique\", origin, partial FROM pragma_index_list('{name}') \
                     ORDER BY name"
                ));
                for index in indexes {
                    dump(vec![index.clone()]);
                    dump(rows(&format!("PRAGMA index_xinfo('{}')", text(&index[0]))));
                }
            } else {
                let sql = text(&object[2]);
                described.push(format!(
                    "{kind} {name}: {}",
                    sql.split_whitespace().collect::<Vec<_>>().join(" ")
                ));
            }
        }
        dump(rows("SELECT * FROM agents ORDER BY id"));
        shape.extend(described);
        shape
    }

    #[test]
    fn the_fresh_schema_equals_the_migrations_applied_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
        // A store made by the first migration only, as hearth's first
        // release left it; opening it applies the rest.
        let old_path = dir.path().join("old.db");
        let old = Connection::open(&old_path).unwrap();
        old.execute_batch(MIGRATIONS[0]).unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        drop(old);
        let migrated = Store::open(&old_path).unwrap();
        let (fresh, migrated) = (shape(fresh.conn()), shape(migrated.conn()));
        assert!(fresh.len() > 100, "{fresh:#?}");
        for (a, b) in fresh.iter().zip(&migrated) {
            assert_eq!(a, b, "schema.sql and the migrations differ");
        }
        assert_eq!(fresh.len(), migrated.len());
    }

    #[test]
    fn newer_schema_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let err = Store::open(&path).err().unwrap().to_string();
        assert!(err.contains("schema version 99"), "{err}");
        assert!(err.contains("upgrade hearth"), "{err}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        let err = Store::open(&path).err().unwrap().to_string();
        assert!(err.contains("not a database"), "{err}");
        assert!(err.contains("hearth.db"), "{err}");
    }
}
