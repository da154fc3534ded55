//! The brake on requests for the agent's pages without a session: a count
//! per address in one-minute windows, so a stranger who found a public
//! page cannot make the host answer queries as fast as it can ask.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests without a session one address may make to `/pages` per
/// minute.
pub const PUBLIC_PER_MINUTE: u32 = 60;
/// How many addresses the limiter remembers before it forgets the
/// quietest window.
const MAX_ADDRESSES: usize = 10_000;
const WINDOW: Duration = Duration::from_secs(60);

/// Counts requests without a session per address, in one-minute windows.
#[derive(Default)]
pub struct Limiter {
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Limiter {
    /// Counts one request from `from`; `Err` holds how long it must wait.
    pub fn check(&self, from: IpAddr) -> Result<(), Duration> {
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if windows.len() >= MAX_ADDRESSES {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let (start, count) = windows.entry(from).or_insert((now, 0));
        if now.duration_since(*start) >= WINDOW {
            *start = now;
            *count = 0;
        }
        if *count >= PUBLIC_PER_MINUTE {
            return Err(WINDOW.saturating_sub(now.duration_since(*start)));
        }
        *count += 1;
        Ok(())
    }
}
