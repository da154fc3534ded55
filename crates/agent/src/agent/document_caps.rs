//! `[documents]`' caps as `hearth-documents` takes them: below both the
//! attachments' documents and the images plugin tools name (a scanned
//! PDF's first page), which both read documents under them.

use hearth_base::config::DocumentsConfig;
use hearth_documents::Caps;

/// The caps `config` sets, as the reader takes them.
pub fn caps(config: &DocumentsConfig) -> Caps {
    Caps {
        max_bytes: config.max_bytes,
        max_pages: config.max_pages,
        max_chars: config.max_chars,
        max_sheets: config.max_sheets,
        max_rows: config.max_rows,
        max_cols: config.max_cols,
    }
}
