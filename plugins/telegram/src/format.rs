//! The agent's markdown as Telegram HTML messages, each short enough to send.
//!
//! The agent writes CommonMark; Telegram's `parse_mode: "HTML"` knows a
//! handful of tags, refuses a whole message for one unknown or unbalanced
//! tag or a malformed entity ("Bad Request: can't parse entities"), and
//! refuses text over 4096 UTF-16 code units *after* entity parsing. Cutting
//! HTML at 4096 bytes or chars would break tags, entities and surrogate
//! pairs and still miss the limit, so the work happens in three steps:
//!
//! 1. `parse`: pulldown-cmark's events become one flat plain text plus
//!    style runs (which styles cover which bytes). Everything Telegram
//!    cannot show becomes plain text: headings a bold line, list items
//!    "• " or "1. ", a rule "———", an image its alt text linked. Raw HTML
//!    in the markdown is shown as written, never interpreted, and links
//!    keep only http, https, tg and mailto addresses: the agent may be
//!    quoting a stranger.
//! 2. `split`: cut points are chosen on the plain text, so the visible
//!    length of every part is exact, and no cut can fall inside a tag or an
//!    entity. Paragraph breaks are preferred, then line breaks, then spaces,
//!    and breaks outside code blocks over those inside.
//! 3. `render`: each part becomes HTML, opening the tags in force at its
//!    start and closing all of them at its end, so every part stands alone
//!    (a code block cut in two is two `<pre>` blocks).

#[cfg(test)]
mod fuzz;
mod parse;
mod render;
mod split;
#[cfg(test)]
mod tests;

/// The longest message text the Bot API accepts, in UTF-16 code units of
/// the text after entity parsing.
pub const MAX_TEXT: usize = 4096;

/// `markdown` as Telegram HTML messages, each within [`MAX_TEXT`].
pub fn messages(markdown: &str) -> Vec<String> {
    messages_within(markdown, MAX_TEXT)
}

/// `markdown` as Telegram HTML messages, each at most `limit` UTF-16 code
/// units of visible text.
///
/// Blank input, or markdown that shows nothing (only link reference
/// definitions, say), gives no messages at all: Telegram refuses an empty
/// text, and the host never sends an empty reply anyway. A `limit` below 2
/// is taken as 2, since one character (an emoji beyond the BMP) takes two
/// code units and cannot be cut.
pub fn messages_within(markdown: &str, limit: usize) -> Vec<String> {
    let doc = parse::parse(markdown);
    split::parts(&doc, limit.max(2))
        .into_iter()
        .map(|part| render::html(&doc, part))
        .collect()
}

/// `text` with `<`, `>` and `&` escaped, for HTML parse mode.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    push_escaped(&mut out, text, false);
    out
}

/// Appends `text` escaped; an `attribute` value (between double quotes)
/// also needs `"` escaped.
fn push_escaped(out: &mut String, text: &str, attribute: bool) {
    let mut done = 0;
    for (at, byte) in text.bytes().enumerate() {
        let entity = match byte {
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'&' => "&amp;",
            b'"' if attribute => "&quot;",
            _ => continue,
        };
        // `at` is an ASCII byte, so both slices end on char boundaries.
        out.push_str(&text[done..at]);
        out.push_str(entity);
        done = at + 1;
    }
    out.push_str(&text[done..]);
}

/// Bits of [`Style::flags`].
const BOLD: u8 = 1;
const ITALIC: u8 = 1 << 1;
const STRIKE: u8 = 1 << 2;
const SPOILER: u8 = 1 << 3;
/// Inline code.
const CODE: u8 = 1 << 4;
const QUOTE: u8 = 1 << 5;

/// The styles in force over a stretch of the plain text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Style {
    flags: u8,
    /// Index into [`Doc::urls`].
    link: Option<usize>,
    /// Index into [`Doc::langs`]: every code block has its own, so two
    /// adjacent blocks never run together into one.
    pre: Option<usize>,
}

/// A stretch of [`Doc::plain`] in one style, from `start` to the next
/// run's start (or the end of the text).
#[derive(Clone, Copy, Debug)]
struct Run {
    start: usize,
    style: Style,
}

/// Markdown flattened: what Telegram will show, and how it is styled.
#[derive(Debug, Default)]
struct Doc {
    /// The visible text.
    plain: String,
    /// Non-empty, in order, the first starting at 0 when there is any text.
    runs: Vec<Run>,
    /// Link addresses, each already checked to be allowed.
    urls: Vec<String>,
    /// Each code block's language ("" for none), already sanitized.
    langs: Vec<String>,
}

impl Doc {
    /// Appends `text` in `style`.
    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        if self.runs.last().is_none_or(|run| run.style != style) {
            self.runs.push(Run {
                start: self.plain.len(),
                style,
            });
        }
        self.plain.push_str(text);
    }

    /// The index of the run holding byte `at` (0 for an empty document).
    fn run_at(&self, at: usize) -> usize {
        self.runs
            .partition_point(|run| run.start <= at)
            .saturating_sub(1)
    }

    /// Where the run at `index` ends.
    fn run_end(&self, index: usize) -> usize {
        self.runs
            .get(index + 1)
            .map_or(self.plain.len(), |run| run.start)
    }
}
