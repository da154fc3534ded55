//! A connection to one server, whichever the transport: what the session
//! layer (`session.rs`) needs of stdio and Streamable HTTP alike.
//!
//! A link sends requests and notifications and hands what the server sends
//! on its own (notifications) to the server's [`Events`]; it does not know
//! the protocol revision beyond what its transport needs (HTTP headers).

use std::sync::Arc;
use std::time::Instant;

use hearth_sdk::calls::Stop;
use serde_json::Value;

use crate::http::HttpLink;
use crate::jsonrpc::RpcError;
use crate::stdio::StdioLink;

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

/// A live connection.
#[derive(Clone)]
pub enum Link {
    /// A process on pipes.
    Stdio(Arc<StdioLink>),
    /// A Streamable HTTP endpoint.
    Http(Arc<HttpLink>),
}

impl Link {
    /// Sends a request and waits for its answer.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        options: &Options<'_>,
    ) -> Result<Value, RequestError> {
        match self {
            Link::Stdio(l) => l.request(method, params, options),
            Link::Http(l) => l.request(method, params, options),
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value, deadline: Instant) -> Result<(), String> {
        match self {
            Link::Stdio(l) => l.notify(method, params),
            Link::Http(l) => l.notify(method, params, deadline),
        }
    }

    /// Sends a request nobody waits for (a `subscriptions/listen` on
    /// stdio, whose answer is the notifications that follow).
    pub fn send_unanswered(&self, method: &str, params: Value) -> Result<u64, String> {
        match self {
            Link::Stdio(l) => l.send_unanswered(method, params),
            Link::Http(_) => Err("not over HTTP".into()),
        }
    }

    /// Ends the connection: the process is stopped (stdin closed, then
    /// SIGTERM, then SIGKILL), the HTTP session deleted.
    pub fn stop(&self) {
        match self {
            Link::Stdio(l) => l.stop(),
            Link::Http(l) => l.stop(),
        }
    }

    /// The server's process id, for a stdio server.
    pub fn pid(&self) -> Option<u32> {
        match self {
            Link::Stdio(l) => Some(l.pid()),
            Link::Http(_) => None,
        }
    }

    /// What the server printed that tells why it failed: its last stderr
    /// line and any non-protocol text on stdout, as a clause to append to
    /// an error (empty when there is nothing).
    pub fn clues(&self) -> String {
        match self {
            Link::Stdio(l) => l.clues(),
            Link::Http(_) => String::new(),
        }
    }
}
