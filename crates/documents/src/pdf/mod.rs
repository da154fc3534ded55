//! PDFs: the text of each page (pdf-extract, which places characters by
//! their positions, over lopdf's parse), capped in pages and characters.
//! A PDF whose pages have no text layer is reported as scanned, with its
//! page count, so the caller can send it to the model whole or as an
//! image instead. An encrypted PDF is refused.
//!
//! Neither crate bounds what it does with hostile input, so the bytes
//! pass `guard` first (encryption, cross-reference streams), every
//! stream is checked against the cap as lopdf loads it (the load filter
//! below: pictures emptied, since only text is read, and streams that
//! would inflate past the cap emptied too), `repair` breaks the loops
//! pdf-extract would recurse into, and each page is extracted inside
//! `catch_unwind`, since pdf-extract panics on much malformed input.

mod decode;
mod guard;
mod picture;
mod repair;

pub use picture::{PageImage, first_page_image};

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use lopdf::{Document as Pdf, LoadOptions, Object, ObjectId, Stream};

use crate::document::{Caps, Document, Kind};
use crate::error::DocumentError;
use crate::out::{Meta, Out, count, plural};

use decode::Filter;

const FORMAT: &str = "PDF";

/// The most any one stream (a page's content, a form, a font, an object
/// stream) may inflate to; lopdf holds it whole and pdf-extract parses it
/// into operations many times its size.
const STREAM_CAP: usize = 8 << 20;

