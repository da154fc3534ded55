//! Documents that come with a message: a PDF, Word file, spreadsheet or
//! CSV reaches the model as what it says, not only as a path.
//!
//! The file is read by `hearth-documents` under the `[documents]` caps
//! (pages, rows, characters, bytes), and the model is told what was cut.
//! A PDF goes to a model that reads PDFs (`ImageSettings::pdfs`) as the
//! file itself, a `Block::Document` saved by its hash like an image, when
//! it is within `pdf_block_pages` and `pdf_block_bytes`; any other
//! document goes as its text. A scanned PDF (no text layer) is said to be
//! one, and its first page is shown as an image, through the same path as
//! a photo. A damaged or encrypted file is a note, never a failed turn.
//!
//! Each request then carries the files of the newest PDFs within
//! Anthropic's own limits (100 pages, [`REQUEST_PDF_BYTES`]); an older one
//! past them goes as its text. The choice depends on the stored history
//! alone, so every request of a conversation carries the same bytes for a
//! PDF, and the cached prompt prefix holds.

use std::io::Read;
use std::path::Path;

use hearth_base::config::DocumentsConfig;
use hearth_documents::{Caps, Document, DocumentError, Kind};
use hearth_model::llm::{Block, Message, Pdf};
use hearth_model::media::{self, ImageSettings};
use hearth_sdk::protocol::Attachment;

use super::document_caps::caps;
use super::images::{self, Shown};

/// The most PDF pages one request carries as files: Anthropic's limit.
pub const REQUEST_PDF_PAGES: usize = 100;

/// The most PDF bytes one request carries as files: their base64 and the
/// rest of the request within Anthropic's 32 MB.
pub const REQUEST_PDF_BYTES: usize = 22 << 20;

/// An attachment as a document: `None` when it is none (it is then an
/// image or an ordinary file). Reads the file: call it off the async
/// threads.
pub fn attachment(
    a: &Attachment,
    config: &DocumentsConfig,
    settings: &ImageSettings,
    dir: &Path,
) -> Option<Shown> {
    let path = Path::new(&a.path);
    let certain = match looks_like_a_document(a, path) {
        Looks::No => return None,
        Looks::Maybe => false,
        Looks::Certain => true,
    };
    let named = format!(
        "\n\n[Attached file: {} ({}, {} bytes), saved at {}",
        a.name, a.mime, a.size, a.path
    );
    let refused = |why: String| Shown {
        note: format!("{named}; it could not be read as a document: {why}]"),
        blocks: Vec::new(),
    };
    let caps = caps(config);
    let bytes = match read_capped(path, caps.max_bytes) {
        Ok(bytes) => bytes,
        Err(why) => return Some(refused(why)),
    };
    let doc = match hearth_documents::read(&bytes, &a.name, &a.mime, &caps) {
        Ok(doc) => doc,
        // Not a document after all (a zip of photos): an ordinary file.
        Err(DocumentError::Unsupported { .. }) => return None,
        // Text that only mentions `%PDF-`, or a CSV that is not one.
        Err(_) if !certain => return None,
        Err(e) => return Some(refused(e.to_string())),
    };
    if doc.kind == Kind::Pdf
        && settings.pdfs
        && config.pdf_blocks
        && doc.page_count <= config.pdf_block_pages
        && bytes.len() <= config.pdf_block_bytes
    {
        match as_pdf_block(a, &doc, &bytes, dir) {
            Ok(shown) => return Some(shown),
            Err(e) => tracing::warn!(file = %a.path, "a PDF is sent as its text: {e}"),
        }
    }
    Some(as_text(a, &doc, &bytes, &caps, settings, dir))
}

/// The messages of a request with each PDF's file carried (`data`) for
/// the newest within the request's limits, and none for a model that does
/// not read PDFs: the providers send the others as their text.
pub fn for_request(mut messages: Vec<Message>, settings: &ImageSettings) -> Vec<Message> {
    if !settings.pdfs {
        return messages;
    }
    let (mut pages, mut bytes) = (0, 0);
    for message in messages.iter_mut().rev() {
        for block in message.content.iter_mut().rev() {
            let Block::Document(pdf) = block else {
                continue;
            };
            if pages + pdf.pages > REQUEST_PDF_PAGES || bytes + pdf.bytes > REQUEST_PDF_BYTES {
                continue;
            }
            match media::encoded_pdf(pdf) {
                Ok(()) => {
                    pages += pdf.pages;
                    bytes += pdf.bytes;
                }
                Err(e) => tracing::warn!(pdf = %pdf.path, "a PDF is sent as its text: {e}"),
            }
        }
    }
    messages
}

/// What an attachment's first bytes, type and name say.
enum Looks {
    /// Nothing this module reads.
    No,
    /// Maybe one: `%PDF-` past the start, or a CSV by its type or name;
    /// if it does not read, it is an ordinary file.
    Maybe,
    /// A PDF or a zip from its first byte.
    Certain,
}

/// Whether `a` may be a document this module reads: a PDF or zip by its
/// first bytes, or CSV by its type or name. Text and Markdown stay with
/// the attachments' inline text, as they were.
fn looks_like_a_document(a: &Attachment, path: &Path) -> Looks {
    let mut head = Vec::with_capacity(1024);
    let read = std::fs::File::open(path).and_then(|f| f.take(1024).read_to_end(&mut head));
    if read.is_err() {
        return Looks::No;
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"%PDF-") {
        return Looks::Certain;
    }
    let csv = matches!(
        a.mime.as_str(),
        "text/csv" | "text/tab-separated-values" | "application/csv"
    ) || path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "csv" | "tsv"));
    if csv || head.windows(5).any(|w| w == b"%PDF-") {
        Looks::Maybe
    } else {
        Looks::No
    }
}

