//! One browser's WebSocket: the state first (`hello`), then every change
//! as it happens, and the browser's own frames (messages, answers, pings).
//!
//! Bad input never takes the canvas down. A frame that is not JSON, or
//! JSON of the wrong shape, gets an `error` frame naming what was wrong and
//! the connection stays. Binary frames, frames over the size cap and bad
//! UTF-8 close the connection (1003, 1009, 1007); so does a flood of more
//! than [`MAX_FRAMES_PER_SECOND`] frames.
//!
//! The session that opened the socket is checked again before each frame
//! the browser sends and every [`SESSION_CHECK`]: when the token file is
//! deleted or replaced, an open socket is closed with 4401 (the page goes
//! to the login) instead of staying an approval channel for whoever held it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use hearth_sdk::protocol::ViewInputRequest;
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use crate::elements::valid_id;
use crate::hub::Hub;

/// Frames a browser may send per second before it is cut off.
pub const MAX_FRAMES_PER_SECOND: u32 = 200;
/// The longest message text, in bytes.
pub const MAX_TEXT: usize = 64 * 1024;
/// The most attachments on one message.
pub const MAX_ATTACHMENTS: usize = 10;
/// How often an idle socket's session is checked again.
pub const SESSION_CHECK: Duration = Duration::from_secs(5);
/// The close code for a session that ended; the page goes to the login.
pub const LOGGED_OUT: u16 = 4401;

/// Whether the session that opened a socket is still valid.
pub type StillValid = Box<dyn Fn() -> bool + Send + Sync>;

/// Serves one connected browser until it leaves, its session ends or the
/// plugin stops.
pub async fn session(
    mut socket: WebSocket,
    hub: Arc<Hub>,
    mut closing: watch::Receiver<bool>,
    still_valid: StillValid,
) {
    // Subscribe before reading the state: a change made in between then
    // arrives twice, which the browser's keys make harmless, instead of not
    // at all.
    let (mut frames, streaming, outputs) = hub.subscribe();
    if send_hello(&mut socket, &hub, streaming, outputs)
        .await
        .is_err()
    {
        return;
    }
    let mut window = (Instant::now(), 0u32);
    let mut check = tokio::time::interval(SESSION_CHECK);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            incoming = socket.recv() => {
                let Some(incoming) = incoming else { return };
                let text = match incoming {
                    Ok(Message::Text(text)) => text,
                    Ok(Message::Binary(_)) => {
                        return close(socket, close_code::UNSUPPORTED, "binary frames are not accepted").await;
                    }
                    Ok(Message::Close(_)) => return,
                    Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                    Err(e) => {
                        let (code, why) = describe(&e);
                        return close(socket, code, &why).await;
                    }
                };
                if !still_valid() {
                    return close(socket, LOGGED_OUT, "logged out").await;
                }
                if window.0.elapsed() >= Duration::from_secs(1) {
                    window = (Instant::now(), 0);
                }
                window.1 += 1;
                if window.1 > MAX_FRAMES_PER_SECOND {
                    return close(socket, close_code::POLICY, "too many frames per second").await;
                }
                if let Some(reply) = handle(&hub, text.as_str()).await
                    && socket.send(Message::Text(reply.to_string().into())).await.is_err()
                {
                    return;
                }
            }
            frame = frames.recv() => {
                let sent = match frame {
                    Ok(frame) => socket.send(Message::Text(frame)).await,
                    // Fell behind: the whole state again, instead of a gap.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let (fresh, streaming, outputs) = hub.subscribe();
                        frames = fresh;
                        send_hello(&mut socket, &hub, streaming, outputs).await
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                if sent.is_err() {
                    return;
                }
            }
            _ = check.tick() => {
                if !still_valid() {
                    return close(socket, LOGGED_OUT, "logged out").await;
                }
            }
            _ = closing.changed() => {
                return close(socket, close_code::RESTART, "the daemon is stopping").await;
            }
        }
    }
}

