//! The pacer: how fast replies may go to one chat and to Telegram in all,
//! and the pause every send takes when the Bot API answers 429. Its own
//! file, below the channel state that holds it and the senders that use it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The pacer and the memory of partly sent replies.
pub struct Outbound {
    per_chat: Duration,
    per_second: usize,
    pace: tokio::sync::Mutex<Pace>,
    /// Parts already delivered, by reply key.
    pub progress: Mutex<HashMap<String, usize>>,
}

#[derive(Default)]
struct Pace {
    last: HashMap<i64, Instant>,
    recent: VecDeque<Instant>,
    paused_until: Option<Instant>,
}

impl Outbound {
    /// A pacer allowing one message per `per_chat` to a chat and
    /// `per_second` in all.
    pub fn new(per_chat: Duration, per_second: u32) -> Outbound {
        Outbound {
            per_chat,
            per_second: per_second.max(1) as usize,
            pace: tokio::sync::Mutex::new(Pace::default()),
            progress: Mutex::new(HashMap::new()),
        }
    }

    /// Waits until a message to `chat` may go, and counts it.
    pub async fn turn(&self, chat: i64) {
        loop {
            let wait_until = {
                let mut pace = self.pace.lock().await;
                let now = Instant::now();
                while pace
                    .recent
                    .front()
                    .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
                {
                    pace.recent.pop_front();
                }
                let mut earliest = now;
                if let Some(last) = pace.last.get(&chat) {
                    earliest = earliest.max(*last + self.per_chat);
                }
                if pace.recent.len() >= self.per_second
                    && let Some(first) = pace.recent.front()
                {
                    earliest = earliest.max(*first + Duration::from_secs(1));
                }
                if let Some(until) = pace.paused_until {
                    earliest = earliest.max(until);
                }
                if earliest <= now {
                    pace.last.insert(chat, now);
                    pace.recent.push_back(now);
                    if pace.last.len() > 4096 {
                        let per_chat = self.per_chat;
                        pace.last.retain(|_, t| now.duration_since(*t) < per_chat);
                    }
                    return;
                }
                earliest
            };
            tokio::time::sleep_until(wait_until).await;
        }
    }

    /// Pauses every send for `wait` (a 429 asked for it).
    pub async fn pause(&self, wait: Duration) {
        let mut pace = self.pace.lock().await;
        let until = Instant::now() + wait;
        pace.paused_until = Some(pace.paused_until.map_or(until, |p| p.max(until)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_pacer_spaces_one_chat_and_caps_the_total() {
        let out = Outbound::new(Duration::from_secs(1), 3);
        let start = tokio::time::Instant::now();
        for _ in 0..3 {
            out.turn(1).await;
        }
        // One chat: one a second.
        assert!(start.elapsed() >= Duration::from_secs(2));
        let start = tokio::time::Instant::now();
        for chat in 10..16 {
            out.turn(chat).await;
        }
        // Six chats at three a second overall.
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_every_chat() {
        let out = Outbound::new(Duration::ZERO, 30);
        out.pause(Duration::from_secs(5)).await;
        let start = tokio::time::Instant::now();
        out.turn(3).await;
        assert!(start.elapsed() >= Duration::from_secs(5));
    }
}
