//! One thread that waits for every background process this daemon run
//! started, and reports each exit.
//!
//! It sleeps in `poll` on one pidfd per child plus an eventfd that wakes it
//! for a new child or for shutdown, so it costs nothing while nothing
//! happens and can be joined at shutdown (a thread blocked in `waitpid`
//! could not be, and must not outlive the plugin). Children are not killed
//! at shutdown: they were started in their own sessions to outlive the
//! daemon. On a kernel without pidfds it looks at each child every
//! 200 ms instead.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::spawn;

/// What is called, on the reaper's thread, when a child exits: its id and
/// status.
pub type OnExit = Box<dyn Fn(&str, ExitStatus) + Send>;

/// The reaper thread and the way to hand it children.
pub struct Reaper {
    shared: Arc<Shared>,
    sender: Mutex<Sender<(String, Child)>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Reaper {
    /// Starts the thread; `on_exit` runs on it for each exit.
    pub fn start(on_exit: OnExit) -> io::Result<Reaper> {
        // SAFETY: eventfd takes an initial value and flags and returns a
        // new descriptor.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just created and is owned by nobody else.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        let shared = Arc::new(Shared {
            wake,
            stop: AtomicBool::new(false),
        });
        let (sender, receiver) = channel();
        let inner = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("shell-reaper".into())
            .stack_size(256 * 1024)
            .spawn(move || run(&inner, &receiver, &on_exit))?;
        Ok(Reaper {
            shared,
            sender: Mutex::new(sender),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Hands over a child to wait for.
    pub fn watch(&self, id: String, child: Child) {
        let sent = self
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send((id, child));
        if sent.is_ok() {
            self.shared.wake();
        }
    }

    /// Stops and joins the thread; the children keep running.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the shell plugin's reaper thread panicked");
            }
        }
    }
}

/// How often children without a pidfd are looked at.
const TICK_MS: i32 = 200;

struct Shared {
    wake: OwnedFd,
    stop: AtomicBool,
}

impl Shared {
    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd. A full
        // counter (EAGAIN) still leaves the reaper woken, so the result
        // does not matter.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn drain(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from our non-blocking eventfd.
        unsafe { libc::read(self.wake.as_raw_fd(), (&mut value as *mut u64).cast(), 8) };
    }
}

struct Watched {
    id: String,
    child: Child,
    exit_fd: Option<OwnedFd>,
}

fn run(shared: &Shared, receiver: &Receiver<(String, Child)>, on_exit: &OnExit) {
    let mut watched: Vec<Watched> = Vec::new();
    loop {
        let mut fds = vec![libc::pollfd {
            fd: shared.wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // For each watched child, its slot in `fds` (if it has a pidfd).
        let slots: Vec<Option<usize>> = watched
            .iter()
            .map(|w| {
                w.exit_fd.as_ref().map(|fd| {
                    fds.push(libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    fds.len() - 1
                })
            })
            .collect();
        let timeout = if slots.iter().any(Option::is_none) {
            TICK_MS
        } else {
            -1
        };
        // SAFETY: `fds` is a valid array of pollfd for its length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if ready < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            tracing::error!(
                "the shell plugin's reaper cannot poll: {}",
                io::Error::last_os_error()
            );
            return;
        }
        if fds[0].revents != 0 {
            shared.drain();
        }
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let mut index = 0;
        watched.retain_mut(|w| {
            let slot = slots[index];
            index += 1;
            let due = match slot {
                Some(slot) => fds[slot].revents != 0,
                None => true,
            };
            if !due {
                return true;
            }
            match w.child.try_wait() {
                Ok(Some(status)) => {
                    on_exit(&w.id, status);
                    false
                }
                Ok(None) => true,
                Err(e) => {
                    tracing::warn!("cannot wait for background process {}: {e}", w.id);
                    false
                }
            }
        });
        while let Ok((id, child)) = receiver.try_recv() {
            let exit_fd = spawn::pidfd(child.id());
            watched.push(Watched { id, child, exit_fd });
        }
    }
}
