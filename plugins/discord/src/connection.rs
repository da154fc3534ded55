//! The Gateway connection: one thread that connects, feeds every payload
//! and close to the [`Session`], does what it says, and hands each event
//! to the channel. It never dies silently: every drop reconnects (after a
//! wait that grows to a minute while the gateway keeps failing), and only
//! a close code that reconnecting cannot fix stops it, with the reason
//! reported as the channel's health.

use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tungstenite::protocol::CloseFrame;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use crate::gateway::{Session, Step};

/// How often the loop looks at the clock and the stop flag while no
/// payload comes.
const TICK: Duration = Duration::from_millis(200);
/// The longest wait between two connection attempts.
const MOST_BACKOFF: Duration = Duration::from_secs(60);

/// What the connection tells the channel.
pub trait Handler: Send + Sync {
    /// An event (`READY`, `MESSAGE_CREATE`...). Returns once it is dealt
    /// with (a message stored by the host); `false` if it could not be
    /// (the host is closing): its sequence number is then not counted as
    /// seen.
    fn event(&self, name: &str, data: &Value) -> bool;
    /// The connection is up, or reconnecting (`why`), or stopped for good.
    fn health(&self, health: Health);
}

/// The connection's state, for the channel's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Connected and identified (or resumed).
    Up,
    /// Connecting again, and why.
    Reconnecting(String),
    /// Stopped: reconnecting cannot help.
    Stopped(String),
}

/// Runs the connection until `stop` is set (or a fatal close). `gateway`
/// gives the Gateway's base address each time a fresh one is needed.
pub fn run(
    token: &str,
    gateway: impl Fn() -> Result<String, String>,
    handler: Arc<dyn Handler>,
    stop: Arc<AtomicBool>,
) {
    let mut session = Session::new(token);
    let mut backoff = Duration::from_secs(1);
    let mut base: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        let address = match &base {
            Some(address) => address.clone(),
            None => match gateway() {
                Ok(address) => {
                    base = Some(address.clone());
                    address
                }
                Err(why) => {
                    handler.health(Health::Reconnecting(why));
                    sleep(&stop, backoff);
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                    continue;
                }
            },
        };
        let url = session.url(&address);
        let outcome = match tungstenite::connect(url.as_str()) {
            Ok((socket, _)) => serve(socket, &mut session, handler.as_ref(), &stop),
            Err(e) => Ended::Again {
                after: Duration::ZERO,
                why: format!("cannot connect to the gateway: {e}"),
                up: false,
            },
        };
        match outcome {
            Ended::Stop(why) => {
                handler.health(Health::Stopped(why));
                return;
            }
            Ended::Again { after, why, up } => {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                if up {
                    backoff = Duration::from_secs(1);
                }
                tracing::info!("discord: {why}; connecting again");
                handler.health(Health::Reconnecting(why));
                sleep(&stop, after.max(backoff));
                if !up {
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                }
            }
        }
    }
}

/// How one connection ended.
enum Ended {
    /// Connect again after `after`; `up` if it had been identified.
    Again {
        after: Duration,
        why: String,
        up: bool,
    },
    /// Stop for good.
    Stop(String),
}

