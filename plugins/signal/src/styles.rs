//! The agent's markdown as Signal text: plain text plus style ranges.
//!
//! Signal has no markup; a message carries `textStyle` ranges instead
//! (`"start:length:STYLE"`, with start and length in UTF-16 code units, as
//! signal-cli's `send` documents). So the markdown is parsed (pulldown-cmark,
//! as the canvas does) and rewritten: `**bold**` and headings become BOLD,
//! `*it*`/`_it_` ITALIC, `~~s~~` STRIKETHROUGH, code MONOSPACE and
//! `||spoiler||` SPOILER (a Signal and Discord habit markdown lacks). Block
//! structure survives as plain text: blank lines between paragraphs, `•`
//! and numbers for lists, `> ` for quotes, link targets in parentheses.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A style signal-cli accepts in `textStyle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Bold text.
    Bold,
    /// Italic text.
    Italic,
    /// Struck-through text.
    Strikethrough,
    /// Fixed-width text.
    Monospace,
    /// Text hidden until tapped.
    Spoiler,
}

impl Kind {
    /// The name signal-cli's `TextStyle.Style` parses.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bold => "BOLD",
            Kind::Italic => "ITALIC",
            Kind::Strikethrough => "STRIKETHROUGH",
            Kind::Monospace => "MONOSPACE",
            Kind::Spoiler => "SPOILER",
        }
    }
}

/// One styled range of a message, in UTF-16 code units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Style {
    /// Where it starts.
    pub start: usize,
    /// How long it is (never 0).
    pub length: usize,
    /// Which style.
    pub kind: Kind,
}

impl Style {
    /// The `textStyle` entry: `start:length:STYLE`.
    pub fn wire(&self) -> String {
        format!("{}:{}:{}", self.start, self.length, self.kind.name())
    }
}

/// Converts markdown to plain text and the styles over it, sorted by start.
pub fn convert(markdown: &str) -> (String, Vec<Style>) {
    let mut writer = Writer::default();
    for event in Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH) {
        writer.event(event);
    }
    writer.finish()
}

/// The length of `s` in UTF-16 code units, the unit of style ranges.
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The most `> ` markers a quoted line shows.
const MAX_QUOTE_MARKERS: usize = 8;

