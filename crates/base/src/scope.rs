//! What a tool call running in an agent's turn can be told, and can tell:
//! the owner's `/stop`, and its live output.
//!
//! A turn gives each call it starts a [`CallScope`] and runs the call
//! inside [`within`], which makes the scope the thread's current one. The
//! layers between the turn and the work (registry, policy, confirmation
//! gate, Lua pool, plugin call) need no new parameters: whatever waits on
//! something that can be stopped registers a hook with [`current`]'s scope
//! ([`CallScope::on_cancel`]), and a plugin's live output is routed to the
//! scope its call runs in. `hearth.tool` calls from a Lua tool run on the
//! same thread, so they share their tool's scope: `/stop` cuts them too.
//!
//! Cancelling runs every hook once, on the canceller's thread. A hook is
//! removed when its guard drops, and a guard dropping waits for a hook
//! that is running: a hook may kill a process by pid, and must not run
//! after its waiter has reaped that process.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hearth_sdk::live::{Limits, Piece, Throttle};
use hearth_sdk::protocol::{CallEnd, ChannelEvent, OutputStream};

use crate::channels::events::ChannelEvents;

/// What the host passes on to a channel: four batches a second per call,
/// 16 KiB of each stream per event, 1 MiB per call.
pub const OUTPUT_LIMITS: Limits = Limits {
    interval: Duration::from_millis(250),
    piece: 16 * 1024,
    total: 1024 * 1024,
};

/// One tool call of a turn: its stop signal and where its output goes.
pub struct CallScope {
    /// The model's id for the call: unique within the turn.
    call: String,
    tool: String,
    command: Option<String>,
    cancelled: AtomicBool,
    hooks: Mutex<Hooks>,
    output: Option<Output>,
    notes: Mutex<Vec<String>>,
}

/// A hook run once when the call is cancelled.
pub type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Hooks {
    next: u64,
    waiting: Vec<(u64, Hook)>,
}

/// Where a call's live output goes: the turn's channel, throttled.
struct Output {
    events: Arc<ChannelEvents>,
    channel: String,
    chat: String,
    turn: String,
    throttle: Mutex<Shown>,
}

struct Shown {
    throttle: Throttle,
    /// Whether any piece went out: only then is the call's end shown.
    any: bool,
}

/// Removes its hook when dropped (see [`CallScope::on_cancel`]).
pub struct HookGuard {
    scope: Arc<CallScope>,
    id: u64,
}

impl CallScope {
    /// A scope for the call `call` (the model's id) of `tool`, which runs
    /// `command` when it has one; its output goes nowhere until
    /// [`CallScope::showing_output`].
    pub fn new(call: &str, tool: &str, command: Option<String>) -> CallScope {
        CallScope {
            call: call.to_owned(),
            tool: tool.to_owned(),
            command,
            cancelled: AtomicBool::new(false),
            hooks: Mutex::new(Hooks::default()),
            output: None,
            notes: Mutex::new(Vec::new()),
        }
    }

    /// Shows the call's output on `channel` (which must show tool output),
    /// as part of `turn` in `chat`.
    pub fn showing_output(
        self,
        events: Arc<ChannelEvents>,
        channel: &str,
        chat: &str,
        turn: &str,
    ) -> CallScope {
        CallScope {
            output: Some(Output {
                events,
                channel: channel.to_owned(),
                chat: chat.to_owned(),
                turn: turn.to_owned(),
                throttle: Mutex::new(Shown {
                    throttle: Throttle::new(OUTPUT_LIMITS),
                    any: false,
                }),
            }),
            ..self
        }
    }

    /// The tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The command line the call runs, for tools that run one.
    pub fn command(&self) -> Option<&str> {
        self.command.as_deref()
    }

    /// Whether the owner stopped the call.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Stops the call: runs every hook, once. A second cancel does nothing.
    pub fn cancel(&self) {
        let mut hooks = lock(&self.hooks);
        if self.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        // Run under the lock: a guard dropping waits, so no hook outlives
        // what it acts on.
        for (_, hook) in hooks.waiting.drain(..) {
            hook();
        }
    }

    /// Runs `hook` when the call is cancelled, until the guard drops; if
    /// it is already, runs it now and returns `None`. A hook must be quick
    /// and must not call back into this scope.
    pub fn on_cancel(self: &Arc<Self>, hook: Hook) -> Option<HookGuard> {
        let mut hooks = lock(&self.hooks);
        if self.is_cancelled() {
            drop(hooks);
            hook();
            return None;
        }
        hooks.next += 1;
        let id = hooks.next;
        hooks.waiting.push((id, hook));
        Some(HookGuard {
            scope: Arc::clone(self),
            id,
        })
    }

    /// Records what the cancellation cut besides the call itself ("its
    /// approval request was withdrawn"), for the turn's reply.
    pub fn note(&self, what: &str) {
        lock(&self.notes).push(what.to_owned());
    }

