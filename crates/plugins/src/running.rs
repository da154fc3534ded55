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
use hearth_sdk::protocol::{ToolOutput, service};

use hearth_base::scope::{CallScope, Hook, HookGuard};

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
    /// Tracks a call about to be made in `scope`: gives it an id, routes
    /// its output to the scope, and calls `cancel` with the id when the
    /// scope is cancelled while the call runs.
    pub fn track(
        &'static self,
        scope: Arc<CallScope>,
        cancel: impl FnOnce(&str) + Send + 'static,
    ) -> Tracked {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = format!("call-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        self.lock().insert(id.clone(), Arc::clone(&scope));
        let call_id = id.clone();
        let hook: Hook = Box::new(move || cancel(&call_id));
        let hook = scope.on_cancel(hook);
        Tracked {
            id,
            running: self,
            hook,
        }
    }

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