thread_local! {
    /// The load filter's cap and what it emptied: lopdf takes the filter
    /// as a plain `fn`, so its state lives here, for this thread's load.
    static LOAD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// A PDF file.
pub(crate) fn read(bytes: &[u8], caps: &Caps) -> Result<Document, DocumentError> {
    guard::check(bytes, caps)?;
    let cap = STREAM_CAP.min(caps.max_bytes);
    LOAD.with(|state| state.set((cap, 0)));
    let options = LoadOptions {
        filter: Some(load_filter),
        ..LoadOptions::default()
    };
    let loaded = catch_unwind(|| Pdf::load_mem_with_options(bytes, options));
    let emptied = LOAD.with(|state| state.replace((0, 0)).1);
    let mut pdf = match loaded {
        Ok(Ok(pdf)) => pdf,
        Ok(Err(lopdf::Error::Decryption(_))) => {
            return Err(DocumentError::Encrypted { format: FORMAT });
        }
        Ok(Err(e)) => return Err(corrupt(&format!("structure: {e}"))),
        Err(_) => return Err(corrupt("structure: the parser gave up")),
    };
    if pdf.encryption_state.is_some() || pdf.trailer.get(b"Encrypt").is_ok() {
        return Err(DocumentError::Encrypted { format: FORMAT });
    }
    let pages: Vec<ObjectId> = pdf.page_iter().collect();
    if pages.is_empty() {
        return Err(corrupt("page tree: no pages"));
    }
    let title = title(&pdf);
    let reading: Vec<ObjectId> = pages.iter().copied().take(caps.max_pages).collect();
    let repairs = repair::repair(&mut pdf, &reading, cap);

    let mut out = Out::new(caps);
    let mut shown = 0;
    let mut blank = Vec::new();
    let mut unreadable = Vec::new();
    let mut too_big = Vec::new();
    for (i, &page) in reading.iter().enumerate() {
        if out.is_full() {
            break;
        }
        let number = i + 1;
        shown = number;
        if repair::page_content(&pdf, page, cap).is_none() {
            too_big.push(number);
            continue;
        }
        match page_text(&pdf, page_number(&pdf, page)) {
            Some(text) if text.trim().is_empty() => blank.push(number),
            Some(text) => {
                out.section(Some(format!("page {number}")), &text);
            }
            None => unreadable.push(number),
        }
    }

    let scanned = blank.len() == shown && shown > 0;
    if scanned {
        out.note(format!(
            "the PDF has no text layer (a scan?): {}, none with text",
            plural(pages.len(), "page", "pages")
        ));
    } else if !blank.is_empty() {
        out.note(format!(
            "{} no text (scanned or pictures?)",
            pages_list(&blank, "has", "have")
        ));
    }
    if !unreadable.is_empty() {
        out.note(format!(
            "{} could not be read",
            pages_list(&unreadable, "", "")
        ));
    }
    if !too_big.is_empty() {
        out.note(format!(
            "{} over {} bytes of drawing and left out",
            pages_list(&too_big, "is", "are"),
            count(cap)
        ));
    }
    if shown < pages.len() {
        out.note(format!(
            "showed {} of {} pages",
            count(shown),
            count(pages.len())
        ));
    }
    if emptied > 0 || repairs.forms_cut > 0 {
        out.note(format!(
            "{} left out (too large, or drawn in a loop)",
            plural(
                emptied + repairs.forms_cut,
                "part of the PDF was",
                "parts of the PDF were"
            )
        ));
    }
    let meta = Meta {
        title,
        scanned,
        page_count: pages.len(),
    };
    Ok(out.finish(Kind::Pdf, bytes, meta))
}

fn corrupt(place: &str) -> DocumentError {
    DocumentError::Corrupt {
        format: FORMAT,
        place: place.to_owned(),
    }
}

/// "page 3 has", "pages 3, 4 have" (the verb left off when empty).
fn pages_list(numbers: &[usize], one: &str, many: &str) -> String {
    let list: Vec<String> = numbers.iter().take(20).map(usize::to_string).collect();
    let more = if numbers.len() > 20 {
        format!(" and {} more", numbers.len() - 20)
    } else {
        String::new()
    };
    let (noun, verb) = if numbers.len() == 1 {
        ("page", one)
    } else {
        ("pages", many)
    };
    let verb = if verb.is_empty() {
        String::new()
    } else {
        format!(" {verb}")
    };
    format!("{noun} {}{more}{verb}", list.join(", "))
}

/// lopdf's number for a page (pdf-extract looks pages up by it): its
/// place in the page tree, from 1.
fn page_number(pdf: &Pdf, page: ObjectId) -> u32 {
    pdf.page_iter()
        .position(|p| p == page)
        .map_or(0, |i| u32::try_from(i + 1).unwrap_or(u32::MAX))
}

/// One page's text, or `None` when pdf-extract fails or panics on it.
fn page_text(pdf: &Pdf, number: u32) -> Option<String> {
    let extracted = catch_unwind(AssertUnwindSafe(|| {
        let mut text = String::new();
        let mut output = pdf_extract::PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(pdf, &mut output, number).map(|()| text)
    }));
    match extracted {
        Ok(Ok(text)) => Some(tidy(&text)),
        _ => None,
    }
}

/// Lines without trailing blanks, and no more than one empty line in a
/// row (pdf-extract spaces lines by their distance on the page).
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut empty = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            empty += 1;
            if empty > 1 {
                continue;
            }
        } else {
            empty = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// The `/Title` of the document information dictionary.
fn title(pdf: &Pdf) -> Option<String> {
    let info = pdf.trailer.get_deref(b"Info", pdf).ok()?.as_dict().ok()?;
    let title = info.get_deref(b"Title", pdf).ok()?;
    lopdf::decode_text_string(title)
        .ok()
        .map(|t| t.trim().to_owned())
}

/// lopdf's hook on every object it loads (lopdf's `FilterFunc`): empties
/// pictures (only text is read, and a picture is most of a PDF's bytes)
/// and any stream whose filters would inflate it past the cap.
fn load_filter(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    if let Object::Stream(stream) = object {
        let (cap, _) = LOAD.with(Cell::get);
        if is_image(stream) || inflates_past(stream, cap) {
            if !is_image(stream) {
                LOAD.with(|state| {
                    let (cap, emptied) = state.get();
                    state.set((cap, emptied + 1));
                });
            }
            stream.dict.remove(b"Filter");
            stream.dict.remove(b"DecodeParms");
            stream.set_content(Vec::new());
        }
    }
    // lopdf keeps the object it passed in, and takes the one returned
    // only for those inside object streams (never streams): both must be it.
    Some((id, object.clone()))
}

fn is_image(stream: &Stream) -> bool {
    stream
        .dict
        .get(b"Subtype")
        .and_then(Object::as_name)
        .is_ok_and(|s| s == b"Image")
}

/// Whether the stream's filters, applied as lopdf applies them, make more
/// than `cap` bytes.
fn inflates_past(stream: &Stream, cap: usize) -> bool {
    let Ok(filters) = stream.filters() else {
        return false;
    };
    let early = stream
        .dict
        .get(b"DecodeParms")
        .and_then(Object::as_dict)
        .and_then(|p| p.get(b"EarlyChange"))
        .and_then(Object::as_i64)
        .map_or(true, |v| v != 0);
    let mut data = std::borrow::Cow::Borrowed(stream.content.as_slice());
    for name in filters {
        let filter = match name {
            b"FlateDecode" => Filter::Flate,
            b"LZWDecode" => Filter::Lzw { early },
            b"ASCII85Decode" => Filter::Ascii85,
            // lopdf decodes no other filter: it stops there.
            _ => return false,
        };
        match decode::decode(filter, &data, cap) {
            Ok(out) => data = std::borrow::Cow::Owned(out),
            Err(()) => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests;
