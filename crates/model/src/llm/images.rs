//! How images travel in each provider's request.
//!
//! The conversation holds an image by reference (`types::Image`), with its
//! base64 filled in while a request is built. Anthropic takes it as an
//! `image` block with a base64 `source`; OpenAI-compatible servers as an
//! `image_url` content part holding a `data:` URI, in a user message (a
//! tool message cannot carry one). An image without its bytes is sent as
//! a note, so a request never fails for a missing file. A PDF's block is
//! shaped by `documents`.

use serde::Serialize;
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde_json::{Value, json};

use super::cache::CacheControl;
use super::documents;
use super::types::{Block, Image, Message};

/// The messages in Anthropic's shape: every block as it is stored, except
/// images, and the last block of the messages in `marks` carrying
/// `mark` (`llm::cache`). Serialized straight into the body, with no JSON
/// tree between.
pub struct AnthropicMessages<'a> {
    /// The conversation.
    pub messages: &'a [Message],
    /// The messages whose last block is marked.
    pub marks: [Option<usize>; 2],
    /// The mark, or `None` for none at all.
    pub mark: Option<CacheControl>,
}

impl Serialize for AnthropicMessages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.messages.len()))?;
        for (i, message) in self.messages.iter().enumerate() {
            let mark = self.mark.filter(|_| self.marks.contains(&Some(i)));
            seq.serialize_element(&AnthropicMessage(message, mark))?;
        }
        seq.end()
    }
}

struct AnthropicMessage<'a>(&'a Message, Option<CacheControl>);

impl Serialize for AnthropicMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut message = s.serialize_struct("Message", 2)?;
        message.serialize_field("role", &self.0.role)?;
        message.serialize_field("content", &AnthropicBlocks(&self.0.content, self.1))?;
        message.end()
    }
}

/// A message's blocks; the last carries the mark, if any.
struct AnthropicBlocks<'a>(&'a [Block], Option<CacheControl>);

impl Serialize for AnthropicBlocks<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let last = self.0.len().saturating_sub(1);
        for (i, block) in self.0.iter().enumerate() {
            let mark = self.1.filter(|_| i == last);
            seq.serialize_element(&AnthropicBlock(block, mark))?;
        }
        seq.end()
    }
}

/// One block as Anthropic takes it, with its mark.
struct AnthropicBlock<'a>(&'a Block, Option<CacheControl>);

impl Serialize for AnthropicBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Source<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            media_type: &'a str,
            data: &'a str,
        }
        #[derive(Serialize)]
        struct ImageBlock<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            source: Source<'a>,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        }
        /// A stored block with the mark beside its own fields.
        #[derive(Serialize)]
        struct Marked<'a, B: Serialize> {
            #[serde(flatten)]
            block: &'a B,
            cache_control: CacheControl,
        }
        let note;
        let block = match self.0 {
            Block::Image(Image {
                data: Some(data),
                media_type,
                ..
            }) => {
                return ImageBlock {
                    kind: "image",
                    source: Source {
                        kind: "base64",
                        media_type,
                        data,
                    },
                    cache_control: self.1,
                }
                .serialize(s);
            }
            Block::Image(image) => {
                note = Block::Text {
                    text: unsent(image),
                };
                &note
            }
            Block::Document(pdf) => match &pdf.data {
                Some(data) => return documents::anthropic_document(pdf, data, self.1, s),
                None => {
                    note = Block::Text {
                        text: documents::as_text(pdf),
                    };
                    &note
                }
            },
            other => other,
        };
        match self.1 {
            Some(cache_control) => Marked {
                block,
                cache_control,
            }
            .serialize(s),
            None => block.serialize(s),
        }
    }
}

/// The `content` of the OpenAI user message for a user message's blocks
/// other than tool results: its text as one string, or, when it holds
/// images, a list of text and `image_url` parts. `None` when there is
/// nothing to send.
pub fn openai_user_content(message: &Message) -> Option<Value> {
    if !message.content.iter().any(|b| matches!(b, Block::Image(_))) {
        // A PDF goes as its text: OpenAI-compatible servers take no PDF.
        let text: String = message
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(std::borrow::Cow::Borrowed(text.as_str())),
                Block::Document(pdf) => Some(format!("\n\n{}", documents::as_text(pdf)).into()),
                _ => None,
            })
            .collect();
        return (!text.is_empty()).then_some(Value::String(text));
    }
    let parts: Vec<Value> = message
        .content
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(json!({ "type": "text", "text": text })),
            Block::Image(Image {
                data: Some(data),
                media_type,
                ..
            }) => Some(json!({
                "type": "image_url",
                "image_url": { "url": format!("data:{media_type};base64,{data}") },
            })),
            Block::Image(image) => Some(json!({ "type": "text", "text": unsent(image) })),
            Block::Document(pdf) => {
                Some(json!({ "type": "text", "text": documents::as_text(pdf) }))
            }
            Block::ToolUse { .. }
            | Block::ToolResult { .. }
            | Block::Thinking { .. }
            | Block::RedactedThinking { .. } => None,
        })
        .collect();
    Some(Value::Array(parts))
}

/// The note for an image whose bytes the request does not carry.
fn unsent(image: &Image) -> String {
    format!(
        "[image {} ({}x{}) is not available; the original is at {}]",
        image.name, image.width, image.height, image.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::Role;

    fn image(data: Option<&str>) -> Block {
        Block::Image(Image {
            name: "cat.jpg".into(),
            path: "/home/h/media/ab.jpg".into(),
            media_type: "image/jpeg".into(),
            sha256: "ab".into(),
            width: 4,
            height: 3,
            source: "/home/h/attachments/cat.jpg".into(),
            data: data.map(Into::into),
        })
    }

    #[test]
    fn images_take_each_providers_shape() {
        let message = Message {
            role: Role::User,
            content: vec![
                Block::Text {
                    text: "look".into(),
                },
                image(Some("QUJD")),
                image(None),
            ],
        };
        let anthropic = serde_json::to_value(AnthropicMessages {
            messages: std::slice::from_ref(&message),
            marks: [None, None],
            mark: None,
        })
        .unwrap();
        assert_eq!(
            anthropic[0]["content"][1],
            json!({ "type": "image", "source": { "type": "base64", "media_type": "image/jpeg", "data": "QUJD" } })
        );
        assert_eq!(
            anthropic[0]["content"][0],
            json!({ "type": "text", "text": "look" })
        );
        assert!(
            anthropic[0]["content"][2]["text"]
                .as_str()
                .unwrap()
                .contains("not available")
        );
        let openai = openai_user_content(&message).unwrap();
        assert_eq!(
            openai[1],
            json!({ "type": "image_url", "image_url": { "url": "data:image/jpeg;base64,QUJD" } })
        );
        assert_eq!(openai[2]["type"], "text");
        assert_eq!(
            openai_user_content(&Message::user_text("plain")),
            Some(json!("plain"))
        );
        // Stored, an image is a reference: its bytes are never kept.
        let stored = serde_json::to_value(&message.content[1]).unwrap();
        assert_eq!(stored["type"], "image");
        assert_eq!(stored.get("data"), None);
        assert_eq!(stored["path"], "/home/h/media/ab.jpg");
    }
}
