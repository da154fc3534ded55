//! The fake model's script: which tool each soak message asks for, and
//! reading a message's `soak-N` back out of what the model is sent. The
//! answer depends only on N, so every channel sees every tool and the
//! driver can tell which message an answer belongs to.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::lock;
use crate::fake_llm::{FakeLlm, Reply, anthropic_text, anthropic_tool_uses};

/// What the model is asked, by [`step`].
pub(super) const ASKS: [&str; 8] = [
    "just say hi",
    "convert some units",
    "run a harmless command",
    "read the notes file",
    "call the example plugins",
    "fetch a page",
    "call the MCP tool",
    "draw a note",
];

/// Which of [`ASKS`] message `n` makes; every channel sees each.
pub(super) fn step(n: usize) -> usize {
    n / 4 % ASKS.len()
}

/// The tools the model asks for, by their names on the wire.
pub(super) const TOOLS: [&str; 8] = [
    "convert_units",
    "shell_exec",
    "read_file",
    "echo",
    "hello",
    "web_fetch",
    "mcp.soak.echo",
    "canvas_show",
];

/// The fake model and what it counted.
pub(super) struct Model {
    llm: FakeLlm,
    counts: Arc<Mutex<Counts>>,
    _notes: tempfile::NamedTempFile,
}

impl Model {
    pub(super) fn new(llm: FakeLlm, notes: tempfile::NamedTempFile, canvas_port: u16) -> Model {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let seen = Arc::clone(&counts);
        let notes_path = notes.path().display().to_string();
        llm.respond_with(move |request| answer(&request.body, &seen, &notes_path, canvas_port));
        Model {
            llm,
            counts,
            _notes: notes,
        }
    }

    pub(super) fn url(&self) -> String {
        self.llm.url()
    }

    pub(super) fn summary(&self) -> (BTreeMap<String, usize>, Vec<String>) {
        let counts = lock(&self.counts);
        (counts.calls.clone(), counts.errors.clone())
    }
}

/// The N of the first `soak-N` in `text`.
pub(super) fn number_in(text: &str) -> Option<usize> {
    let rest = &text[text.find("soak-")? + 5..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[derive(Default)]
struct Counts {
    calls: BTreeMap<String, usize>,
    errors: Vec<String>,
}

/// The model's answer to one request: a summary when it offers no tools
/// (a compaction), `done soak-N.` after tool results, else message N's
/// tool calls or, for a plain one, the answer at once.
fn answer(body: &Value, counts: &Mutex<Counts>, notes: &str, canvas_port: u16) -> Reply {
    if body["tools"].as_array().is_none_or(Vec::is_empty) {
        return anthropic_text("The owner sent numbered test messages and got answers.");
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(n) = messages.iter().rev().find_map(soak_number) else {
        return anthropic_text("I see no numbered message.");
    };
    let results: Vec<&Value> = messages
        .last()
        .and_then(|m| m["content"].as_array())
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .collect()
        })
        .unwrap_or_default();
    if !results.is_empty() {
        let mut counts = lock(counts);
        for failed in results.iter().filter(|r| r["is_error"] == true) {
            if counts.errors.len() < 5 {
                counts.errors.push(failed["content"].to_string());
            }
        }
        return anthropic_text(&format!("done soak-{n}."));
    }
    let calls: Vec<(&str, Value)> = match step(n) {
        1 => vec![(
            "convert_units",
            json!({"value": n, "from": "km", "to": "m"}),
        )],
        2 => vec![("shell_exec", json!({"command": "echo soak"}))],
        3 => vec![("read_file", json!({"path": notes}))],
        4 => vec![
            ("echo", json!({"text": format!("soak {n}")})),
            ("hello", json!({"name": "soak"})),
        ],
        5 => vec![(
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{canvas_port}/login")}),
        )],
        6 => vec![("mcp__soak__echo", json!({"text": format!("soak {n}")}))],
        7 => vec![(
            "canvas_show",
            json!({"type": "markdown", "id": "soak-note", "data": {"markdown": format!("note **{n}**")}}),
        )],
        _ => return anthropic_text(&format!("done soak-{n}.")),
    };
    let mut counts = lock(counts);
    let ids: Vec<String> = (0..calls.len())
        .map(|i| format!("toolu_soak_{n}_{i}"))
        .collect();
    let uses: Vec<(&str, &str, Value)> = calls
        .iter()
        .zip(&ids)
        .map(|((name, input), id)| {
            *counts.calls.entry((*name).to_owned()).or_default() += 1;
            (id.as_str(), *name, input.clone())
        })
        .collect();
    anthropic_tool_uses(&uses)
}

/// The N of the first `soak-N` in a user message's text.
fn soak_number(message: &Value) -> Option<usize> {
    if message["role"] != "user" {
        return None;
    }
    let text = match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    number_in(&text)
}
