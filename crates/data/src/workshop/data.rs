//! `agent_data.db`: the agent's own SQLite file, where it creates tables,
//! keeps rows and serves page queries from.
//!
//! The file is the agent's alone and nothing else is within reach of what
//! it runs here. That is enforced by SQLite itself, not by looking at the
//! SQL text: an authorizer refuses `ATTACH` (which also stops `VACUUM
//! INTO`), `load_extension`, every pragma outside a read-only allow-list,
//! virtual tables other than FTS5, and transactions that would outlive one
//! statement; `SQLITE_DBCONFIG_DEFENSIVE` stops writes to the schema table,
//! `SQLITE_LIMIT_ATTACHED` is 0, and a progress handler ends a statement at
//! its time limit. Results are bounded in rows and bytes and say when they
//! were cut.
//!
//! Architecture invariant: nothing here opens a file other than
//! `agent_data.db`, and no statement runs without the authorizer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OpenFlags, Statement};
use serde_json::{Map, Value, json};

/// The agent's database file.
pub struct AgentData {
    path: PathBuf,
    /// The connection that writes, opened at first use: an idle daemon
    /// whose agent never made a table holds no connection.
    write: Mutex<Option<Guarded>>,
    /// Connections opened read-only, for queries that may only read: a
    /// second one opens only when a query arrives while the first is busy,
    /// so one slow page query (a public page's, say) never holds up the
    /// others.
    read: [Mutex<Option<Guarded>>; READERS],
}

/// Read-only connections at most: two is enough that a slow query never
/// blocks the next, and each costs a page cache.
const READERS: usize = 2;

/// How much one statement may return and how long it may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Rows returned at most; more set `truncated`.
    pub rows: usize,
    /// Bytes of values returned at most; more set `truncated`.
    pub bytes: usize,
    /// Wall-clock time the statement may run.
    pub time: Duration,
}

impl Bounds {
    /// For `execute_sql` and Lua's `hearth.db`: what a model can read.
    pub const TOOL: Bounds = Bounds {
        rows: 500,
        bytes: 256 << 10,
        time: Duration::from_secs(5),
    };
    /// For a page's named query: a browser waits on it.
    pub const PAGE: Bounds = Bounds {
        rows: 1000,
        bytes: 1 << 20,
        time: Duration::from_secs(1),
    };
}

/// Which connection a statement runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The writing connection: reads and writes.
    ReadWrite,
    /// The read-only connection: a statement that would write is refused
    /// before it runs (and the file is opened read-only besides).
    ReadOnly,
}

/// What a statement returned.
#[derive(Debug, Default, PartialEq)]
pub struct Rows {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Each row's values, in column order.
    pub rows: Vec<Vec<Value>>,
    /// Whether rows were left out for the bounds.
    pub truncated: bool,
    /// Rows changed, for a statement that writes.
    pub changes: Option<u64>,
    /// The last inserted rowid, for a statement that writes.
    pub last_insert_rowid: Option<i64>,
}

/// Why a statement did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be opened or set up.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The agent's database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The SQL text holds no statement.
    #[error("field `sql`: there is no statement")]
    Empty,
    /// The SQL text holds more than one statement.
    #[error("field `sql`: one statement at a time, please (the text holds more than one)")]
    MultipleStatements,
    /// The authorizer refused something the statement does.
    #[error("refused: {0}")]
    Refused(String),
    /// A read-only query would write.
    #[error("refused: this query may only read, and the statement writes")]
    WritesInReadOnly,
    /// The statement ran past its time limit.
    #[error("the statement ran past its time limit of {} ms and was stopped", .0.as_millis())]
    TimedOut(Duration),
    /// The parameters do not fit the statement.
    #[error("field `params`: {0}")]
    Params(String),
    /// SQLite refused or failed the statement.
    #[error("SQL error: {0}")]
    Sql(String),
}

