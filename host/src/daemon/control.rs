//! The control socket, `$HEARTH_HOME/hearth.sock`: the owner's local channel.
//!
//! `hearth chat` and `hearth status` talk to the running daemon here, one
//! JSON object per line. The socket is created with mode 0600 inside the
//! owner-only home directory: whoever can open it is the owner.
//!
//! Requests: `{"op":"chat","chat":C,"text":T}` (answered `accepted` with the
//! message's key once it is stored), `{"op":"subscribe","chat":C}` (replies
//! for chat C are then pushed as `{"op":"reply",...}`), `{"op":"status"}`.
//! A malformed line is answered with `{"op":"error","message":...}` and the
//! connection stays open.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hearth_sdk::protocol::InboundMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::plugins::Bridge;
use crate::router::LOCAL_CHANNEL;
use crate::router::local::LocalHub;
use crate::router::outbox::Outbox;

/// The socket's file name in `$HEARTH_HOME`.
pub const SOCKET: &str = "hearth.sock";
/// The longest request line.
const MAX_LINE: usize = 1 << 20;

/// What the control socket serves.
pub struct Control {
    /// Stores the owner's messages.
    pub bridge: Arc<Bridge>,
    /// Local reply listeners.
    pub hub: Arc<LocalHub>,
    /// For delivering pending replies when a client subscribes.
    pub outbox: Arc<Outbox>,
    /// For `status`.
    pub agent: Arc<Agent>,
}

/// Binds the socket (replacing a stale one) with mode 0600.
pub fn bind(home: &Path) -> std::io::Result<(UnixListener, PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    let path = home.join(SOCKET);
    if path.exists() {
        // A live daemon answers; a stale file from a crash does not.
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!(
                    "{} is in use: is another hearth running with this home?",
                    path.display()
                ),
            ));
        }
        std::fs::remove_file(&path)?;
    }
    let listener = UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok((listener, path))
}

/// Accepts clients until the task is aborted.
pub async fn serve(listener: UnixListener, control: Arc<Control>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let control = Arc::clone(&control);
                tokio::spawn(async move { client(stream, control).await });
            }
            Err(e) => {
                tracing::warn!("control socket accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn client(stream: UnixStream, control: Arc<Control>) {
    tracing::debug!("control client connected");
    let (read, mut write) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Value>(256);
    let writer = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        match AsyncReadExt::take(&mut lines, MAX_LINE as u64 + 1)
            .read_line(&mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(n) if n > MAX_LINE => {
                let _ = tx.send(error("the request is over 1 MiB")).await;
                break;
            }
            Ok(_) => {}
        }
        tracing::debug!(request = %line.trim_end(), "control request");
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(request) => handle(&control, &request, &tx).await,
            Err(e) => Some(error(&format!("the request is not JSON: {e}"))),
        };
        if let Some(answer) = answer {
            if tx.send(answer).await.is_err() {
                break;
            }
        }
    }
    // The hub holds a sender too: end the writer (dropping its receiver) so
    // the hub sees this client is gone and stops counting it as a listener.
    writer.abort();
}

async fn handle(control: &Control, request: &Value, tx: &mpsc::Sender<Value>) -> Option<Value> {
    let chat = request["chat"].as_str().unwrap_or("terminal");
    match request["op"].as_str() {
        Some("status") => Some(
            json!({ "op": "status", "status": control.agent.status(), "text": control.agent.status_text() }),
        ),
        Some("subscribe") => {
            control.hub.subscribe(chat, tx.clone());
            control.outbox.retry_local_now(chat);
            control.agent.router.outbox_wake.notify_one();
            Some(json!({ "op": "subscribed", "chat": chat }))
        }
        Some("chat") => {
            let Some(text) = request["text"].as_str().filter(|t| !t.trim().is_empty()) else {
                return Some(error("`text` must be a non-empty string"));
            };
            let key = new_key();
            let message = InboundMessage {
                channel: LOCAL_CHANNEL.into(),
                idempotency_key: key.clone(),
                sender: "owner".into(),
                chat: Some(chat.to_owned()),
                text: text.to_owned(),
                attachments: Vec::new(),
            };
            // One insert on the local connection, well under a millisecond:
            // done in place, it saves a hop to the blocking pool.
            let stored = control.bridge.submit_local(message);
            Some(match stored {
                Ok(()) => json!({ "op": "accepted", "key": key }),
                Err(e) => error(&e),
            })
        }
        Some(other) => Some(error(&format!(
            "unknown op {other:?}; use chat, subscribe or status"
        ))),
        None => Some(error("the request has no `op`")),
    }
}

fn error(message: &str) -> Value {
    json!({ "op": "error", "message": message })
}

/// A key unique across restarts: time, process and a counter.
fn new_key() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "local-{}-{}-{}",
        crate::store::now_ms(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
