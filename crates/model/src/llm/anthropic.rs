//! The Anthropic Messages API, streamed: request body and SSE decoding.
//!
//! Tolerates what the real service sends: `ping` events, event types it does
//! not know yet (ignored), tool input that arrives as `input_json_delta`
//! fragments (the first is often `""`), and `error` events mid-stream.

use serde::Serialize;
use serde_json::{Map, Value};

use super::LlmError;
use super::cache::{CacheControl, message_marks};
use super::images::AnthropicMessages;
use super::sse::Event;
use super::types::{Block, ChatRequest, ChatResponse, StopReason, Usage};
use hearth_base::config::{PromptCache, Thinking};

/// The request body for `POST /v1/messages`, serialized straight from the
/// conversation: [`Message`](super::types::Message) and [`Block`] already have the API's shape
/// (images but for their bytes, which `images` adds), so nothing is
/// copied into an intermediate JSON tree. With caching on, the fixed
/// system prompt, the context and two messages are marked
/// (`llm::cache`).
pub fn body(
    model: &str,
    request: &ChatRequest,
    cache: &PromptCache,
    thinking: Option<Thinking>,
) -> Result<Vec<u8>, serde_json::Error> {
    /// `thinking`: adaptive, or within a budget.
    #[derive(Serialize)]
    struct ThinkingParam {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        budget_tokens: Option<u32>,
    }
    /// `output_config`: how hard the model works (with adaptive thinking).
    #[derive(Serialize)]
    struct OutputConfig {
        effort: &'static str,
    }
    #[derive(Serialize)]
    struct Tool<'a> {
        name: &'a str,
        description: &'a str,
        input_schema: &'a Value,
    }
    #[derive(Serialize)]
    struct Text<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    }
    /// The members in the order the API renders the prompt (tools,
    /// system, messages), after what never changes: a cache keyed by the
    /// body's bytes finds all but the newest message in a prefix too.
    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        max_tokens: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        thinking: Option<ThinkingParam>,
        #[serde(skip_serializing_if = "Option::is_none")]
        output_config: Option<OutputConfig>,
        stream: bool,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<Tool<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        system: Vec<Text<'a>>,
        messages: AnthropicMessages<'a>,
    }
    let mark = CacheControl::for_config(cache);
    // The API refuses an empty text block.
    let system = [&request.system, &request.context]
        .into_iter()
        .filter(|text| !text.is_empty())
        .map(|text| Text {
            kind: "text",
            text,
            cache_control: mark,
        })
        .collect();
    serde_json::to_vec(&Body {
        model,
        max_tokens: request.max_tokens,
        thinking: thinking.map(|t| match t {
            Thinking::Adaptive(_) => ThinkingParam {
                kind: "adaptive",
                budget_tokens: None,
            },
            Thinking::Budget(budget) => ThinkingParam {
                kind: "enabled",
                budget_tokens: Some(budget),
            },
        }),
        output_config: match thinking {
            Some(Thinking::Adaptive(Some(effort))) => Some(OutputConfig {
                effort: effort.as_str(),
            }),
            _ => None,
        },
        system,
        messages: AnthropicMessages {
            messages: &request.messages,
            marks: message_marks(&request.messages),
            mark,
        },
        tools: request
            .tools
            .iter()
            .map(|t| Tool {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
            })
            .collect(),
        stream: true,
    })
}

/// Builds the response from the stream's events.
#[derive(Default)]
pub struct Decoder {
    /// Text received since the last [`Decoder::take_fresh_text`].
    fresh: String,
    blocks: Vec<Partial>,
    stop: Option<StopReason>,
    usage: Usage,
    finished: bool,
}

enum Partial {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    Tool {
        id: String,
        name: String,
        json: String,
        input: Value,
    },
}

/// The most content blocks one response may have: far more than a model
/// writes, few enough that a bogus index cannot exhaust memory.
const MAX_BLOCKS: usize = 4096;

impl Decoder {
    /// The text that arrived since the last call, for streaming it on.
    pub fn take_fresh_text(&mut self) -> String {
        std::mem::take(&mut self.fresh)
    }

    /// Takes one event.
    pub fn event(&mut self, event: &Event) -> Result<(), LlmError> {
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(e) => return Err(LlmError::Malformed(format!("event {:?}: {e}", event.event))),
        };
        let kind = data["type"].as_str().unwrap_or(event.event.as_str());
        match kind {
            "message_start" => read_usage(&mut self.usage, &data["message"]["usage"]),
            "content_block_start" => {
                let block = &data["content_block"];
                let index = data["index"].as_u64().unwrap_or(self.blocks.len() as u64);
                // Indices count up from 0; one far ahead would have the
                // gap before it filled with empty blocks (found by fuzzing:
                // an index of 2^63 took all memory).
                let index = match usize::try_from(index) {
                    Ok(index) if index < MAX_BLOCKS => index,
                    _ => {
                        return Err(LlmError::Malformed(format!(
                            "content block index {index} is beyond the {MAX_BLOCKS} blocks a \
                             response may have"
                        )));
                    }
                };
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
                    Some("thinking") => Partial::Thinking {
                        thinking: block["thinking"].as_str().unwrap_or_default().to_owned(),
                        signature: block["signature"].as_str().unwrap_or_default().to_owned(),
                    },
                    Some("redacted_thinking") => {
                        Partial::Redacted(block["data"].as_str().unwrap_or_default().to_owned())
                    }
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
                        let piece = delta["text"].as_str().unwrap_or_default();
                        text.push_str(piece);
                        self.fresh.push_str(piece);
                    }
                    (Some(Partial::Tool { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    // Thinking is kept for the next request, never streamed
                    // to the owner's chat.
                    (Some(Partial::Thinking { thinking, .. }), Some("thinking_delta")) => {
                        thinking.push_str(delta["thinking"].as_str().unwrap_or_default());
                    }
                    (Some(Partial::Thinking { signature, .. }), Some("signature_delta")) => {
                        signature.push_str(delta["signature"].as_str().unwrap_or_default());
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
                // Its counts are cumulative, so they update what
                // `message_start` said, field by field.
                read_usage(&mut self.usage, &data["usage"]);
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
                Partial::Thinking {
                    thinking,
                    signature,
                } => content.push(Block::Thinking {
                    thinking,
                    signature,
                }),
                Partial::Redacted(data) => content.push(Block::RedactedThinking { data }),
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
            model: String::new(),
        })
    }
}

/// Takes the counts a `usage` object carries (in `message_start` or
/// `message_delta`), keeping the others. The counts are cumulative, so the
/// larger wins: a proxy that sends zeros in `message_delta` loses nothing.
/// `input_tokens` already leaves out the cache's reads and writes, which
/// come as their own fields.
fn read_usage(usage: &mut Usage, reported: &Value) {
    let fields: [(&str, &mut u64); 4] = [
        ("input_tokens", &mut usage.input_tokens),
        ("output_tokens", &mut usage.output_tokens),
        ("cache_read_input_tokens", &mut usage.cache_read_tokens),
        ("cache_creation_input_tokens", &mut usage.cache_write_tokens),
    ];
    for (name, count) in fields {
        if let Some(n) = reported[name].as_u64() {
            *count = (*count).max(n);
        }
    }
}
