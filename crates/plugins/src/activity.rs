//! What a channel did last: when a message from it was last stored, when
//! it last delivered a reply, and since when its health has been what it
//! is. The plugin's context keeps these in memory, where submissions and
//! sends pass (`bridge`, `instance`); `hearth status`, `/status` and the
//! doctor show them. A restart starts them afresh: they say how the
//! channel is doing now, and the store keeps the history.

use hearth_base::time_text::human;
use hearth_sdk::protocol::{ChannelState, ChannelStatus};

/// A channel's last activity, as Unix milliseconds; `None` until it
/// happened since the daemon started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// When a message from the channel was last stored in the inbox.
    pub last_in_ms: Option<i64>,
    /// When the channel last took a reply (`channel.send` answered OK).
    pub last_out_ms: Option<i64>,
    /// When the channel's state (up, degraded, down) last changed: a new
    /// detail in the same state leaves it, so it says how long the
    /// channel has been down, not when it last retried.
    pub since_ms: Option<i64>,
}

impl Activity {
    /// `for 5 min; last in 3 min ago, last out 10 s ago` at `now_ms`;
    /// the first part only once the channel has reported its health.
    pub fn text(&self, now_ms: i64) -> String {
        let ago = |at: Option<i64>| match at {
            Some(at) => format!("{} ago", human(now_ms - at)),
            None => "never".to_owned(),
        };
        let traffic = format!(
            "last in {}, last out {}",
            ago(self.last_in_ms),
            ago(self.last_out_ms)
        );
        match self.since_ms {
            Some(since) => format!("for {}; {traffic}", human(now_ms - since)),
            None => traffic,
        }
    }
}

/// A channel's last reported health with its activity, as the plugin's
/// context keeps them (under one lock, so the state and its `since_ms`
/// always agree).
#[derive(Clone, Debug, Default)]
pub(crate) struct Health {
    /// The last report.
    pub status: Option<ChannelStatus>,
    /// What the channel did last.
    pub activity: Activity,
}

/// How a new report compares with the last one: what the log says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The same state and detail again.
    Same,
    /// The same state, another detail (a retry's new backoff, say).
    Detail,
    /// Another state, or the first report.
    State,
}

impl Health {
    /// Takes `status`, reported at `now_ms`; says what changed.
    pub fn report(&mut self, status: ChannelStatus, now_ms: i64) -> Change {
        let change = match &self.status {
            Some(last) if *last == status => Change::Same,
            Some(last) if last.state == status.state => Change::Detail,
            _ => Change::State,
        };
        if change == Change::State {
            self.activity.since_ms = Some(now_ms);
        }
        self.status = Some(status);
        change
    }
}

/// The word `hearth status` and the doctor use for `state`.
pub fn state_word(state: ChannelState) -> &'static str {
    match state {
        ChannelState::Up => "up",
        ChannelState::Degraded => "degraded",
        ChannelState::Down => "down",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: ChannelState, detail: &str) -> ChannelStatus {
        ChannelStatus {
            state,
            detail: detail.to_owned(),
        }
    }

    #[test]
    fn since_moves_with_the_state_and_not_with_the_detail() {
        let mut health = Health::default();
        let down = status(ChannelState::Down, "refused; reconnecting in 0.5 s");
        assert_eq!(health.report(down.clone(), 1_000), Change::State);
        assert_eq!(health.report(down, 2_000), Change::Same);
        let retry = status(ChannelState::Down, "refused; reconnecting in 1.0 s");
        assert_eq!(health.report(retry, 3_000), Change::Detail);
        assert_eq!(health.activity.since_ms, Some(1_000));
        assert_eq!(
            health.report(status(ChannelState::Up, "long polling"), 4_000),
            Change::State
        );
        assert_eq!(health.activity.since_ms, Some(4_000));
        assert_eq!(health.status.map(|s| s.detail), Some("long polling".into()));
    }

    #[test]
    fn the_text_says_how_long_ago_or_never() {
        let now = 1_000_000;
        let activity = Activity {
            last_in_ms: Some(now - 180_000),
            last_out_ms: Some(now - 10_000),
            since_ms: Some(now - 7_200_000),
        };
        assert_eq!(
            activity.text(now),
            "for 2 h 0 min; last in 3 min ago, last out 10 s ago"
        );
        assert_eq!(
            Activity::default().text(now),
            "last in never, last out never"
        );
    }
}
