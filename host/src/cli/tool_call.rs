//! `hearth tool call NAME ARGS`: one tool call, printed as JSON.
//!
//! With a daemon running, the daemon runs it (through its registry, policy
//! and audit, as `owner via cli`). A call that needs the owner's approval
//! shows its card on the daemon's confirmation channels; this command says
//! what it waits for and waits, and Ctrl-C withdraws the request, so the
//! tool does not run. Without a daemon, the command's own runtime runs it,
//! and a call that needs approval is refused at once (no channel can ask).

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};

use super::client::{Daemon, message, next, send};
use crate::runtime::Runtime;

/// The exit code after Ctrl-C withdrew the call (128 + SIGINT, as shells
/// report it).
const INTERRUPTED: u8 = 130;

/// Parses `args` (`-` reads stdin) as the call's JSON object.
pub fn parse_args(args: &str) -> anyhow::Result<Value> {
    let text = if args == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .context("cannot read the arguments from stdin")?;
        buf
    } else {
        args.to_owned()
    };
    let args: Value = serde_json::from_str(&text)
        .with_context(|| format!("the arguments are not valid JSON ({text:?})"))?;
    if !args.is_object() {
        bail!("the arguments must be a JSON object, like '{{\"text\":\"hi\"}}'");
    }
    Ok(args)
}

/// How a command prints a call's result.
pub type Show = fn(&Value) -> anyhow::Result<()>;

/// Prints the result as pretty JSON.
pub fn print_json(result: &Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(result)?);
    Ok(())
}

/// Runs the call in this command's own runtime.
pub fn call(rt: &Runtime, name: &str, args: Value, show: Show) -> anyhow::Result<ExitCode> {
    show(&rt.tools.call(name, args)?)?;
    Ok(ExitCode::SUCCESS)
}

/// Has the running daemon run the call, waiting (and saying so) while the
/// owner is asked; Ctrl-C withdraws it.
pub fn call_live(daemon: Daemon, name: &str, args: Value, show: Show) -> anyhow::Result<ExitCode> {
    let (rt, mut lines, mut write) = daemon.into_parts();
    rt.block_on(async {
        // Hooked before the request goes out, so a Ctrl-C at any moment
        // withdraws it rather than killing this process with the request
        // still standing.
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
        send(
            &mut write,
            json!({ "op": "tool_call", "name": name, "args": args }),
        )
        .await?;
        let mut interrupted = false;
        loop {
            let answer = tokio::select! {
                answer = next(&mut lines) => answer?,
                _ = interrupt.recv() => {
                    if interrupted {
                        // A second Ctrl-C: the call already runs (it was
                        // approved, or needed no approval); stop waiting.
                        eprintln!(
                            "error: interrupted: {name} goes on in the daemon; `hearth audit` \
                             shows how it ended"
                        );
                        return Ok(ExitCode::from(INTERRUPTED));
                    }
                    interrupted = true;
                    eprintln!("interrupted: withdrawing the request (Ctrl-C again stops waiting)");
                    send(&mut write, json!({ "op": "withdraw" })).await?;
                    continue;
                }
            };
            match answer["op"].as_str() {
                Some("waiting") => eprintln!("{}", waiting(&answer)),
                Some("result") => {
                    show(&answer["result"])?;
                    return Ok(ExitCode::SUCCESS);
                }
                Some("error") if answer["code"] == "withdrawn" => {
                    eprintln!("error: interrupted: {}", message(&answer));
                    return Ok(ExitCode::from(INTERRUPTED));
                }
                Some("error") => bail!("{}", message(&answer)),
                _ => {}
            }
        }
    })
}

/// "waiting for approval on canvas: rm -r /srv/old (why); ..."
fn waiting(answer: &Value) -> String {
    let channels: Vec<&str> = answer["channels"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let what = match answer["command"].as_str() {
        Some(command) => command.to_owned(),
        None => format!(
            "{} {}",
            answer["tool"].as_str().unwrap_or("?"),
            answer["args"]
        ),
    };
    let left_s = (answer["expires_at_ms"].as_i64().unwrap_or(0) - crate::store::now_ms()) / 1000;
    format!(
        "waiting for approval on {}: {what} ({}); up to {} s, Ctrl-C withdraws the request",
        channels.join(", "),
        answer["reason"].as_str().unwrap_or("it needs approval"),
        left_s.max(0)
    )
}
