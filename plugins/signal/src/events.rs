//! The event stream: `GET {url}/api/v1/events`, kept open for as long as
//! the plugin runs.
//!
//! signal-cli writes each received envelope as an SSE `receive` event and
//! a `:` keep-alive comment every 15 seconds. A stream that stays silent
//! past `keepalive_timeout_s` is dead even if its TCP connection is not (a
//! hung daemon, a suspended laptop, a dropped NAT entry), so it is torn
//! down like one that closed or failed, and opened again after a backoff
//! (1 s doubling to 60 s, back to 1 s once a stream has stayed up a
//! while). The channel's health follows: up while a stream is open, down
//! with the reason while reconnecting.
//!
//! The stream is read with async reqwest on a small runtime of its own,
//! waiting in short slices so that shutdown is noticed within a fraction
//! of a second; each event is then handled outside the runtime, where the
//! blocking JSON-RPC client may run.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth_sdk::SubmitError;
use hearth_sdk::protocol::{ChannelState, ChannelStatus, Submission};

use crate::rpc::error_chain;
use crate::sse::Parser;
use crate::{Core, inbound};

/// The first wait before reconnecting.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait before reconnecting.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A stream that stayed open this long was healthy: the backoff restarts.
pub const HEALTHY: Duration = Duration::from_secs(30);

/// The stream thread: reads events until the plugin stops.
pub fn run(core: &Arc<Core>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("signal: cannot start the event stream's runtime: {e}");
            status(core, ChannelState::Down, format!("cannot start: {e}"));
            return;
        }
    };
    let client = match reqwest::Client::builder()
        .connect_timeout(core.settings.request_timeout)
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::error!("signal: cannot build the HTTP client: {e}");
            status(core, ChannelState::Down, format!("cannot start: {e}"));
            return;
        }
    };
    let mut backoff = FIRST_BACKOFF;
    loop {
        let opened = Instant::now();
        let reason = match stream(core, &runtime, &client) {
            Ended::Stopped => return,
            Ended::Dead(reason) => reason,
        };
        if opened.elapsed() >= HEALTHY {
            backoff = FIRST_BACKOFF;
        }
        tracing::warn!(
            "signal event stream down: {reason}; reconnecting in {}s",
            backoff.as_secs()
        );
        status(
            core,
            ChannelState::Down,
            format!("{reason}; reconnecting in {}s", backoff.as_secs()),
        );
        if core.stop.sleep(backoff) {
            return;
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// How often a wait looks at the stop flag.
const SLICE: Duration = Duration::from_millis(100);

/// Why a stream ended.
enum Ended {
    /// The plugin is stopping.
    Stopped,
    /// The stream could not be opened, broke, closed or went silent: why.
    Dead(String),
}

/// Opens one stream and reads it until it ends.
fn stream(core: &Core, runtime: &tokio::runtime::Runtime, client: &reqwest::Client) -> Ended {
    let settings = &core.settings;
    // A multi-account daemon streams every account unless asked for one;
    // `+` must be escaped, or the query decoder reads a space.
    let url = format!(
        "{}/api/v1/events?account={}",
        settings.url,
        settings.account.replace('+', "%2B")
    );
    let request = client
        .get(&url)
        .header("accept", "text/event-stream")
        .send();
    let mut response = match wait(core, runtime, request, settings.request_timeout) {
        Waited::Stopped => return Ended::Stopped,
        Waited::TimedOut => {
            return Ended::Dead(format!(
                "signal-cli did not answer within {}s",
                settings.request_timeout.as_secs()
            ));
        }
        Waited::Done(Err(e)) => {
            return Ended::Dead(format!(
                "cannot reach signal-cli at {}: {}",
                settings.url,
                error_chain(&e)
            ));
        }
        Waited::Done(Ok(response)) => response,
    };
    if response.status() != reqwest::StatusCode::OK {
        return Ended::Dead(format!(
            "signal-cli answered HTTP {}",
            response.status().as_u16()
        ));
    }
    tracing::info!(url = %settings.url, "signal event stream open");
    status(
        core,
        ChannelState::Up,
        format!("connected to {}", settings.url),
    );
    let mut parser = Parser::new();
    loop {
        let chunk = wait(core, runtime, response.chunk(), settings.keepalive_timeout);
        let bytes = match chunk {
            Waited::Stopped => return Ended::Stopped,
            Waited::TimedOut => {
                return Ended::Dead(format!(
                    "no data, not even a keep-alive, for {}s",
                    settings.keepalive_timeout.as_secs()
                ));
            }
            Waited::Done(Err(e)) => {
                return Ended::Dead(format!("the event stream broke: {}", error_chain(&e)));
            }
            Waited::Done(Ok(None)) => {
                return Ended::Dead("signal-cli closed the event stream".into());
            }
            Waited::Done(Ok(Some(bytes))) => bytes,
        };
        let events = match parser.feed(&bytes) {
            Ok(events) => events,
            Err(e) => return Ended::Dead(e.to_string()),
        };
        for event in events {
            if event.event == "receive" {
                inbound::receive(core, &event.data);
            }
        }
    }
}

/// How a wait ended.
enum Waited<T> {
    Done(T),
    TimedOut,
    Stopped,
}

/// Runs `future` until it is done, `limit` passes or the plugin stops,
/// looking at the stop flag every [`SLICE`].
fn wait<F: Future>(
    core: &Core,
    runtime: &tokio::runtime::Runtime,
    future: F,
    limit: Duration,
) -> Waited<F::Output> {
    let deadline = Instant::now() + limit;
    runtime.block_on(async {
        let mut future = pin!(future);
        loop {
            if core.stop.is_stopped() {
                return Waited::Stopped;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Waited::TimedOut;
            }
            if let Ok(output) = tokio::time::timeout(left.min(SLICE), future.as_mut()).await {
                return Waited::Done(output);
            }
        }
    })
}

/// Reports the channel's health. The host answers `Busy` until `describe`
/// has answered (the stream may open before), so that is retried a while.
fn status(core: &Core, state: ChannelState, detail: String) {
    let submission = Submission::ChannelStatus(ChannelStatus { state, detail });
    for _ in 0..50 {
        match core.host.submit(&submission) {
            Err(SubmitError::Busy) => {
                if core.stop.sleep(Duration::from_millis(100)) {
                    return;
                }
            }
            Err(e) => return tracing::debug!("channel status not taken: {e}"),
            Ok(()) => return,
        }
    }
}
