//! OpenAI-compatible chat completions, streamed: OpenAI, OpenRouter, vLLM,
//! llama.cpp's server and Ollama.
//!
//! Tolerates the dialects: tool-call deltas accumulated by `index`, or, when
//! `index` is missing (Ollama, Mistral), by `id` and order; a whole tool call
//! in one chunk; `arguments` sent as an object instead of a string;
//! `finish_reason: "stop"` together with tool calls; a usage chunk with
//! empty `choices`; and `data: [DONE]`.

use serde_json::{Value, json};

use super::LlmError;
use super::sse::Event;
use super::types::{Block, ChatRequest, ChatResponse, Role, StopReason, Usage};

/// The request body for `POST {base_url}/chat/completions`. The system
/// prompt is one message (some servers' chat templates take only one),
/// the fixed part first; `cache_key` goes in as `prompt_cache_key`.
pub fn body(
    model: &str,
    request: &ChatRequest,
    cache_key: Option<&str>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut messages = vec![json!({ "role": "system", "content": request.system_text() })];
    for m in &request.messages {
        match m.role {
            Role::Assistant => {
                let calls: Vec<Value> = m
                    .tool_uses()
                    .map(|(id, name, input)| {
                        json!({ "id": id, "type": "function",
                                "function": { "name": name, "arguments": input.to_string() } })
                    })
                    .collect();
                let text = m.text();
                let mut msg = json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) } });
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
            Role::User => {
                // Tool results become `tool` messages; text and images stay
                // a user message, after them.
                for b in &m.content {
                    if let Block::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = b
                    {
                        messages.push(json!({ "role": "tool", "tool_call_id": tool_use_id, "content": content }));
                    }
                }
                if let Some(content) = super::images::openai_user_content(m) {
                    messages.push(json!({ "role": "user", "content": content }));
                }
            }
        }
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({ "type": "function", "function": { "name": t.name, "description": t.description, "parameters": t.parameters } }))
        .collect();
    /// The body's members in the order the model reads them: what never
    /// changes, the tools, then the messages, which only grow. A server
    /// (or proxy) that caches by the bytes of the body then finds all but
    /// the newest message in a prefix it saw.
    #[derive(serde::Serialize)]
    struct Body<'a> {
        model: &'a str,
        max_tokens: u32,
        stream: bool,
        stream_options: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        prompt_cache_key: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<Value>,
        messages: Vec<Value>,
    }
    serde_json::to_vec(&Body {
        model,
        max_tokens: request.max_tokens,
        stream: true,
        stream_options: json!({ "include_usage": true }),
        prompt_cache_key: cache_key,
        tools,
        messages,
    })
}

/// Builds the response from the stream's chunks.
#[derive(Default)]
pub struct Decoder {
    text: String,
    /// Text received since the last [`Decoder::take_fresh_text`].
    fresh: String,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Usage,
    done: bool,
}

#[derive(Default)]
struct Call {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    object: Option<Value>,
}

impl Decoder {
    /// The text that arrived since the last call, for streaming it on.
    pub fn take_fresh_text(&mut self) -> String {
        std::mem::take(&mut self.fresh)
    }

    /// Takes one event.
    pub fn event(&mut self, event: &Event) -> Result<(), LlmError> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|e| LlmError::Malformed(format!("chunk is not JSON: {e}")))?;
        if let Some(error) = chunk.get("error") {
            return Err(LlmError::Stream {
                kind: error["type"]
                    .as_str()
                    .or(error["code"].as_str())
                    .unwrap_or("error")
                    .to_owned(),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            read_usage(&mut self.usage, usage);
        }
        let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(()); // the usage chunk
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            self.text.push_str(text);
            self.fresh.push_str(text);
        }
        for piece in delta["tool_calls"].as_array().into_iter().flatten() {
            self.tool_delta(piece);
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish = Some(reason.to_owned());
        }
        Ok(())
    }

    fn tool_delta(&mut self, piece: &Value) {
        let index = piece["index"].as_u64();
        let id = piece["id"].as_str().filter(|s| !s.is_empty());
        let existing = match (index, id) {
            (Some(i), _) => self.calls.iter().position(|c| c.index == Some(i)),
            (None, Some(id)) => self.calls.iter().position(|c| c.id == id),
            // No index and no id: a continuation of the last call.
            (None, None) => self.calls.len().checked_sub(1),
        };
        let at = match existing {
            Some(at) => at,
            None => {
                self.calls.push(Call {
                    index,
                    ..Call::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        if let Some(id) = id {
            call.id = id.to_owned();
        }
        let function = &piece["function"];
        if let Some(name) = function["name"].as_str() {
            call.name.push_str(name);
        }
        match &function["arguments"] {
            Value::String(s) => call.arguments.push_str(s),
            Value::Object(_) => call.object = Some(function["arguments"].clone()),
            _ => {}
        }
    }

    /// The response, once the stream has ended.
    pub fn finish(self) -> Result<ChatResponse, LlmError> {
        if !self.done && self.finish.is_none() {
            return Err(LlmError::Truncated(
                "the stream ended before a finish_reason".into(),
            ));
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(Block::Text { text: self.text });
        }
        let has_calls = !self.calls.is_empty();
        for (n, call) in self.calls.into_iter().enumerate() {
            let input = match call.object {
                Some(object) => object,
                None if call.arguments.trim().is_empty() => json!({}),
                None => serde_json::from_str(&call.arguments).map_err(|e| {
                    LlmError::Malformed(format!("tool {} arguments are not JSON: {e}", call.name))
                })?,
            };
            let id = if call.id.is_empty() {
                format!("call_{n}")
            } else {
                call.id
            };
            content.push(Block::ToolUse {
                id,
                name: call.name,
                input,
            });
        }
        // Some servers say "stop" even when they called tools.
        let stop = match self.finish.as_deref() {
            _ if has_calls => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("stop") | None => StopReason::EndTurn,
            Some(_) => StopReason::Other,
        };
        Ok(ChatResponse {
            content,
            stop,
            usage: self.usage,
            model: String::new(),
        })
    }
}

/// Takes the counts of a `usage` object. `prompt_tokens` includes the
/// cached tokens (`prompt_tokens_details.cached_tokens`), so they are
/// split off: each count is priced on its own. OpenAI reports no cache
/// writes (its caching costs nothing extra).
fn read_usage(usage: &mut Usage, reported: &Value) {
    let cached = reported["prompt_tokens_details"]["cached_tokens"].as_u64();
    if let Some(prompt) = reported["prompt_tokens"].as_u64() {
        let cached = cached.unwrap_or(0).min(prompt);
        usage.input_tokens = prompt - cached;
        usage.cache_read_tokens = cached;
    }
    if let Some(n) = reported["completion_tokens"].as_u64() {
        usage.output_tokens = n;
    }
}
