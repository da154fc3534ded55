//! The one cold connection: shared by every module that touches the
//! database now and then rather than on every turn.
//!
//! Each SQLite connection costs memory for its schema copy and page cache,
//! idle or not. The confirmation gate, the standing grants, the plugins'
//! host services (kv, history, notices, control-socket messages) and the
//! Lua kv store each run a statement at human speed, so they take turns on
//! one connection instead of holding four.
//!
//! Architecture invariant: a holder locks it for its own statements only,
//! never across a call into another holder, so the sharing cannot deadlock.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use super::StoreError;

/// A cheap handle to the shared cold connection; clones share it.
#[derive(Clone)]
pub struct Cold(Arc<Mutex<Connection>>);

impl Cold {
    /// Opens the cold connection to the store at `path`.
    pub fn open(path: &Path) -> Result<Cold, StoreError> {
        Ok(Cold(Arc::new(Mutex::new(super::open_cold_connection(
            path,
        )?))))
    }

    /// The connection, for one holder's statements.
    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        // A poisoned lock only means a holder panicked mid-statement; SQLite
        // rolled that statement back, and the connection is still sound.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
