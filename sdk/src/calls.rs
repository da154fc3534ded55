//! The tool calls a plugin is running, and the stop flag of each: what a
//! plugin needs to answer `tool.cancel`.
//!
//! A call starts with [`Calls::start`] (the host's `call_id` from its
//! [`crate::protocol::ToolCall`]) and is forgotten when the returned
//! [`Running`] is dropped. [`Calls::cancel`], from the host's thread, sets
//! the call's [`Stop`]: a flag to check between steps, and a file
//! descriptor that turns readable, so a call waiting in `poll` (on a
//! child's pipes, on a socket) wakes at once instead of at its next tick.
//!
//! The host may cancel a call before the plugin has started it (the cancel
//! overtook the call on its way in): the id is remembered, a bounded few,
//! and the call starts stopped.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Ids cancelled before their call started, kept so the call starts
/// stopped. Bounded: a host that cancels ids that never come costs
/// nothing lasting.
const EARLY: usize = 64;

/// The running calls of one plugin.
#[derive(Default)]
pub struct Calls {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: HashMap<String, Arc<Stop>>,
    early: VecDeque<String>,
}

/// One call's stop flag.
#[derive(Debug)]
pub struct Stop {
    set: AtomicBool,
    /// An eventfd written once when the flag is set; `None` if the kernel
    /// would not make one (then only the flag tells).
    wake: Option<OwnedFd>,
}

/// A call in progress; dropping it forgets the call.
pub struct Running<'a> {
    calls: &'a Calls,
    id: Option<String>,
    stop: Arc<Stop>,
}

impl Calls {
    /// Records that the call `call_id` runs. A call without an id (the
    /// host did not give one: a CLI call, an older host) can never be
    /// stopped, but gets a [`Stop`] all the same.
    pub fn start(&self, call_id: Option<&str>) -> Running<'_> {
        let stop = Arc::new(Stop::new());
        let Some(id) = call_id else {
            return Running {
                calls: self,
                id: None,
                stop,
            };
        };
        let mut state = self.lock();
        if let Some(at) = state.early.iter().position(|e| e == id) {
            state.early.remove(at);
            stop.set();
        }
        state.running.insert(id.to_owned(), Arc::clone(&stop));
        Running {
            calls: self,
            id: Some(id.to_owned()),
            stop,
        }
    }

    /// Stops the call `call_id`; returns whether it was running. An id not
    /// running now is remembered (a few) in case its call has yet to start.
    pub fn cancel(&self, call_id: &str) -> bool {
        let mut state = self.lock();
        if let Some(stop) = state.running.get(call_id) {
            stop.set();
            return true;
        }
        if !state.early.iter().any(|e| e == call_id) {
            if state.early.len() == EARLY {
                state.early.pop_front();
            }
            state.early.push_back(call_id.to_owned());
        }
        false
    }

    /// How many calls run now.
    pub fn running(&self) -> usize {
        self.lock().running.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Running<'_> {
    /// The call's stop flag.
    pub fn stop(&self) -> &Stop {
        &self.stop
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let Some(id) = &self.id else { return };
        let mut state = self.calls.lock();
        // The same id twice (a host bug) keeps the newer call's entry.
        if state
            .running
            .get(id)
            .is_some_and(|s| Arc::ptr_eq(s, &self.stop))
        {
            state.running.remove(id);
        }
    }
}

impl Stop {
    /// A flag not set.
    pub fn new() -> Stop {
        // SAFETY: eventfd(2) takes no pointers; a non-negative result is a
        // new descriptor that only this `OwnedFd` owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        Stop {
            set: AtomicBool::new(false),
            // SAFETY: as above.
            wake: (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) }),
        }
    }

    /// Whether the call was told to stop.
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// A descriptor that is readable once the flag is set, for `poll`
    /// (`POLLIN`); never read it. `None` when the kernel would not make
    /// one: then check [`Stop::is_set`] now and then.
    pub fn fd(&self) -> Option<RawFd> {
        self.wake.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Sets the flag and wakes whoever polls [`Stop::fd`].
    pub fn set(&self) {
        if self.set.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(fd) = &self.wake {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to our own eventfd.
            // It cannot block (non-blocking) and cannot fail short of a
            // counter overflow, which one write never reaches.
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }
}

impl Default for Stop {
    fn default() -> Stop {
        Stop::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn a_cancel_sets_the_running_calls_flag_and_wakes_its_poll() {
        let calls = Calls::default();
        let call = calls.start(Some("c1"));
        let fd = call.stop().fd().expect("an eventfd");
        assert!(!call.stop().is_set() && !readable(fd));
        assert!(calls.cancel("c1"));
        assert!(call.stop().is_set() && readable(fd));
        // A second cancel finds it again and changes nothing.
        assert!(calls.cancel("c1"));
        drop(call);
        assert_eq!(calls.running(), 0);
        assert!(!calls.cancel("c1"), "a finished call is not running");
    }

    #[test]
    fn a_cancel_that_overtakes_its_call_stops_it_at_the_start() {
        let calls = Calls::default();
        assert!(!calls.cancel("early"));
        assert!(calls.start(Some("early")).stop().is_set());
        // Remembered once: the same id again starts clean.
        assert!(!calls.start(Some("early")).stop().is_set());
    }

    #[test]
    fn unknown_ids_are_remembered_only_a_bounded_few() {
        let calls = Calls::default();
        for n in 0..10 * EARLY {
            assert!(!calls.cancel(&format!("never-{n}")));
        }
        assert_eq!(calls.lock().early.len(), EARLY);
        assert!(!calls.start(Some("never-0")).stop().is_set());
        assert!(
            calls
                .start(Some(&format!("never-{}", 10 * EARLY - 1)))
                .stop()
                .is_set()
        );
    }

    #[test]
    fn a_call_without_an_id_runs_unregistered() {
        let calls = Calls::default();
        let call = calls.start(None);
        assert_eq!(calls.running(), 0);
        assert!(!call.stop().is_set());
    }
}
