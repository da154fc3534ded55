//! Text cut short for errors, logs and descriptions: every message that
//! quotes what a server said (its stderr, a bad line, a description) is
//! bounded the same way, at a character boundary.

/// `text` cut to `max` bytes at a character boundary, with `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
