//! hearth's documents: a file's bytes turned into text a model can read
//! (PDF, DOCX, XLSX, ODS, CSV, Markdown, plain text), with caps on how
//! much is read and notes on what was cut or lost, so the agent can take
//! a document a person sends it and never pass on half of one as whole.
//!
//! The kind is sniffed from the bytes (see [`kind_of`]), not taken from
//! the name or MIME type a sender gives. Everything is pure
//! Rust and bounded on hostile input: no entry of a zip is unpacked past
//! [`Caps::max_bytes`], no PDF stream inflates past a cap, and the
//! readers never panic (a panic in a dependency becomes
//! [`DocumentError::Corrupt`]).
//!
//! ```
//! let csv = b"city,people\nOslo,709000\n";
//! let doc = hearth_documents::read(csv, "towns.csv", "text/csv", &Default::default()).unwrap();
//! assert_eq!(doc.text(), "| city | people |\n|---|---|\n| Oslo | 709000 |");
//! ```

mod csv;
mod document;
mod docx;
mod error;
mod ods;
mod out;
mod pdf;
mod sheets;
mod sniff;
mod table;
mod text;
mod xlsx;
mod xml;
mod zipped;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod testdata;

use std::panic::{AssertUnwindSafe, catch_unwind};

pub use document::{Caps, Document, Kind, Section};
pub use error::{DocumentError, PictureError};
pub use pdf::{PageImage, first_page_image};

use sniff::Sniffed;

/// Reads `bytes` as a document. `name` and `mime` are what the sender
/// said the file is; they only tell text flavours apart (CSV, Markdown),
/// since the bytes decide the format.
pub fn read(bytes: &[u8], name: &str, mime: &str, caps: &Caps) -> Result<Document, DocumentError> {
    let sniffed = sniff_capped(bytes, name, mime, caps)?;
    let format = kind(sniffed).name();
    // The readers are written not to panic; this is for their crates.
    catch_unwind(AssertUnwindSafe(|| read_as(sniffed, bytes, caps))).unwrap_or_else(|_| {
        Err(DocumentError::Corrupt {
            format,
            place: "the reader failed on it".to_owned(),
        })
    })
}

/// What kind of document `bytes` are, without reading them: for a caller
/// that decides where a file goes before reading it.
pub fn kind_of(bytes: &[u8], name: &str, mime: &str, caps: &Caps) -> Result<Kind, DocumentError> {
    sniff_capped(bytes, name, mime, caps).map(kind)
}

fn sniff_capped(
    bytes: &[u8],
    name: &str,
    mime: &str,
    caps: &Caps,
) -> Result<Sniffed, DocumentError> {
    if bytes.len() > caps.max_bytes {
        return Err(DocumentError::TooLarge {
            format: "file",
            what: format!(
                "{} bytes, over the limit of {}",
                out::count(bytes.len()),
                out::count(caps.max_bytes)
            ),
        });
    }
    catch_unwind(|| sniff::sniff(bytes, name, mime, caps)).unwrap_or_else(|_| {
        Err(DocumentError::Unsupported {
            detected: "a file whose kind could not be told".to_owned(),
        })
    })
}

fn kind(sniffed: Sniffed) -> Kind {
    match sniffed {
        Sniffed::Pdf => Kind::Pdf,
        Sniffed::Docx => Kind::Docx,
        Sniffed::Xlsx => Kind::Xlsx,
        Sniffed::Ods => Kind::Ods,
        Sniffed::Csv { .. } => Kind::Csv,
        Sniffed::Markdown => Kind::Markdown,
        Sniffed::Text => Kind::Text,
    }
}

fn read_as(sniffed: Sniffed, bytes: &[u8], caps: &Caps) -> Result<Document, DocumentError> {
    match sniffed {
        Sniffed::Pdf => pdf::read(bytes, caps),
        Sniffed::Docx => docx::read(bytes, caps),
        Sniffed::Xlsx => xlsx::read(bytes, caps),
        Sniffed::Ods => ods::read(bytes, caps),
        Sniffed::Csv { tab } => Ok(csv::read(bytes, tab, caps)),
        Sniffed::Markdown => Ok(text::read(bytes, Kind::Markdown, caps)),
        Sniffed::Text => Ok(text::read(bytes, Kind::Text, caps)),
    }
}
