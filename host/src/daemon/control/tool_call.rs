//! `tool_call` on the control socket: the owner's `hearth tool call`, run
//! by the daemon through the registry, the policy and the audit exactly as
//! the agent's calls are, with the caller recorded as `owner via cli`.
//!
//! A call that needs the owner's approval shows its card on the channels
//! that show confirmations; the client is told what it waits for
//! (`waiting`), and can withdraw it (`withdraw`, or by closing the
//! connection) until the owner answers.

use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::protocol::{Code, error};
use crate::policy::Caller;
use crate::policy::confirm::{Watch, watched};
use crate::tools::{ToolError, ToolRegistry};

/// The tool call in flight on one connection (at most one).
#[derive(Default)]
pub struct InFlight {
    /// A call runs.
    running: bool,
    /// Dropping it withdraws the call's question.
    withdraw: Option<Sender<()>>,
    /// The client asked to withdraw it.
    withdrawn: bool,
}

/// Starts the call `request` asks for; its answers go to `tx`. Returns an
/// error answer at once when the request is malformed or a call is
/// already running.
pub fn start(
    tools: &Arc<ToolRegistry>,
    request: &Value,
    in_flight: &Arc<Mutex<InFlight>>,
    tx: &mpsc::Sender<Value>,
) -> Option<Value> {
    let Some(name) = request["name"].as_str().map(str::to_owned) else {
        return Some(error(
            Code::BadRequest,
            "`tool_call` needs `name`, a string",
        ));
    };
    let args = match &request["args"] {
        Value::Null => json!({}),
        args @ Value::Object(_) => args.clone(),
        _ => return Some(error(Code::BadRequest, "`args` must be a JSON object")),
    };
    let (withdraw_tx, withdraw) = crossbeam_channel::bounded(1);
    {
        let mut slot = lock(in_flight);
        if slot.running {
            return Some(error(
                Code::Busy,
                "a tool call is already running on this connection",
            ));
        }
        *slot = InFlight {
            running: true,
            withdraw: Some(withdraw_tx),
            withdrawn: false,
        };
    }
    let shown_tx = tx.clone();
    let watch = Watch {
        shown: Box::new(move |request, channels| {
            let _ = shown_tx.blocking_send(json!({
                "op": "waiting", "id": request.id, "tool": request.tool,
                "command": request.command, "args": request.args, "reason": request.reason,
                "channels": channels, "expires_at_ms": request.expires_at_ms,
            }));
        }),
        withdraw,
    };
    let (tools, in_flight, tx) = (Arc::clone(tools), Arc::clone(in_flight), tx.clone());
    tokio::task::spawn_blocking(move || {
        let result = watched(watch, || {
            tools.call_as(&Caller::owner_cli(), &name, args, 0)
        });
        let finished = std::mem::take(&mut *lock(&in_flight));
        let answer = match result {
            Ok(result) => json!({ "op": "result", "result": result }),
            // Refused after the client withdrew: the withdrawal refused it
            // (a call that ran and failed is a plain `tool` error).
            Err(e @ ToolError::Refused(_)) if finished.withdrawn => {
                error(Code::Withdrawn, &e.to_string())
            }
            Err(e) => error(Code::Tool, &e.to_string()),
        };
        let _ = tx.blocking_send(answer);
    });
    None
}

/// Withdraws the call in flight: its question is taken down unanswered
/// and the tool does not run. A call already approved (or needing no
/// approval) runs on; its result still comes.
pub fn withdraw(in_flight: &Mutex<InFlight>) -> Option<Value> {
    let mut slot = lock(in_flight);
    if !slot.running {
        return Some(error(
            Code::BadRequest,
            "no tool call is running on this connection",
        ));
    }
    slot.withdraw = None;
    slot.withdrawn = true;
    None
}

/// The client is gone: withdraws its call's question, if one waits.
pub fn abandon(in_flight: &Mutex<InFlight>) {
    lock(in_flight).withdraw = None;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
