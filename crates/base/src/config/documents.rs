//! `[documents]`: how much of a document (PDF, DOCX, XLSX, ODS, CSV) the
//! agent reads into text, and when a PDF goes to the model as the file
//! itself (docs/operations.md, "Documents"). The same caps bound a
//! document that comes with a message and one `read_file` opens, so the
//! fs plugin is handed them too (`PluginsConfig::host_settings`).

use serde::Deserialize;

/// `[documents]`, checked. The first six are `hearth-documents`' caps,
/// which the agent and the fs plugin read documents under.
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentsConfig {
    /// The largest document read at all, and the most bytes unpacked from
    /// any one part of it.
    pub max_bytes: usize,
    /// PDF pages whose text is read; the rest are counted.
    pub max_pages: usize,
    /// Characters of text in all.
    pub max_chars: usize,
    /// Sheets of a workbook shown.
    pub max_sheets: usize,
    /// Rows of a sheet or CSV shown.
    pub max_rows: usize,
    /// Columns of a sheet or CSV shown.
    pub max_cols: usize,
    /// Whether a PDF goes to a model that reads PDFs (Anthropic's, when it
    /// sees images) as the file itself, a `document` block, rather than
    /// as its text.
    pub pdf_blocks: bool,
    /// The most pages of a PDF sent as the file (Anthropic takes 100 a
    /// request); a longer one is sent as its text. A request carries at
    /// most 100 pages of PDFs in all, the newest first.
    pub pdf_block_pages: usize,
    /// The most bytes of a PDF sent as the file (before base64, which adds
    /// a third: Anthropic takes 32 MB a request in all); a request carries
    /// at most 22 MiB of PDFs in all, the newest first.
    pub pdf_block_bytes: usize,
}

/// Anthropic's limit of PDF pages in one request.
const PDF_PAGES_LIMIT: usize = 100;

/// The most bytes of a PDF sent as the file: its base64 (four thirds) and
/// the rest of the request stay under Anthropic's 32 MB.
const PDF_BYTES_LIMIT: usize = 22 << 20;

impl Default for DocumentsConfig {
    /// The crate's own caps (32 MiB, 50 pages, 100,000 characters, 5
    /// sheets of 200 rows by 30 columns); PDFs sent as files up to 100
    /// pages and 20 MiB a request.
    fn default() -> Self {
        DocumentsConfig {
            max_bytes: 32 << 20,
            max_pages: 50,
            max_chars: 100_000,
            max_sheets: 5,
            max_rows: 200,
            max_cols: 30,
            pdf_blocks: true,
            pdf_block_pages: PDF_PAGES_LIMIT,
            pdf_block_bytes: 20 << 20,
        }
    }
}

impl DocumentsConfig {
    /// The caps as the fs plugin takes them (its `documents` setting).
    pub fn caps_settings(&self) -> serde_json::Value {
        serde_json::json!({
            "max_bytes": self.max_bytes,
            "max_pages": self.max_pages,
            "max_chars": self.max_chars,
            "max_sheets": self.max_sheets,
            "max_rows": self.max_rows,
            "max_cols": self.max_cols,
        })
    }
}

/// `[documents]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDocuments {
    max_bytes: Option<usize>,
    max_pages: Option<usize>,
    max_chars: Option<usize>,
    max_sheets: Option<usize>,
    max_rows: Option<usize>,
    max_cols: Option<usize>,
    pdf_blocks: Option<bool>,
    pdf_block_pages: Option<usize>,
    pdf_block_bytes: Option<usize>,
}

/// Checks `[documents]`; the error is `(key, message)`.
pub(super) fn build(raw: RawDocuments) -> Result<DocumentsConfig, (String, String)> {
    let d = DocumentsConfig::default();
    let within = |key: &str, value: Option<usize>, default: usize, lo: usize, hi: usize| {
        let value = value.unwrap_or(default);
        if (lo..=hi).contains(&value) {
            Ok(value)
        } else {
            Err((
                format!("documents.{key}"),
                format!("must be {lo} to {hi}, not {value}"),
            ))
        }
    };
    Ok(DocumentsConfig {
        // A document is read whole into memory: 256 MiB at most.
        max_bytes: within("max_bytes", raw.max_bytes, d.max_bytes, 1024, 256 << 20)?,
        max_pages: within("max_pages", raw.max_pages, d.max_pages, 1, 5_000)?,
        max_chars: within("max_chars", raw.max_chars, d.max_chars, 100, 2_000_000)?,
        max_sheets: within("max_sheets", raw.max_sheets, d.max_sheets, 1, 1_000)?,
        max_rows: within("max_rows", raw.max_rows, d.max_rows, 1, 1_000_000)?,
        max_cols: within("max_cols", raw.max_cols, d.max_cols, 1, 16_384)?,
        pdf_blocks: raw.pdf_blocks.unwrap_or(d.pdf_blocks),
        pdf_block_pages: within(
            "pdf_block_pages",
            raw.pdf_block_pages,
            d.pdf_block_pages,
            1,
            PDF_PAGES_LIMIT,
        )?,
        pdf_block_bytes: within(
            "pdf_block_bytes",
            raw.pdf_block_bytes,
            d.pdf_block_bytes,
            1024,
            PDF_BYTES_LIMIT,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_default_and_out_of_range_values_name_their_key() {
        assert_eq!(
            build(RawDocuments::default()).unwrap(),
            DocumentsConfig::default()
        );
        let raw = RawDocuments {
            max_rows: Some(0),
            ..RawDocuments::default()
        };
        let (key, message) = build(raw).unwrap_err();
        assert_eq!(key, "documents.max_rows");
        assert_eq!(message, "must be 1 to 1000000, not 0");
        let raw = RawDocuments {
            pdf_block_pages: Some(101),
            ..RawDocuments::default()
        };
        assert_eq!(build(raw).unwrap_err().0, "documents.pdf_block_pages");
    }
}