impl AgentData {
    /// The agent's database at `path` (`$HEARTH_HOME/agent_data.db`); the
    /// file is created at the first statement.
    pub fn new(path: &Path) -> AgentData {
        AgentData {
            path: path.to_owned(),
            write: Mutex::new(None),
            read: std::array::from_fn(|_| Mutex::new(None)),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs one statement with `params` (a JSON array for `?` parameters,
    /// an object for named ones, or null) within `bounds`.
    pub fn run(
        &self,
        access: Access,
        sql: &str,
        params: &Value,
        bounds: Bounds,
    ) -> Result<Rows, DataError> {
        if access == Access::ReadOnly && !self.path.exists() {
            // The read-only connection cannot create the file. Checked
            // first so a page query never waits on a long write's lock.
            self.with(Access::ReadWrite, |_| Ok(()))?;
        }
        self.with(access, |guarded| guarded.run(access, sql, params, bounds))
    }

    /// Whether `sql` is one statement that only reads, by SQLite's own
    /// judgement of the prepared statement; errors as [`AgentData::run`].
    pub fn is_read_only(&self, sql: &str) -> Result<bool, DataError> {
        self.with(Access::ReadWrite, |guarded| {
            let stmt = guarded.prepare(sql)?;
            Ok(stmt.readonly())
        })
    }

    fn with<T>(
        &self,
        access: Access,
        f: impl FnOnce(&Guarded) -> Result<T, DataError>,
    ) -> Result<T, DataError> {
        // A poisoned lock held a connection whose statement panicked; the
        // connection itself is still sound.
        let mut slot = match access {
            Access::ReadWrite => self.write.lock().unwrap_or_else(PoisonError::into_inner),
            // The first free reader, else wait for the first.
            Access::ReadOnly => self
                .read
                .iter()
                .find_map(|slot| match slot.try_lock() {
                    Ok(guard) => Some(guard),
                    Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                    Err(TryLockError::WouldBlock) => None,
                })
                .unwrap_or_else(|| self.read[0].lock().unwrap_or_else(PoisonError::into_inner)),
        };
        if slot.is_none() {
            *slot = Some(Guarded::open(&self.path, access)?);
        }
        match slot.as_ref() {
            Some(guarded) => f(guarded),
            None => unreachable!("the slot was filled above"),
        }
    }
}

impl Rows {
    /// Each row as an object keyed by column name (a later column with a
    /// repeated name wins), for Lua and page queries.
    pub fn objects(&self) -> Vec<Value> {
        self.rows
            .iter()
            .map(|row| {
                let object: Map<String, Value> = self
                    .columns
                    .iter()
                    .cloned()
                    .zip(row.iter().cloned())
                    .collect();
                Value::Object(object)
            })
            .collect()
    }

    /// The answer `execute_sql` gives.
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "columns": self.columns,
            "rows": self.rows,
            "row_count": self.rows.len(),
            "truncated": self.truncated,
        });
        if let Some(changes) = self.changes {
            out["changes"] = json!(changes);
            out["last_insert_rowid"] = json!(self.last_insert_rowid);
        }
        out
    }
}

/// A connection with the authorizer and limits set, and where the
/// authorizer leaves the reason for its last refusal.
struct Guarded {
    conn: Connection,
    refusal: Arc<Mutex<Option<String>>>,
    /// When the running statement must stop, in ns after `started`;
    /// `u64::MAX` between statements. The progress handler reads it.
    deadline: Arc<AtomicU64>,
    started: Instant,
}

