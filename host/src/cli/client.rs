//! The CLI's side of the control socket: finding the running daemon and
//! asking it things (docs/control.md).
//!
//! "The daemon runs" means: a process accepts connections on
//! `$HEARTH_HOME/hearth.sock`. No socket file, or a stale one left by a
//! crash (connecting is refused), means no daemon, and the command works
//! on its own. A daemon that answers but speaks another protocol version
//! is an error, never a reason to load a second copy of its plugins.
//!
//! The hello carries the control token (`$HEARTH_HOME/control.token`),
//! which makes this client the owner. A token this command cannot read is
//! an error at once, daemon or not: that is what a program hearth runs
//! sees (the kernel floor hides the file), and such a program must neither
//! act as the owner through the daemon nor work on the owner's files on
//! its own.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::daemon::control::protocol::VERSION;
use crate::daemon::control::{SOCKET, TOKEN_FILE, token};

/// How long a daemon may take to answer the hello (it answers once its
/// start-up is done).
const HELLO_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A connection to the running daemon, after the hello.
pub struct Daemon {
    rt: tokio::runtime::Runtime,
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

/// The config file the daemon of the default home runs with, when one
/// runs, answers, and runs with a file. Quiet on every failure: the command
/// that follows reports what it finds.
pub fn running_config() -> Option<PathBuf> {
    let home = hearth_base::config::fallback_home().ok()?;
    let mut daemon = Daemon::find(&home).ok()??;
    let answer = daemon.ask(json!({ "op": "status" })).ok()?;
    answer["status"]["config"].as_str().map(PathBuf::from)
}

impl Daemon {
    /// Connects to the daemon of `home` and says hello with its token;
    /// `None` when no daemon runs there. A token that cannot be read is an
    /// error whether a daemon runs or not.
    pub fn find(home: &Path) -> anyhow::Result<Option<Daemon>> {
        let token_path = home.join(TOKEN_FILE);
        let token = match token::read(home) {
            Ok(token) => Some(token),
            // Missing: no daemon runs, or one of another version; the
            // connection says which.
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => bail!("{}", not_the_owner(&token_path, &unreadable(&e))),
        };
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
        daemon.hello(token.as_deref(), &token_path)?;
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

    fn hello(&mut self, token: Option<&str>, token_path: &Path) -> anyhow::Result<()> {
        let mut hello = json!({ "op": "hello", "version": VERSION });
        if let Some(token) = token {
            hello["token"] = token.into();
        }
        self.send(hello)?;
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
            Some("error") if answer["code"] == "unauthorized" => {
                let why = match token {
                    None => "does not exist, though a daemon answers".to_owned(),
                    Some(_) => "is not the running daemon's".to_owned(),
                };
                bail!("{}", not_the_owner(token_path, &why))
            }
            Some("error") => bail!("the running daemon refused: {}", message(&answer)),
            _ => bail!("the running daemon answered the hello with {answer}"),
        }
    }
}

/// The refusal of a command that cannot show the control token: the
/// token file `why`.
fn not_the_owner(token_path: &Path, why: &str) -> String {
    format!(
        "hearth cannot act as the owner here: the control token ({}) {why}. Programs hearth \
         runs are never the owner; run this from your own terminal.",
        token_path.display()
    )
}

/// Why the token file could not be read, in the refusal's words.
fn unreadable(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::PermissionDenied => "cannot be read (permission denied)".to_owned(),
        _ => format!("cannot be read ({e})"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_it_cannot_read_is_a_refusal_even_with_no_daemon() {
        let home = tempfile::tempdir().unwrap();
        // No socket: no daemon runs, and without a token file the command
        // may work on its own.
        assert!(Daemon::find(home.path()).unwrap().is_none());
        // A token file that cannot be read (a directory here; a file the
        // kernel floor hides answers "permission denied") is never taken
        // for "no daemon".
        std::fs::create_dir(home.path().join(TOKEN_FILE)).unwrap();
        let err = Daemon::find(home.path())
            .err()
            .expect("a refusal")
            .to_string();
        assert!(
            err.starts_with("hearth cannot act as the owner here: the control token (")
                && err.contains(&home.path().join(TOKEN_FILE).display().to_string())
                && err.ends_with("run this from your own terminal."),
            "{err}"
        );
        let denied = unreadable(&std::io::Error::from(ErrorKind::PermissionDenied));
        assert_eq!(denied, "cannot be read (permission denied)");
    }
}
