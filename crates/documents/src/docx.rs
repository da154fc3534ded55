//! Word documents (Office Open XML): the main part's paragraphs as lines
//! (headings as `#` lines, list items as `- ` lines) and its tables as
//! rows of cells, read as a stream so a huge document stops at the cap
//! rather than being read whole. Headers, footers, footnotes, comments
//! and pictures are not read, and a note says nothing of them: they are
//! not part of the text a person reads as the document.

use std::io::Read;

use crate::document::{Caps, Document, Kind};
use crate::error::DocumentError;
use crate::out::{Meta, Out, count};
use crate::table::Grid;
use crate::xml::{Ev, Xml};
use crate::zipped::Zip;

const FORMAT: &str = "DOCX";

/// A DOCX file.
pub(crate) fn read(bytes: &[u8], caps: &Caps) -> Result<Document, DocumentError> {
    let mut zip = Zip::open(bytes, caps.max_bytes, FORMAT)?;
    let main = main_part(&mut zip)?;
    let title = crate::sheets::core_title(&mut zip)?;
    let mut out = Out::new(caps);
    let Some(entry) = zip.open_entry(&main)? else {
        return Err(DocumentError::Corrupt {
            format: FORMAT,
            place: format!("{main} is missing"),
        });
    };
    let mut body = Body::new(caps);
    let mut xml = Xml::new(entry);
    let cut = body.run(&mut xml).map_err(|e| DocumentError::Corrupt {
        format: FORMAT,
        place: format!("{main}: {e}"),
    })?;
    out.section(None, &body.text);
    if cut {
        out.note(format!(
            "{main} is over {} bytes; the rest was not read",
            count(caps.max_bytes)
        ));
    }
    for note in body.notes {
        out.note(note);
    }
    Ok(out.finish(Kind::Docx, bytes, Meta::single(title)))
}

