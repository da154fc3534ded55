//! `tool_call` on the control socket: the owner's `hearth tool call`, run
//! by the daemon through the registry, the policy and the audit exactly as
//! the agent's calls are, with the caller recorded as `owner via cli`.
//!
//! A call that needs the owner's approval shows its card on the channels
//! that show confirmations; the client is told what it waits for
//! (`waiting`), and can withdraw it (`withdraw`, or by closing the
//! connection) until the owner answers.
//!
//! A client with the owner at a terminal says so (`"terminal": true`):
//! it is then sent the question itself (`confirm`), asks there, and
//! answers (`answer`), which counts as `owner via cli terminal`. Only this
//! connection can answer its question, and only by the question's id, so
//! the answer is bound to the exact call. The card is shown on the
//! channels too; whichever answer comes first is the one that counts (the
//! gate's [`Board`] takes one answer per question).

use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use hearth_sdk::protocol::ConfirmationAnswer;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::protocol::{Code, error};
use hearth_agent::tools::{ToolError, ToolRegistry};
use hearth_base::caller::Caller;
use hearth_base::channels::answers::Board;
use hearth_policy::confirm::{Watch, watched};

/// Who an answer from the owner's terminal is recorded as (the audit's
/// approver, the confirmation's `decided_by`).
pub const TERMINAL_APPROVER: &str = "owner via cli terminal";

/// The tool call in flight on one connection (at most one).
#[derive(Default)]
pub struct InFlight {
    /// A call runs.
    running: bool,
    /// Dropping it withdraws the call's question.
    withdraw: Option<Sender<()>>,
    /// The client asked to withdraw it.
    withdrawn: bool,
    /// The question this client was sent to answer at its terminal.
    asked: Option<String>,
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
    let terminal = match &request["terminal"] {
        Value::Null => false,
        Value::Bool(terminal) => *terminal,
        _ => return Some(error(Code::BadRequest, "`terminal` must be true or false")),
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
            asked: None,
        };
    }
    let (shown_tx, asking) = (tx.clone(), Arc::clone(in_flight));
    let watch = Watch {
        shown: Box::new(move |request, channels| {
            let op = if terminal {
                // Recorded before the client hears of it, so its answer,
                // however quick, finds the question.
                lock(&asking).asked = Some(request.id.clone());
                "confirm"
            } else {
                "waiting"
            };
            let _ = shown_tx.blocking_send(json!({
                "op": op, "id": request.id, "tool": request.tool,
                "command": request.command, "cwd": request.cwd, "args": request.args,
                "reason": request.reason, "fingerprint": request.fingerprint,
                "channels": channels, "expires_at_ms": request.expires_at_ms,
            }));
        }),
        withdraw,
        answers: terminal,
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

/// The owner's answer, typed at the terminal, to the question this
/// connection was sent (`{"op":"answer","id":...,"approve":bool}`): handed
/// to the gate as any channel's answer is. `answered` says whether it
/// counted (another channel may have answered first, or the question
/// expired); an id this connection was not asked is `not_found`.
pub fn answer(board: &Board, request: &Value, in_flight: &Mutex<InFlight>) -> Option<Value> {
    let (Some(id), Some(approve)) = (request["id"].as_str(), request["approve"].as_bool()) else {
        return Some(error(
            Code::BadRequest,
            "`answer` needs `id`, the question's, and `approve`, true or false",
        ));
    };
    // Taken, so one question gets one answer from this connection.
    let asked = {
        let mut slot = lock(in_flight);
        match &slot.asked {
            Some(asked) if asked == id => slot.asked.take(),
            _ => None,
        }
    };
    if asked.is_none() {
        return Some(error(
            Code::NotFound,
            &format!("no question {id:?} waits for this connection's answer"),
        ));
    }
    let answer = ConfirmationAnswer {
        id: id.to_owned(),
        sender: TERMINAL_APPROVER.to_owned(),
        approve,
        always: false,
        reason: None,
    };
    let counted = board.answer(&answer, TERMINAL_APPROVER);
    tracing::info!(id, approve, counted, "the owner answered at the terminal");
    Some(json!({ "op": "answered", "id": id, "counted": counted }))
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