/// The text being built and the styles still open.
#[derive(Default)]
struct Writer {
    out: String,
    /// `out`'s length in UTF-16 code units.
    units: usize,
    styles: Vec<Style>,
    open: Vec<(Kind, usize)>,
    /// For each list we are in, the next number (`None`: bullets).
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    /// Nothing written since a block began (a list marker, a quote prefix):
    /// the next block starts right here, with no more line breaks.
    fresh: bool,
    in_code_block: bool,
    /// Each open link's target and where its text started (bytes).
    links: Vec<(String, usize)>,
    /// An opening `||` not yet closed: where it was (bytes, units).
    spoiler: Option<(usize, usize)>,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) if self.in_code_block => self.push(&text),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                self.open(Kind::Monospace);
                self.push(&code);
                self.close(Kind::Monospace);
            }
            Event::Html(html) | Event::InlineHtml(html) => self.push(&html),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.push(&math),
            Event::FootnoteReference(name) => self.push(&format!("[{name}]")),
            Event::SoftBreak | Event::HardBreak => self.line_break(),
            Event::Rule => {
                self.block();
                self.push("———");
            }
            Event::TaskListMarker(done) => self.push(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::Table(_) | Tag::FootnoteDefinition(_) => {
                self.block()
            }
            Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.block()
            }
            Tag::TableHead | Tag::TableRow => self.line_break(),
            Tag::TableCell => self.push(" | "),
            Tag::Heading { .. } => {
                self.block();
                self.open(Kind::Bold);
            }
            Tag::BlockQuote(_) => {
                self.quote_depth += 1;
                self.fresh = false;
                self.block();
            }
            Tag::CodeBlock(_) => {
                self.block();
                self.in_code_block = true;
                self.open(Kind::Monospace);
            }
            Tag::List(first) => {
                self.block();
                self.lists.push(first);
            }
            Tag::Item => self.item(),
            Tag::Emphasis => self.open(Kind::Italic),
            Tag::Strong => self.open(Kind::Bold),
            Tag::Strikethrough => self.open(Kind::Strikethrough),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.links.push((dest_url.into_string(), self.out.len()));
            }
            Tag::Superscript | Tag::Subscript | Tag::MetadataBlock(_) => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => self.close(Kind::Bold),
            TagEnd::BlockQuote(_) => self.quote_depth = self.quote_depth.saturating_sub(1),
            TagEnd::CodeBlock => {
                self.trim_end(|c| c == '\n');
                self.close(Kind::Monospace);
                self.in_code_block = false;
            }
            TagEnd::HtmlBlock => self.trim_end(|c| c == '\n'),
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Emphasis => self.close(Kind::Italic),
            TagEnd::Strong => self.close(Kind::Bold),
            TagEnd::Strikethrough => self.close(Kind::Strikethrough),
            TagEnd::Link | TagEnd::Image => {
                if let Some((url, at)) = self.links.pop() {
                    let label = self.out.get(at..).unwrap_or_default();
                    let same = label == url || url.strip_prefix("mailto:") == Some(label);
                    if !url.is_empty() && !same {
                        self.push(&format!(" ({url})"));
                    }
                }
            }
            _ => {}
        }
    }

    /// Text outside code: `||` toggles a spoiler.
    fn text(&mut self, text: &str) {
        let mut pieces = text.split("||");
        if let Some(first) = pieces.next() {
            self.push(first);
        }
        for piece in pieces {
            match self.spoiler.take() {
                Some((_, units)) => self.add_style(Kind::Spoiler, units),
                None => self.spoiler = Some((self.out.len(), self.units)),
            }
            self.push(piece);
        }
    }

    /// A new block: a blank line between top-level blocks, a line break
    /// inside lists, then the quote prefix.
    fn block(&mut self) {
        self.cancel_spoiler();
        if self.fresh {
            return;
        }
        if !self.out.is_empty() {
            self.newlines(if self.lists.is_empty() { 2 } else { 1 });
        }
        self.quote_prefix();
        self.fresh = true;
    }

    fn item(&mut self) {
        if !self.fresh {
            self.newlines(1);
            self.quote_prefix();
        }
        let depth = self.lists.len().saturating_sub(1);
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let marker = format!("{n}. ");
                *n += 1;
                marker
            }
            _ => "• ".to_owned(),
        };
        self.push(&"  ".repeat(depth));
        self.push(&marker);
        self.fresh = true;
    }

    fn line_break(&mut self) {
        self.push("\n");
        self.quote_prefix();
    }

    fn quote_prefix(&mut self) {
        if self.quote_depth > 0 {
            // Every line of a quote n deep carries n markers, and every
            // level starts a line: thousands of nested `>` made the text
            // grow with the square of the depth (found by fuzzing: 31 KB
            // of markdown took over a GiB). Deeper quotes look the same.
            let prefix = "> ".repeat(self.quote_depth.min(MAX_QUOTE_MARKERS));
            self.push(&prefix);
            self.fresh = true;
        }
    }

    fn newlines(&mut self, want: usize) {
        let have = self.out.chars().rev().take_while(|&c| c == '\n').count();
        for _ in have..want {
            self.push("\n");
        }
    }

    fn push(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.out.push_str(text);
        self.units += utf16_len(text);
        self.fresh = false;
    }

    fn open(&mut self, kind: Kind) {
        self.open.push((kind, self.units));
    }

    fn close(&mut self, kind: Kind) {
        if let Some(at) = self.open.iter().rposition(|(k, _)| *k == kind) {
            let (_, start) = self.open.remove(at);
            self.add_style(kind, start);
        }
    }

    fn add_style(&mut self, kind: Kind, start: usize) {
        if self.units > start {
            self.styles.push(Style {
                start,
                length: self.units - start,
                kind,
            });
        }
    }

    /// An unclosed `||` was text after all: put it back where it was.
    fn cancel_spoiler(&mut self) {
        let Some((byte, unit)) = self.spoiler.take() else {
            return;
        };
        self.out.insert_str(byte, "||");
        self.units += 2;
        for style in &mut self.styles {
            if style.start >= unit {
                style.start += 2;
            } else if style.start + style.length > unit {
                style.length += 2;
            }
        }
        for (_, start) in &mut self.open {
            if *start > unit {
                *start += 2;
            }
        }
        for (_, at) in &mut self.links {
            if *at > byte {
                *at += 2;
            }
        }
    }

    fn trim_end(&mut self, strip: impl Fn(char) -> bool) {
        while let Some(c) = self.out.chars().next_back().filter(|&c| strip(c)) {
            self.out.pop();
            self.units -= c.len_utf16();
        }
    }

    fn finish(mut self) -> (String, Vec<Style>) {
        self.cancel_spoiler();
        while let Some((kind, _)) = self.open.last().copied() {
            self.close(kind);
        }
        self.trim_end(char::is_whitespace);
        let total = self.units;
        let mut styles: Vec<Style> = self
            .styles
            .into_iter()
            .filter_map(|s| {
                let end = (s.start + s.length).min(total);
                // `then`: a style starting in the trimmed end must not
                // have its length computed (found by fuzzing: it
                // underflowed).
                (end > s.start).then(|| Style {
                    length: end - s.start,
                    ..s
                })
            })
            .collect();
        styles.sort();
        (self.out, styles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(markdown, text, styles as "start:length:STYLE")`.
    const CASES: &[(&str, &str, &[&str])] = &[
        ("plain", "plain", &[]),
        (
            "**bold** and *it*",
            "bold and it",
            &["0:4:BOLD", "9:2:ITALIC"],
        ),
        (
            "_it_ ~~gone~~",
            "it gone",
            &["0:2:ITALIC", "3:4:STRIKETHROUGH"],
        ),
        ("run `ls -l` now", "run ls -l now", &["4:5:MONOSPACE"]),
        ("a ||secret|| b", "a secret b", &["2:6:SPOILER"]),
        ("a || b", "a || b", &[]),
        ("**a || b**", "a || b", &["0:6:BOLD"]),
        ("x ||y\n\nz|| w", "x ||y\n\nz|| w", &[]),
        ("`||not||`", "||not||", &["0:7:MONOSPACE"]),
        ("***both***", "both", &["0:4:BOLD", "0:4:ITALIC"]),
        (
            "**bold *nested* end**",
            "bold nested end",
            &["0:15:BOLD", "5:6:ITALIC"],
        ),
        ("# Title\n\nbody", "Title\n\nbody", &["0:5:BOLD"]),
        (
            "```rust\nfn main() {}\n```",
            "fn main() {}",
            &["0:12:MONOSPACE"],
        ),
        (
            "before\n\n```\na\nb\n```\n\nafter",
            "before\n\na\nb\n\nafter",
            &["8:3:MONOSPACE"],
        ),
        ("- one\n- two", "• one\n• two", &[]),
        ("1. one\n2. **two**", "1. one\n2. two", &["10:3:BOLD"]),
        ("- a\n  - b\n- c", "• a\n  • b\n• c", &[]),
        ("para\n\n- item\n\nnext", "para\n\n• item\n\nnext", &[]),
        ("> quoted\n> more", "> quoted\n> more", &[]),
        ("line one\nline two", "line one\nline two", &[]),
        (
            "[site](https://example.org)",
            "site (https://example.org)",
            &[],
        ),
        ("<https://example.org>", "https://example.org", &[]),
        ("a\n\n---\n\nb", "a\n\n———\n\nb", &[]),
        ("🦀 **crab** 🦀", "🦀 crab 🦀", &["3:4:BOLD"]),
        ("𝔘𝔫𝔦 *x*", "𝔘𝔫𝔦 x", &["7:1:ITALIC"]),
        ("é **ü**", "é ü", &["2:1:BOLD"]),
        ("**🦀🦀**", "🦀🦀", &["0:4:BOLD"]),
        ("text\n\n\n", "text", &[]),
        ("", "", &[]),
    ];

    #[test]
    fn markdown_becomes_text_and_styles() {
        for (markdown, text, styles) in CASES {
            let (got_text, got_styles) = convert(markdown);
            let got_styles: Vec<String> = got_styles.iter().map(Style::wire).collect();
            assert_eq!(
                (got_text.as_str(), got_styles),
                (
                    *text,
                    styles.iter().map(|s| s.to_string()).collect::<Vec<_>>()
                ),
                "{markdown:?}"
            );
        }
    }

    #[test]
    fn a_style_in_the_trimmed_end_is_dropped() {
        assert_eq!(convert("a\n\n```\n \n```\n"), ("a".to_owned(), Vec::new()));
    }

    #[test]
    fn deep_quotes_show_a_bounded_prefix() {
        let (text, _) = convert(&format!("{}deep", "> ".repeat(5_000)));
        assert!(text.len() < 200_000, "{} bytes", text.len());
        assert!(text.ends_with(&format!("{}deep", "> ".repeat(MAX_QUOTE_MARKERS))));
    }

    #[test]
    fn every_style_lies_within_the_text() {
        for (markdown, ..) in CASES {
            let (text, styles) = convert(markdown);
            for style in styles {
                assert!(style.length > 0 && style.start + style.length <= utf16_len(&text));
            }
        }
    }
}
