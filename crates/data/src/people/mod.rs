//! People: the contacts the agents may talk to besides the owner, how a
//! stranger asks to become one, and the directory the gate reads.
//!
//! - `contacts`: the tables and every change to them;
//! - `directory`: the in-memory lookup by channel and id;
//! - `pairing`: one-time codes for strangers inside an allow-list;
//! - `reach`: where a message for the owner goes.
//!
//! [`People`] ties them together on the shared cold connection and keeps
//! the directory in step with every change made through it.

pub mod contacts;
pub mod directory;
pub mod pairing;
pub mod reach;

use std::sync::{Arc, RwLock};

use rusqlite::Connection;

pub use directory::{Directory, Known};
use hearth_base::store::Cold;
pub use reach::Reach;

/// The contacts, and the directory the gate reads.
pub struct People {
    cold: Cold,
    directory: RwLock<Arc<Directory>>,
}

impl People {
    /// Loads the directory from the store behind `cold`.
    pub fn open(cold: Cold) -> rusqlite::Result<People> {
        let directory = Directory::load(&cold.lock())?;
        Ok(People {
            cold,
            directory: RwLock::new(Arc::new(directory)),
        })
    }

    /// The contact `id` is on `channel`, if any: a hash lookup.
    pub fn lookup(&self, channel: &str, id: &str) -> Option<Known> {
        self.directory().get(channel, id).cloned()
    }

    /// The directory as it is now.
    pub fn directory(&self) -> Arc<Directory> {
        Arc::clone(&self.directory.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Reads the contacts without changing them.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        f(&self.cold.lock())
    }

    /// Changes the contacts with `f`, then rebuilds the directory, whether
    /// or not `f` succeeded, so the directory always matches the tables.
    pub fn change<T, E>(&self, f: impl FnOnce(&Connection) -> Result<T, E>) -> Result<T, E> {
        let conn = self.cold.lock();
        let outcome = f(&conn);
        match Directory::load(&conn) {
            Ok(directory) => {
                *self.directory.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(directory)
            }
            Err(e) => tracing::error!("cannot reload the contact directory: {e}"),
        }
        outcome
    }
}
