//! A bounded queue whose memory follows what it holds.
//!
//! The daemon's queues (plugin log records, inbox jobs, channel events) are
//! bounded so that a flood slows its producer down or is dropped instead of
//! growing without limit. A preallocated bounded channel pays for the whole
//! bound up front: a 4,096-slot array per queue, every page touched, about
//! 1 MiB of an idle daemon that queues nothing. This queue is an unbounded
//! channel (which allocates small blocks as items arrive and frees them as
//! they are taken) with the bound checked at send time.
//!
//! The bound is approximate by design: senders racing each other may
//! overshoot it by one item each, which is harmless for a limit that exists
//! to stop floods.

use std::time::{Duration, Instant};

pub use crossbeam_channel::{Receiver, SendTimeoutError, TrySendError};
use crossbeam_channel::{Sender, unbounded};

/// A queue of at most about `capacity` items; the receiver is a plain
/// channel receiver, so it works in `select!`.
pub fn bounded<T>(capacity: usize) -> (BoundedSender<T>, Receiver<T>) {
    let (tx, rx) = unbounded();
    (BoundedSender { tx, capacity }, rx)
}

/// The sending side of [`bounded`].
pub struct BoundedSender<T> {
    tx: Sender<T>,
    capacity: usize,
}

/// The longest pause between two tries of a sender waiting for room.
const MAX_PAUSE: Duration = Duration::from_millis(5);

impl<T> BoundedSender<T> {
    /// Queues `item` if there is room.
    pub fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
        if self.tx.len() >= self.capacity {
            return Err(TrySendError::Full(item));
        }
        self.tx
            .send(item)
            .map_err(|e| TrySendError::Disconnected(e.into_inner()))
    }

    /// Queues `item`, waiting at most `wait` for room.
    ///
    /// A full queue means the daemon is overloaded, the rare case: the
    /// sender then retries with growing pauses (up to 5 ms) rather than
    /// making every receive pay for waking a waiting sender.
    pub fn send_timeout(&self, item: T, wait: Duration) -> Result<(), SendTimeoutError<T>> {
        let deadline = Instant::now() + wait;
        let mut item = item;
        let mut pause = Duration::from_micros(50);
        loop {
            match self.try_send(item) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Disconnected(i)) => {
                    return Err(SendTimeoutError::Disconnected(i));
                }
                Err(TrySendError::Full(i)) => item = i,
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SendTimeoutError::Timeout(item));
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}

impl<T> Clone for BoundedSender<T> {
    fn clone(&self) -> Self {
        BoundedSender {
            tx: self.tx.clone(),
            capacity: self.capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_refuses_until_an_item_is_taken() {
        let (tx, rx) = bounded(2);
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        assert!(matches!(tx.try_send(3), Err(TrySendError::Full(3))));
        assert_eq!(rx.recv().unwrap(), 1);
        tx.try_send(3).unwrap();
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn a_sender_waits_for_room_and_then_gives_up() {
        let (tx, rx) = bounded(1);
        tx.try_send(1).unwrap();
        let started = Instant::now();
        let wait = Duration::from_millis(30);
        assert!(matches!(
            tx.send_timeout(2, wait),
            Err(SendTimeoutError::Timeout(2))
        ));
        assert!(started.elapsed() >= wait);
        let taker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            (rx.recv().unwrap(), rx)
        });
        tx.send_timeout(3, Duration::from_secs(5)).unwrap();
        let (first, rx) = taker.join().unwrap();
        assert_eq!(first, 1);
        assert_eq!(rx.recv().unwrap(), 3);
    }

    #[test]
    fn a_closed_queue_says_so() {
        let (tx, rx) = bounded(4);
        drop(rx);
        assert!(matches!(tx.try_send(1), Err(TrySendError::Disconnected(1))));
        assert!(matches!(
            tx.send_timeout(2, Duration::from_secs(1)),
            Err(SendTimeoutError::Disconnected(2))
        ));
    }
}