impl Guarded {
    fn open(path: &Path, access: Access) -> Result<Guarded, DataError> {
        let open_err = |source| DataError::Open {
            path: path.to_owned(),
            source,
        };
        // No URI parsing: the name is a plain path, never `file:...?...`.
        let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX
            | match access {
                Access::ReadWrite => {
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
                }
                Access::ReadOnly => OpenFlags::SQLITE_OPEN_READ_ONLY,
            };
        let mut conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
        use rusqlite::config::DbConfig;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)
            .map_err(open_err)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)
            .map_err(open_err)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)
            .map_err(open_err)?;
        conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, 16 << 20)
            .map_err(open_err)?;
        conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, 1 << 20)
            .map_err(open_err)?;
        conn.busy_timeout(Duration::from_secs(2))
            .map_err(open_err)?;
        if access == Access::ReadWrite {
            // WAL, so page queries on the read-only connection never wait
            // for a write; set before the authorizer, which refuses it.
            conn.pragma_update(None, "journal_mode", "wal")
                .map_err(open_err)?;
            conn.pragma_update(None, "synchronous", "normal")
                .map_err(open_err)?;
        }
        let refusal = Arc::new(Mutex::new(None));
        let noted = Arc::clone(&refusal);
        conn.authorizer(Some(move |context: AuthContext<'_>| {
            match authorize(&context) {
                Ok(()) => Authorization::Allow,
                Err(why) => {
                    *noted.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
                    Authorization::Deny
                }
            }
        }))
        .map_err(open_err)?;
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let started = Instant::now();
        let watched = Arc::clone(&deadline);
        // Every 1000 virtual-machine steps: cheap, and a runaway statement
        // stops within a few ms of its limit.
        conn.progress_handler(
            1000,
            Some(move || nanos_since(started) >= watched.load(Ordering::Relaxed)),
        )
        .map_err(open_err)?;
        Ok(Guarded {
            conn,
            refusal,
            deadline,
            started,
        })
    }

    fn prepare(&self, sql: &str) -> Result<Statement<'_>, DataError> {
        if sql.trim().is_empty() {
            return Err(DataError::Empty);
        }
        self.take_refusal();
        self.conn.prepare(sql).map_err(|e| self.explain(e))
    }

    fn run(
        &self,
        access: Access,
        sql: &str,
        params: &Value,
        bounds: Bounds,
    ) -> Result<Rows, DataError> {
        let mut stmt = self.prepare(sql)?;
        if access == Access::ReadOnly && !stmt.readonly() {
            return Err(DataError::WritesInReadOnly);
        }
        bind(&mut stmt, params)?;
        let limit = u64::try_from(bounds.time.as_nanos()).unwrap_or(u64::MAX);
        self.deadline.store(
            nanos_since(self.started).saturating_add(limit),
            Ordering::Relaxed,
        );
        let result = self.step(&mut stmt, bounds);
        self.deadline.store(u64::MAX, Ordering::Relaxed);
        let mut rows = result.map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _)
                if f.code == rusqlite::ErrorCode::OperationInterrupted =>
            {
                DataError::TimedOut(bounds.time)
            }
            e => self.explain(e),
        })?;
        if !stmt.readonly() {
            rows.changes = Some(self.conn.changes());
            rows.last_insert_rowid = Some(self.conn.last_insert_rowid());
        }
        Ok(rows)
    }

    fn step(&self, stmt: &mut Statement<'_>, bounds: Bounds) -> rusqlite::Result<Rows> {
        let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
        let width = columns.len();
        let mut out = Rows {
            columns,
            ..Rows::default()
        };
        let mut bytes = 0;
        let mut raw = stmt.raw_query();
        while let Some(row) = raw.next()? {
            if out.rows.len() == bounds.rows {
                out.truncated = true;
                break;
            }
            let mut values = Vec::with_capacity(width);
            for i in 0..width {
                let value = to_json(row.get_ref(i)?);
                bytes += approximate_size(&value);
                values.push(value);
            }
            if bytes > bounds.bytes {
                out.truncated = true;
                break;
            }
            out.rows.push(values);
        }
        Ok(out)
    }

    fn take_refusal(&self) -> Option<String> {
        self.refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// SQLite's error, or the authorizer's reason when it refused.
    fn explain(&self, e: rusqlite::Error) -> DataError {
        if let Some(why) = self.take_refusal() {
            return DataError::Refused(why);
        }
        // An interrupted statement is `run`'s to explain: only a running
        // statement has a deadline.
        match e {
            rusqlite::Error::MultipleStatement => DataError::MultipleStatements,
            e => DataError::Sql(e.to_string()),
        }
    }
}

fn nanos_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Pragmas that only read; those taking a table or index name may have
/// one, the others may not have a value (a value would set them).
const READ_PRAGMAS_WITH_NAME: [&str; 7] = [
    "table_info",
    "table_xinfo",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "foreign_key_check",
];
const READ_PRAGMAS: [&str; 8] = [
    "table_list",
    "user_version",
    "schema_version",
    "data_version",
    "page_count",
    "freelist_count",
    "integrity_check",
    "quick_check",
];

/// Virtual table modules a table may use: full-text search only.
const MODULES: [&str; 2] = ["fts5", "fts5vocab"];

