//! The calls a plugin runs for a turn: how each is stopped (`tool.cancel`)
//! and where its live output goes (`tool.output`).
//!
//! A call made inside a turn's [`CallScope`] gets a fresh `call_id` in its
//! `ToolCall`. While it runs, the id maps to the scope in the plugin's own
//! context, so a plugin can show output only for calls it is running, and
//! the scope holds a hook that asks the plugin to stop the call when the
//! owner types `/stop`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use hearth_sdk::abi::status;
use hearth_sdk::protocol::{CancelAnswer, CancelRequest, ToolOutput, method, service};

use super::instance::{ActivePlugin, InvokeError};
use crate::tools::scope::{CallScope, HookGuard};

/// The largest `tool.output` request, in bytes of JSON.
pub const MAX_OUTPUT_REQUEST: usize = 256 * 1024;
/// The most text one `tool.output` request carries, in bytes.
pub const MAX_OUTPUT_TEXT: usize = 64 * 1024;

/// The calls a plugin is running in a turn, by `call_id`.
#[derive(Default)]
pub struct Running {
    calls: Mutex<HashMap<String, Arc<CallScope>>>,
}

/// A call in progress; dropping it forgets the call.
pub struct Tracked {
    id: String,
    running: &'static Running,
    /// Dropped first: no cancel is sent for a call that has answered.
    hook: Option<HookGuard>,
}

impl ActivePlugin {
    /// Tracks a call about to be made in `scope`: gives it an id, routes
    /// its output to the scope, and asks the plugin to stop it when the
    /// scope is cancelled.
    pub fn track(self: &Arc<Self>, scope: Arc<CallScope>) -> Tracked {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = format!("call-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let running = self.running();
        running.lock().insert(id.clone(), Arc::clone(&scope));
        let (plugin, call_id) = (Arc::clone(self), id.clone());
        let hook = scope.on_cancel(Box::new(move || plugin.cancel_call(&call_id)));
        Tracked { id, running, hook }
    }

    /// Asks the plugin to stop the call `call_id`; logs what it said.
    pub fn cancel_call(&self, call_id: &str) {
        let request = CancelRequest {
            call_id: call_id.to_owned(),
        };
        let payload = serde_json::to_vec(&request).unwrap_or_default();
        match self.invoke(method::TOOL_CANCEL, &payload) {
            Ok(answer) => {
                let cancelled = serde_json::from_slice::<CancelAnswer>(&answer)
                    .map(|a| a.cancelled)
                    .unwrap_or(false);
                tracing::info!(plugin = %self.name, call_id, cancelled, "asked the plugin to stop a call");
            }
            Err(InvokeError::Failed { message, .. }) => {
                tracing::info!(plugin = %self.name, call_id, "the plugin cannot stop its calls: {message}");
            }
            Err(e) => {
                tracing::warn!(plugin = %self.name, call_id, "cannot ask the plugin to stop a call: {e}")
            }
        }
    }
}

impl Tracked {
    /// The call's id, for its `ToolCall`.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        drop(self.hook.take());
        self.running.lock().remove(&self.id);
    }
}

impl Running {
    /// `tool.output` from `plugin`: hands the piece to the scope of its
    /// call; the status and the answer for the bridge to hand back.
    pub fn output(&self, plugin: &str, request: &[u8]) -> (i32, String) {
        let fail = |why: String| (status::INVALID, format!("{}: {why}", service::TOOL_OUTPUT));
        if request.len() > MAX_OUTPUT_REQUEST {
            return fail(format!(
                "the request is {} bytes, over the {MAX_OUTPUT_REQUEST}-byte limit",
                request.len()
            ));
        }
        let piece: ToolOutput = match serde_json::from_slice(request) {
            Ok(piece) => piece,
            Err(e) => return fail(e.to_string()),
        };
        if piece.text.len() > MAX_OUTPUT_TEXT {
            return fail(format!(
                "field `text` is {} bytes, over the {MAX_OUTPUT_TEXT}-byte limit",
                piece.text.len()
            ));
        }
        let scope = self.lock().get(&piece.call_id).cloned();
        let Some(scope) = scope else {
            return fail(format!(
                "field `call_id`: no call {:?} of plugin {plugin} is running",
                piece.call_id
            ));
        };
        scope.output(piece.stream, &piece.text, piece.skipped);
        (status::OK, "{}".to_owned())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<CallScope>>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}
