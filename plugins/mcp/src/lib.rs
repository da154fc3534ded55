//! The MCP plugin: the tools of the Model Context Protocol servers the
//! owner configures, offered to the agent as hearth tools.
//!
//! hearth is an MCP *client*. Each configured server is a program hearth
//! starts and speaks to over its stdin and stdout, or a Streamable HTTP
//! endpoint. Its tools appear as `mcp.NAME.TOOL`: `NAME` is the server's
//! key in the config, `TOOL` the server's own tool name made to fit
//! hearth's names (`getTinyImage` becomes `get_tiny_image`; anything but
//! `a-z 0-9 _ -` becomes `_`; a name too long or taken is cut or given a
//! short hash suffix, the same every time).
//!
//! ## Config
//!
//! ```toml
//! [plugins.mcp.servers.fs]                 # NAME: 1-32 of a-z 0-9 _ -
//! command = "npx"                          # a program speaking MCP on stdio
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/sam/notes"]
//! env = { LOG_LEVEL = "warn" }             # literal values
//! pass_env = ["GITHUB_TOKEN"]              # copied from hearth's environment
//! # cwd = "~/notes"                        # default: $HEARTH_HOME
//! risk = "write"                           # "read", "write" or "exec" (default)
//! start = "lazy"                           # or "eager" (default "lazy")
//! timeout_s = 60                           # per call, 1-3600 (default 60)
//! startup_timeout_s = 30                   # start + handshake + tool list (default 30)
//! # enabled = false                        # keep it configured, unused
//!
//! [plugins.mcp.servers.fs.tools.read_text_file]   # the server's own name
//! risk = "read"
//! [plugins.mcp.servers.fs.tools.move_file]
//! enabled = false                          # not offered to the agent
//!
//! [plugins.mcp.servers.search]
//! url = "https://mcp.example.com/mcp"      # Streamable HTTP
//! headers = { Authorization = "Bearer ..." }
//! risk = "read"
//! ```
//!
//! A server has `command` (stdio) or `url` (Streamable HTTP), never both.
//! Unknown keys and wrong values stop the plugin with a message naming the
//! key (`plugins.mcp.servers.fs.risk: expected "read", "write" or "exec",
//! got "rw"`). A server that cannot start (a program not found, a URL that
//! refuses connections) does not: it is reported down, and the others
//! serve.
//!
//! ## Risk
//!
//! A tool's risk tier, which the policy rules on, comes from the config
//! alone: the server's `risk` (default `exec`), or the tool's own. The
//! hints a server gives (`readOnlyHint`, `destructiveHint`) are not
//! trusted: any server can claim them.
//!
//! ## Environment
//!
//! A stdio server starts with an empty environment plus `PATH`, `HOME`,
//! `USER`, `LOGNAME`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ`, `TMPDIR` and
//! `TERM` from hearth's, then the variables `pass_env` names, then `env`.
//! hearth's API keys reach a server only when named there. It runs in a
//! process group of its own, and is killed when hearth dies, even by
//! `kill -9`. What it prints on stderr goes to hearth's log (target
//! `mcp::NAME`).
//!
//! ## Starting, caching, restarting
//!
//! A `lazy` server starts at the first call of one of its tools; its tool
//! list is kept in the plugin's store, so the agent knows the tools before
//! the server ever runs (the list is dropped when `command`, `args`,
//! `env`, `pass_env`, `cwd`, `url` or `headers` change). A lazy server
//! whose tools are not known yet is started once in the background to
//! learn them, and stays up. An `eager` server starts in the background
//! when hearth starts. Nothing waits for a server at start-up.
//!
//! A server that exits (or whose connection fails) is restarted by the
//! next call, at once the first time, then after 1, 2, 4 ... 60 seconds;
//! five failures in a minute mark it crash-looping. `/status` and `hearth
//! mcp list` show each server's state (`stdio, protocol 2025-11-25, pid
//! 1234`, `down: exited with status 1 (last stderr line: "...");
//! restarting on the next call`).
//!
//! ## Protocol
//!
//! hearth speaks MCP 2026-07-28 (stateless: `server/discover`, `_meta` on
//! every request), and 2025-11-25, 2025-06-18 and 2025-03-26 (the
//! `initialize` handshake), preferring the newest the server speaks. A
//! server that speaks none of them is refused with both lists. hearth
//! declares no client capabilities: a server's requests for roots,
//! sampling or elicitation are answered "method not found". A tool's list
//! changing (`notifications/tools/list_changed`) updates the agent's tools
//! at once.
//!
//! ## Results
//!
//! A call answers `{"text", "structured"?, "image"?, "images"?, "audio"?,
//! "resources"?}`. Images, audio and binary resources are saved under
//! `$HEARTH_HOME/mcp/NAME/media/`; the first image is shown to the model.
//! A result over 256 KiB of text keeps its head and tail, sets `truncated`,
//! and names the file holding all of it in `log`
//! (`$HEARTH_HOME/mcp/NAME/results/`). An `isError` result is the tool's
//! error. A call that outlasts `timeout_s`, or that the owner stops, is
//! cancelled on the server (`notifications/cancelled`; a 2026-07-28 server
//! over HTTP sees the request's stream closed instead, at the latest when
//! the call's deadline passes).
//!
//! While a call the owner can watch runs (one with a `call_id`), the
//! server's progress notifications for it are shown as its live output
//! (`tool.output`, a few lines a second at most); the model sees only the
//! result.
//!
//! ## Threads and memory
//!
//! With no server configured the plugin starts no thread. A server that
//! runs costs a thread reading its stdout and one reading its stderr
//! (stdio), or a thread per call in flight and one for its listening
//! stream (HTTP; that thread wakes every two seconds to see whether it
//! should end, so stopping such a server can take that long). All
//! processes are forked from one spawning thread, made with the first.

