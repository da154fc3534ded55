//! The CLI's side of the control socket: finding the running daemon and
//! asking it things (docs/control.md).
//!
//! "The daemon runs" means: a process accepts connections on
//! `$HEARTH_HOME/hearth.sock`. No socket file, or a stale one left by a
//! crash (connecting is refused), means no daemon, and the command works
//! on its own. A daemon that answers but speaks another protocol version
//! is an error, never a reason to load a second copy of its plugins.

use std::io::ErrorKind;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::daemon::control::SOCKET;
use crate::daemon::control::protocol::VERSION;

/// How long a daemon may take to answer the hello (it answers once its
/// start-up is done).
const HELLO_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A connection to the running daemon, after the hello.
pub struct Daemon {
    rt: tokio::runtime::Runtime,
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl Daemon {
    /// Connects to the daemon of `home` and says hello; `None` when no
    /// daemon runs there.
    pub fn find(home: &Path) -> anyhow::Result<Option<Daemon>> {
        let path = home.join(SOCKET);
        let stream = match std::os::unix::net::UnixStream::connect(&path) {
            Ok(stream) => stream,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) => {
                return Ok(None);
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot tell whether a daemon runs: {}", path.display())
                });
            }
        };
        let rt = runtime()?;
        let (lines, write) = {
            let _entered = rt.enter();
            stream.set_nonblocking(true)?;
            let (read, write) = UnixStream::from_std(stream)?.into_split();
            (BufReader::new(read).lines(), write)
        };
        let mut daemon = Daemon { rt, lines, write };
        daemon.hello()?;
        Ok(Some(daemon))
    }

    /// Sends `request` and returns the answer; an `error` answer is an
    /// error with the daemon's message.
    pub fn ask(&mut self, request: Value) -> anyhow::Result<Value> {
        self.send(request)?;
        let answer = self.next()?;
        if answer["op"] == "error" {
            bail!("{}", message(&answer));
        }
        Ok(answer)
    }

    /// Sends one request.
    pub fn send(&mut self, request: Value) -> anyhow::Result<()> {
        let Daemon { rt, write, .. } = self;
        rt.block_on(send(write, request))
    }

    /// The next line from the daemon.
    pub fn next(&mut self) -> anyhow::Result<Value> {
        let Daemon { rt, lines, .. } = self;
        rt.block_on(next(lines))
    }

    /// The async runtime and the connection's halves, for waits that
    /// also watch something else (stdin, a signal).
    pub fn into_parts(
        self,
    ) -> (
        tokio::runtime::Runtime,
        Lines<BufReader<OwnedReadHalf>>,
        OwnedWriteHalf,
    ) {
        (self.rt, self.lines, self.write)
    }

    fn hello(&mut self) -> anyhow::Result<()> {
        self.send(json!({ "op": "hello", "version": VERSION }))?;
        // A daemon still starting answers once it is ready.
        let Daemon { rt, lines, .. } = self;
        let answer = rt
            .block_on(async { tokio::time::timeout(HELLO_WAIT, next(lines)).await })
            .map_err(|_| {
                anyhow::anyhow!(
                    "the daemon took the connection but did not answer within {} s; is it \
                     stuck starting? (`hearth run` logs say)",
                    HELLO_WAIT.as_secs()
                )
            })??;
        match answer["op"].as_str() {
            Some("hello") => Ok(()),
            // A daemon of protocol 1 knows no hello.
            Some("error") if answer["code"].is_null() => bail!(
                "the running daemon is older than this `hearth` (it speaks control protocol 1, \
                 this client {VERSION}): restart it with this version"
            ),
            Some("error") => bail!("the running daemon refused: {}", message(&answer)),
            _ => bail!("the running daemon answered the hello with {answer}"),
        }
    }
}

/// An `error` answer's message.
pub fn message(answer: &Value) -> &str {
    answer["message"].as_str().unwrap_or("error")
}

/// A single-threaded async runtime for one command.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Writes one request line.
pub async fn send(write: &mut OwnedWriteHalf, message: Value) -> anyhow::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    write
        .write_all(line.as_bytes())
        .await
        .context("the daemon closed the connection")
}

/// Reads one answer line.
pub async fn next(lines: &mut Lines<BufReader<OwnedReadHalf>>) -> anyhow::Result<Value> {
    let line = lines
        .next_line()
        .await?
        .context("the daemon closed the connection")?;
    serde_json::from_str(&line).context("the daemon sent a malformed line")
}
