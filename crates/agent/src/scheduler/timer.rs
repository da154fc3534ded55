//! Sleeping until a wall-clock instant, without polling.
//!
//! A monotonic sleep (`tokio::time::sleep`) drifts from the wall clock
//! whenever the clock is set: after the machine's clock jumps an hour
//! ahead, a sleep computed before the jump wakes an hour late. A Linux
//! `timerfd` on `CLOCK_REALTIME` armed with `TFD_TIMER_ABSTIME` wakes at
//! the wall-clock instant itself, and `TFD_TIMER_CANCEL_ON_SET` wakes it
//! early whenever the clock is set, so the scheduler can look again. An
//! idle daemon with nothing due holds no timer at all.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// A wall-clock timer.
pub struct WallTimer {
    fd: AsyncFd<OwnedFd>,
}

impl WallTimer {
    /// A disarmed timer. Needs a tokio runtime with I/O enabled.
    pub fn new() -> io::Result<WallTimer> {
        // SAFETY: plain integer arguments; the result is checked.
        let raw = unsafe {
            libc::timerfd_create(libc::CLOCK_REALTIME, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: an `OwnedFd` keeps its descriptor open and unchanged until
        // it is dropped, which is when the `AsyncFd` holding it is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(WallTimer { fd })
    }

    /// Waits until the system wall clock reads `at_ms` (ms since the
    /// epoch), or the clock is set. An instant in the past returns at once.
    pub async fn sleep_until(&self, at_ms: i64) -> io::Result<()> {
        let at_ms = at_ms.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: at_ms / 1000,
                tv_nsec: (at_ms % 1000) * 1_000_000,
            },
        };
        // SAFETY: a valid timer descriptor and a valid itimerspec; the old
        // value is not asked for.
        let armed = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME | libc::TFD_TIMER_CANCEL_ON_SET,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if armed < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            let mut ready = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            // SAFETY: reads at most 8 bytes into an 8-byte buffer.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    expirations.as_mut_ptr().cast(),
                    expirations.len(),
                )
            };
            if n >= 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                // The clock was set: wake, so the caller looks again.
                Some(libc::ECANCELED) => return Ok(()),
                Some(libc::EAGAIN) => ready.clear_ready(),
                _ => return Err(err),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn wakes_at_the_wall_clock_instant() {
        let timer = WallTimer::new().unwrap();
        let now = hearth_base::store::now_ms();
        let started = std::time::Instant::now();
        timer.sleep_until(now + 120).await.unwrap();
        let waited = started.elapsed().as_millis();
        assert!((100..1_000).contains(&waited), "{waited} ms");
        // The past returns at once.
        let started = std::time::Instant::now();
        timer.sleep_until(now - 10_000).await.unwrap();
        assert!(started.elapsed().as_millis() < 100);
    }
}