/// The authorizer's ruling on one action.
fn authorize(context: &AuthContext<'_>) -> Result<(), String> {
    if let Some(db) = context.database_name
        && !matches!(db, "main" | "temp")
    {
        return Err(format!(
            "database {db:?}: only the agent's own database is reachable"
        ));
    }
    match context.action {
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => Err(
            "ATTACH, DETACH and VACUUM INTO: the agent's database is the only file this reaches"
                .into(),
        ),
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let name = pragma_name.to_ascii_lowercase();
            let allowed = READ_PRAGMAS_WITH_NAME.contains(&name.as_str())
                || (READ_PRAGMAS.contains(&name.as_str()) && pragma_value.is_none());
            if allowed {
                Ok(())
            } else {
                Err(format!(
                    "PRAGMA {pragma_name}: only pragmas that read are allowed ({}, {})",
                    READ_PRAGMAS_WITH_NAME.join(", "),
                    READ_PRAGMAS.join(", ")
                ))
            }
        }
        AuthAction::Function { function_name }
            if function_name.eq_ignore_ascii_case("load_extension")
                || function_name.eq_ignore_ascii_case("fts3_tokenizer") =>
        {
            Err(format!("{function_name}(): extensions cannot be loaded"))
        }
        AuthAction::CreateVtable { module_name, .. }
        | AuthAction::DropVtable { module_name, .. }
            if !MODULES.iter().any(|m| m.eq_ignore_ascii_case(module_name)) =>
        {
            Err(format!(
                "virtual table module {module_name}: only {} are allowed",
                MODULES.join(" and ")
            ))
        }
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Err("transactions: each statement commits on its own (one statement per call)".into())
        }
        AuthAction::Unknown { code, .. } => Err(format!("an action SQLite calls {code}")),
        _ => Ok(()),
    }
}

/// Binds `params` to `stmt`'s parameters, all of which must get a value.
fn bind(stmt: &mut Statement<'_>, params: &Value) -> Result<(), DataError> {
    let count = stmt.parameter_count();
    match params {
        Value::Null if count == 0 => Ok(()),
        Value::Null => Err(DataError::Params(format!(
            "the statement has {count} parameter(s) and none were given"
        ))),
        Value::Array(items) => {
            if items.len() != count {
                return Err(DataError::Params(format!(
                    "the statement has {count} parameter(s) and {} were given",
                    items.len()
                )));
            }
            for (i, item) in items.iter().enumerate() {
                stmt.raw_bind_parameter(i + 1, to_sql(item))
                    .map_err(|e| DataError::Params(format!("[{i}]: {e}")))?;
            }
            Ok(())
        }
        Value::Object(named) => {
            let mut bound = vec![false; count];
            for (key, item) in named {
                let index = [":", "@", "$", ""]
                    .iter()
                    .find_map(|prefix| {
                        let name = format!("{prefix}{key}");
                        stmt.parameter_index(&name).ok().flatten()
                    })
                    .ok_or_else(|| {
                        DataError::Params(format!("`{key}` is not a parameter of the statement"))
                    })?;
                stmt.raw_bind_parameter(index, to_sql(item))
                    .map_err(|e| DataError::Params(format!("`{key}`: {e}")))?;
                bound[index - 1] = true;
            }
            match bound.iter().position(|b| !b) {
                Some(missing) => Err(DataError::Params(format!(
                    "{} has no value",
                    stmt.parameter_name(missing + 1).unwrap_or("a parameter")
                ))),
                None => Ok(()),
            }
        }
        other => Err(DataError::Params(format!(
            "must be an array or an object, not {other}"
        ))),
    }
}

fn to_sql(value: &Value) -> SqlValue {
    match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => SqlValue::Text(s.clone()),
        // Arrays and objects are stored as JSON text, which SQLite's JSON
        // functions read.
        other => SqlValue::Text(other.to_string()),
    }
}

fn to_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => json!(i),
        ValueRef::Real(f) => json!(f),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => json!({ "blob_hex": hex(b) }),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// About what a value takes in the JSON answer.
