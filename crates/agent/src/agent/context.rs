//! A conversation's context (memories, scratchpad titles, notepad,
//! summary), kept byte-identical from call to call while the provider's
//! prompt cache would still hold it.
//!
//! The context sits before the conversation in every request, so any
//! change to it (a memory added in the middle of a turn, the notepad
//! rewritten) would make the provider read the whole conversation afresh
//! on the next call. It is therefore built when a conversation starts and
//! reused as it is; what the agent changes meanwhile it sees in the
//! conversation itself (its tool calls and their results). It is built
//! again when nothing is lost by it: when the history was compacted (the
//! summary changed, and the prefix after the fixed prompt with it), when
//! the cache has expired anyway (no call in the session for the cache's
//! lifetime), or on every call when caching is off.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The contexts of one agent's conversations, by session.
#[derive(Default)]
pub struct Contexts {
    sessions: Mutex<HashMap<i64, Kept>>,
}

struct Kept {
    text: String,
    /// The summary it was built with.
    summary: Option<String>,
    used: Instant,
}

impl Contexts {
    /// The context for `session`: the one kept, unless `summary` differs
    /// from the one it was built with or it was last used `lifetime` ago
    /// or more (`None`: caching is off, always build); else `build`'s.
    pub fn get<E>(
        &self,
        session: i64,
        summary: Option<&str>,
        lifetime: Option<Duration>,
        build: impl FnOnce() -> Result<String, E>,
    ) -> Result<String, E> {
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let Some(lifetime) = lifetime else {
            sessions.clear();
            return build();
        };
        if let Some(kept) = sessions.get_mut(&session)
            && kept.summary.as_deref() == summary
            && now.duration_since(kept.used) < lifetime
        {
            kept.used = now;
            return Ok(kept.text.clone());
        }
        let text = build()?;
        // What has expired can go: an agent with many chats keeps only
        // those active within the cache's lifetime.
        sessions.retain(|_, kept| now.duration_since(kept.used) < lifetime);
        sessions.insert(
            session,
            Kept {
                text: text.clone(),
                summary: summary.map(str::to_owned),
                used: now,
            },
        );
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    #[test]
    fn the_context_is_kept_until_the_summary_changes_or_the_cache_expires() {
        let contexts = Contexts::default();
        let hour = Some(Duration::from_secs(3600));
        let get = |summary: Option<&str>, lifetime, text: &str| {
            contexts
                .get::<Infallible>(1, summary, lifetime, || Ok(text.to_owned()))
                .unwrap()
        };
        assert_eq!(get(None, hour, "first"), "first");
        // A memory added since: the kept context stands.
        assert_eq!(get(None, hour, "second"), "first");
        // Compacted: built again.
        assert_eq!(get(Some("summary"), hour, "third"), "third");
        assert_eq!(get(Some("summary"), hour, "fourth"), "third");
        // The cache's lifetime passed since the last call: built again.
        assert_eq!(get(Some("summary"), Some(Duration::ZERO), "fifth"), "fifth");
        // Caching off: always built, nothing kept.
        assert_eq!(get(Some("summary"), None, "sixth"), "sixth");
        assert_eq!(get(Some("summary"), hour, "seventh"), "seventh");
        // Each session has its own.
        let other = contexts
            .get::<Infallible>(2, None, hour, || Ok("other".to_owned()))
            .unwrap();
        assert_eq!(other, "other");
        assert_eq!(get(Some("summary"), hour, "eighth"), "seventh");
    }
}