fn serve(
    mut socket: WebSocket<MaybeTlsStream<TcpStream>>,
    session: &mut Session,
    handler: &dyn Handler,
    stop: &AtomicBool,
) -> Ended {
    if let Err(e) = tcp(&socket).set_read_timeout(Some(TICK)) {
        return Ended::Again {
            after: Duration::ZERO,
            why: format!("cannot set the socket's timeout: {e}"),
            up: false,
        };
    }
    let mut next_beat: Option<(Instant, Duration)> = None;
    let mut up = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            let _ = socket.close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "hearth is stopping".into(),
            }));
            let _ = socket.flush();
            return Ended::Again {
                after: Duration::ZERO,
                why: "stopping".into(),
                up,
            };
        }
        if let Some((at, every)) = next_beat
            && Instant::now() >= at
        {
            next_beat = Some((Instant::now() + every, every));
            let step = session.on_heartbeat_due();
            if let Some(ended) = act(&mut socket, session, handler, step, &mut next_beat, &mut up) {
                return ended;
            }
        }
        match socket.read() {
            Ok(Message::Text(text)) => {
                let payload: Value = match serde_json::from_str(&text) {
                    Ok(payload) => payload,
                    Err(e) => {
                        tracing::warn!("discord: a gateway payload is not JSON: {e}");
                        continue;
                    }
                };
                for step in session.on_payload(&payload, jitter()) {
                    if let Some(ended) =
                        act(&mut socket, session, handler, step, &mut next_beat, &mut up)
                    {
                        return ended;
                    }
                }
            }
            Ok(Message::Close(frame)) => {
                let code = frame.as_ref().map(|f| u16::from(f.code));
                let reason = frame.map(|f| f.reason.to_string()).unwrap_or_default();
                return ended_by(
                    session.on_close(code),
                    format!("closed ({code:?} {reason})"),
                    up,
                );
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => {
                return ended_by(
                    session.on_close(None),
                    format!("the connection broke: {e}"),
                    up,
                );
            }
        }
    }
}

/// Does `step`; `Some` when the connection must end.
fn act(
    socket: &mut WebSocket<MaybeTlsStream<TcpStream>>,
    session: &mut Session,
    handler: &dyn Handler,
    step: Step,
    next_beat: &mut Option<(Instant, Duration)>,
    up: &mut bool,
) -> Option<Ended> {
    match step {
        Step::Send(payload) => {
            if let Err(e) = socket.send(Message::text(payload.to_string())) {
                return Some(ended_by(
                    session.on_close(None),
                    format!("cannot send to the gateway: {e}"),
                    *up,
                ));
            }
            None
        }
        Step::Heartbeat { first, every } => {
            *next_beat = Some((Instant::now() + first, every));
            None
        }
        Step::Event(name, data, seq) => {
            if matches!(name.as_str(), "READY" | "RESUMED") {
                *up = true;
                handler.health(Health::Up);
            }
            if handler.event(&name, &data) {
                session.handled(seq);
            }
            None
        }
        Step::Reconnect { resume, after } => {
            let _ = socket.close(Some(CloseFrame {
                // Not 1000: that would end the session, and a resume needs it.
                code: CloseCode::Library(4900),
                reason: "reconnecting".into(),
            }));
            let _ = socket.flush();
            Some(Ended::Again {
                after,
                why: if resume {
                    "the gateway asked for a reconnect".into()
                } else {
                    "the session ended; starting a new one".into()
                },
                up: *up,
            })
        }
        Step::Stop(why) => Some(Ended::Stop(why)),
    }
}

fn ended_by(step: Step, why: String, up: bool) -> Ended {
    match step {
        Step::Stop(reason) => Ended::Stop(reason),
        Step::Reconnect { after, .. } => Ended::Again { after, why, up },
        _ => Ended::Again {
            after: Duration::from_secs(1),
            why,
            up,
        },
    }
}

fn tcp(socket: &WebSocket<MaybeTlsStream<TcpStream>>) -> &TcpStream {
    match socket.get_ref() {
        MaybeTlsStream::Plain(stream) => stream,
        MaybeTlsStream::Rustls(stream) => stream.get_ref(),
        _ => unreachable!("only plain and rustls streams are built"),
    }
}

/// A share (0-1) of the heartbeat interval, from the clock's nanoseconds:
/// good enough to spread reconnecting bots apart.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1_000_000) / 1_000_000.0
}

/// Sleeps `wait`, waking early when `stop` is set.
fn sleep(stop: &AtomicBool, wait: Duration) {
    let until = Instant::now() + wait;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(TICK.min(until - Instant::now()));
    }
}
