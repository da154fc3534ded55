//! The typing indicator while the agent works.
//!
//! Signal shows "typing…" for 15 seconds after a `sendTyping`, so while the
//! agent is busy the indicator is renewed every [`RENEW`]; when it is done,
//! a `stop` clears it at once. The indicator goes to the chat of the
//! owner's last message, the one being answered. It is a nicety: failures
//! are logged at debug level and never retried.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Core;

/// How often the indicator is renewed while busy.
pub const RENEW: Duration = Duration::from_secs(10);

/// What the typing thread should show.
#[derive(Default)]
pub struct Typing {
    state: Mutex<State>,
    changed: Condvar,
}

impl Typing {
    /// The agent started (`true`) or finished a turn.
    pub fn set_busy(&self, busy: bool) {
        let mut state = self.lock();
        state.busy = busy;
        state.version += 1;
        self.changed.notify_all();
    }

    /// Ends [`run`].
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The typing thread: follows [`Typing`] until stopped.
pub fn run(core: &Arc<Core>) {
    let typing = &core.typing;
    let mut seen = 0;
    // The chat "typing…" is shown in, and when it was last renewed.
    let mut shown: Option<(String, Instant)> = None;
    loop {
        let busy = {
            let mut state = typing.lock();
            loop {
                if state.stopping {
                    return;
                }
                if state.version != seen {
                    break;
                }
                let wait = match (&shown, state.busy) {
                    (Some((_, at)), true) => RENEW.saturating_sub(at.elapsed()),
                    _ => Duration::from_secs(3600),
                };
                if wait.is_zero() {
                    break;
                }
                state = typing
                    .changed
                    .wait_timeout(state, wait)
                    .map(|(guard, _)| guard)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
            seen = state.version;
            state.busy
        };
        match (busy, shown.take()) {
            (true, _) => {
                if let Some(chat) = core.last_chat() {
                    send(core, &chat, false);
                    shown = Some((chat, Instant::now()));
                }
            }
            (false, Some((chat, _))) => send(core, &chat, true),
            (false, None) => {}
        }
    }
}

/// `recipient` or `groupId` params for `chat` (`+NUMBER` or `group:ID`).
pub fn target(chat: &str) -> Value {
    match chat.strip_prefix(crate::GROUP_PREFIX) {
        Some(group) => json!({ "groupId": group }),
        None => json!({ "recipient": [chat] }),
    }
}

/// What the typing thread follows.
#[derive(Default)]
struct State {
    busy: bool,
    stopping: bool,
    /// Bumped on every change, so the thread notices one it slept through.
    version: u64,
}

fn send(core: &Core, chat: &str, stop: bool) {
    let mut params = target(chat);
    if stop {
        params["stop"] = Value::Bool(true);
    }
    if let Err(e) = core.rpc.call("sendTyping", params) {
        tracing::debug!(chat, stop, "typing indicator not sent: {e}");
    }
}
