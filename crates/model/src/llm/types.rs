//! The provider-neutral conversation: what the agent sends a model and what
//! comes back. Each provider translates to and from its own wire format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (and tool results, which go back in the user's turn).
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks for a tool call.
    ToolUse {
        /// The provider's id for the call, echoed in the result.
        id: String,
        /// The tool.
        name: String,
        /// The arguments.
        input: Value,
    },
    /// The outcome of a tool call.
    ToolResult {
        /// The id of the call it answers.
        tool_use_id: String,
        /// The result (JSON text) or the error message.
        content: String,
        /// Whether the call failed.
        #[serde(default)]
        is_error: bool,
    },
    /// An image for the model, by reference: stored as where its prepared
    /// copy is, never as its bytes, which are read for each request.
    Image(Image),
    /// A PDF for a model that reads PDFs, by reference like an image; its
    /// text goes instead wherever the file is not sent.
    Document(Pdf),
    /// The model's extended thinking (`[llm] thinking`), kept so that the
    /// next request of the same turn can send it back as the API asks
    /// (with its signature, unchanged); never shown to anyone.
    Thinking {
        /// What the model thought.
        thinking: String,
        /// The provider's seal over it.
        signature: String,
    },
    /// Thinking the provider sealed whole (only the seal comes back).
    RedactedThinking {
        /// The sealed thinking, sent back as it came.
        data: String,
    },
}

/// A PDF in the conversation: a copy of the file saved under
/// `$HEARTH_HOME/media` by its hash, and its text as hearth read it. A
/// request to a provider that takes PDFs (Anthropic's `document` block)
/// carries the file's bytes in `data`; any other carries `text`. Both are
/// the same bytes in every request of the conversation, so the prompt's
/// cached prefix holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pdf {
    /// What the sender called it.
    pub name: String,
    /// The saved copy.
    pub path: String,
    /// The saved copy's SHA-256, lowercase hex: a copy changed since is
    /// not sent.
    pub sha256: String,
    /// Its pages.
    pub pages: usize,
    /// Its size in bytes.
    pub bytes: usize,
    /// The original: the saved attachment.
    pub source: String,
    /// Its text with the notes on what was cut, for a request that does
    /// not carry the file.
    pub text: String,
    /// The file as base64, filled in only while a request is built (never
    /// stored).
    #[serde(skip)]
    pub data: Option<std::sync::Arc<str>>,
}

/// An image in the conversation: a copy prepared for models (downscaled,
/// metadata stripped) saved under `$HEARTH_HOME/media`, and where it came
/// from. `crate::media` makes it; a request carries its bytes in `data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// What the sender or the tool called it.
    pub name: String,
    /// The prepared copy.
    pub path: String,
    /// The prepared copy's media type: `image/jpeg` or `image/png`.
    pub media_type: String,
    /// The prepared copy's SHA-256, lowercase hex: a copy changed since is
    /// not sent.
    pub sha256: String,
    /// The prepared copy's width, in pixels.
    pub width: u32,
    /// Its height, in pixels.
    pub height: u32,
    /// The original: the saved attachment or the file a tool read.
    pub source: String,
    /// The prepared copy as base64, filled in only while a request is
    /// built (never stored). Without it, a provider sends a note instead.
    #[serde(skip)]
    pub data: Option<std::sync::Arc<str>>,
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who.
    pub role: Role,
    /// What.
    pub content: Vec<Block>,
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDef {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// Token counts, the same for every provider (in `tokens`, below `config`
/// and `llm`, which both need them).
pub use hearth_base::tokens::Usage;

/// One request to a model.
#[derive(Clone, Debug)]
pub struct ChatRequest {
    /// The fixed system prompt: the same for every conversation of an
    /// agent (identity, instructions, skills), first in the prompt after
    /// the tools so that providers cache it across conversations.
    pub system: String,
    /// The conversation's context (memories, notepad, summary), after the
    /// fixed prompt; empty when there is none. It changes between
    /// conversations, not between the calls of one (`llm::cache`).
    pub context: String,
    /// What groups requests that share a prefix, for providers that route
    /// by it (OpenAI's `prompt_cache_key`): the agent's, so its
    /// conversations meet its cache.
    pub cache_key: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call (shared: the same set serves many
    /// requests).
    pub tools: std::sync::Arc<[ToolDef]>,
    /// The most tokens to generate.
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit `max_tokens`.
    MaxTokens,
    /// Anything else the provider said.
    Other,
}

/// The model's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    /// Text and tool calls, in order.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens in and out, when the provider said.
    pub usage: Usage,
    /// The model that answered: the configured one, or the fallback that
    /// answered when it failed (what the call is priced by).
    pub model: String,
}

impl ChatRequest {
    /// A request with a system prompt and messages, no tools, no context.
    pub fn plain(
        system: impl Into<String>,
        messages: Vec<Message>,
        max_tokens: u32,
    ) -> ChatRequest {
        ChatRequest {
            system: system.into(),
            context: String::new(),
            cache_key: None,
            messages,
            tools: std::sync::Arc::from([]),
            max_tokens,
        }
    }

    /// The system prompt as one text: the fixed part, then the context.
    pub fn system_text(&self) -> std::borrow::Cow<'_, str> {
        if self.context.is_empty() {
            std::borrow::Cow::Borrowed(&self.system)
        } else {
            std::borrow::Cow::Owned(format!("{}\n\n{}", self.system, self.context))
        }
    }
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// The text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// The tool calls in this message.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}
