//! The live output of the tool calls of running turns, as the canvas keeps
//! it for a browser that connects while a call runs.
//!
//! Each call is one pane: the end of what it printed (bounded), its tool
//! and command, and how it ended. A turn's panes go when its reply arrives
//! or the agent goes idle; the call's result, not this, is what the agent
//! keeps. Bytes the host left out of the live view are marked where they
//! were, the way the browser marks them in a live pane.

use hearth_sdk::protocol::{CallEnd, ChannelEvent};
use serde_json::{Value, json};

/// The most panes kept: more than one turn runs calls at once only
/// through workers, which do not stream.
const MAX_PANES: usize = 16;
/// The most text a pane keeps; its start goes first.
const MAX_TEXT: usize = 64 * 1024;

/// Every pane.
#[derive(Default)]
pub struct Outputs {
    panes: Vec<Pane>,
}

struct Pane {
    turn: String,
    call: String,
    tool: String,
    command: Option<String>,
    text: String,
    ended: Option<CallEnd>,
}

impl Outputs {
    /// Adds a [`ChannelEvent::ToolOutput`] (any other event is ignored) to
    /// the pane of its call, making the pane if needed.
    pub fn take(&mut self, event: &ChannelEvent) {
        let ChannelEvent::ToolOutput {
            turn,
            call,
            tool,
            command,
            text,
            skipped,
            ended,
            ..
        } = event
        else {
            return;
        };
        let at = match self
            .panes
            .iter()
            .position(|p| p.turn == *turn && p.call == *call)
        {
            Some(at) => at,
            None => {
                if self.panes.len() == MAX_PANES {
                    self.panes.remove(0);
                }
                self.panes.push(Pane {
                    turn: turn.to_owned(),
                    call: call.to_owned(),
                    tool: tool.to_owned(),
                    command: command.clone(),
                    text: String::new(),
                    ended: None,
                });
                self.panes.len() - 1
            }
        };
        let pane = &mut self.panes[at];
        if *skipped > 0 {
            pane.text.push_str(&skip_marker(*skipped));
        }
        pane.text.push_str(text);
        if pane.text.len() > MAX_TEXT {
            let mut cut = pane.text.len() - MAX_TEXT;
            while !pane.text.is_char_boundary(cut) {
                cut += 1;
            }
            pane.text.drain(..cut);
        }
        if ended.is_some() {
            pane.ended = *ended;
        }
    }

    /// Drops the panes of `turn` (its reply arrived).
    pub fn end_turn(&mut self, turn: &str) {
        self.panes.retain(|p| p.turn != turn);
    }

    /// Drops every pane (the agent went idle).
    pub fn clear(&mut self) {
        self.panes.clear();
    }

    /// The panes, oldest first, for `hello`.
    pub fn snapshot(&self) -> Value {
        Value::Array(
            self.panes
                .iter()
                .map(|p| {
                    json!({
                        "turn": p.turn,
                        "call": p.call,
                        "tool": p.tool,
                        "command": p.command,
                        "text": p.text,
                        "ended": p.ended,
                    })
                })
                .collect(),
        )
    }
}

/// The line that stands for bytes left out of a live view.
pub fn skip_marker(skipped: u64) -> String {
    format!("\n[… {skipped} bytes not shown …]\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_sdk::protocol::OutputStream;

    fn piece(
        turn: &str,
        call: &str,
        text: &str,
        skipped: u64,
        ended: Option<CallEnd>,
    ) -> ChannelEvent {
        ChannelEvent::ToolOutput {
            chat: "canvas".into(),
            turn: turn.into(),
            call: call.into(),
            tool: "shell_exec".into(),
            command: Some("ls".into()),
            stream: OutputStream::Stdout,
            text: text.into(),
            skipped,
            ended,
        }
    }

    #[test]
    fn a_pane_keeps_the_end_of_its_output_marks_skips_and_goes_with_its_turn() {
        let mut outputs = Outputs::default();
        outputs.take(&piece("t1", "c1", "a\n", 0, None));
        outputs.take(&piece("t1", "c1", "b\n", 7, None));
        outputs.take(&piece("t2", "c1", "", 0, Some(CallEnd::Ok)));
        let shown = outputs.snapshot();
        assert_eq!(shown[0]["text"], "a\n\n[… 7 bytes not shown …]\nb\n");
        assert_eq!(shown[0]["command"], "ls");
        assert_eq!(shown[1]["ended"], "ok");
        outputs.take(&piece("t1", "c1", &"é".repeat(MAX_TEXT), 0, None));
        let text = outputs.snapshot()[0]["text"].as_str().unwrap().to_owned();
        assert!(
            text.len() <= MAX_TEXT && text.ends_with('é'),
            "{}",
            text.len()
        );
        outputs.end_turn("t1");
        assert_eq!(outputs.snapshot().as_array().unwrap().len(), 1);
        for n in 0..2 * MAX_PANES {
            outputs.take(&piece("t3", &format!("c{n}"), "y", 0, None));
        }
        assert_eq!(outputs.snapshot().as_array().unwrap().len(), MAX_PANES);
    }
}
