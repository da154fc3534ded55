//! Channel events: the things a channel shows besides messages. Streamed
//! reply text, the agent's status and confirmation requests go to every
//! channel plugin that declared `events` in its description; live tool
//! output only to a turn's own channel, when it declared `tool_output`.
//!
//! Each such channel gets one thread and a bounded queue, so events reach it
//! in the order they were sent and a slow channel never holds up a turn.
//! When a channel's queue is full, streamed text is dropped (the final reply
//! still comes through the outbox); a confirmation request that cannot be
//! queued is simply never answered, and the gate denies it at its timeout:
//! failing closed. A live view's frames (images, each up to a few hundred
//! kilobytes) never fill a queue: each channel keeps only the newest frame
//! not yet handed over, and a slow channel skips the ones in between.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::queue::{self, BoundedSender, TrySendError};
use hearth_sdk::protocol::{ChannelEvent, method};

use super::Channel;

/// Events queued per channel before new ones are dropped.
const QUEUE: usize = 4096;

/// What a channel's queue holds.
enum Item {
    /// An event, serialized.
    Event(Vec<u8>),
    /// Answer once every earlier event has been handed over.
    Flush(tokio::sync::oneshot::Sender<()>),
    /// Hand over the channel's newest view frame, if one still waits.
    View,
}

/// One channel's queue, and how many of the events (and view markers) put
/// in it its thread has not handed over yet: a flush with none
/// outstanding answers at once, without a round trip through the thread.
struct Queue {
    tx: BoundedSender<Item>,
    outstanding: Arc<AtomicUsize>,
}

impl Queue {
    fn try_send(&self, item: Item) -> Result<(), TrySendError<Item>> {
        let counted = item.is_handed_over();
        if counted {
            self.outstanding.fetch_add(1, Ordering::AcqRel);
        }
        let sent = self.tx.try_send(item);
        if sent.is_err() && counted {
            self.outstanding.fetch_sub(1, Ordering::AcqRel);
        }
        sent
    }

    /// Whether every event put in the queue has been handed over.
    fn drained(&self) -> bool {
        self.outstanding.load(Ordering::Acquire) == 0
    }
}

impl Item {
    /// Whether the thread hands this to the channel (a flush only answers).
    fn is_handed_over(&self) -> bool {
        !matches!(self, Item::Flush(_))
    }
}

/// The newest live-view frame (serialized) waiting for one channel.
type Slot = Arc<Mutex<Option<Vec<u8>>>>;

/// The event queues of every event-capable channel.
#[derive(Default)]
pub struct ChannelEvents {
    queues: Mutex<Vec<(String, Queue)>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The channels that show live tool output (`ChannelSpec::tool_output`).
    tool_output: Vec<String>,
    /// The channels that show agent groups (`ChannelSpec::groups`).
    groups: Vec<String>,
    /// The channels that show live views (`ChannelSpec::views`), each
    /// with its newest frame not yet handed over.
    views: Vec<(String, Slot)>,
}

