//! The owner in control of a running tool call: `/stop` cuts it short, and
//! its live output reaches the turn's channel while it runs.
//!
//! Each call a turn starts gets a [`CallScope`] (its stop signal, and where
//! its output goes). While the call runs on its blocking thread, the turn
//! waits for three things: the call's end, the owner's `/stop`, and a tick
//! that lets held output out. On `/stop` the scope is cancelled (a shell
//! command's process group is killed, a pending confirmation withdrawn, a
//! Lua worker killed, a plugin told `tool.cancel`), and the turn waits a
//! moment for the call to end. A call that does not end by then is left
//! to finish on its own; its result is ignored. Every call of the step
//! gets a result in the session, so the next turn's history is whole, and
//! the turn's reply says what was cut.

use std::sync::Arc;
use std::time::Duration;

use hearth_sdk::protocol::CallEnd;
use serde_json::Value;
use tokio::task::{JoinError, JoinHandle};

use super::Agent;
use super::history::Claimed;
use crate::tools::ToolError;
use hearth_base::scope::CallScope;

/// How long a cancelled call may take to end before the turn goes on
/// without it.
const CANCEL_WAIT: Duration = Duration::from_secs(1);
/// How often held output is let out while a call runs.
const TICK: Duration = Duration::from_millis(100);
/// The most characters of a command line a reply quotes.
const MAX_QUOTED: usize = 80;

/// What a call ended with: its answer, or `None` when it was cut and did
/// not end in time.
pub(super) type Ended = Option<Result<Result<Value, ToolError>, JoinError>>;

/// What a stop cut in one step of a turn.
#[derive(Debug, Default)]
pub(super) struct Cut {
    stopped: bool,
    cut: Vec<String>,
    not_run: Vec<String>,
}

impl Cut {
    /// Whether the owner stopped the turn during the step.
    pub(super) fn stopped(&self) -> bool {
        self.stopped
    }

    /// Records a call the stop cut short (`label` says which).
    pub(super) fn cut(&mut self, label: String) {
        self.stopped = true;
        self.cut.push(label);
    }

    /// Records a call the stop came before; its result for the model.
    pub(super) fn not_run(&mut self, label: String) -> String {
        self.stopped = true;
        self.not_run.push(label);
        "Not run: the owner stopped the turn (/stop) before this call started.".to_owned()
    }

    /// The turn's reply: `Stopped.`, and what was cut or not run.
    pub(super) fn reply(&self) -> String {
        let mut reply = "Stopped.".to_owned();
        if !self.cut.is_empty() {
            reply.push_str(&format!(" Cut short: {}.", self.cut.join("; ")));
        }
        if !self.not_run.is_empty() {
            reply.push_str(&format!(" Not run: {}.", self.not_run.join("; ")));
        }
        reply
    }
}

/// How a call is named in a reply: its tool, with the command line it runs
/// (`shell_exec (`sleep 600`)`).
pub(super) fn label(tool: &str, command: Option<&str>) -> String {
    match command {
        Some(command) => {
            let line = command.lines().next().unwrap_or_default();
            let mut quoted: String = line.chars().take(MAX_QUOTED).collect();
            if quoted.len() < command.len() {
                quoted.push('…');
            }
            format!("{tool} (`{quoted}`)")
        }
        None => tool.to_owned(),
    }
}

/// The result the model gets for a call that was cut short, with what the
/// call answered, if it did.
pub(super) fn cut_result(answered: &str) -> String {
    if answered.is_empty() {
        "The owner stopped this call (/stop) before it answered.".to_owned()
    } else {
        format!("The owner stopped this call (/stop). It answered: {answered}")
    }
}

impl Agent {
    /// The scope of a call the model asked for: its output is shown when
    /// the turn's channel shows tool output.
    pub(super) fn call_scope(
        &self,
        claimed: &Claimed,
        id: &str,
        name: &str,
        input: &Value,
    ) -> CallScope {
        let scope = CallScope::new(id, name, self.base.tools.command_line(name, input));
        if !self.base.events.shows_tool_output(&claimed.channel) {
            return scope;
        }
        scope.showing_output(
            Arc::clone(&self.base.events),
            &claimed.channel,
            &claimed.chat,
            &claimed.key,
        )
    }

    /// Waits for a started call, letting its output out as it comes; on a
    /// `/stop` after `stop_at_start`, cancels it. Returns what it ended
    /// with and, when it was cut, how to name it in the reply.
    pub(super) async fn wait_tool(
        &self,
        mut call: JoinHandle<Result<Value, ToolError>>,
        scope: &Arc<CallScope>,
        stop_at_start: u64,
    ) -> (Ended, Option<String>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                biased;
                ended = &mut call => {
                    let end = match &ended {
                        Ok(Ok(_)) => CallEnd::Ok,
                        _ => CallEnd::Error,
                    };
                    scope.finish(end);
                    return (Some(ended), None);
                }
                () = self.signals.stopped_since(stop_at_start) => break,
                _ = tick.tick(), if scope.shows_output() => scope.tick(),
            }
        }
        // Hooks may call into a plugin: not on the runtime's thread.
        let canceller = Arc::clone(scope);
        drop(tokio::task::spawn_blocking(move || canceller.cancel()));
        let ended = tokio::time::timeout(CANCEL_WAIT, &mut call).await.ok();
        scope.finish(CallEnd::Cancelled);
        let mut label = label(scope.tool(), scope.command());
        for note in scope.notes() {
            label.push_str(&format!(", {note}"));
        }
        if ended.is_none() {
            label.push_str(
                ", which did not stop in time and was left to finish; its result is ignored",
            );
        }
        tracing::info!(
            tool = scope.tool(),
            stopped = ended.is_some(),
            "a tool call was cut short by /stop"
        );
        (ended, Some(label))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_names_what_was_cut_and_what_never_ran() {
        let cases: [(&[&str], &[&str], &str); 4] = [
            (&[], &[], "Stopped."),
            (
                &["shell_exec (`sleep 600`)"],
                &[],
                "Stopped. Cut short: shell_exec (`sleep 600`).",
            ),
            (&[], &["echo"], "Stopped. Not run: echo."),
            (&["a", "b"], &["c"], "Stopped. Cut short: a; b. Not run: c."),
        ];
        for (cut, not_run, reply) in cases {
            let mut stop = Cut::default();
            for c in cut {
                stop.cut((*c).to_owned());
            }
            for n in not_run {
                stop.not_run((*n).to_owned());
            }
            assert_eq!(stop.reply(), reply);
        }
    }

    #[test]
    fn a_label_quotes_the_first_line_of_a_command_shortened() {
        let long = "x".repeat(200);
        let cases = [
            ("shell_exec", Some("sleep 600"), "shell_exec (`sleep 600`)"),
            (
                "shell_exec",
                Some("make\nmake install"),
                "shell_exec (`make…`)",
            ),
            ("convert_units", None, "convert_units"),
        ];
        for (tool, command, expected) in cases {
            assert_eq!(label(tool, command), expected);
        }
        assert_eq!(
            label("shell_exec", Some(&long)),
            format!("shell_exec (`{}…`)", "x".repeat(MAX_QUOTED))
        );
    }
}
