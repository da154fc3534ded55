//! `hearth chat` and `hearth status`: the owner's terminal, talking to the
//! running daemon over its control socket.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use super::client::{Daemon, next, send};
use crate::daemon::control::SOCKET;

/// The chat the terminal uses: one conversation for every `hearth chat`.
const CHAT: &str = "terminal";

/// `hearth chat -m TEXT`: sends one message, prints the reply.
pub fn once(home: &Path, text: &str, timeout: Duration) -> anyhow::Result<ExitCode> {
    if text.trim().is_empty() {
        bail!("nothing to send: the message after -m is empty");
    }
    let (rt, mut lines, mut write) = connect(home)?;
    rt.block_on(async {
        send(&mut write, json!({ "op": "subscribe", "chat": CHAT })).await?;
        send(
            &mut write,
            json!({ "op": "chat", "chat": CHAT, "text": text }),
        )
        .await?;
        let wait = async {
            // The reply can overtake `accepted` (a slash command answers at
            // once), so replies are kept until the key is known.
            let mut key: Option<String> = None;
            let mut replies: Vec<Value> = Vec::new();
            loop {
                let message = next(&mut lines).await?;
                match message["op"].as_str() {
                    Some("accepted") => key = message["key"].as_str().map(str::to_owned),
                    Some("error") => bail!("{}", message["message"].as_str().unwrap_or("error")),
                    Some("reply") => replies.push(message),
                    _ => {}
                }
                let mine = replies
                    .iter()
                    .find(|r| key.is_some() && r["in_reply_to"].as_str() == key.as_deref());
                if let Some(reply) = mine {
                    outln!("{}", reply["text"].as_str().unwrap_or_default());
                    return Ok(ExitCode::SUCCESS);
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .with_context(|| format!("no reply within {} s", timeout.as_secs()))?
    })
}

/// `hearth chat`: an interactive session; Ctrl-D ends it.
pub fn interactive(home: &Path) -> anyhow::Result<ExitCode> {
    let (rt, mut lines, mut write) = connect(home)?;
    rt.block_on(async {
        send(&mut write, json!({ "op": "subscribe", "chat": CHAT })).await?;
        eprintln!("connected; type a message, /help for commands, Ctrl-D to leave");
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        // Messages sent and replies seen: at the end of input (Ctrl-D, or a
        // pipe running dry) the session waits for the replies still owed.
        let (mut sent, mut answered, mut open) = (0usize, 0usize, true);
        while open || answered < sent {
            tokio::select! {
                line = stdin.next_line(), if open => match line? {
                    Some(text) if text.trim().is_empty() => {}
                    Some(text) => {
                        send(&mut write, json!({ "op": "chat", "chat": CHAT, "text": text })).await?;
                        sent += 1;
                    }
                    None => open = false,
                },
                message = next(&mut lines) => {
                    let message = message?;
                    match message["op"].as_str() {
                        Some("reply") => {
                            answered += 1;
                            outln!("{}\n", message["text"].as_str().unwrap_or_default());
                        }
                        Some("error") => {
                            answered += 1;
                            eprintln!("error: {}", message["message"].as_str().unwrap_or_default());
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `hearth status`: what `/status` shows, from the running daemon.
pub fn status(home: &Path) -> anyhow::Result<ExitCode> {
    let (rt, mut lines, mut write) = connect(home)?;
    rt.block_on(async {
        send(&mut write, json!({ "op": "status" })).await?;
        loop {
            let message = next(&mut lines).await?;
            if message["op"] == "status" {
                outln!("{}", message["text"].as_str().unwrap_or_default());
                return Ok(ExitCode::SUCCESS);
            }
        }
    })
}

/// The running daemon's connection, split for a wait that also reads stdin.
fn connect(
    home: &Path,
) -> anyhow::Result<(
    tokio::runtime::Runtime,
    Lines<BufReader<OwnedReadHalf>>,
    OwnedWriteHalf,
)> {
    match Daemon::find(home)? {
        Some(daemon) => Ok(daemon.into_parts()),
        None => bail!(
            "cannot reach the daemon at {} (is `hearth run` running?)",
            home.join(SOCKET).display()
        ),
    }
}
