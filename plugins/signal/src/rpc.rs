//! signal-cli's JSON-RPC over HTTP: `POST {url}/api/v1/rpc`.
//!
//! One request, one answer: `{"jsonrpc":"2.0","method","params","id"}` in,
//! `{"jsonrpc":"2.0","result","id"}` or `{"jsonrpc":"2.0","error":{"code",
//! "message","data"},"id"}` out, with HTTP 200 either way. The error codes
//! are JSON-RPC's own (-32700 to -32603) and signal-cli's: -1 user error
//! (bad recipient, failed send), -3 I/O, -4 untrusted identity, -5 rate
//! limit, -6 captcha rejected. Every call names the account, which a
//! multi-account daemon needs and a single-account one ignores.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// A JSON-RPC client for one signal-cli daemon and account.
pub struct Rpc {
    client: reqwest::blocking::Client,
    endpoint: String,
    account: String,
    next_id: AtomicU64,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// No answer: signal-cli is not running, or the connection broke or
    /// timed out.
    #[error("cannot reach signal-cli: {0}")]
    Transport(String),
    /// An HTTP status other than 200 (signal-cli answers 4xx to malformed
    /// HTTP, 421 to a Host header it does not serve).
    #[error("signal-cli answered HTTP {0}")]
    Status(u16),
    /// signal-cli's JSON-RPC error object.
    #[error("signal-cli error {code}: {message}")]
    Remote {
        /// The JSON-RPC error code.
        code: i64,
        /// signal-cli's message.
        message: String,
    },
    /// An answer that is not a JSON-RPC response.
    #[error("signal-cli answered malformed JSON-RPC: {0}")]
    Malformed(String),
}

impl Rpc {
    /// A client for the daemon at `base` (no trailing slash), acting as
    /// `account`, with `timeout` per call.
    pub fn new(base: &str, account: &str, timeout: Duration) -> Result<Rpc, RpcError> {
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .map_err(|e| RpcError::Transport(e.to_string()))?;
        Ok(Rpc {
            client,
            endpoint: format!("{base}/api/v1/rpc"),
            account: account.to_owned(),
            next_id: AtomicU64::new(1),
        })
    }

    /// Calls `method` with `params` (an object; `account` is added) and
    /// returns the `result`.
    pub fn call(&self, method: &str, mut params: Value) -> Result<Value, RpcError> {
        if let Some(object) = params.as_object_mut() {
            object.insert("account".into(), json!(self.account));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id});
        let response = self
            .client
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .map_err(|e| RpcError::Transport(error_chain(&e)))?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(RpcError::Status(status));
        }
        let text = response
            .text()
            .map_err(|e| RpcError::Transport(error_chain(&e)))?;
        let answer: Value =
            serde_json::from_str(&text).map_err(|e| RpcError::Malformed(e.to_string()))?;
        if let Some(error) = answer.get("error").filter(|e| !e.is_null()) {
            return Err(RpcError::Remote {
                code: error["code"].as_i64().unwrap_or(0),
                message: error["message"]
                    .as_str()
                    .unwrap_or("(no message)")
                    .to_owned(),
            });
        }
        answer
            .get("result")
            .cloned()
            .ok_or_else(|| RpcError::Malformed(format!("no result or error in {text}")))
    }
}

/// An error with its sources, which say what actually failed ("connection
/// refused") where the top level says only "error sending request".
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let more = inner.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = inner.source();
    }
    text
}
