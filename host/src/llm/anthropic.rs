//! The Anthropic Messages API, streamed: request body and SSE decoding.
//!
//! Tolerates what the real service sends: `ping` events, event types it does
//! not know yet (ignored), tool input that arrives as `input_json_delta`
//! fragments (the first is often `""`), and `error` events mid-stream.

use serde_json::{Map, Value, json};

use super::LlmError;
use super::sse::Event;
use super::types::{Block, ChatRequest, ChatResponse, Role, StopReason, Usage};

/// The request body for `POST /v1/messages`.
pub fn body(model: &str, request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .content
                .iter()
                .map(|b| match b {
                    Block::Text { text } => json!({ "type": "text", "text": text }),
                    Block::ToolUse { id, name, input } => {
                        json!({ "type": "tool_use", "id": id, "name": name, "input": input })
                    }
                    Block::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } => json!({
                        "type": "tool_result", "tool_use_id": tool_use_id,
                        "content": content, "is_error": is_error,
                    }),
                })
                .collect();
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({ "role": role, "content": content })
        })
        .collect();
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "system": request.system,
        "messages": messages,
        "stream": true,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Builds the response from the stream's events.
#[derive(Default)]
pub struct Decoder {
    blocks: Vec<Partial>,
    stop: Option<StopReason>,
    usage: Usage,
    finished: bool,
}

enum Partial {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
        input: Value,
    },
}

impl Decoder {
    /// Takes one event.
    pub fn event(&mut self, event: &Event) -> Result<(), LlmError> {
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(e) => return Err(LlmError::Malformed(format!("event {:?}: {e}", event.event))),
        };
        let kind = data["type"].as_str().unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                self.usage.input_tokens = data["message"]["usage"]["input_tokens"]
                    .as_u64()
                    .unwrap_or(0);
            }
            "content_block_start" => {
                let block = &data["content_block"];
                let index = data["index"].as_u64().unwrap_or(self.blocks.len() as u64) as usize;
                let partial = match block["type"].as_str() {
                    Some("tool_use") => Partial::Tool {
                        id: block["id"].as_str().unwrap_or_default().to_owned(),
                        name: block["name"].as_str().unwrap_or_default().to_owned(),
                        json: String::new(),
                        input: block
                            .get("input")
                            .cloned()
                            .unwrap_or(Value::Object(Map::new())),
                    },
                    _ => Partial::Text(block["text"].as_str().unwrap_or_default().to_owned()),
                };
                while self.blocks.len() < index {
                    self.blocks.push(Partial::Text(String::new()));
                }
                if index < self.blocks.len() {
                    self.blocks[index] = partial;
                } else {
                    self.blocks.push(partial);
                }
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap_or(0) as usize;
                let delta = &data["delta"];
                match (self.blocks.get_mut(index), delta["type"].as_str()) {
                    (Some(Partial::Text(text)), Some("text_delta")) => {
                        text.push_str(delta["text"].as_str().unwrap_or_default());
                    }
                    (Some(Partial::Tool { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    (None, _) => {
                        return Err(LlmError::Malformed(format!(
                            "delta for unknown block {index}"
                        )));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                self.stop = Some(match data["delta"]["stop_reason"].as_str() {
                    Some("end_turn") | Some("stop_sequence") => StopReason::EndTurn,
                    Some("tool_use") => StopReason::ToolUse,
                    Some("max_tokens") => StopReason::MaxTokens,
                    _ => StopReason::Other,
                });
                if let Some(n) = data["usage"]["output_tokens"].as_u64() {
                    self.usage.output_tokens = n;
                }
            }
            "message_stop" => self.finished = true,
            "error" => {
                let error = &data["error"];
                return Err(LlmError::Stream {
                    kind: error["type"].as_str().unwrap_or("error").to_owned(),
                    message: error["message"].as_str().unwrap_or_default().to_owned(),
                });
            }
            // ping, content_block_stop, and whatever is added later.
            _ => {}
        }
        Ok(())
    }

    /// The response, once `message_stop` has arrived.
    pub fn finish(self) -> Result<ChatResponse, LlmError> {
        if !self.finished {
            return Err(LlmError::Truncated(
                "the stream ended before message_stop".into(),
            ));
        }
        let mut content = Vec::new();
        for block in self.blocks {
            match block {
                Partial::Text(text) if text.is_empty() => {}
                Partial::Text(text) => content.push(Block::Text { text }),
                Partial::Tool {
                    id,
                    name,
                    json,
                    input,
                } => {
                    let input = if json.trim().is_empty() {
                        input
                    } else {
                        serde_json::from_str(&json).map_err(|e| {
                            LlmError::Malformed(format!("tool {name} input is not JSON: {e}"))
                        })?
                    };
                    content.push(Block::ToolUse { id, name, input });
                }
            }
        }
        let stop = self.stop.unwrap_or(StopReason::Other);
        Ok(ChatResponse {
            content,
            stop,
            usage: self.usage,
        })
    }
}
