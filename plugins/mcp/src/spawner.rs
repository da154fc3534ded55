//! The one thread that starts server processes, so they die with the daemon.
//!
//! A server is told to die with its parent by `PR_SET_PDEATHSIG(SIGKILL)`,
//! set in the child before `exec`. The kernel fires that signal when the
//! *thread* that forked the child exits, not the process; tool calls run on
//! short-lived host threads, so a server forked from one would be killed
//! when that thread ends. Every server is therefore forked from this
//! long-lived thread, made when the first server starts (an MCP plugin with
//! no server pays nothing) and ended by [`Spawner::stop`] after every
//! server has been stopped. With it, servers die even when the daemon is
//! killed with `kill -9`.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::Mutex;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use crate::jsonrpc::lock;

type Job = (Command, Sender<io::Result<Child>>);

/// The spawning thread, once made.
#[derive(Default)]
pub struct Spawner {
    inner: Mutex<Option<(Sender<Job>, JoinHandle<()>)>>,
}

impl Spawner {
    /// Starts `command` from the spawning thread, set to be killed when the
    /// daemon dies. The caller gives it a session (and so a process group)
    /// of its own with the sandbox.
    pub fn spawn(&self, mut command: Command) -> io::Result<Child> {
        // The daemon's pid, read here: in the child, `getppid` must still
        // name it, or the daemon died before the signal was armed.
        // SAFETY: getpid(2) cannot fail and touches no memory.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure runs between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid); it allocates
        // nothing (`from_raw_os_error` does not allocate).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let (reply, answer) = channel();
        {
            let mut inner = lock(&self.inner);
            if inner.is_none() {
                let (tx, rx) = channel::<Job>();
                let handle = std::thread::Builder::new()
                    .name("mcp-spawner".into())
                    .spawn(move || {
                        for (mut command, reply) in rx {
                            let _ = reply.send(command.spawn());
                        }
                    })?;
                *inner = Some((tx, handle));
            }
            let Some((tx, _)) = inner.as_ref() else {
                return Err(io::Error::other("the spawner is gone"));
            };
            tx.send((command, reply))
                .map_err(|_| io::Error::other("the spawner thread has ended"))?;
        }
        answer
            .recv()
            .map_err(|_| io::Error::other("the spawner thread has ended"))?
    }

    /// Ends the spawning thread. Call it only after every server it started
    /// has been stopped: its end kills them.
    pub fn stop(&self) {
        let taken = lock(&self.inner).take();
        if let Some((tx, handle)) = taken {
            drop(tx);
            let _ = handle.join();
        }
    }
}