impl ChannelEvents {
    /// Starts a sender thread for each plugin whose channel takes events.
    pub fn start<C: Channel + 'static>(plugins: &[Arc<C>]) -> ChannelEvents {
        let mut events = ChannelEvents::default();
        for plugin in plugins {
            let Some(channel) = plugin.spec() else {
                continue;
            };
            if !channel.events {
                continue;
            }
            let (tx, rx) = queue::bounded::<Item>(QUEUE);
            let outstanding = Arc::new(AtomicUsize::new(0));
            let handed = Arc::clone(&outstanding);
            let target = Arc::clone(plugin);
            let slot = Slot::default();
            let newest = Arc::clone(&slot);
            let spawned = std::thread::Builder::new()
                .name(format!("hearth-events-{}", channel.name))
                .spawn(move || {
                    for item in rx {
                        let counted = item.is_handed_over();
                        match item {
                            Item::Event(payload) => {
                                if let Err(e) = target.call(method::CHANNEL_EVENT, &payload) {
                                    tracing::debug!("a channel event was not taken: {e}");
                                }
                            }
                            Item::Flush(done) => {
                                let _ = done.send(());
                            }
                            Item::View => {
                                let frame = lock(&newest).take();
                                if let Some(payload) = frame
                                    && let Err(e) = target.call(method::CHANNEL_EVENT, &payload)
                                {
                                    tracing::debug!("a view frame was not taken: {e}");
                                }
                            }
                        }
                        if counted {
                            handed.fetch_sub(1, Ordering::AcqRel);
                        }
                    }
                });
            match spawned {
                Ok(thread) => {
                    if channel.tool_output {
                        events.tool_output.push(channel.name.clone());
                    }
                    if channel.groups {
                        events.groups.push(channel.name.clone());
                    }
                    if channel.views {
                        events.views.push((channel.name.clone(), slot));
                    }
                    lock(&events.queues).push((channel.name.clone(), Queue { tx, outstanding }));
                    lock(&events.threads).push(thread);
                }
                Err(e) => {
                    tracing::error!(channel = %channel.name, "cannot start the channel's event thread: {e}");
                }
            }
        }
        events
    }

    /// Whether any channel can show a confirmation request.
    pub fn can_confirm(&self) -> bool {
        !lock(&self.queues).is_empty()
    }

    /// The channels that take events (and so show confirmations).
    pub fn channels(&self) -> Vec<String> {
        lock(&self.queues)
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Whether `channel` takes events.
    pub fn takes_events(&self, channel: &str) -> bool {
        lock(&self.queues).iter().any(|(name, _)| name == channel)
    }

    /// Whether `channel` shows live tool output.
    pub fn shows_tool_output(&self, channel: &str) -> bool {
        self.tool_output.iter().any(|name| name == channel)
    }

    /// Queues `event` for `channel`, if it takes events.
    pub fn send(&self, channel: &str, event: &ChannelEvent) {
        self.queue(event, |name| name == channel);
    }

    /// Whether any channel shows agent groups.
    pub fn shows_groups(&self) -> bool {
        !self.groups.is_empty()
    }

    /// Queues a group's view for every channel that shows groups.
    pub fn group(&self, view: hearth_sdk::protocol::GroupView) {
        let groups = &self.groups;
        self.queue(&ChannelEvent::Group(view), |name| {
            groups.iter().any(|g| g == name)
        });
    }

    /// Whether any channel shows live views.
    pub fn shows_views(&self) -> bool {
        !self.views.is_empty()
    }

    /// Hands a live view's frame (a [`ChannelEvent::View`]) to every
    /// channel that shows views, replacing a frame still waiting there;
    /// returns whether any channel shows views.
    pub fn view(&self, event: &ChannelEvent) -> bool {
        if self.views.is_empty() {
            return false;
        }
        let Ok(payload) = serde_json::to_vec(event) else {
            return true;
        };
        let queues = lock(&self.queues);
        for (name, slot) in &self.views {
            // A frame still waiting has its marker queued already: the
            // thread takes whatever is newest when it gets there.
            if lock(slot).replace(payload.clone()).is_some() {
                continue;
            }
            let queued = queues
                .iter()
                .find(|(queue, _)| queue == name)
                .is_some_and(|(_, tx)| tx.try_send(Item::View).is_ok());
            if !queued {
                lock(slot).take();
                tracing::debug!(channel = %name, "view frame dropped: the channel's queue is full");
            }
        }
        true
    }

    /// Queues `event` for every channel that takes events.
    pub fn broadcast(&self, event: &ChannelEvent) {
        self.queue(event, |_| true)
    }

    /// Resolves once `channel` has been handed every event queued before
    /// this call, or after `wait`. A turn calls it before its reply is
    /// stored, so the reply (which travels through the outbox) never
    /// overtakes the last of its own streamed text.
    pub async fn flush(&self, channel: &str, wait: std::time::Duration) {
        let (done, flushed) = tokio::sync::oneshot::channel();
        let queued = lock(&self.queues)
            .iter()
            .find(|(name, _)| name == channel)
            .is_some_and(|(_, tx)| !tx.drained() && tx.try_send(Item::Flush(done)).is_ok());
        if queued {
            let _ = tokio::time::timeout(wait, flushed).await;
        }
    }

    /// Stops the sender threads once their queues are drained.
    pub fn close(&self) {
        lock(&self.queues).clear();
        for thread in lock(&self.threads).drain(..) {
            let _ = thread.join();
        }
    }

    fn queue(&self, event: &ChannelEvent, wanted: impl Fn(&str) -> bool) {
        let queues = lock(&self.queues);
        // Most setups have no event channel: then an event costs a lock.
        if !queues.iter().any(|(name, _)| wanted(name)) {
            return;
        }
        let Ok(payload) = serde_json::to_vec(event) else {
            return;
        };
        for (name, tx) in queues.iter().filter(|(name, _)| wanted(name)) {
            if let Err(TrySendError::Full(_)) = tx.try_send(Item::Event(payload.clone())) {
                tracing::warn!(channel = %name, "channel event dropped: its queue is full");
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::channels::CallError;
    use hearth_sdk::protocol::{ChannelSpec, ViewFrame};

    use super::*;

    /// A channel that records the events it is handed and holds the first
    /// until the test lets it go.
    struct Held {
        spec: ChannelSpec,
        seen: Mutex<Vec<String>>,
        gate: Mutex<Option<mpsc::Receiver<()>>>,
    }

    impl Channel for Held {
        fn spec(&self) -> Option<&ChannelSpec> {
            Some(&self.spec)
        }

        fn call(&self, _method: &str, payload: &[u8]) -> Result<Vec<u8>, CallError> {
            if let Some(gate) = lock(&self.gate).take() {
                let _ = gate.recv();
            }
            let event: ChannelEvent = serde_json::from_slice(payload).unwrap();
            if let ChannelEvent::View { frame, .. } = event {
                lock(&self.seen).push(frame.title);
            }
            Ok(Vec::new())
        }
    }

    fn frame(title: &str) -> ChannelEvent {
        ChannelEvent::View {
            source: "browser".into(),
            frame: ViewFrame {
                title: title.into(),
                ..ViewFrame::default()
            },
        }
    }

    fn channel(views: bool) -> (Arc<Held>, mpsc::Sender<()>) {
        let (release, gate) = mpsc::channel();
        let held = Arc::new(Held {
            spec: ChannelSpec {
                name: "canvas".into(),
                events: true,
                views,
                ..ChannelSpec::default()
            },
            seen: Mutex::default(),
            gate: Mutex::new(Some(gate)),
        });
        (held, release)
    }

    #[test]
    fn a_slow_channel_gets_the_newest_frame_not_every_frame() {
        let (held, release) = channel(true);
        let events = ChannelEvents::start(&[Arc::clone(&held)]);
        assert!(events.shows_views());
        assert!(events.view(&frame("first")));
        // The thread is inside the first hand-over now, or about to be.
        std::thread::sleep(Duration::from_millis(50));
        for n in 0..500 {
            events.view(&frame(&format!("frame {n}")));
        }
        release.send(()).unwrap();
        events.close();
        let seen = lock(&held.seen).clone();
        assert_eq!(seen, ["first", "frame 499"], "only the newest waited");
    }

    #[test]
    fn a_flush_waits_for_an_event_still_being_handed_over_and_not_otherwise() {
        let (held, release) = channel(true);
        let events = ChannelEvents::start(&[Arc::clone(&held)]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let flushed = |wait: Duration| {
            let start = std::time::Instant::now();
            runtime.block_on(events.flush("canvas", wait));
            start.elapsed()
        };
        // Nothing queued: no wait at all, whatever the bound.
        assert!(flushed(Duration::from_secs(60)) < Duration::from_secs(30));
        // The first frame is held inside its hand-over: the flush waits
        // out its bound.
        assert!(events.view(&frame("held")));
        assert!(flushed(Duration::from_millis(200)) >= Duration::from_millis(200));
        release.send(()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while lock(&held.seen).is_empty() {
            assert!(std::time::Instant::now() < deadline, "never handed over");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Handed over: the flush answers at once again.
        assert!(flushed(Duration::from_secs(60)) < Duration::from_secs(30));
        events.close();
    }

    #[test]
    fn a_channel_that_shows_no_views_gets_none() {
        let (held, release) = channel(false);
        drop(release);
        let events = ChannelEvents::start(&[Arc::clone(&held)]);
        assert!(!events.shows_views());
        assert!(!events.view(&frame("unseen")));
        events.close();
        assert!(lock(&held.seen).is_empty());
    }
}
