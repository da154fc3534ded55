//! The agent's markdown as Telegram HTML messages (being built).

/// The longest message text the Bot API accepts, in UTF-16 code units of
/// the text after entity parsing.
pub const MAX_TEXT: usize = 4096;

/// `markdown` as Telegram HTML messages, each within [`MAX_TEXT`].
pub fn messages(markdown: &str) -> Vec<String> {
    messages_within(markdown, MAX_TEXT)
}

/// `markdown` as Telegram HTML messages, each at most `limit` UTF-16 code
/// units of visible text.
pub fn messages_within(markdown: &str, limit: usize) -> Vec<String> {
    let _ = limit;
    vec![escape(markdown)]
}

/// `text` with `<`, `>` and `&` escaped, for HTML parse mode.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