/// The file at `path`, if it is within `max` bytes.
fn read_capped(path: &Path, max: usize) -> Result<Vec<u8>, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .len();
    if size > max as u64 {
        return Err(format!(
            "it is {size} bytes, over the {max} bytes [documents] max_bytes allows"
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(bytes)
}

/// The PDF as the file, saved in `dir` by its hash.
fn as_pdf_block(a: &Attachment, doc: &Document, bytes: &[u8], dir: &Path) -> Result<Shown, String> {
    let (saved, sha256) = media::save_bytes(dir, bytes, "pdf")?;
    let scan = if doc.scanned {
        "; it has no text layer (a scan?), so its pages are read as pictures"
    } else {
        ""
    };
    Ok(Shown {
        note: format!(
            "\n\n[Attached PDF: {} ({}, {} bytes), saved at {}; sent below as the file{scan}]",
            a.name,
            pages(doc.page_count),
            bytes.len(),
            a.path
        ),
        blocks: vec![Block::Document(Pdf {
            name: a.name.clone(),
            path: saved.display().to_string(),
            sha256,
            pages: doc.page_count,
            bytes: bytes.len(),
            source: a.path.clone(),
            text: doc.text(),
            data: None,
        })],
    })
}

/// The document as its text and notes; a scan as what it is, with its
/// first page as an image when that can be had.
fn as_text(
    a: &Attachment,
    doc: &Document,
    bytes: &[u8],
    caps: &Caps,
    settings: &ImageSettings,
    dir: &Path,
) -> Shown {
    let what = match doc.kind {
        Kind::Pdf => format!("PDF, {}", pages(doc.page_count)),
        Kind::Xlsx | Kind::Ods => format!(
            "{} spreadsheet, {} sheet{}",
            doc.kind.name(),
            doc.page_count,
            if doc.page_count == 1 { "" } else { "s" }
        ),
        Kind::Docx => "Word document".to_owned(),
        other => other.name().to_owned(),
    };
    let head = format!(
        "\n\n[Attached document: {} ({what}, {} bytes), saved at {}",
        a.name,
        bytes.len(),
        a.path
    );
    if !doc.scanned {
        return Shown {
            note: format!("{head}; its text follows]\n```\n{}\n```", doc.text()),
            blocks: Vec::new(),
        };
    }
    let scan = "it has no text layer: it is a scan or pictures of text, so hearth cannot read it";
    let picture = hearth_documents::first_page_image(bytes, caps)
        .map_err(|e| e.to_string())
        .and_then(|page| {
            let name = format!("{}, page 1", a.name);
            images::document_picture(&name, &page.bytes, &a.path, settings, dir)
        });
    match picture {
        Ok(image) => Shown {
            note: format!(
                "{head}; {scan}; its first page is shown below as an image ({}x{})]",
                image.width, image.height
            ),
            blocks: vec![Block::Image(image)],
        },
        Err(why) => Shown {
            note: format!("{head}; {scan}; its first page cannot be shown either: {why}]"),
            blocks: Vec::new(),
        },
    }
}

/// "1 page", "12 pages".
fn pages(n: usize) -> String {
    if n == 1 {
        "1 page".to_owned()
    } else {
        format!("{n} pages")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_base::config::ProviderKind;
    use hearth_model::llm::Role;
    use hearth_model::media::Limits;

    fn settings(pdfs: bool) -> ImageSettings {
        ImageSettings {
            vision: true,
            turns: 3,
            limits: Limits::for_provider(ProviderKind::Anthropic, None),
            pdfs,
        }
    }

    /// A user message holding one saved PDF of `pages` pages.
    fn with_pdf(dir: &Path, name: &str, pages: usize) -> Message {
        let bytes = format!("%PDF-1.4 {name}").into_bytes();
        let (path, sha256) = media::save_bytes(dir, &bytes, "pdf").unwrap();
        Message {
            role: Role::User,
            content: vec![Block::Document(Pdf {
                name: name.into(),
                path: path.display().to_string(),
                sha256,
                pages,
                bytes: bytes.len(),
                source: name.into(),
                text: format!("the text of {name}"),
                data: None,
            })],
        }
    }

    fn carried(messages: &[Message]) -> Vec<bool> {
        messages
            .iter()
            .map(|m| matches!(&m.content[0], Block::Document(p) if p.data.is_some()))
            .collect()
    }

    #[test]
    fn a_request_carries_the_newest_pdfs_within_the_page_limit() {
        let dir = tempfile::tempdir().unwrap();
        let history = vec![
            with_pdf(dir.path(), "old.pdf", 60),
            with_pdf(dir.path(), "mid.pdf", 30),
            with_pdf(dir.path(), "new.pdf", 50),
        ];
        // 50 + 30 fit in 100 pages; the oldest 60 do not.
        let messages = for_request(history.clone(), &settings(true));
        assert_eq!(carried(&messages), [false, true, true]);
        // The same history gives the same request: the cache holds.
        assert_eq!(for_request(history.clone(), &settings(true)), messages);
        // A model that does not read PDFs gets none of the files.
        assert_eq!(
            carried(&for_request(history.clone(), &settings(false))),
            [false; 3]
        );
        // A copy changed since it was saved is not sent, and leaves its
        // room to the older one.
        if let Block::Document(p) = &history[2].content[0] {
            std::fs::write(&p.path, b"something else").unwrap();
        }
        assert_eq!(
            carried(&for_request(history, &settings(true))),
            [true, true, false]
        );
    }
}
