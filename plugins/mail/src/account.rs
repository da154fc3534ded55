//! What the watcher, the tools and the plugin share about the account: the
//! host, the settings, the stop flag, the cards waiting for an answer, and
//! what is kept in the plugin's key-value store (the cursor, each
//! correspondent's thread).

use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hearth_sdk::Host;
use hearth_sdk::protocol::{ChannelState, ChannelStatus, Submission, service};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::config::Settings;

/// The shared state.
pub struct Account {
    /// The host.
    pub host: Host,
    /// The settings.
    pub settings: Settings,
    /// Set when the plugin stops.
    pub stop: AtomicBool,
    /// The watcher's socket, to wake it from IDLE when stopping.
    pub socket: Mutex<Option<TcpStream>>,
    /// Cards shown: the card mail's `Message-ID` -> the confirmation id.
    pub cards: Mutex<HashMap<String, String>>,
    /// The owner's address the last message came from: cards go there.
    pub last_sender: Mutex<Option<String>>,
    /// Where attachments are saved.
    pub files_dir: std::path::PathBuf,
}

/// Where the watcher is in the folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The folder's UIDVALIDITY when `uid` was handled.
    pub validity: u32,
    /// The highest UID handled.
    pub uid: u32,
    /// When the last handled message came, in seconds since the epoch:
    /// where to look again if UIDVALIDITY changes.
    #[serde(default)]
    pub at_s: i64,
}

/// The thread a correspondent's last message belongs to: what a reply
/// needs to stay in it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// The message to answer.
    pub message_id: String,
    /// Its thread, oldest first, ending with it.
    pub references: Vec<String>,
    /// Its subject.
    pub subject: String,
}

const CURSOR: &str = "cursor";

impl Account {
    /// Whether the plugin is stopping.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Submits until the host has it ([`Host::submit_until_stored`]);
    /// `false` when the host or the plugin is stopping.
    pub fn submit(&self, submission: &Submission) -> bool {
        self.host
            .submit_until_stored(submission, || self.stopping())
    }

    /// Tells the host how the channel is.
    pub fn health(&self, state: ChannelState, detail: String) {
        if let Err(e) = self
            .host
            .submit(&Submission::ChannelStatus(ChannelStatus { state, detail }))
        {
            tracing::debug!("mail: the channel's status was not taken: {e}");
        }
    }

    /// The saved cursor.
    pub fn cursor(&self) -> Option<Cursor> {
        self.get(CURSOR)
    }

    /// Saves the cursor.
    pub fn save_cursor(&self, cursor: Cursor) {
        self.set(CURSOR, &cursor);
    }

    /// The thread of `sender`'s last message.
    pub fn thread(&self, sender: &str) -> Option<Thread> {
        self.get(&format!("thread:{sender}"))
    }

    /// Keeps the thread of `sender`'s last message.
    pub fn save_thread(&self, sender: &str, thread: &Thread) {
        self.set(&format!("thread:{sender}"), thread);
    }

    /// Sleeps `wait`, waking early when the plugin stops.
    pub fn sleep(&self, wait: Duration) {
        let until = std::time::Instant::now() + wait;
        while !self.stopping() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn get<T: for<'de> Deserialize<'de>>(&self, key: &str) -> Option<T> {
        let answer = self
            .host
            .call(service::KV_GET, &json!({ "key": key }))
            .ok()?;
        serde_json::from_str(answer["value"].as_str()?).ok()
    }

    fn set<T: Serialize>(&self, key: &str, value: &T) {
        let Ok(text) = serde_json::to_string(value) else {
            return;
        };
        if let Err(e) = self
            .host
            .call(service::KV_SET, &json!({ "key": key, "value": text }))
        {
            tracing::warn!("mail: cannot save {key}: {e}");
        }
    }
}

/// Locks `m`, taking the value even if a thread panicked holding it.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