fn approximate_size(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        Value::Object(o) => o.values().map(approximate_size).sum::<usize>() + 16,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> (tempfile::TempDir, AgentData) {
        let dir = tempfile::tempdir().unwrap();
        let data = AgentData::new(&dir.path().join("agent_data.db"));
        (dir, data)
    }

    #[test]
    fn statements_are_refused_by_the_authorizer_with_a_reason() {
        let (dir, data) = data();
        let other = dir.path().join("hearth.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE secret(x)")
            .unwrap();
        let cases = [
            (format!("ATTACH '{}' AS h", other.display()), "ATTACH"),
            (
                format!("VACUUM INTO '{}'", dir.path().join("copy.db").display()),
                "VACUUM INTO",
            ),
            ("SELECT load_extension('x')".into(), "extensions"),
            (
                "PRAGMA writable_schema = 1".into(),
                "PRAGMA writable_schema",
            ),
            ("PRAGMA journal_mode = delete".into(), "PRAGMA journal_mode"),
            ("PRAGMA user_version = 3".into(), "PRAGMA user_version"),
            ("BEGIN".into(), "transactions"),
            (
                "CREATE VIRTUAL TABLE t USING rtree(id, a, b)".into(),
                "rtree",
            ),
        ];
        for (sql, expected) in cases {
            let error = data
                .run(Access::ReadWrite, &sql, &Value::Null, Bounds::TOOL)
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{sql}: {error}");
        }
        assert!(!dir.path().join("copy.db").exists());
    }

    #[test]
    fn reads_writes_params_and_bounds() {
        let (_dir, data) = data();
        let run =
            |sql: &str, params: Value| data.run(Access::ReadWrite, sql, &params, Bounds::TOOL);
        run("CREATE TABLE item(name TEXT, qty INTEGER)", Value::Null).unwrap();
        let written = run("INSERT INTO item VALUES (?, ?)", json!(["milk", 2])).unwrap();
        assert_eq!(written.changes, Some(1));
        run(
            "INSERT INTO item VALUES (:name, :qty)",
            json!({"name": "eggs", "qty": 12}),
        )
        .unwrap();
        let rows = data
            .run(
                Access::ReadOnly,
                "SELECT * FROM item WHERE qty > :min",
                &json!({"min": 5}),
                Bounds::PAGE,
            )
            .unwrap();
        assert_eq!(rows.objects(), vec![json!({"name": "eggs", "qty": 12})]);
        let errors = [
            ("SELECT ?", json!([])),
            ("SELECT ?", Value::Null),
            ("SELECT :a", json!({})),
            ("SELECT :a", json!({"b": 1})),
            ("SELECT 1; SELECT 2", Value::Null),
            ("   ", Value::Null),
            ("SELEC 1", Value::Null),
        ];
        for (sql, params) in errors {
            assert!(run(sql, params).is_err(), "{sql}");
        }
        let error = data
            .run(
                Access::ReadOnly,
                "DELETE FROM item",
                &Value::Null,
                Bounds::PAGE,
            )
            .unwrap_err();
        assert!(matches!(error, DataError::WritesInReadOnly), "{error}");
        let small = Bounds {
            rows: 1,
            ..Bounds::TOOL
        };
        let cut = data
            .run(Access::ReadWrite, "SELECT * FROM item", &Value::Null, small)
            .unwrap();
        assert!(cut.truncated);
        assert_eq!(cut.rows.len(), 1);
    }

    #[test]
    fn a_slow_query_does_not_hold_up_the_next() {
        let (_dir, data) = data();
        data.run(
            Access::ReadWrite,
            "CREATE TABLE t (a)",
            &Value::Null,
            Bounds::TOOL,
        )
        .unwrap();
        let runaway =
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n";
        std::thread::scope(|s| {
            let slow = s.spawn(|| data.run(Access::ReadOnly, runaway, &Value::Null, Bounds::PAGE));
            // Until the slow query holds a reader, there is nothing to test.
            while data.read.iter().all(|slot| slot.try_lock().is_ok()) {
                std::thread::yield_now();
            }
            let quick = data.run(
                Access::ReadOnly,
                "SELECT count(*) FROM t",
                &Value::Null,
                Bounds::PAGE,
            );
            assert_eq!(quick.unwrap().rows, vec![vec![json!(0)]]);
            assert!(
                !slow.is_finished(),
                "the quick query waited for the slow one"
            );
            assert!(matches!(slow.join().unwrap(), Err(DataError::TimedOut(_))));
        });
    }

    #[test]
    fn a_runaway_statement_stops_at_its_time_limit() {
        let (_dir, data) = data();
        let quick = Bounds {
            time: Duration::from_millis(200),
            ..Bounds::TOOL
        };
        let sql = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";
        let started = Instant::now();
        let error = data
            .run(Access::ReadWrite, sql, &Value::Null, quick)
            .unwrap_err();
        assert!(matches!(error, DataError::TimedOut(_)), "{error}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_read_only_query_creates_a_missing_file() {
        let (dir, data) = data();
        let rows = data
            .run(Access::ReadOnly, "SELECT 1", &Value::Null, Bounds::PAGE)
            .unwrap();
        assert_eq!(rows.rows, vec![vec![json!(1)]]);
        assert!(dir.path().join("agent_data.db").exists());
    }

    #[test]
    fn the_byte_cap_counts_every_value() {
        let (_dir, data) = data();
        // 'abcd' is 4 + 2, the blob {"blob_hex": "0102"} 4 + 2 + 16, the
        // integer 8: 36 bytes a row.
        let sql = "SELECT 'abcd', x'0102', 7";
        let cap = |bytes| {
            let bounds = Bounds {
                bytes,
                ..Bounds::TOOL
            };
            data.run(Access::ReadOnly, sql, &Value::Null, bounds)
                .unwrap()
        };
        let kept = cap(36);
        assert!(!kept.truncated);
        assert_eq!(
            kept.rows,
            vec![vec![json!("abcd"), json!({"blob_hex": "0102"}), json!(7)]]
        );
        let cut = cap(35);
        assert!(cut.truncated);
        assert!(cut.rows.is_empty());
        let two = "SELECT 'abcd', x'0102', 7 UNION ALL SELECT 'abcd', x'0102', 8";
        let bounds = Bounds {
            bytes: 71,
            ..Bounds::TOOL
        };
        let rows = data
            .run(Access::ReadOnly, two, &Value::Null, bounds)
            .unwrap();
        assert!(rows.truncated);
        assert_eq!(rows.rows.len(), 1);
    }

    #[test]
    fn a_page_query_does_not_wait_for_a_long_write() {
        let (_dir, data) = data();
        let run = |sql: &str| data.run(Access::ReadWrite, sql, &Value::Null, Bounds::TOOL);
        run("CREATE TABLE t (a)").unwrap();
        let runaway = "INSERT INTO t WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                       SELECT i FROM n";
        std::thread::scope(|s| {
            let slow = s.spawn(|| run(runaway));
            while data.write.try_lock().is_ok() {
                std::thread::yield_now();
            }
            let quick = data.run(
                Access::ReadOnly,
                "SELECT count(*) FROM t",
                &Value::Null,
                Bounds::PAGE,
            );
            assert_eq!(quick.unwrap().rows, vec![vec![json!(0)]]);
            assert!(!slow.is_finished(), "the page query waited for the write");
            assert!(matches!(slow.join().unwrap(), Err(DataError::TimedOut(_))));
        });
    }

    #[test]
    fn full_text_tables_are_allowed_and_unknown_actions_are_not() {
        let (_dir, data) = data();
        let run = |sql: &str| data.run(Access::ReadWrite, sql, &Value::Null, Bounds::TOOL);
        run("CREATE VIRTUAL TABLE notes USING fts5(body)").unwrap();
        run("INSERT INTO notes VALUES ('the kettle is on')").unwrap();
        let found = run("SELECT body FROM notes WHERE notes MATCH 'kettle'").unwrap();
        assert_eq!(found.rows.len(), 1);
        run("DROP TABLE notes").unwrap();
        // A newer SQLite's action rusqlite does not know is refused.
        let unknown = AuthContext {
            action: AuthAction::Unknown {
                code: 99,
                arg1: None,
                arg2: None,
            },
            database_name: None,
            accessor: None,
        };
        assert!(authorize(&unknown).unwrap_err().contains("99"));
    }
}
