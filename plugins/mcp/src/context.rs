//! What every server of the plugin shares: the host handle behind a gate
//! that closes at shutdown, `$HEARTH_HOME`, and the spawning thread.
//!
//! Threads of this plugin (a server's reader, a re-listing after
//! `list_changed`) call the host on their own. The plugin ABI forbids any
//! host call once `shutdown` has returned, and an HTTP request blocked on
//! an unresponsive server cannot be interrupted, so every host call goes
//! through [`Context::with_host`]: shutdown closes the gate (waiting for
//! calls in flight) before it returns, and a thread that wakes later finds
//! it closed and calls nothing.

use std::path::PathBuf;
use std::sync::RwLock;

use hearth_sdk::protocol::service;
use hearth_sdk::{Host, HostCallError, Level};
use serde_json::{Value, json};

use crate::spawner::Spawner;
use hearth_sdk::sandbox::Helpers;

/// The plugin-wide state servers share.
pub struct Context {
    host: Host,
    /// `true` once shut down: no host call may be made.
    closed: RwLock<bool>,
    /// `$HEARTH_HOME`, where media and oversized results are saved.
    pub home: PathBuf,
    /// Whether the host serves (a daemon), as opposed to a CLI command
    /// that loaded the plugin to list or call tools: then no server is
    /// started in the background.
    pub serving: bool,
    /// Whether the host's cheap model summarizes long output
    /// (`model.summarize`).
    pub summaries: bool,
    /// The thread servers are forked from.
    pub spawner: Spawner,
    /// The sandbox servers start in: a session of their own, the seccomp
    /// filter, and hearth's credentials hidden by Landlock.
    pub helpers: Helpers,
}

impl Context {
    /// The shared state for `host`, asking it for `$HEARTH_HOME` (a host
    /// without `host.info`, as in a unit test, gives `$HEARTH_HOME` or the
    /// temporary directory).
    pub fn new(host: Host) -> Context {
        let (home, serving, summaries, hidden) = match host.info() {
            Ok(info) => (
                PathBuf::from(info.home),
                info.serving,
                info.summaries,
                info.hidden,
            ),
            Err(_) => (
                std::env::var_os("HEARTH_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| std::env::temp_dir().join("hearth-mcp")),
                true,
                false,
                Vec::new(),
            ),
        };
        Context {
            host,
            closed: RwLock::new(false),
            home,
            serving,
            summaries,
            spawner: Spawner::default(),
            helpers: Helpers::new(&hidden),
        }
    }

    /// Runs `f` with the host, unless the plugin has shut down.
    pub fn with_host<T>(&self, f: impl FnOnce(&Host) -> T) -> Option<T> {
        let closed = self.closed.read().unwrap_or_else(|p| p.into_inner());
        if *closed { None } else { Some(f(&self.host)) }
    }

    /// Closes the gate: after this returns, no host call is made.
    pub fn close(&self) {
        *self.closed.write().unwrap_or_else(|p| p.into_inner()) = true;
    }

    /// A summary of `text` by the host's cheap model, which waits for it
    /// (bounded by the host); the error says why there is none.
    pub fn summarize(&self, about: &str, text: &str) -> Result<String, String> {
        self.with_host(|h| h.summarize(about, text).map_err(|e| e.to_string()))
            .unwrap_or_else(|| Err("the plugin is shutting down".into()))
    }

    /// Logs a line under a target of our choosing (`mcp::fs` for the
    /// server `fs`), which `tracing` cannot do: its targets are static.
    pub fn log(&self, level: Level, target: &str, message: &str) {
        self.with_host(|h| h.log(level, target, message));
    }

    /// Reads `key` from the plugin's key-value store; `None` when absent
    /// or when the host has no store.
    pub fn kv_get(&self, key: &str) -> Option<Value> {
        let answer = self
            .with_host(|h| h.call(service::KV_GET, &json!({ "key": key })))?
            .map_err(|e| log_kv_failure("read", key, &e))
            .ok()?;
        answer.get("value").cloned().filter(|v| !v.is_null())
    }

    /// Writes `key` (a `null` value deletes it); failures are logged, as
    /// the store only saves a start-up.
    pub fn kv_set(&self, key: &str, value: Value) {
        if let Some(Err(e)) =
            self.with_host(|h| h.call(service::KV_SET, &json!({ "key": key, "value": value })))
        {
            log_kv_failure("write", key, &e);
        }
    }
}

fn log_kv_failure(what: &str, key: &str, e: &HostCallError) {
    match e {
        // A host without the store (a unit test, an older host): the
        // cache is an optimisation, so say nothing.
        HostCallError::Unsupported(_) => {}
        other => tracing::warn!("could not {what} {key} in the plugin's store: {other}"),
    }
}
