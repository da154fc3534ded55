//! One part of the plain text as a self-contained Telegram HTML message.
//!
//! Telegram's nesting rules decide the shape: bold, italic, strikethrough
//! and spoiler nest freely; a link holds no other link; inline code and
//! `<pre>` hold nothing (but `<pre>` holds its `<code class>`); a
//! blockquote cannot be nested, so it is always the outermost tag. Tags
//! are kept open across style changes where those rules allow, and of
//! several opening at once the one that lasts longest goes outside, so
//! `*a **b** c*` stays one `<i>` around one `<b>`.

use std::cmp::Reverse;

use super::{BOLD, CODE, Doc, ITALIC, QUOTE, SPOILER, STRIKE, Style, push_escaped};

/// The HTML for the bytes `start..end` of `doc.plain`, every tag closed.
pub(super) fn html(doc: &Doc, (start, end): (usize, usize)) -> String {
    let mut spans = Vec::new();
    for index in doc.run_at(start)..doc.runs.len() {
        let from = doc.runs[index].start.max(start);
        if from >= end {
            break;
        }
        let to = doc.run_end(index).min(end);
        if to > from {
            spans.push((from, to, doc.runs[index].style));
        }
    }
    // Where each span's inline styles stop, so that when several open at
    // once the one that lasts longest goes outside and stays open.
    let mut lasts = vec![[0; INLINE.len()]; spans.len()];
    for index in (0..spans.len()).rev() {
        let (_, to, style) = spans[index];
        for (key, inline) in INLINE.iter().enumerate() {
            if inline.holds(style) {
                lasts[index][key] = match spans.get(index + 1) {
                    Some(&(_, _, next)) if inline.holds(next) && inline.same(style, next) => {
                        lasts[index + 1][key]
                    }
                    _ => to,
                };
            }
        }
    }
    let mut out = String::with_capacity(end - start + (end - start) / 8 + 64);
    let mut open = Vec::new();
    for (&(from, to, style), lasts) in spans.iter().zip(&lasts) {
        restyle(doc, &mut out, &mut open, style, lasts);
        push_escaped(&mut out, &doc.plain[from..to], false);
    }
    restyle(
        doc,
        &mut out,
        &mut open,
        Style::default(),
        &[0; INLINE.len()],
    );
    out
}

/// The styles that may nest in either order, in the order used when they
/// last equally long.
const INLINE: [Markup; 5] = [
    Markup::Link(0),
    Markup::Bold,
    Markup::Italic,
    Markup::Strike,
    Markup::Spoiler,
];

/// One HTML element (or, for a code block with a language, the
/// `<pre><code class>` pair that Telegram treats as one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Markup {
    Quote,
    Pre(usize),
    Link(usize),
    Bold,
    Italic,
    Strike,
    Spoiler,
    Code,
}

impl Markup {
    /// Whether nothing may be opened inside it.
    fn is_leaf(self) -> bool {
        matches!(self, Markup::Pre(_) | Markup::Code)
    }

    /// Whether `style` has this inline markup (of any address, for a link).
    fn holds(self, style: Style) -> bool {
        match self {
            Markup::Link(_) => style.link.is_some(),
            Markup::Bold => style.flags & BOLD != 0,
            Markup::Italic => style.flags & ITALIC != 0,
            Markup::Strike => style.flags & STRIKE != 0,
            Markup::Spoiler => style.flags & SPOILER != 0,
            Markup::Quote | Markup::Pre(_) | Markup::Code => false,
        }
    }

    /// Whether one tag can span both styles (the same address, for a link).
    fn same(self, a: Style, b: Style) -> bool {
        !matches!(self, Markup::Link(_)) || a.link == b.link
    }
}

/// The markups `style` needs, outermost first, in an order Telegram
/// accepts; `lasts` says where each of [`INLINE`] stops.
fn markups(style: Style, lasts: &[usize; INLINE.len()]) -> ([Markup; 7], usize) {
    let mut list = [Markup::Quote; 7];
    let mut len = 0;
    if style.flags & QUOTE != 0 {
        list[len] = Markup::Quote;
        len += 1;
    }
    if let Some(lang) = style.pre {
        // A code block shows nothing but its text.
        list[len] = Markup::Pre(lang);
        return (list, len + 1);
    }
    let mut inline = [(Markup::Bold, 0); INLINE.len()];
    let mut count = 0;
    for (kind, &last) in INLINE.iter().zip(lasts) {
        let markup = match kind {
            Markup::Link(_) => style.link.map(Markup::Link),
            other => other.holds(style).then_some(*other),
        };
        if let Some(markup) = markup {
            inline[count] = (markup, last);
            count += 1;
        }
    }
    // Stable, so styles that last equally long keep the order of `INLINE`.
    inline[..count].sort_by_key(|&(_, last)| Reverse(last));
    for &(markup, _) in &inline[..count] {
        list[len] = markup;
        len += 1;
    }
    if style.flags & CODE != 0 {
        list[len] = Markup::Code;
        len += 1;
    }
    (list, len)
}

/// Closes and opens tags so that exactly `style` is in force, keeping the
/// longest run of already open tags that `style` still wants.
fn restyle(
    doc: &Doc,
    out: &mut String,
    open: &mut Vec<Markup>,
    style: Style,
    lasts: &[usize; INLINE.len()],
) {
    let (list, len) = markups(style, lasts);
    let wanted = &list[..len];
    let mut keep = open.iter().take_while(|m| wanted.contains(m)).count();
    if wanted.iter().any(|m| !open[..keep].contains(m)) {
        if wanted.contains(&Markup::Quote) && open.first() != Some(&Markup::Quote) {
            // A blockquote must be outermost, so everything reopens inside it.
            keep = 0;
        }
        while keep > 0 && open[keep - 1].is_leaf() {
            keep -= 1;
        }
    }
    for markup in open.drain(keep..).rev() {
        close_tag(out, doc, markup);
    }
    for &markup in wanted {
        if !open.contains(&markup) {
            open_tag(out, doc, markup);
            open.push(markup);
        }
    }
}

fn open_tag(out: &mut String, doc: &Doc, markup: Markup) {
    match markup {
        Markup::Quote => out.push_str("<blockquote>"),
        Markup::Pre(index) => match doc.langs.get(index).filter(|lang| !lang.is_empty()) {
            Some(lang) => {
                out.push_str("<pre><code class=\"language-");
                push_escaped(out, lang, true);
                out.push_str("\">");
            }
            None => out.push_str("<pre>"),
        },
        Markup::Link(index) => {
            out.push_str("<a href=\"");
            push_escaped(out, doc.urls.get(index).map_or("", String::as_str), true);
            out.push_str("\">");
        }
        Markup::Bold => out.push_str("<b>"),
        Markup::Italic => out.push_str("<i>"),
        Markup::Strike => out.push_str("<s>"),
        Markup::Spoiler => out.push_str("<tg-spoiler>"),
        Markup::Code => out.push_str("<code>"),
    }
}

fn close_tag(out: &mut String, doc: &Doc, markup: Markup) {
    out.push_str(match markup {
        Markup::Quote => "</blockquote>",
        Markup::Pre(index) if doc.langs.get(index).is_some_and(|lang| !lang.is_empty()) => {
            "</code></pre>"
        }
        Markup::Pre(_) => "</pre>",
        Markup::Link(_) => "</a>",
        Markup::Bold => "</b>",
        Markup::Italic => "</i>",
        Markup::Strike => "</s>",
        Markup::Spoiler => "</tg-spoiler>",
        Markup::Code => "</code>",
    });
}
