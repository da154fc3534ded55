//! The plugin's servers together, and the one tool list the host is told.
//!
//! Any server's tools may change at any time (its handshake completes, it
//! announces a change), each on a thread of its own. The host's
//! `tools.set` replaces the plugin's whole list, so every update is built
//! from every server's current tools under one lock, and only then sent:
//! an update can never carry an older list than the one before it.

use std::sync::{Arc, Mutex};

use hearth_sdk::HostCallError;
use hearth_sdk::protocol::{PartStatus, ToolSpec};

use crate::context::Context;
use crate::jsonrpc::lock;
use crate::server::{Server, ToolsChanged};

/// The servers, and what the host was last told.
pub struct Registry {
    /// In config order (sorted by name).
    pub servers: Vec<Arc<Server>>,
    ctx: Arc<Context>,
    /// The list the host has (from `describe` or the last `tools.set`).
    published: Mutex<Option<Vec<ToolSpec>>>,
}

impl Registry {
    /// A registry of `servers` sharing `ctx`.
    pub fn new(servers: Vec<Arc<Server>>, ctx: Arc<Context>) -> Registry {
        Registry {
            servers,
            ctx,
            published: Mutex::new(None),
        }
    }

    /// Every tool of every server now.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.servers
            .iter()
            .filter(|s| s.config.enabled)
            .flat_map(|s| s.table().specs().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// The list for `describe`, recorded as what the host has.
    pub fn describe(&self) -> Vec<ToolSpec> {
        let mut published = lock(&self.published);
        let tools = self.tools();
        *published = Some(tools.clone());
        tools
    }

    /// Tells the host the current list, if it changed.
    pub fn publish(&self) {
        let mut published = lock(&self.published);
        let tools = self.tools();
        if published.as_ref() == Some(&tools) {
            return;
        }
        match self.ctx.with_host(|h| h.set_tools(&tools)) {
            None => return,
            Some(Ok(skipped)) => {
                for name in skipped {
                    tracing::warn!("the host left out the tool {name}");
                }
            }
            Some(Err(HostCallError::Unsupported(_))) => {
                tracing::debug!("the host cannot change tools at run time (no tools.set)");
            }
            Some(Err(e)) => tracing::warn!("telling the host the new tool list failed: {e}"),
        }
        *published = Some(tools);
    }

    /// Each server's health.
    pub fn status(&self) -> Vec<PartStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// The server whose tool `hearth_name` is (`mcp.NAME.tool`).
    pub fn server_of(&self, hearth_name: &str) -> Option<&Arc<Server>> {
        let rest = hearth_name.strip_prefix("mcp.")?;
        let (name, _) = rest.split_once('.')?;
        self.servers.iter().find(|s| s.config.name == name)
    }

    /// Stops every server, all at once (each may take seconds), then the
    /// spawning thread, then closes the host gate.
    pub fn shutdown(&self) {
        std::thread::scope(|scope| {
            for server in &self.servers {
                let spawned = std::thread::Builder::new()
                    .name(format!("mcp-{}-stop", server.config.name))
                    .spawn_scoped(scope, || server.stop());
                if spawned.is_err() {
                    // No thread to spare: stop it here, one after another.
                    server.stop();
                }
            }
        });
        self.ctx.spawner.stop();
        self.ctx.close();
    }
}

impl ToolsChanged for Registry {
    fn tools_changed(&self) {
        self.publish();
    }
}
