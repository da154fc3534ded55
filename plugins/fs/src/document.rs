//! `read_file` on a document: a PDF, Word file or spreadsheet is answered
//! with its text (hearth-documents, under the `[documents]` caps the host
//! passes in), with notes on what was cut, instead of a refusal to show
//! binary bytes. Raw text files never come here: they stay as they are,
//! line ranges and all. A scanned PDF's answer names its first page for
//! the host to show the model (`"image": {"path", "page": 1}`).
//!
//! Only the container formats are taken (PDF, DOCX, XLSX, ODS): their
//! first bytes are checked before the file is read whole, so a large text
//! or binary file costs nothing more than before.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use hearth_documents::{Caps, DocumentError, Kind};
use hearth_sdk::PluginError;
use serde::Deserialize;
use serde_json::{Value, json};

/// The first bytes looked at: a PDF may have junk before `%PDF-`, which
/// readers accept within the first kilobyte.
const HEAD: usize = 1024;

/// The most characters of a document's text `read_file` answers with,
/// whatever `[documents] max_chars` allows a message's attachment: the
/// host shows the model 32,000 characters of a tool's answer (JSON
/// escapes included), and the notes on what was cut come last, so they
/// must fit in it.
pub const READ_MAX_CHARS: usize = 20_000;

/// The `documents` setting, as the host writes it from `[documents]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapsSetting {
    max_bytes: usize,
    max_pages: usize,
    max_chars: usize,
    max_sheets: usize,
    max_rows: usize,
    max_cols: usize,
}

impl From<CapsSetting> for Caps {
    fn from(c: CapsSetting) -> Caps {
        Caps {
            max_bytes: c.max_bytes,
            max_pages: c.max_pages,
            max_chars: c.max_chars,
            max_sheets: c.max_sheets,
            max_rows: c.max_rows,
            max_cols: c.max_cols,
        }
    }
}

/// The answer for `file` at `shown` when it is a document; `None` for any
/// other file (left at its start for the text or base64 reader).
pub fn read_document(
    file: &mut File,
    shown: &str,
    size: u64,
    caps: &Caps,
) -> Result<Option<Value>, PluginError> {
    let io = |e: std::io::Error| PluginError::failed(format!("cannot read {shown}: {e}"));
    let mut head = Vec::with_capacity(HEAD);
    (&mut *file)
        .take(HEAD as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    // At the start, the bytes say what the file is; `%PDF-` further in
    // (after junk, as readers allow) may as well be text about PDFs, so a
    // file that does not read as one is left to the text reader.
    let certain = head.starts_with(b"PK\x03\x04") || head.starts_with(b"%PDF-");
    if !certain && !contains(&head, b"%PDF-") {
        return Ok(None);
    }
    if size > caps.max_bytes as u64 {
        return Err(PluginError::failed(format!(
            "{shown} is a document of {size} bytes, over the {} bytes [documents] max_bytes \
             allows; read it with encoding \"base64\"",
            caps.max_bytes
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    (&mut *file)
        .take(caps.max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let caps = Caps {
        max_chars: caps.max_chars.min(READ_MAX_CHARS),
        ..caps.clone()
    };
    let doc = match hearth_documents::read(&bytes, shown, "", &caps) {
        Ok(doc) if matches!(doc.kind, Kind::Pdf | Kind::Docx | Kind::Xlsx | Kind::Ods) => doc,
        // A zip that is no Office file, or text after all: as before.
        Ok(_) | Err(DocumentError::Unsupported { .. }) => return Ok(None),
        Err(_) if !certain => return Ok(None),
        Err(e) => {
            return Err(PluginError::failed(format!(
                "{shown} cannot be read as a document: {e}"
            )));
        }
    };
    let mut out = json!({
        "path": shown,
        "encoding": "document",
        "kind": doc.kind.name(),
        "mime": doc.kind.mime(),
        "size": size,
        "content": doc.text(),
        "truncated": doc.truncated,
    });
    match doc.kind {
        Kind::Pdf => out["pages"] = json!(doc.page_count),
        Kind::Xlsx | Kind::Ods => out["sheets"] = json!(doc.page_count),
        _ => {}
    }
    if let Some(title) = &doc.title {
        out["title"] = json!(title);
    }
    if doc.scanned {
        // The host shows the model the first page, as it shows an image.
        out["scanned"] = json!(true);
        out["image"] = json!({ "path": shown, "mime": doc.kind.mime(), "page": 1 });
    }
    Ok(Some(out))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
