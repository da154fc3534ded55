//! A connection to one server, whichever the transport: what the session
//! layer (`session.rs`) needs of stdio and Streamable HTTP alike.
//!
//! A link sends requests and notifications and hands what the server sends
//! on its own (notifications) to the server's [`Events`]; it does not know
//! the protocol revision beyond what its transport needs (HTTP headers).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::http::HttpLink;
use crate::stdio::StdioLink;
pub use crate::transport::{Events, Options, RequestError};

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
