//! `hearth tool call NAME ARGS`: one tool call, printed as JSON.
//!
//! With a daemon running, the daemon runs it (through its registry, policy
//! and audit, as `owner via cli`). A call that needs the owner's approval
//! shows its card on the daemon's confirmation channels; this command says
//! what it waits for and waits, and Ctrl-C withdraws the request, so the
//! tool does not run. Typed at a terminal (stdin and stderr both one), it
//! asks right there instead: the tool, its exact arguments, the command
//! line and its folder, the reason, then `Approve? [y/N] `; the answer
//! goes back to the daemon as the owner's (`owner via cli terminal`). The
//! card is on the channels meanwhile, and the first answer counts. Without
//! a daemon, the command's own runtime runs it, and a call that needs
//! approval is refused at once (no channel can ask).

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;

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
    outln!("{}", serde_json::to_string_pretty(result)?);
    Ok(())
}

/// Runs the call in this command's own runtime.
pub fn call(rt: &Runtime, name: &str, args: Value, show: Show) -> anyhow::Result<ExitCode> {
    show(&rt.tools.call(name, args)?)?;
    Ok(ExitCode::SUCCESS)
}

/// Whether the owner sits at this command's terminal, so it can ask them
/// itself: stdin (for the answer) and stderr (for the question) are both
/// a terminal, and stdin was not used for the arguments.
pub fn owner_terminal(args_from_stdin: bool) -> bool {
    !args_from_stdin && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Has the running daemon run the call, waiting (and saying so) while the
/// owner is asked, at `terminal` when there is one; Ctrl-C withdraws it.
pub fn call_live(
    daemon: Daemon,
    name: &str,
    args: Value,
    show: Show,
    terminal: bool,
) -> anyhow::Result<ExitCode> {
    let (rt, mut lines, mut write) = daemon.into_parts();
    rt.block_on(async {
        // Hooked before the request goes out, so a Ctrl-C at any moment
        // withdraws it rather than killing this process with the request
        // still standing.
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
        send(
            &mut write,
            json!({ "op": "tool_call", "name": name, "args": args, "terminal": terminal }),
        )
        .await?;
        let mut interrupted = false;
        // The question on the terminal, while it waits for the owner's
        // answer: its id, and the line typed.
        let mut prompt: Option<(String, oneshot::Receiver<Option<String>>)> = None;
        loop {
            let answer = tokio::select! {
                answer = next(&mut lines) => answer?,
                typed = typed(&mut prompt) => {
                    let Some((id, _)) = prompt.take() else { continue };
                    let approve = approves(typed.as_deref());
                    eprintln!("{}", if approve { "approved" } else { "denied" });
                    send(&mut write, json!({ "op": "answer", "id": id, "approve": approve }))
                        .await?;
                    continue;
                }
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
            let op = answer["op"].as_str();
            if prompt.is_some() && !interrupted && matches!(op, Some("result" | "error")) {
                // Decided elsewhere (a channel, the timeout) while the
                // question stood here: end its line.
                prompt = None;
                eprintln!("\n(answered elsewhere, or no longer waiting)");
            }
            match op {
                Some("waiting") => eprintln!("{}", waiting(&answer)),
                Some("confirm") => {
                    eprint!("{}", question(&answer));
                    prompt = Some((
                        answer["id"].as_str().unwrap_or_default().to_owned(),
                        read_line(),
                    ));
                }
                Some("answered") if answer["counted"] == false => {
                    eprintln!("the question was already decided; your answer did not count");
                }
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

/// The line the owner types, once typed (`None` at the end of input):
/// never ready while no question stands.
async fn typed(prompt: &mut Option<(String, oneshot::Receiver<Option<String>>)>) -> Option<String> {
    match prompt {
        Some((_, line)) => line.await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Reads one line from stdin on a thread of its own: a blocking read the
/// async loop must not wait in (Ctrl-C and the daemon's answers come
/// meanwhile). If the command ends first, the thread ends with it.
fn read_line() -> oneshot::Receiver<Option<String>> {
    let (tx, rx) = oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        };
        let _ = tx.send(read);
    });
    rx
}

/// `y` or `yes` (any case) approves; anything else, or no answer, denies.
fn approves(typed: Option<&str>) -> bool {
    typed.is_some_and(|t| matches!(t.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// The question as the terminal shows it, ending in `Approve? [y/N] `.
fn question(confirm: &Value) -> String {
    let text = |key: &str| confirm[key].as_str().map(shown);
    let mut out = format!(
        "\n{} needs your approval\n  tool:      {}\n  arguments: {}\n",
        text("tool").unwrap_or_default(),
        text("tool").unwrap_or_default(),
        shown(&confirm["args"].to_string()),
    );
    if let Some(command) = text("command") {
        out.push_str(&format!("  command:   {command}\n"));
    }
    if let Some(cwd) = text("cwd") {
        out.push_str(&format!("  cwd:       {cwd}\n"));
    }
    out.push_str(&format!(
        "  reason:    {}\n",
        text("reason").unwrap_or_else(|| "it needs approval".into())
    ));
    let channels: Vec<String> = confirm["channels"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).map(shown).collect())
        .unwrap_or_default();
    let left_s =
        (confirm["expires_at_ms"].as_i64().unwrap_or(0) - hearth_base::store::now_ms()) / 1000;
    if !channels.is_empty() {
        out.push_str(&format!(
            "  (also shown on {}; the first answer counts)\n",
            channels.join(", ")
        ));
    }
    out.push_str(&format!(
        "  up to {} s; Ctrl-C withdraws the request\nApprove? [y/N] ",
        left_s.max(0)
    ));
    out
}

/// `text` safe to print on a terminal: what the model wrote (a command,
/// its arguments) could otherwise hold escape sequences that move the
/// cursor or rewrite the line, or direction overrides that reorder it,
/// showing the owner another command than the one they approve. Each
/// such character is shown as its code instead.
fn shown(text: &str) -> String {
    text.chars()
        .map(|c| {
            let hides = c.is_control()
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            if hides {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// "waiting for approval on canvas: rm -r /srv/old (why); ..."
fn waiting(answer: &Value) -> String {
    let channels: Vec<&str> = answer["channels"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Shown safe for a terminal, as the question is (see `shown`).
    let what = match answer["command"].as_str() {
        Some(command) => shown(command),
        None => shown(&format!(
            "{} {}",
            answer["tool"].as_str().unwrap_or("?"),
            answer["args"]
        )),
    };
    let left_s =
        (answer["expires_at_ms"].as_i64().unwrap_or(0) - hearth_base::store::now_ms()) / 1000;
    format!(
        "waiting for approval on {}: {what} ({}); up to {} s, Ctrl-C withdraws the request",
        channels.join(", "),
        shown(answer["reason"].as_str().unwrap_or("it needs approval")),
        left_s.max(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_y_or_yes_approves() {
        for (typed, approve) in [
            (Some("y\n"), true),
            (Some("YES\n"), true),
            (Some(" yes "), true),
            (Some("n\n"), false),
            (Some("\n"), false),
            (Some("yep\n"), false),
            (None, false),
        ] {
            assert_eq!(approves(typed), approve, "{typed:?}");
        }
    }

    #[test]
    fn the_question_shows_the_exact_call_and_no_escape_sequence() {
        let confirm = json!({
            "op": "confirm", "id": "q1", "tool": "shell_exec",
            "args": { "command": "rm -r /srv/old\u{1b}[2K\rls" },
            "command": "rm -r /srv/old\u{1b}[2K\rls", "cwd": "/home/me",
            "reason": "it deletes files outside the workspace",
            "channels": ["canvas"], "expires_at_ms": hearth_base::store::now_ms() + 300_000,
        });
        let text = question(&confirm);
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
        for part in [
            "tool:      shell_exec",
            r#"arguments: {"command":"rm -r /srv/old\u001b[2K\rls"}"#,
            "command:   rm -r /srv/old\\u{1b}[2K\\u{d}ls",
            "cwd:       /home/me",
            "reason:    it deletes files outside the workspace",
            "also shown on canvas; the first answer counts",
        ] {
            assert!(text.contains(part), "{part:?} missing from:\n{text}");
        }
        assert!(text.ends_with("Approve? [y/N] "), "{text}");
        assert_eq!(shown("a\u{202e}b"), "a\\u{202e}b");
    }
}
