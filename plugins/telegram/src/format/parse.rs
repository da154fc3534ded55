//! Markdown to plain text and style runs.
//!
//! Blocks are laid out as a chat message would be: a blank line between
//! paragraphs, one line per list item, a soft line break kept as a line
//! break (the agent means it; CommonMark's "join the lines" reads badly in
//! a chat bubble).

use pulldown_cmark::{
    CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd, TextMergeStream,
};

use super::{BOLD, CODE, Doc, ITALIC, QUOTE, SPOILER, STRIKE, Style};

/// Deeper list levels are indented no further: a phone screen is narrow,
/// and indentation growing with depth would make hostile input quadratic.
const MAX_INDENT: usize = 8;

/// `markdown` flattened.
pub(super) fn parse(markdown: &str) -> Doc {
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let mut builder = Builder::default();
    for event in TextMergeStream::new(Parser::new_ext(markdown, options)) {
        builder.event(event);
    }
    builder.settle_spoiler();
    builder.doc
}

/// An open link or image.
struct Opened {
    /// The link in force outside it.
    outer: Option<usize>,
    /// Where its text begins in the plain text.
    text_from: usize,
    /// Its address, shown if it has no text.
    url: String,
}

/// The walk over the events: what is in force, and what is owed.
#[derive(Default)]
struct Builder {
    doc: Doc,
    bold: usize,
    italic: usize,
    strike: usize,
    quote: usize,
    /// The link in force, an index into `doc.urls`.
    link: Option<usize>,
    links: Vec<Opened>,
    /// The code block being read, an index into `doc.langs`.
    code_block: Option<usize>,
    /// The text of the code or HTML block being read: emitted at its end,
    /// without the block's final newline.
    verbatim: Option<String>,
    /// Each open list's next number (`None` for a bulleted list).
    lists: Vec<Option<u64>>,
    /// The current item's bullet or number, not yet shown.
    marker: Option<String>,
    /// Line breaks owed before the next text.
    breaks: usize,
    /// Where the `||` of a spoiler not yet closed is, in the plain text.
    spoiler: Option<usize>,
    /// Cells so far in the current table row.
    cells: usize,
}

