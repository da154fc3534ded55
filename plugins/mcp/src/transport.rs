//! What both transports (stdio and Streamable HTTP) share with the layer
//! above them: the [`Events`] a link reports, the [`RequestError`] a
//! request can end in, and per-request [`Options`]. Below `link`, `stdio`
//! and `http`, so a transport never imports the link that wraps it.

use std::time::Instant;

use hearth_sdk::calls::Stop;
use serde_json::Value;

use crate::jsonrpc::RpcError;

/// What a link reports to its server, from its own threads.
pub trait Events: Send + Sync {
    /// A notification from the server (`notifications/tools/list_changed`).
    fn notification(&self, method: &str, params: &Value);
    /// The connection ended on its own (not by [`Link::stop`]): the process
    /// exited, its pipe broke, it broke the protocol. `why` says so in a
    /// few words (`exited with status 1 (stderr: "...")`).
    fn closed(&self, why: &str);
}

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// The server answered with an error.
    Rpc(RpcError),
    /// No answer by the deadline (the server was told to cancel).
    TimedOut,
    /// The owner stopped the call (the server was told to cancel).
    Stopped,
    /// The connection is gone; the text says how. The request may have
    /// reached the server before it went.
    Closed(String),
    /// The connection was gone before the request could be written: the
    /// server never saw it, so it may be sent again on a new connection.
    NotSent(String),
    /// HTTP: the server forgot our session (404): initialize again.
    SessionExpired,
    /// HTTP: the server could not be reached (connection refused, no such
    /// host, TLS failure).
    Unreachable(String),
    /// HTTP: the server answered with an error status and no JSON-RPC
    /// error we understand, or its answer could not be read.
    Transport(String),
    /// HTTP: the server refused with a JSON-RPC error and an error status
    /// (a 2026-07-28 server's `-32022` comes as a 400).
    Refused {
        /// The HTTP status.
        status: u16,
        /// The error in the body.
        error: RpcError,
    },
    /// The answer broke the protocol.
    Protocol(String),
}

/// Per-request options.
pub struct Options<'a> {
    /// When to give up.
    pub deadline: Instant,
    /// The owner's stop flag for the call, if it can be stopped.
    pub stop: Option<&'a Stop>,
    /// HTTP headers of this request only (`Mcp-Param-*`).
    pub headers: Vec<(String, String)>,
}

impl<'a> Options<'a> {
    /// Options with only a deadline.
    pub fn until(deadline: Instant) -> Options<'a> {
        Options {
            deadline,
            stop: None,
            headers: Vec::new(),
        }
    }
}
