//! Each server's last tool list, kept in the plugin's key-value store so a
//! lazy server's tools are known before it is ever started.
//!
//! The entry records the server's fingerprint (its command, arguments,
//! environment and directory, or URL and headers): a list learned from
//! another program is not trusted. Risk and per-tool settings are applied
//! when the list is read, so changing them needs no new start.

use serde::{Deserialize, Serialize};

use crate::config::ServerConfig;
use crate::context::Context;
use crate::tools::ServerTool;

/// What is stored under `tools:NAME`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cached {
    /// [`ServerConfig::fingerprint`] when the list was learned.
    pub fingerprint: String,
    /// The protocol revision spoken then.
    #[serde(default)]
    pub protocol: String,
    /// When it was learned, in ms since the epoch.
    #[serde(default)]
    pub saved_at_ms: u64,
    /// The tools as the server listed them.
    pub tools: Vec<ServerTool>,
}

/// The store key of a server's list.
pub fn key(server: &str) -> String {
    format!("tools:{server}")
}

/// The cached tools of `config`'s server, if the store has a list learned
/// from the same server.
pub fn load(ctx: &Context, config: &ServerConfig) -> Option<Vec<ServerTool>> {
    let value = ctx.kv_get(&key(&config.name))?;
    let cached: Cached = match serde_json::from_value(value) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(server = %config.name, "ignoring an unreadable cached tool list: {e}");
            return None;
        }
    };
    (cached.fingerprint == config.fingerprint()).then_some(cached.tools)
}

/// Stores the tools just learned from `config`'s server.
pub fn save(ctx: &Context, config: &ServerConfig, protocol: &str, tools: &[ServerTool]) {
    let cached = Cached {
        fingerprint: config.fingerprint(),
        protocol: protocol.to_owned(),
        saved_at_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0),
        tools: tools.to_vec(),
    };
    match serde_json::to_value(&cached) {
        Ok(value) => ctx.kv_set(&key(&config.name), value),
        Err(e) => tracing::warn!(server = %config.name, "could not store its tool list: {e}"),
    }
}
