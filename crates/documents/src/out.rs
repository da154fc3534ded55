//! The document being built: sections added under one character budget
//! shared by every reader, and the notes on what was cut. Keeping the
//! budget in one place means every format cuts the same way and says so
//! the same way.

use crate::document::{Caps, Document, Kind, Section};

/// Sections and notes under a budget of characters.
pub(crate) struct Out {
    max_chars: usize,
    used: usize,
    cut: bool,
    pub(crate) sections: Vec<Section>,
    pub(crate) notes: Vec<String>,
}

impl Out {
    pub(crate) fn new(caps: &Caps) -> Out {
        Out {
            max_chars: caps.max_chars,
            used: 0,
            cut: false,
            sections: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Whether the budget is spent: a reader stops reading then.
    pub(crate) fn is_full(&self) -> bool {
        self.cut || self.used >= self.max_chars
    }

    /// Adds a section, cut to the characters left. Returns whether all of
    /// it fit; the first cut adds the note saying where the text stops.
    pub(crate) fn section(&mut self, name: Option<String>, text: &str) -> bool {
        let left = self.max_chars.saturating_sub(self.used);
        let (kept, whole) = cut_chars(text, left);
        self.used += kept.chars().count();
        if !whole && !self.cut {
            self.cut = true;
            self.notes.push(format!(
                "the text was cut at {} characters",
                count(self.max_chars)
            ));
        }
        if !kept.trim().is_empty() || whole {
            self.sections.push(Section {
                name,
                text: kept.to_owned(),
            });
        }
        whole
    }

    /// Records something cut or lost.
    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The finished document.
    pub(crate) fn finish(self, kind: Kind, bytes: &[u8], meta: Meta) -> Document {
        Document {
            kind,
            title: meta.title.filter(|t| !t.trim().is_empty()),
            truncated: !self.notes.is_empty(),
            sections: self.sections,
            notes: self.notes,
            scanned: meta.scanned,
            page_count: meta.page_count,
            byte_len: bytes.len(),
        }
    }
}

/// What a reader knows about the document besides its text.
pub(crate) struct Meta {
    pub(crate) title: Option<String>,
    pub(crate) scanned: bool,
    pub(crate) page_count: usize,
}

impl Meta {
    pub(crate) fn single(title: Option<String>) -> Meta {
        Meta {
            title,
            scanned: false,
            page_count: 1,
        }
    }
}

/// The first `max` characters of `text`, ending at a line or word break
/// when one is near (a cut mid-word reads as a typo), and whether that is
/// all of it.
pub(crate) fn cut_chars(text: &str, max: usize) -> (&str, bool) {
    let Some((end, _)) = text.char_indices().nth(max) else {
        return (text, true);
    };
    let head = &text[..end];
    // Back up to a break only within the last few hundred bytes, so a
    // text without breaks still keeps nearly all it may.
    let mut floor = end.saturating_sub(400);
    while !head.is_char_boundary(floor) {
        floor += 1;
    }
    let at = head[floor..]
        .rfind(['\n', ' '])
        .map(|i| floor + i)
        .filter(|&i| i > 0)
        .unwrap_or(end);
    (&text[..at], false)
}

/// A count with thousands separators, as the notes show it ("1,234").
pub(crate) fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "1 page", "3 pages".
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(100_000), "100,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn a_cut_ends_at_a_break_and_respects_char_boundaries() {
        assert_eq!(cut_chars("hello", 10), ("hello", true));
        assert_eq!(cut_chars("héllo wörld", 9), ("héllo", false));
        assert_eq!(cut_chars("ééééé", 2), ("éé", false));
        assert_eq!(cut_chars("one\ntwo three", 12), ("one\ntwo", false));
        // The look back for a break starts inside a character.
        let text = format!("x{}", "é".repeat(500));
        assert_eq!(cut_chars(&text, 450).0.chars().count(), 450);
    }

    #[test]
    fn the_budget_is_shared_and_the_cut_noted_once() {
        let caps = Caps {
            max_chars: 10,
            ..Caps::default()
        };
        let mut out = Out::new(&caps);
        assert!(out.section(Some("a".into()), "12345"));
        assert!(!out.section(Some("b".into()), "6789012345"));
        assert!(out.is_full());
        assert!(!out.section(Some("c".into()), "more"));
        assert_eq!(out.notes, ["the text was cut at 10 characters"]);
        assert_eq!(out.sections.len(), 2);
    }
}