mod cache;
pub mod config;
pub mod names;
pub mod version;

mod context;
mod http;
mod jsonrpc;
mod link;
mod progress;
mod registry;
mod results;
mod server;
mod session;
mod spawner;
mod sse;
mod stdio;
mod text;
mod tools;
mod transport;

use std::sync::{Arc, Weak};

use hearth_sdk::calls::Calls;
use hearth_sdk::protocol::{Description, PluginStatus, ToolCall, ToolSpec};
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::Value;

pub use cache::{Cached, key as cache_key};
pub use config::{Config, ConfigError, ServerConfig};
pub use stdio::INHERITED_ENV;

use context::Context;
use registry::Registry;
use server::{Server, ToolsChanged};

/// The running plugin: its servers and the calls in flight.
pub struct Mcp {
    registry: Arc<Registry>,
    /// The calls running, for `tool.cancel`.
    pub calls: Calls,
}

impl Mcp {
    /// Every tool the plugin offers now, as the host was last told (or is
    /// about to be). Tests read it instead of observing `tools.set`.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.registry.tools()
    }

    /// The process id of the stdio server `name`, while it runs.
    pub fn server_pid(&self, name: &str) -> Option<u32> {
        self.registry
            .servers
            .iter()
            .find(|s| s.config.name == name)
            .and_then(|s| s.pid())
    }

    /// Runs the tool `tool` (`mcp.NAME.TOOL`) as the call `call_id`
    /// (whose progress is shown live); `stop` ends it early.
    fn run(
        &self,
        tool: &str,
        args: Value,
        call_id: Option<&str>,
        stop: Option<&hearth_sdk::calls::Stop>,
    ) -> Result<Value, PluginError> {
        let server = self
            .registry
            .server_of(tool)
            .ok_or_else(|| PluginError::Unsupported(format!("no tool {tool:?}")))?;
        server.call(tool, args, call_id, stop)
    }
}

impl Plugin for Mcp {
    const NAME: &'static str = "mcp";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let config = Config::parse(&config).map_err(|e| PluginError::Failed(e.to_string()))?;
        let ctx = Arc::new(Context::new(host));
        let mut cached = Vec::new();
        let registry = Arc::new_cyclic(|registry: &Weak<Registry>| {
            let servers = config
                .servers
                .into_iter()
                .map(|server| {
                    let tools = if server.enabled {
                        cache::load(&ctx, &server)
                    } else {
                        None
                    };
                    cached.push(tools.is_some());
                    Server::new(
                        server,
                        &ctx,
                        registry.clone() as Weak<dyn ToolsChanged>,
                        tools,
                    )
                })
                .collect();
            Registry::new(servers, Arc::clone(&ctx))
        });
        for (server, cached) in registry.servers.iter().zip(cached) {
            server.start_if_due(cached);
        }
        if !registry.servers.is_empty() {
            tracing::info!(
                servers = registry.servers.len(),
                tools = registry.tools().len(),
                "MCP plugin started"
            );
        }
        Ok(Mcp {
            registry,
            calls: Calls::default(),
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: self.registry.describe(),
            channel: None,
        }
    }

    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError> {
        self.run(tool, args, None, None)
    }

    fn run_call(&self, call: ToolCall) -> Result<Value, PluginError> {
        if call.floor.is_some() {
            // No MCP tool declares the floor; the host never sends one.
            return self.call_tool_floored(&call.tool, call.args, call.floor);
        }
        let running = self.calls.start(call.call_id.as_deref());
        self.run(
            &call.tool,
            call.args,
            call.call_id.as_deref(),
            Some(running.stop()),
        )
    }

    fn cancel_call(&self, call_id: &str) -> Result<bool, PluginError> {
        Ok(self.calls.cancel(call_id))
    }

    fn status(&self) -> Result<PluginStatus, PluginError> {
        Ok(PluginStatus {
            parts: self.registry.status(),
        })
    }

    fn shutdown(&self) {
        self.registry.shutdown();
    }
}
