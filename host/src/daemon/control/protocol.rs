//! The control protocol's version, its requests' names and its errors:
//! what both ends of the socket agree on (docs/control.md describes it).
//!
//! Version 1 had no hello: `chat`, `subscribe` and `status` are still
//! served without one, so a client of version 1 keeps working. Every
//! request added since needs the hello exchange first, so that a client
//! and a daemon of different versions find out at once, with a message
//! saying what to do, instead of misreading each other.

use serde_json::{Value, json};

/// The protocol version this build speaks.
pub const VERSION: u64 = 2;

/// The requests served without a hello (protocol 1).
pub const V1_OPS: [&str; 3] = ["chat", "subscribe", "status"];

/// Every request this version serves, for the unknown-request error.
pub const OPS: [&str; 20] = [
    "hello",
    "chat",
    "subscribe",
    "status",
    "plugins",
    "tools",
    "tool_call",
    "withdraw",
    "approvals",
    "revoke",
    "audit",
    "contacts",
    "agents",
    "schedule",
    "identity",
    "mcp",
    "doctor",
    "usage",
    "backup",
    "groups",
];

/// What went wrong with a request, as the `code` of an `error` answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// The line is not JSON, or a field has the wrong type.
    BadRequest,
    /// The line is over the size limit (the connection is then closed).
    TooLong,
    /// No request has that `op`.
    UnknownOp,
    /// A request of protocol 2 or later came before the hello.
    HelloFirst,
    /// The client speaks another version (the connection is then closed).
    Version,
    /// A tool call is already running on this connection.
    Busy,
    /// The tool call failed or was refused.
    Tool,
    /// The tool call was withdrawn before the owner answered.
    Withdrawn,
    /// `revoke` named no active grant.
    NotFound,
    /// The daemon could not read or write its store.
    Store,
    /// The backup failed.
    Backup,
}

impl Code {
    /// The code as sent.
    pub fn name(self) -> &'static str {
        match self {
            Code::BadRequest => "bad_request",
            Code::TooLong => "too_long",
            Code::UnknownOp => "unknown_op",
            Code::HelloFirst => "hello_first",
            Code::Version => "version",
            Code::Busy => "busy",
            Code::Tool => "tool",
            Code::Withdrawn => "withdrawn",
            Code::NotFound => "not_found",
            Code::Store => "store",
            Code::Backup => "backup",
        }
    }
}

/// An `error` answer.
pub fn error(code: Code, message: &str) -> Value {
    json!({ "op": "error", "code": code.name(), "message": message })
}

/// The answer to `{"op":"hello","version":N}`: the daemon's hello, or an
/// error that says which versions differ and what to do.
pub fn hello(request: &Value) -> Result<Value, Value> {
    let Some(version) = request["version"].as_u64() else {
        return Err(error(
            Code::BadRequest,
            &format!("`hello` needs `version`, a whole number (this daemon speaks {VERSION})"),
        ));
    };
    if version != VERSION {
        return Err(error(
            Code::Version,
            &format!(
                "this daemon (hearth {}) speaks control protocol {VERSION}, the client speaks \
                 {version}: use a `hearth` of the same version as the running daemon, or \
                 restart the daemon",
                env!("CARGO_PKG_VERSION")
            ),
        ));
    }
    Ok(json!({ "op": "hello", "version": VERSION, "hearth": env!("CARGO_PKG_VERSION") }))
}

/// The error for a request of protocol 2 or later sent before the hello.
pub fn hello_first(op: &str) -> Value {
    error(
        Code::HelloFirst,
        &format!(
            "`{op}` needs the hello exchange first: send {{\"op\":\"hello\",\"version\":{VERSION}}}"
        ),
    )
}

/// The error for an unknown `op`.
pub fn unknown(op: &str) -> Value {
    error(
        Code::UnknownOp,
        &format!(
            "unknown op {op:?} (control protocol {VERSION}); known: {}",
            OPS.join(", ")
        ),
    )
}