    /// What [`CallScope::note`] recorded.
    pub fn notes(&self) -> Vec<String> {
        lock(&self.notes).clone()
    }

    /// Whether the call's output is shown anywhere.
    pub fn shows_output(&self) -> bool {
        self.output.is_some()
    }

    /// Takes a piece of the call's live output; it goes out now if the
    /// throttle allows, else at a later [`CallScope::tick`].
    pub fn output(&self, stream: OutputStream, text: &str, skipped: u64) {
        let Some(output) = &self.output else { return };
        let mut shown = lock(&output.throttle);
        shown.throttle.push(stream, text.as_bytes(), skipped);
        let pieces = shown.throttle.take_due(Instant::now());
        self.send(output, &mut shown, pieces, None);
    }

    /// Sends what the throttle now allows; the turn calls it while the
    /// call runs, so held output does not wait for the next piece.
    pub fn tick(&self) {
        let Some(output) = &self.output else { return };
        let mut shown = lock(&output.throttle);
        let pieces = shown.throttle.take_due(Instant::now());
        self.send(output, &mut shown, pieces, None);
    }

    /// Sends what is still held, and the call's end, if any output was
    /// shown.
    pub fn finish(&self, end: CallEnd) {
        let Some(output) = &self.output else { return };
        let mut shown = lock(&output.throttle);
        let pieces = shown.throttle.finish();
        self.send(output, &mut shown, pieces, Some(end));
    }

    fn send(&self, output: &Output, shown: &mut Shown, pieces: Vec<Piece>, end: Option<CallEnd>) {
        let last = pieces.len();
        for (n, piece) in pieces.into_iter().enumerate() {
            let ended = if n + 1 == last { end } else { None };
            self.emit(output, piece, ended);
            shown.any = true;
        }
        if let (0, Some(end), true) = (last, end, shown.any) {
            let empty = Piece {
                stream: OutputStream::Stdout,
                text: String::new(),
                skipped: 0,
            };
            self.emit(output, empty, Some(end));
        }
    }

    fn emit(&self, output: &Output, piece: Piece, ended: Option<CallEnd>) {
        output.events.send(
            &output.channel,
            &ChannelEvent::ToolOutput {
                chat: output.chat.clone(),
                turn: output.turn.clone(),
                call: self.call.clone(),
                tool: self.tool.clone(),
                command: self.command.clone(),
                stream: piece.stream,
                text: piece.text,
                skipped: piece.skipped,
                ended,
            },
        );
    }
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        lock(&self.scope.hooks)
            .waiting
            .retain(|(id, _)| *id != self.id);
    }
}

thread_local! {
    /// The scope of the call running on this thread, if any.
    static CURRENT: RefCell<Option<Arc<CallScope>>> = const { RefCell::new(None) };
}

/// Runs `f` (a tool call) with `scope` as this thread's current scope.
pub fn within<R>(scope: Arc<CallScope>, f: impl FnOnce() -> R) -> R {
    /// Restores the scope before, even if `f` panics: the thread is a
    /// pooled one, and runs other calls later.
    struct Restore(Option<Arc<CallScope>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = before);
        }
    }
    let before = CURRENT.with(|c| c.borrow_mut().replace(scope));
    let _restore = Restore(before);
    f()
}

/// The scope of the call running on this thread: `None` outside a turn
/// (the CLI, a slash command, a scheduled job's own calls).
pub fn current() -> Option<Arc<CallScope>> {
    CURRENT.with(|c| c.borrow().clone())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_cancel_runs_each_hook_once_and_a_dropped_guard_removes_its_hook() {
        let scope = Arc::new(CallScope::new("t1", "shell_exec", None));
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = |runs: &Arc<AtomicUsize>| {
            let runs = Arc::clone(runs);
            Box::new(move || {
                runs.fetch_add(1, Ordering::SeqCst);
            }) as Hook
        };
        let _kept = scope.on_cancel(counter(&runs));
        drop(scope.on_cancel(counter(&runs)));
        scope.cancel();
        scope.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // Cancelled already: a new hook runs at once.
        assert!(scope.on_cancel(counter(&runs)).is_none());
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_scope_is_current_only_inside_within_and_nests() {
        assert!(current().is_none());
        let outer = Arc::new(CallScope::new("a", "outer", None));
        let inner = Arc::new(CallScope::new("b", "inner", None));
        within(Arc::clone(&outer), || {
            assert_eq!(
                current().map(|s| s.tool().to_owned()).as_deref(),
                Some("outer")
            );
            within(Arc::clone(&inner), || {
                assert_eq!(
                    current().map(|s| s.tool().to_owned()).as_deref(),
                    Some("inner")
                );
            });
            assert_eq!(
                current().map(|s| s.tool().to_owned()).as_deref(),
                Some("outer")
            );
        });
        assert!(current().is_none());
    }
}