/// The main part's path, from the package relationships (almost always
/// `word/document.xml`, but the package says).
fn main_part(zip: &mut Zip<'_>) -> Result<String, DocumentError> {
    let fallback = "word/document.xml".to_owned();
    let Some(entry) = zip.open_entry("_rels/.rels")? else {
        return Ok(fallback);
    };
    let mut xml = Xml::new(entry);
    while let Ok(ev) = xml.next() {
        match &ev {
            Ev::Eof { .. } => break,
            ev if ev.is_start(b"Relationship")
                && ev
                    .attr(b"Type")
                    .is_some_and(|t| t.ends_with("/officeDocument")) =>
            {
                if let Some(target) = ev.attr(b"Target") {
                    return Ok(target.trim_start_matches('/').to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(fallback)
}

/// The text being gathered from the main part.
struct Body {
    max_chars: usize,
    max_rows: usize,
    max_cols: usize,
    text: String,
    chars: usize,
    notes: Vec<String>,
    /// Paragraphs open, innermost last (a text box's paragraphs sit
    /// inside a paragraph of the body).
    paragraphs: Vec<Paragraph>,
    /// Inside `<w:t>`: its text is the document's.
    in_text: bool,
    /// Inside a run: a `<w:tab/>` there is a tab (elsewhere a tab stop).
    runs: usize,
    /// Depth inside a subtree whose text is a copy or deleted
    /// (`mc:Fallback`, `w:moveFrom`).
    skipping: usize,
    tables: usize,
    table: Option<Table>,
    tables_done: usize,
}

#[derive(Default)]
struct Paragraph {
    text: String,
    heading: Option<usize>,
    list: bool,
}

struct Table {
    grid: Grid,
    col: usize,
    span: usize,
    cell: String,
}

impl Body {
    fn new(caps: &Caps) -> Body {
        Body {
            max_chars: caps.max_chars,
            max_rows: caps.max_rows,
            max_cols: caps.max_cols,
            text: String::new(),
            chars: 0,
            notes: Vec::new(),
            paragraphs: Vec::new(),
            in_text: false,
            runs: 0,
            skipping: 0,
            tables: 0,
            table: None,
            tables_done: 0,
        }
    }

    /// Reads events to the end, or until there is more text than could
    /// be shown. Returns whether the byte cap cut the part.
    fn run<R: Read>(&mut self, xml: &mut Xml<R>) -> Result<bool, String> {
        loop {
            let ev = xml.next()?;
            if let Ev::Eof { cut } = ev {
                return Ok(cut);
            }
            self.event(&ev);
            // A little over the budget, so the cut is the budget's.
            if self.chars > self.max_chars {
                return Ok(false);
            }
        }
    }

    fn event(&mut self, ev: &Ev) {
        match ev {
            Ev::Start { name, empty, .. } => {
                let name = name.as_slice();
                if self.skipping > 0 || matches!(name, b"Fallback" | b"moveFrom") {
                    if !empty {
                        self.skipping += 1;
                    }
                    return;
                }
                self.start(name, ev, *empty);
            }
            Ev::End { name } => {
                if self.skipping > 0 {
                    self.skipping -= 1;
                    return;
                }
                self.end(name);
            }
            Ev::Text(text) => {
                if self.in_text && self.skipping == 0 {
                    if let Some(p) = self.paragraphs.last_mut() {
                        p.text.push_str(text);
                    }
                }
            }
            Ev::Eof { .. } => {}
        }
    }

    fn start(&mut self, name: &[u8], ev: &Ev, empty: bool) {
        match name {
            b"p" if !empty => self.paragraphs.push(Paragraph::default()),
            b"p" => self.line(Paragraph::default()),
            b"pStyle" => {
                let style = ev.attr(b"val").unwrap_or("");
                if let Some(p) = self.paragraphs.last_mut() {
                    p.heading = heading_level(style);
                    // "List Bullet", "List Number": the numbering is in
                    // the style, not the paragraph.
                    p.list |= style.starts_with("List");
                }
            }
            b"numPr" => {
                if let Some(p) = self.paragraphs.last_mut() {
                    p.list = true;
                }
            }
            b"r" if !empty => self.runs += 1,
            b"t" if !empty => self.in_text = true,
            b"tab" if self.runs > 0 => self.push('\t'),
            b"br" | b"cr" if self.runs > 0 => self.push('\n'),
            b"tbl" if !empty => {
                self.tables += 1;
                if self.tables == 1 {
                    self.table = Some(Table {
                        grid: Grid::new(self.max_rows, self.max_cols),
                        col: 0,
                        span: 1,
                        cell: String::new(),
                    });
                }
            }
            b"tr" if self.tables == 1 => {
                if let Some(t) = &mut self.table {
                    t.col = 0;
                }
            }
            b"tc" if self.tables == 1 => {
                if let Some(t) = &mut self.table {
                    t.cell.clear();
                    t.span = 1;
                }
            }
            b"gridSpan" if self.tables == 1 => {
                let span = ev.attr(b"val").and_then(|v| v.parse::<usize>().ok());
                if let (Some(t), Some(span)) = (&mut self.table, span) {
                    t.span = span.clamp(1, 64);
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, name: &[u8]) {
        match name {
            b"t" => self.in_text = false,
            b"r" => self.runs = self.runs.saturating_sub(1),
            b"p" => {
                if let Some(p) = self.paragraphs.pop() {
                    self.line(p);
                }
            }
            b"tc" if self.tables == 1 => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    t.grid.cell(t.col, &cell);
                    t.col = t.col.saturating_add(t.span);
                }
            }
            b"tr" if self.tables == 1 => {
                if let Some(t) = &mut self.table {
                    t.grid.end_row(1);
                }
            }
            b"tbl" if self.tables > 0 => {
                self.tables -= 1;
                if self.tables == 0 {
                    if let Some(t) = self.table.take() {
                        self.tables_done += 1;
                        let rendered = t.grid.render();
                        self.block(&rendered);
                        let what = format!("table {}", self.tables_done);
                        self.notes.extend(t.grid.notes(&what));
                    }
                }
            }
            _ => {}
        }
    }

    /// A character from a run: into the open paragraph.
    fn push(&mut self, c: char) {
        if let Some(p) = self.paragraphs.last_mut() {
            p.text.push(c);
        }
    }

    /// A finished paragraph: into the table cell it is in, or the text.
    fn line(&mut self, p: Paragraph) {
        let text = p.text.trim_end();
        if let Some(t) = &mut self.table {
            if !text.is_empty() {
                if !t.cell.is_empty() {
                    t.cell.push(' ');
                }
                t.cell.push_str(text);
            }
            return;
        }
        let mut line = String::new();
        if let Some(level) = p.heading {
            line.push_str(&"#".repeat(level));
            line.push(' ');
        } else if p.list && !text.is_empty() {
            line.push_str("- ");
        }
        line.push_str(text);
        if line.is_empty() && (self.text.is_empty() || self.text.ends_with("\n\n")) {
            return;
        }
        if p.heading.is_some() && !self.text.is_empty() && !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
        self.chars += line.chars().count() + 1;
        self.text.push_str(&line);
        self.text.push('\n');
    }

    /// A rendered table, set off by blank lines.
    fn block(&mut self, block: &str) {
        if !self.text.is_empty() && !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
        self.chars += block.chars().count() + 1;
        self.text.push_str(block);
        self.text.push('\n');
    }
}

/// `Heading2` → 2, `Title` → 1 (the style ids Word writes in English).
fn heading_level(style: &str) -> Option<usize> {
    if style.eq_ignore_ascii_case("Title") {
        return Some(1);
    }
    let rest = style
        .strip_prefix("Heading")
        .or_else(|| style.strip_prefix("heading"))?;
    let level: usize = rest.trim().parse().ok()?;
    (1..=6).contains(&level).then_some(level)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::docx;

    fn doc(body: &str) -> Document {
        read(&docx(body, Some("Quarterly report")), &Caps::default()).unwrap()
    }

    #[test]
    fn paragraphs_headings_lists_and_tables() {
        let d = doc(concat!(
            r#"<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Summary</w:t></w:r></w:p>"#,
            r#"<w:p><w:r><w:t xml:space="preserve">Sales rose </w:t></w:r><w:r><w:t>12%.</w:t></w:r></w:p>"#,
            r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/></w:numPr></w:pPr><w:r><w:t>first</w:t></w:r></w:p>"#,
            r#"<w:p><w:pPr><w:pStyle w:val="ListBullet"/></w:pPr><w:r><w:t>second</w:t></w:r></w:p>"#,
            r#"<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Region</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Total</w:t></w:r></w:p></w:tc></w:tr>"#,
            r#"<w:tr><w:tc><w:p><w:r><w:t>North</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>1</w:t></w:r></w:p><w:p><w:r><w:t>2</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#,
            r#"<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r></w:p>"#,
            r#"<w:p><w:r><w:delText>gone</w:delText></w:r></w:p>"#,
        ));
        assert_eq!(d.kind, Kind::Docx);
        assert_eq!(d.title.as_deref(), Some("Quarterly report"));
        assert_eq!(
            d.text(),
            "# Summary\nSales rose 12%.\n- first\n- second\n\n| Region | Total |\n|---|---|\n| North | 1 2 |\n\na\tb\nc"
        );
        assert!(!d.truncated, "{:?}", d.notes);
    }

    #[test]
    fn a_long_document_stops_at_the_budget() {
        let para =
            r#"<w:p><w:r><w:t>All work and no play makes Jack a dull boy.</w:t></w:r></w:p>"#;
        let bytes = docx(&para.repeat(10_000), None);
        let caps = Caps {
            max_chars: 1_000,
            ..Caps::default()
        };
        let d = read(&bytes, &caps).unwrap();
        assert!(d.truncated);
        assert!(d.sections[0].text.chars().count() <= 1_000);
        assert_eq!(d.notes, ["the text was cut at 1,000 characters"]);
    }

    #[test]
    fn broken_xml_says_where() {
        let err = read(&docx("<w:p><w:r><w:t>x</w:r", None), &Caps::default());
        assert!(
            matches!(
                &err,
                Ok(_) | Err(DocumentError::Corrupt { format: "DOCX", .. })
            ),
            "{err:?}"
        );
    }
}
