//! The control protocol's version, its requests' names and its errors:
//! what both ends of the socket agree on (docs/control.md describes it).
//!
//! Every request needs the hello first, and the hello carries the control
//! token (`token.rs`): the socket serves the owner, and a process of the
//! owner's user id is not the owner unless it can read the token (the
//! programs hearth runs cannot). The version in the hello makes a client
//! and a daemon of different versions find out at once, with a message
//! saying what to do, instead of misreading each other. Protocol 1 served
//! `chat`, `subscribe` and `status` without a hello; since protocol 3
//! nothing is.

use serde_json::{Value, json};

use super::token::{TOKEN_FILE, Token};

/// The protocol version this build speaks.
pub const VERSION: u64 = 3;

/// Every request this version serves, for the unknown-request error.
pub const OPS: [&str; 21] = [
    "hello",
    "chat",
    "subscribe",
    "status",
    "plugins",
    "tools",
    "tool_call",
    "withdraw",
    "answer",
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
    /// A request came before the hello.
    HelloFirst,
    /// The client speaks another version (the connection is then closed).
    Version,
    /// The hello's token is missing or wrong: the client is not the owner
    /// (the connection is then closed).
    Unauthorized,
    /// A tool call is already running on this connection.
    Busy,
    /// The tool call failed or was refused.
    Tool,
    /// The tool call was withdrawn before the owner answered.
    Withdrawn,
    /// `revoke` named no active grant, or `answer` a question this
    /// connection was not asked.
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
            Code::Unauthorized => "unauthorized",
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

/// The answer to `{"op":"hello","version":N,"token":T}`: the daemon's
/// hello, or an error that says which versions differ and what to do, or
/// that the client is not the owner. The version is checked first, so a
/// client of another version (which may know no token) is told that.
pub fn hello(request: &Value, token: &Token) -> Result<Value, Value> {
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
    let refused = match request["token"].as_str() {
        None => "the hello has no `token`",
        Some(given) if !token.matches(given) => "the hello's `token` is wrong",
        Some(_) => {
            return Ok(
                json!({ "op": "hello", "version": VERSION, "hearth": env!("CARGO_PKG_VERSION") }),
            );
        }
    };
    Err(error(
        Code::Unauthorized,
        &format!(
            "{refused}: only the owner may use this socket, and the owner's client sends the \
             contents of $HEARTH_HOME/{TOKEN_FILE}, which programs hearth runs cannot read; \
             the connection is closed"
        ),
    ))
}

/// The error for a request sent before the hello.
pub fn hello_first(op: &str) -> Value {
    error(
        Code::HelloFirst,
        &format!(
            "`{op}` needs the hello exchange first: send {{\"op\":\"hello\",\"version\":{VERSION},\
             \"token\":\"<the contents of $HEARTH_HOME/{TOKEN_FILE}>\"}}"
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
