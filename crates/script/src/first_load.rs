//! A latch for the scripts' first load: start-up goes on while a thread
//! loads every script, and whoever needs the catalog waits for it.

use std::sync::{Condvar, Mutex};

/// Open until the first load is done; never closes again.
#[derive(Default)]
pub(crate) struct FirstLoad {
    done: Mutex<bool>,
    changed: Condvar,
}

impl FirstLoad {
    /// Blocks until the first load is done.
    pub(crate) fn wait(&self) {
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let _done = self
            .changed
            .wait_while(done, |done| !*done)
            .unwrap_or_else(|p| p.into_inner());
    }

    /// Whether the first load is done.
    pub(crate) fn is_done(&self) -> bool {
        *self.done.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A guard that marks the load done when dropped, so a load that
    /// panics still lets every waiter go on (with what was loaded).
    pub(crate) fn done_on_drop(&self) -> DoneOnDrop<'_> {
        DoneOnDrop(self)
    }
}

/// See [`FirstLoad::done_on_drop`].
pub(crate) struct DoneOnDrop<'a>(&'a FirstLoad);

impl Drop for DoneOnDrop<'_> {
    fn drop(&mut self) {
        *self.0.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn waiters_go_on_once_the_load_is_done_even_if_it_panicked() {
        let latch = Arc::new(FirstLoad::default());
        let loader = Arc::clone(&latch);
        let load = std::thread::spawn(move || {
            let _done = loader.done_on_drop();
            std::thread::sleep(Duration::from_millis(20));
            panic!("a load that fails half-way");
        });
        latch.wait();
        assert!(load.join().is_err());
        // Done for good: a later wait returns at once.
        assert!(latch.is_done());
        latch.wait();
    }
}
