//! The result of reading a document: its text in sections (pages, sheets),
//! what kind it was, and notes on everything that was cut or could not be
//! read, so a caller never shows a model a partial file as if it were whole.
//! Also the caps that bound how much is read.

/// Limits on how much of a document is read. Every reader stops at them
/// and says so in [`Document::notes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    /// The largest file read at all, and the most bytes unpacked from any
    /// one part of a zip (DOCX, XLSX, ODS) or decompressed from any one
    /// PDF stream: a bigger file is refused with
    /// [`DocumentError::TooLarge`](crate::DocumentError::TooLarge).
    pub max_bytes: usize,
    /// PDF pages whose text is extracted; the rest are counted only.
    pub max_pages: usize,
    /// Characters of text in all, over every section.
    pub max_chars: usize,
    /// Sheets of a workbook shown; the rest are named in a note.
    pub max_sheets: usize,
    /// Rows of a sheet or CSV shown.
    pub max_rows: usize,
    /// Columns of a sheet or CSV shown.
    pub max_cols: usize,
}

impl Default for Caps {
    /// 32 MiB (the most the model providers take as one PDF), 50 pages,
    /// 100,000 characters (some 25,000 tokens), 5 sheets of 200 rows by
    /// 30 columns.
    fn default() -> Caps {
        Caps {
            max_bytes: 32 << 20,
            max_pages: 50,
            max_chars: 100_000,
            max_sheets: 5,
            max_rows: 200,
            max_cols: 30,
        }
    }
}

/// What a document was found to be, by its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A PDF: one section per page read.
    Pdf,
    /// A Word document (Office Open XML): one section.
    Docx,
    /// An Excel workbook (Office Open XML): one section per sheet.
    Xlsx,
    /// An OpenDocument spreadsheet: one section per sheet.
    Ods,
    /// Comma-, semicolon- or tab-separated values: one section.
    Csv,
    /// Markdown, as it is: one section.
    Markdown,
    /// Plain text, as it is: one section.
    Text,
}

impl Kind {
    /// The kind's usual name, for notes and messages ("PDF", "XLSX").
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pdf => "PDF",
            Kind::Docx => "DOCX",
            Kind::Xlsx => "XLSX",
            Kind::Ods => "ODS",
            Kind::Csv => "CSV",
            Kind::Markdown => "Markdown",
            Kind::Text => "text",
        }
    }

    /// The kind's MIME type, for a caller that passes the file on.
    pub fn mime(self) -> &'static str {
        match self {
            Kind::Pdf => "application/pdf",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            Kind::Ods => "application/vnd.oasis.opendocument.spreadsheet",
            Kind::Csv => "text/csv",
            Kind::Markdown => "text/markdown",
            Kind::Text => "text/plain",
        }
    }
}

/// One part of a document: a PDF page, a sheet, or the whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// What the part is called ("page 3", "sheet 'Raw'"); `None` for the
    /// single section of a DOCX or text file.
    pub name: Option<String>,
    /// Its text: plain text, or rows of a table as `| a | b |` lines.
    pub text: String,
}

/// A document read into text, with what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// What the bytes were found to be.
    pub kind: Kind,
    /// The title the document gives itself (PDF `/Title`, the Office
    /// files' `dc:title`, a Markdown file's first `# ` heading), if any.
    pub title: Option<String>,
    /// The parts read, in order; empty for a scanned PDF.
    pub sections: Vec<Section>,
    /// Whether anything was cut by a cap or left out as unreadable.
    pub truncated: bool,
    /// What was cut or lost, each a short sentence for the model: "showed
    /// 20 of 143 pages", "sheet 'Raw' left out".
    pub notes: Vec<String>,
    /// A PDF none of whose pages read has a text layer: a scan or
    /// pictures of text. The caller can send the PDF itself (an Anthropic
    /// `document` block, if `byte_len` fits) or the first page as an image.
    pub scanned: bool,
    /// The number of pages (PDF) or sheets (XLSX, ODS) the document has,
    /// read or not; 1 for the others.
    pub page_count: usize,
    /// The size of the bytes read, so a caller can decide whether to send
    /// the original file to the model as well (a PDF `document` block has
    /// a byte limit).
    pub byte_len: usize,
}

impl Document {
    /// The whole text, as a model should see it: each named section under
    /// a `## name` line, then the notes, if any, after a `[...]` marker.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for section in &self.sections {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            if let Some(name) = &section.name {
                out.push_str("## ");
                out.push_str(name);
                out.push('\n');
            }
            out.push_str(section.text.trim_end());
        }
        if !self.notes.is_empty() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push('[');
            out.push_str(&self.notes.join("; "));
            out.push(']');
        }
        out
    }
}
