//! What of a long text the cheap model reads: all of it when it fits,
//! else its head and its tail with a marker saying how much was left out.
//!
//! The tail gets three quarters of the room: a command's errors, its last
//! results and its exit usually come at the end, while the head says what
//! it set out to do.

/// The user message of a summary request: what the text is, and the text
/// within `max_chars` characters.
pub fn prompt(about: &str, text: &str, max_chars: usize) -> String {
    let lines = text.lines().count();
    format!(
        "What this is: {about}\nIt has {lines} lines and {} characters.\n\n<output>\n{}\n</output>",
        text.chars().count(),
        shorten(text, max_chars)
    )
}

/// `text` itself when it has at most `max_chars` characters, else its
/// first quarter and last three quarters of that, cut at line ends where
/// a line end is near, joined by a line saying what was left out.
pub fn shorten(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    let total = text.chars().count();
    if total <= max_chars {
        return text.into();
    }
    let head_chars = max_chars / 4;
    let tail_chars = max_chars - head_chars;
    let head_end = byte_at_char(text, head_chars);
    let tail_start = byte_at_char(text, total - tail_chars);
    // Whole lines read better; a line end within the last 200 characters
    // of the head (or the first 200 of the tail) is taken.
    let head_end = text[..head_end]
        .rfind('\n')
        .filter(|&i| head_end - i <= 200)
        .map_or(head_end, |i| i + 1);
    let tail_start = text[tail_start..]
        .find('\n')
        .filter(|&i| i <= 200)
        .map_or(tail_start, |i| tail_start + i + 1);
    let left_out = &text[head_end..tail_start];
    format!(
        "{}[... {} lines, {} characters left out ...]\n{}",
        &text[..head_end],
        left_out.lines().count(),
        left_out.chars().count(),
        &text[tail_start..]
    )
    .into()
}

/// The byte offset of the `n`th character of `text`.
fn byte_at_char(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_whole_and_long_text_keeps_head_and_tail() {
        assert_eq!(shorten("abc", 10), "abc");
        let text: String = (1..=10_000).map(|i| format!("line {i}\n")).collect();
        let short = shorten(&text, 2_000);
        assert!(short.chars().count() <= 2_100, "{}", short.len());
        assert!(short.starts_with("line 1\nline 2\n"));
        assert!(short.ends_with("line 10000\n"));
        assert!(short.contains("lines, "), "{short}");
        assert!(
            short.contains(" characters left out ...]\nline "),
            "{short}"
        );
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let text = "é".repeat(5_000);
        let short = shorten(&text, 1_000);
        assert!(short.contains("left out"));
        let prompt = prompt("accents", &text, 1_000);
        assert!(prompt.starts_with("What this is: accents\nIt has 1 lines and 5000 characters."));
    }
}
