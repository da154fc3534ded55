//! A server's progress notifications, shown live to the owner.
//!
//! A call the host can name (it has a `call_id`) asks the server for
//! progress under a token of its own; each `notifications/progress` for
//! that token becomes a line of the call's live output (`tool.output`),
//! as the shell plugin shows a command's output. Pieces are paced (a few a
//! second per call; what is skipped is counted) and the model never sees
//! them: it reads the call's result only.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hearth_sdk::HostCallError;
use hearth_sdk::protocol::{OutputStream, ToolOutput};
use serde_json::Value;

use crate::context::Context;
use crate::jsonrpc::lock;

/// The least time between two pieces of one call's output.
const PACE: Duration = Duration::from_millis(250);
/// The most of one progress message shown.
const MAX_PIECE: usize = 4096;

/// The calls of one server being watched, by progress token.
#[derive(Default)]
pub struct Progress {
    next: AtomicU64,
    watched: Mutex<HashMap<String, Watched>>,
    /// Set once the host said it has no `tool.output`: stop sending.
    unsupported: AtomicBool,
}

struct Watched {
    call_id: String,
    last: Option<Instant>,
    skipped: u64,
}

/// A watched call; dropping it stops the watch.
pub struct Watch {
    progress: Arc<Progress>,
    token: String,
}

impl Progress {
    /// Watches the call `call_id`; the token goes in its request.
    pub fn watch(self: &Arc<Self>, call_id: &str) -> Watch {
        let token = format!("hearth-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        lock(&self.watched).insert(
            token.clone(),
            Watched {
                call_id: call_id.to_owned(),
                last: None,
                skipped: 0,
            },
        );
        Watch {
            progress: Arc::clone(self),
            token,
        }
    }

    /// Shows one `notifications/progress`, if its call is watched and
    /// its turn has come.
    pub fn report(&self, ctx: &Context, params: &Value) {
        if self.unsupported.load(Ordering::Relaxed) {
            return;
        }
        let token = match params.get("progressToken") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return,
        };
        let text = describe(params);
        let output = {
            let mut watched = lock(&self.watched);
            let Some(w) = watched.get_mut(&token) else {
                return;
            };
            let now = Instant::now();
            if w.last.is_some_and(|t| now.duration_since(t) < PACE) {
                w.skipped += text.len() as u64;
                return;
            }
            w.last = Some(now);
            ToolOutput {
                call_id: w.call_id.clone(),
                stream: OutputStream::Stdout,
                text,
                skipped: std::mem::take(&mut w.skipped),
            }
        };
        if let Some(Err(HostCallError::Unsupported(_))) = ctx.with_host(|h| h.tool_output(&output))
        {
            self.unsupported.store(true, Ordering::Relaxed);
        }
    }
}

impl Watch {
    /// The progress token for the request.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        lock(&self.progress.watched).remove(&self.token);
    }
}

/// One line for a progress notification: its message, or `3/10`.
fn describe(params: &Value) -> String {
    let number = |k: &str| params.get(k).and_then(Value::as_f64);
    let count = match (number("progress"), number("total")) {
        (Some(p), Some(t)) => format!("{p}/{t}"),
        (Some(p), None) => format!("{p}"),
        _ => String::new(),
    };
    let line = match params.get("message").and_then(Value::as_str) {
        Some(m) if count.is_empty() => m.to_owned(),
        Some(m) => format!("{m} ({count})"),
        None => format!("progress {count}"),
    };
    format!("{}\n", crate::text::cut(line.trim(), MAX_PIECE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_is_described_in_a_line() {
        let cases = [
            (json!({"progress": 1, "total": 4}), "progress 1/4\n"),
            (json!({"progress": 2.5}), "progress 2.5\n"),
            (
                json!({"progress": 3, "total": 4, "message": "copying"}),
                "copying (3/4)\n",
            ),
            (json!({"message": "thinking"}), "thinking\n"),
        ];
        for (params, expected) in cases {
            assert_eq!(describe(&params), expected, "for {params}");
        }
    }
}