impl Builder {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.verbatim {
                Some(buffer) => buffer.push_str(&text),
                None => self.text(&text),
            },
            Event::Code(code) => self.emit(&code, self.style_with(CODE)),
            // Raw HTML is shown as written, never interpreted.
            Event::Html(raw) => match &mut self.verbatim {
                Some(buffer) => buffer.push_str(&raw),
                None => self.emit(&raw, self.block_style()),
            },
            Event::InlineHtml(raw) => self.emit(&raw, self.style()),
            Event::SoftBreak | Event::HardBreak => self.breaks = self.breaks.max(1),
            Event::Rule => {
                self.settle_spoiler();
                self.emit("———", self.block_style());
                self.breaks = 2;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "☑ " } else { "☐ " };
                match self.marker.take() {
                    // The box stands in for the bullet.
                    Some(bullet) => {
                        let indent = bullet.len() - bullet.trim_start().len();
                        self.marker = Some(format!("{}{mark}", &bullet[..indent]));
                    }
                    None => self.emit(mark, self.style()),
                }
            }
            // Not enabled in the parser's options; shown as written should
            // that ever change.
            Event::FootnoteReference(label) => self.emit(&format!("[^{label}]"), self.style()),
            Event::InlineMath(math) | Event::DisplayMath(math) => {
                self.emit(&math, self.style_with(CODE))
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Emphasis => self.italic += 1,
            Tag::Strong => self.bold += 1,
            Tag::Strikethrough => self.strike += 1,
            Tag::Link {
                link_type,
                dest_url,
                ..
            }
            | Tag::Image {
                link_type,
                dest_url,
                ..
            } => self.open_link(link_type, &dest_url),
            // Not enabled in the parser's options.
            Tag::Superscript | Tag::Subscript => {}
            block => {
                self.settle_spoiler();
                self.start_block(block);
            }
        }
    }

    fn start_block(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { .. } => self.bold += 1,
            Tag::BlockQuote(_) => self.quote += 1,
            Tag::CodeBlock(kind) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => language(&info),
                    CodeBlockKind::Indented => String::new(),
                };
                self.doc.langs.push(lang);
                self.code_block = Some(self.doc.langs.len() - 1);
                self.verbatim = Some(String::new());
            }
            Tag::HtmlBlock => self.verbatim = Some(String::new()),
            Tag::List(first) => self.lists.push(first),
            Tag::Item => {
                self.breaks = self.breaks.max(1);
                let depth = self.lists.len().saturating_sub(1).min(MAX_INDENT);
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number = number.saturating_add(1);
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                self.marker = Some(format!("{}{marker}", "  ".repeat(depth)));
            }
            Tag::TableHead => {
                self.bold += 1;
                self.row();
            }
            Tag::TableRow => self.row(),
            Tag::TableCell => {
                if self.cells > 0 {
                    self.emit(" | ", self.style());
                }
                self.cells += 1;
            }
            // Paragraphs and tables need nothing at their start; inline
            // tags never get here, and the other blocks are not enabled in
            // the parser's options (their text would simply be shown).
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Emphasis => self.italic = self.italic.saturating_sub(1),
            TagEnd::Strong => self.bold = self.bold.saturating_sub(1),
            TagEnd::Strikethrough => self.strike = self.strike.saturating_sub(1),
            TagEnd::Link | TagEnd::Image => self.close_link(),
            TagEnd::Superscript | TagEnd::Subscript => {}
            block => {
                self.settle_spoiler();
                self.end_block(block);
            }
        }
    }

    fn end_block(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.bold = self.bold.saturating_sub(1);
                self.breaks = 2;
            }
            TagEnd::BlockQuote(_) => {
                self.quote = self.quote.saturating_sub(1);
                self.breaks = 2;
            }
            TagEnd::CodeBlock | TagEnd::HtmlBlock => {
                if let Some(text) = self.verbatim.take() {
                    let text = text.strip_suffix('\n').unwrap_or(&text);
                    let style = Style {
                        pre: self.code_block,
                        ..self.block_style()
                    };
                    self.emit(text, style);
                }
                self.code_block = None;
                self.breaks = 2;
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.marker = None;
                // A nested list ends inside an item of its parent.
                self.breaks = if self.lists.is_empty() { 2 } else { 1 };
            }
            TagEnd::Item => {
                self.marker = None;
                self.breaks = self.breaks.max(1);
            }
            TagEnd::TableHead => {
                self.bold = self.bold.saturating_sub(1);
                self.breaks = self.breaks.max(1);
            }
            TagEnd::TableRow => self.breaks = self.breaks.max(1),
            TagEnd::Paragraph | TagEnd::Table => self.breaks = 2,
            // As in `start_block`.
            _ => {}
        }
    }

    fn row(&mut self) {
        self.breaks = self.breaks.max(1);
        self.cells = 0;
    }

    /// The style of structure (separators, bullets): only the blockquote.
    fn block_style(&self) -> Style {
        Style {
            flags: if self.quote > 0 { QUOTE } else { 0 },
            ..Style::default()
        }
    }

    /// The style of running text here.
    fn style(&self) -> Style {
        let mut style = self.block_style();
        for (count, flag) in [
            (self.bold, BOLD),
            (self.italic, ITALIC),
            (self.strike, STRIKE),
            (usize::from(self.spoiler.is_some()), SPOILER),
        ] {
            if count > 0 {
                style.flags |= flag;
            }
        }
        style.link = self.link;
        style
    }

    fn style_with(&self, flag: u8) -> Style {
        let mut style = self.style();
        style.flags |= flag;
        style
    }

    /// Running text, where `||` opens and closes a spoiler.
    fn text(&mut self, text: &str) {
        let mut rest = text;
        while let Some(at) = rest.find("||") {
            self.emit(&rest[..at], self.style());
            self.toggle_spoiler();
            rest = &rest[at + 2..];
        }
        self.emit(rest, self.style());
    }

    /// A `||` is shown as written until its partner turns up in the same
    /// block; then both go, and what is between becomes a spoiler.
    fn toggle_spoiler(&mut self) {
        match self.spoiler.take() {
            None => {
                self.open_line();
                self.spoiler = Some(self.doc.plain.len());
                self.doc.push("||", self.style_without_spoiler());
            }
            // `||||` hides nothing: both stay as written.
            Some(at) if self.doc.plain.len() == at + 2 => self.emit("||", self.style()),
            Some(at) => self.remove_pair(at),
        }
    }

    fn style_without_spoiler(&self) -> Style {
        let mut style = self.style();
        style.flags &= !SPOILER;
        style
    }

    /// Removes the two bytes of `||` at `at`, which were pushed on their
    /// own (so no run starts inside them).
    fn remove_pair(&mut self, at: usize) {
        let doc = &mut self.doc;
        doc.plain.replace_range(at..at + 2, "");
        let after = doc.runs.partition_point(|run| run.start <= at);
        for run in &mut doc.runs[after..] {
            run.start -= 2;
        }
        // A run that held only the `||` is empty now: it starts where the
        // next one does.
        if after > 0
            && doc
                .runs
                .get(after)
                .is_some_and(|next| next.start == doc.runs[after - 1].start)
        {
            doc.runs.remove(after - 1);
        }
    }

    /// At the end of a block, a spoiler still open was never one: its `||`
    /// stays as written, and what followed is shown plainly.
    fn settle_spoiler(&mut self) {
        if let Some(at) = self.spoiler.take() {
            let from = self.doc.runs.partition_point(|run| run.start < at);
            for run in &mut self.doc.runs[from..] {
                run.style.flags &= !SPOILER;
            }
        }
    }

    fn open_link(&mut self, link_type: LinkType, dest: &str) {
        let url = if link_type == LinkType::Email {
            format!("mailto:{dest}")
        } else {
            dest.to_owned()
        };
        let outer = self.link;
        // A link inside a link (an image in one) keeps the outer address.
        if outer.is_none() && linkable(&url) {
            self.doc.urls.push(url.clone());
            self.link = Some(self.doc.urls.len() - 1);
        }
        self.links.push(Opened {
            outer,
            text_from: self.doc.plain.len(),
            url,
        });
    }

    fn close_link(&mut self) {
        if let Some(opened) = self.links.pop() {
            if self.doc.plain.len() == opened.text_from {
                // A link or image without text would vanish; its address
                // is the next best thing to show.
                self.emit(&opened.url, self.style());
            }
            self.link = opened.outer;
        }
    }

    /// Appends `text`, after the line breaks and list indentation owed.
    fn emit(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        self.open_line();
        self.doc.push(text, style);
    }

    /// Pays the line breaks owed and, at the start of a line, the list
    /// item's bullet or indentation.
    fn open_line(&mut self) {
        let plain = &self.doc.plain;
        if !plain.is_empty() {
            let have = plain
                .bytes()
                .rev()
                .take(self.breaks)
                .take_while(|&b| b == b'\n')
                .count();
            if self.breaks > have {
                // Inside a blockquote the breaks are quoted too, so one
                // quote of several paragraphs stays one blockquote.
                let quoted = self.quote > 0
                    && self
                        .doc
                        .runs
                        .last()
                        .is_some_and(|run| run.style.flags & QUOTE != 0);
                let style = if quoted {
                    self.block_style()
                } else {
                    Style::default()
                };
                let breaks = "\n".repeat(self.breaks - have);
                self.doc.push(&breaks, style);
            }
        }
        self.breaks = 0;
        let plain = &self.doc.plain;
        if !(plain.is_empty() || plain.ends_with('\n')) {
            return;
        }
        let style = self.block_style();
        if let Some(marker) = self.marker.take() {
            self.doc.push(&marker, style);
            if self.code_block.is_some() {
                // A code block starts on a line of its own.
                self.doc.push("\n", style);
            }
        } else if self.code_block.is_none() && !self.lists.is_empty() {
            let depth = self.lists.len().min(MAX_INDENT + 1);
            self.doc.push(&"  ".repeat(depth), style);
        }
    }
}

/// Whether `url` may be a link: web, mail and Telegram's own addresses
/// only, and nothing Telegram would reject as malformed.
fn linkable(url: &str) -> bool {
    let scheme_ok = ["http://", "https://", "tg://", "mailto:"]
        .iter()
        .any(|scheme| {
            url.len() > scheme.len()
                && url
                    .get(..scheme.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
        });
    scheme_ok && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A code block's language from its info string: the first word, kept to
/// the characters language names use.
fn language(info: &str) -> String {
    info.split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '#' | '.' | '-'))
        .take(32)
        .collect()
}
