//! Prompt caching: where a request tells the provider it may keep what it
//! has read, so the next call reads it back instead of paying for it again.
//!
//! Providers cache a request's prefix: Anthropic at the blocks a request
//! marks with `cache_control` (at most four; tools, then system, then
//! messages, in that order), OpenAI and the servers that copy it at any
//! long enough prefix they saw before. Either way only a prefix that is
//! byte-identical to an earlier one is read, so the request is laid out
//! with what changes least first (see `agent::prompt`), and marked at the
//! four places that let the next call reuse the most:
//!
//! 1. the end of the fixed system prompt: the tools and the instructions,
//!    shared by every conversation of an agent with the same tool set;
//! 2. the end of the conversation's context (memories, notepad, summary),
//!    shared by every call of one conversation until it is rebuilt;
//! 3. the end of the message the previous call ended with, which that
//!    call wrote: this call reads everything up to it;
//! 4. the end of the newest message, written for the next call.
//!
//! The previous call always ended with a user message (a person's message
//! or tool results), and since then the conversation gained at most the
//! model's answer and one user message: so it is the last user message
//! before the newest one. Anthropic finds an earlier breakpoint a few
//! blocks back on its own; marking it exactly also serves servers that
//! read only at the marks.

use serde::Serialize;

use super::types::{Message, Role};
use hearth_base::config::{CacheTtl, PromptCache};

/// The `cache_control` member of a marked block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

impl CacheControl {
    /// The mark for `cache`, or `None` when caching is off.
    pub fn for_config(cache: &PromptCache) -> Option<CacheControl> {
        cache.enabled.then_some(CacheControl {
            kind: "ephemeral",
            // Five minutes is the default; saying nothing keeps the
            // request what every proxy of the API accepts.
            ttl: match cache.ttl {
                CacheTtl::FiveMinutes => None,
                CacheTtl::OneHour => Some("1h"),
            },
        })
    }
}

/// The messages whose last block is marked: the last user message before
/// the newest message (where the previous call ended), and the newest.
pub fn message_marks(messages: &[Message]) -> [Option<usize>; 2] {
    let Some(last) = messages.len().checked_sub(1) else {
        return [None, None];
    };
    let previous = messages[..last]
        .iter()
        .rposition(|m| m.role == Role::User && !m.content.is_empty());
    [previous, Some(last)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::Block;

    fn user(text: &str) -> Message {
        Message::user_text(text)
    }

    fn assistant(text: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    #[test]
    fn the_marks_fall_where_the_previous_call_ended_and_at_the_end() {
        let cases: [(Vec<Message>, [Option<usize>; 2]); 5] = [
            (vec![], [None, None]),
            (vec![user("hi")], [None, Some(0)]),
            // A new message after an answer.
            (
                vec![user("hi"), assistant("hello"), user("how are you")],
                [Some(0), Some(2)],
            ),
            // A failed turn left no answer: two user messages in a row.
            (vec![user("hi"), user("again")], [Some(0), Some(1)]),
            // A tool loop: the previous call ended at the first results.
            (
                vec![
                    user("do it"),
                    assistant("calling"),
                    user("result 1"),
                    assistant("calling again"),
                    user("result 2"),
                ],
                [Some(2), Some(4)],
            ),
        ];
        for (messages, expected) in cases {
            assert_eq!(message_marks(&messages), expected, "{messages:?}");
        }
    }

    #[test]
    fn the_mark_says_the_ttl_only_when_it_is_not_the_default() {
        let five = PromptCache {
            enabled: true,
            ttl: CacheTtl::FiveMinutes,
        };
        let hour = PromptCache {
            ttl: CacheTtl::OneHour,
            ..five
        };
        let off = PromptCache {
            enabled: false,
            ..five
        };
        let json = |c: &PromptCache| {
            CacheControl::for_config(c).map(|c| serde_json::to_string(&c).unwrap())
        };
        assert_eq!(json(&five).as_deref(), Some(r#"{"type":"ephemeral"}"#));
        assert_eq!(
            json(&hour).as_deref(),
            Some(r#"{"type":"ephemeral","ttl":"1h"}"#)
        );
        assert_eq!(json(&off), None);
    }
}