/// What a browser's text frame asks for, once read and checked.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// `ping`: answered with `pong`.
    Ping,
    /// `send`: a message from the owner.
    Send {
        /// The browser's id for it: the idempotency key.
        id: String,
        /// Its text, at most [`MAX_TEXT`] bytes.
        text: String,
        /// The upload ids of its files, at most [`MAX_ATTACHMENTS`].
        attachments: Vec<String>,
    },
    /// `confirm`: the owner's answer to a confirmation request.
    Confirm {
        /// The confirmation's id, at most 64 bytes.
        id: String,
        /// Approve, or deny.
        approve: bool,
        /// Approve from now on too; only ever with `approve`.
        always: bool,
        /// With a denial, why (a group's plan goes back with it).
        reason: Option<String>,
    },
    /// `view`: the owner's action on a live view (a click, keys, an
    /// address), for the plugin that showed it.
    View(ViewInputRequest),
}

/// Reads one text frame from a browser. The error is the `error` frame to
/// answer with, naming what was wrong. Public for the fuzz tests.
pub fn read_frame(text: &str) -> Result<Frame, Value> {
    let frame: Value = serde_json::from_str(text)
        .map_err(|e| error(None, &format!("the frame is not JSON: {e}")))?;
    let id = frame["id"].as_str().map(str::to_owned);
    match frame["type"].as_str() {
        Some("ping") => Ok(Frame::Ping),
        Some("send") => match check_send(&frame) {
            Ok((id, text, attachments)) => Ok(Frame::Send {
                id,
                text,
                attachments,
            }),
            Err(why) => Err(error(id.as_deref(), &why)),
        },
        Some("confirm") => {
            let (Some(id), Some(approve)) = (id.clone(), frame["approve"].as_bool()) else {
                return Err(error(
                    id.as_deref(),
                    "a confirm frame needs `id` (string) and `approve` (true or false)",
                ));
            };
            if id.len() > 64 {
                return Err(error(None, "field `id` is over 64 bytes"));
            }
            // `always` is optional; anything but `true` means "just this once".
            let always = approve && frame["always"].as_bool() == Some(true);
            let reason = match &frame["reason"] {
                Value::Null => None,
                Value::String(r) if r.chars().count() <= 2000 => {
                    Some(r.trim().to_owned()).filter(|r| !r.is_empty() && !approve)
                }
                _ => {
                    return Err(error(
                        Some(&id),
                        "field `reason`: a string of at most 2000 characters",
                    ));
                }
            };
            Ok(Frame::Confirm {
                id,
                approve,
                always,
                reason,
            })
        }
        Some("view") => {
            let mut fields = frame;
            if let Some(fields) = fields.as_object_mut() {
                fields.remove("type");
            }
            let request: ViewInputRequest = serde_json::from_value(fields)
                .map_err(|e| error(None, &format!("a view frame: {e}")))?;
            if request.source.len() > 64 {
                return Err(error(None, "a view frame: `source` is over 64 bytes"));
            }
            Ok(Frame::View(request))
        }
        Some(other) => Err(error(
            id.as_deref(),
            &format!(
                "unknown frame type {:?}; known: send, confirm, view, ping",
                other.chars().take(40).collect::<String>()
            ),
        )),
        None => Err(error(id.as_deref(), "the frame has no `type` string")),
    }
}

async fn send_hello(
    socket: &mut WebSocket,
    hub: &Arc<Hub>,
    streaming: Value,
    outputs: Value,
) -> Result<(), axum::Error> {
    let hub = Arc::clone(hub);
    let hello = tokio::task::spawn_blocking(move || hub.hello(streaming, outputs))
        .await
        .unwrap_or_else(|_| json!({ "type": "error", "message": "cannot read the history" }));
    socket
        .send(Message::Text(Utf8Bytes::from(hello.to_string())))
        .await
}

