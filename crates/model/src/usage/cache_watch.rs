//! Cache breaks: a conversation whose calls were read from the provider's
//! prompt cache and suddenly are not is logged once, at WARN, with what
//! changed.
//!
//! A break costs the owner the whole prompt again, and its cause is
//! usually invisible: a tool set that changed (a script saved, an MCP
//! server announcing its tools), an edited identity, a rebuilt context,
//! history that changed under the cache (an image aged out), or just time
//! (the entry expired). Each conversation's last request is kept, so that
//! when the share of its prompt read from the cache drops sharply, the two
//! requests can be compared part by part and the log can say which.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::llm::{ChatRequest, Usage};

/// The last request of each conversation, by session.
#[derive(Default)]
pub struct CacheWatch {
    sessions: Mutex<HashMap<i64, Last>>,
}

struct Last {
    request: ChatRequest,
    share: f64,
    at: Instant,
}

/// A share at or above this, followed by one this much lower, is a break.
const WAS_CACHED: f64 = 0.5;
const DROP: f64 = 0.4;

/// A prompt shorter than this is never cached by either provider: no
/// break to see.
const CACHEABLE_TOKENS: u64 = 1024;

/// How long a conversation's last request is kept: past the longest TTL,
/// a miss is no news.
const KEEP: Duration = Duration::from_secs(2 * 3600);

impl CacheWatch {
    /// Takes `session`'s newest request and what the provider reported for
    /// it; returns the warning (also logged) when it broke the cache.
    pub fn observe(&self, session: i64, request: ChatRequest, usage: &Usage) -> Option<String> {
        let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        let share = match prompt {
            0 => 0.0,
            n => usage.cache_read_tokens as f64 / n as f64,
        };
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let warning = sessions.get(&session).and_then(|last| {
            let broke =
                last.share >= WAS_CACHED && share < last.share - DROP && prompt >= CACHEABLE_TOKENS;
            broke.then(|| {
                format!(
                    "the prompt cache broke in session {session}: {:.0}% of the prompt was read \
                     from the cache on the call before, {:.0}% now; {}",
                    last.share * 100.0,
                    share * 100.0,
                    what_changed(&last.request, &request, now.duration_since(last.at))
                )
            })
        });
        if let Some(warning) = &warning {
            tracing::warn!(session, "{warning}");
        }
        sessions.retain(|_, last| now.duration_since(last.at) < KEEP);
        sessions.insert(
            session,
            Last {
                request,
                share,
                at: now,
            },
        );
        warning
    }
}

/// Which part of the prompt differs between two calls of a conversation,
/// in the order the prompt has them.
fn what_changed(before: &ChatRequest, now: &ChatRequest, since: Duration) -> String {
    let history_kept = now.messages.len() >= before.messages.len()
        && now.messages[..before.messages.len()] == before.messages[..];
    let mut changed = Vec::new();
    if before.tools != now.tools {
        changed.push("the tools");
    }
    if before.system != now.system {
        changed.push("the system prompt");
    }
    if before.context != now.context {
        changed.push("the conversation's context (memories, notepad, summary)");
    }
    if !history_kept {
        changed.push("the earlier messages");
    }
    if changed.is_empty() {
        format!(
            "nothing hearth sent changed: the provider did not keep the prefix ({} s since the \
             call before)",
            since.as_secs()
        )
    } else {
        format!("changed: {}", changed.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, ToolDef};
    use std::sync::Arc;

    fn usage(read: u64, fresh: u64) -> Usage {
        Usage {
            input_tokens: fresh,
            cache_read_tokens: read,
            ..Usage::default()
        }
    }

    fn request(context: &str, messages: &[&str]) -> ChatRequest {
        let mut request = ChatRequest::plain(
            "fixed",
            messages.iter().map(|m| Message::user_text(*m)).collect(),
            100,
        );
        request.context = context.into();
        request
    }

    #[test]
    fn a_sharp_drop_is_a_break_that_names_what_changed() {
        let watch = CacheWatch::default();
        assert_eq!(
            watch.observe(1, request("c", &["a"]), &usage(0, 3000)),
            None
        );
        assert_eq!(
            watch.observe(1, request("c", &["a", "b"]), &usage(2900, 100)),
            None
        );
        // Another session's calls are its own.
        assert_eq!(
            watch.observe(2, request("x", &["q"]), &usage(0, 3000)),
            None
        );
        let context = watch
            .observe(1, request("d", &["a", "b", "c"]), &usage(100, 3000))
            .expect("a break");
        assert!(context.contains("97% of the prompt"), "{context}");
        assert!(
            context.contains("changed: the conversation's context"),
            "{context}"
        );
        assert!(!context.contains("earlier messages"), "{context}");
        // A drop from a miss is no break.
        assert_eq!(
            watch.observe(1, request("d", &["z"]), &usage(0, 3000)),
            None
        );
        watch.observe(1, request("d", &["z", "y"]), &usage(2900, 100));
        let history = watch
            .observe(1, request("d", &["other"]), &usage(0, 3000))
            .expect("a break");
        assert!(
            history.contains("changed: the earlier messages"),
            "{history}"
        );
        watch.observe(1, request("d", &["other", "more"]), &usage(2900, 100));
        let mut tools = request("d", &["other", "more", "again"]);
        tools.tools = Arc::from([ToolDef {
            name: "t".into(),
            description: "d".into(),
            parameters: serde_json::json!({}),
        }]);
        let changed = watch.observe(1, tools, &usage(0, 3000)).expect("a break");
        assert!(changed.contains("changed: the tools"), "{changed}");
        // The same prompt, missed: the provider's doing.
        watch.observe(1, request("d", &["p"]), &usage(2900, 100));
        let expired = watch
            .observe(1, request("d", &["p", "q"]), &usage(0, 3000))
            .expect("a break");
        assert!(expired.contains("nothing hearth sent changed"), "{expired}");
        // Too small a prompt to be cached: nothing to say.
        watch.observe(3, request("d", &["p"]), &usage(900, 10));
        assert_eq!(
            watch.observe(3, request("d", &["p", "q"]), &usage(0, 900)),
            None
        );
    }
}