/// Answers one frame from the browser; `None` when there is nothing to say.
async fn handle(hub: &Arc<Hub>, text: &str) -> Option<Value> {
    let frame = match read_frame(text) {
        Ok(frame) => frame,
        Err(error) => return Some(error),
    };
    match frame {
        Frame::Ping => Some(json!({ "type": "pong" })),
        Frame::Send {
            id,
            text,
            attachments,
        } => {
            let hub = Arc::clone(hub);
            let stored = id.clone();
            let outcome =
                tokio::task::spawn_blocking(move || hub.submit(&stored, &text, &attachments)).await;
            Some(match outcome {
                Ok(Ok(())) => json!({ "type": "ack", "id": id }),
                Ok(Err(why)) => error(Some(&id), &why),
                Err(_) => error(Some(&id), "the message was lost; send it again"),
            })
        }
        Frame::Confirm {
            id,
            approve,
            always,
            reason,
        } => {
            let hub = Arc::clone(hub);
            let answered = id.clone();
            let outcome =
                tokio::task::spawn_blocking(move || hub.answer(&answered, approve, always, reason))
                    .await;
            match outcome {
                Ok(Ok(())) => None,
                Ok(Err(why)) => Some(error(Some(&id), &why)),
                Err(_) => Some(error(Some(&id), "the answer was lost; answer again")),
            }
        }
        Frame::View(request) => {
            let hub = Arc::clone(hub);
            let outcome = tokio::task::spawn_blocking(move || hub.view_input(&request)).await;
            match outcome {
                Ok(Ok(())) => None,
                Ok(Err(why)) => Some(error(None, &format!("the view: {why}"))),
                Err(_) => Some(error(None, "the view: the action was lost")),
            }
        }
    }
}

/// The parts of a valid `send` frame, or what is wrong with it.
fn check_send(frame: &Value) -> Result<(String, String, Vec<String>), String> {
    let id = match frame["id"].as_str() {
        Some(id) if valid_id(id) => id.to_owned(),
        _ => {
            return Err(
                "field `id` must be 1-64 characters of letters, digits, `_` and `-`".into(),
            );
        }
    };
    let text = frame["text"]
        .as_str()
        .ok_or("field `text` must be a string")?;
    if text.len() > MAX_TEXT {
        return Err(format!(
            "field `text` is {} bytes, over the {MAX_TEXT}-byte limit",
            text.len()
        ));
    }
    let attachments: Vec<String> = match &frame["attachments"] {
        Value::Null => Vec::new(),
        Value::Array(items) if items.len() <= MAX_ATTACHMENTS => items
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or("field `attachments` must hold upload ids (strings)")?,
        Value::Array(_) => {
            return Err(format!(
                "field `attachments`: at most {MAX_ATTACHMENTS} files per message"
            ));
        }
        _ => return Err("field `attachments` must be an array".into()),
    };
    if text.trim().is_empty() && attachments.is_empty() {
        return Err("field `text` is empty".into());
    }
    Ok((id, text.to_owned(), attachments))
}

fn error(id: Option<&str>, message: &str) -> Value {
    json!({ "type": "error", "id": id, "message": message })
}

/// The close code and reason for a broken connection.
fn describe(error: &axum::Error) -> (u16, String) {
    let text = error.to_string();
    let lower = text.to_ascii_lowercase();
    let code = if lower.contains("utf-8") || lower.contains("utf8") {
        close_code::INVALID
    } else if lower.contains("too long") || lower.contains("capacity") || lower.contains("size") {
        close_code::SIZE
    } else {
        close_code::PROTOCOL
    };
    (code, text.chars().take(100).collect())
}

/// Closes with `code`, then reads until the browser's own close (the
/// closing handshake), so frames it had already sent do not turn the
/// close into a connection reset. Bounded: a peer that never answers is
/// dropped after two seconds.
async fn close(mut socket: WebSocket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(reason.to_owned()),
    };
    if socket.send(Message::Close(Some(frame))).await.is_err() {
        return;
    }
    let drain = async {
        while let Some(Ok(message)) = socket.recv().await {
            if matches!(message, Message::Close(_)) {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
}
