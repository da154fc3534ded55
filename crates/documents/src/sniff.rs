//! What a file really is, from its bytes: magic numbers, and for the zip
//! based formats the `mimetype` entry (OpenDocument) or
//! `[Content_Types].xml` (Office Open XML). The name and MIME type a
//! sender gives are often wrong (a "report.pdf" that is a PNG, an XLSX
//! sent as `application/octet-stream`); they are used only to tell the
//! flavours of text apart, which the bytes cannot.

use crate::document::Caps;
use crate::error::DocumentError;
use crate::text::looks_like_text;
use crate::zipped::Zip;

/// What to read the bytes as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    Pdf,
    Docx,
    Xlsx,
    Ods,
    Text,
    Markdown,
    /// Separated values; `tab` when said to be tab-separated.
    Csv {
        tab: bool,
    },
}

/// Binary formats known by their first bytes, none of them a document.
const MAGIC: &[(usize, &[u8], &str)] = &[
    (0, b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (0, b"\xFF\xD8\xFF", "a JPEG image"),
    (0, b"GIF87a", "a GIF image"),
    (0, b"GIF89a", "a GIF image"),
    (8, b"WEBP", "a WebP image"),
    (0, b"II*\0", "a TIFF image"),
    (0, b"MM\0*", "a TIFF image"),
    (4, b"ftypheic", "a HEIC image"),
    (4, b"ftypmif1", "a HEIF image"),
    (4, b"ftypavif", "an AVIF image"),
    (4, b"ftyp", "a video or audio file (MP4/MOV)"),
    (0, b"OggS", "an Ogg audio or video file"),
    (0, b"ID3", "an MP3 audio file"),
    (0, b"fLaC", "a FLAC audio file"),
    (8, b"WAVE", "a WAV audio file"),
    (0, b"\x1A\x45\xDF\xA3", "a Matroska/WebM video"),
    (0, b"\x1f\x8b", "a gzip archive"),
    (0, b"BZh", "a bzip2 archive"),
    (0, b"7z\xBC\xAF\x27\x1C", "a 7-Zip archive"),
    (0, b"Rar!\x1A\x07", "a RAR archive"),
    (0, b"\xFD7zXZ\0", "an xz archive"),
    (0, b"\x28\xB5\x2F\xFD", "a zstd archive"),
    (257, b"ustar", "a tar archive"),
    (0, b"\x7fELF", "a program (ELF)"),
    (0, b"MZ", "a Windows program"),
    (0, b"\0asm", "a WebAssembly module"),
    (0, b"SQLite format 3\0", "an SQLite database"),
    (0, b"%!PS", "a PostScript file"),
];

/// What `bytes` are, or why they are nothing this crate reads.
pub(crate) fn sniff(
    bytes: &[u8],
    name: &str,
    mime: &str,
    caps: &Caps,
) -> Result<Sniffed, DocumentError> {
    // A PDF may have junk before its header; readers look a little way in.
    let head = &bytes[..bytes.len().min(1024)];
    if find(head, b"%PDF-").is_some() {
        return Ok(Sniffed::Pdf);
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return sniff_zip(bytes, caps);
    }
    if bytes.starts_with(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1") {
        // An Office file saved with a password is an OLE file holding an
        // `EncryptedPackage` stream (its name in UTF-16 in the directory).
        let marker: Vec<u8> = "EncryptedPackage"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        if find(bytes, &marker).is_some() {
            return Err(DocumentError::Encrypted {
                format: "Office document",
            });
        }
        return Err(unsupported(
            "a legacy Office file (.doc, .xls or .ppt; save it as .docx or .xlsx)",
        ));
    }
    for (offset, magic, what) in MAGIC {
        if bytes.get(*offset..offset + magic.len()) == Some(magic) {
            return Err(unsupported(what));
        }
    }
    if !looks_like_text(bytes) {
        return Err(unsupported("binary data of a kind not known"));
    }
    Ok(text_flavour(name, mime))
}

/// Which kind of text: by the name's extension or the MIME type, since
/// the bytes of a CSV or Markdown file are just text.
fn text_flavour(name: &str, mime: &str) -> Sniffed {
    let ext = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    let mime = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match (ext.as_str(), mime.as_str()) {
        ("tsv" | "tab", _) | (_, "text/tab-separated-values") => Sniffed::Csv { tab: true },
        ("csv", _) | (_, "text/csv" | "application/csv" | "text/comma-separated-values") => {
            Sniffed::Csv { tab: false }
        }
        ("md" | "markdown" | "mdown" | "mkd", _) | (_, "text/markdown" | "text/x-markdown") => {
            Sniffed::Markdown
        }
        _ => Sniffed::Text,
    }
}

fn sniff_zip(bytes: &[u8], caps: &Caps) -> Result<Sniffed, DocumentError> {
    let mut zip = Zip::open(bytes, caps.max_bytes, "zip archive")?;
    if let Some((mimetype, _)) = zip.read("mimetype")? {
        let mimetype = String::from_utf8_lossy(&mimetype[..mimetype.len().min(200)]);
        let mimetype = mimetype.trim();
        match mimetype {
            "application/vnd.oasis.opendocument.spreadsheet"
            | "application/vnd.oasis.opendocument.spreadsheet-template" => {
                return Ok(Sniffed::Ods);
            }
            "application/vnd.oasis.opendocument.text" => {
                return Err(unsupported("an OpenDocument text (.odt)"));
            }
            "application/vnd.oasis.opendocument.presentation" => {
                return Err(unsupported("an OpenDocument presentation (.odp)"));
            }
            "application/epub+zip" => return Err(unsupported("an EPUB book")),
            _ => {}
        }
    }
    if let Some((types, _)) = zip.read("[Content_Types].xml")? {
        let types = String::from_utf8_lossy(&types);
        let has = |s: &str| types.contains(s);
        if has("wordprocessingml.document.main+xml")
            || has("wordprocessingml.template.main+xml")
            || has("ms-word.document.macroEnabled.main+xml")
            || has("ms-word.template.macroEnabledTemplate.main+xml")
        {
            return Ok(Sniffed::Docx);
        }
        if has("spreadsheetml.sheet.main+xml")
            || has("spreadsheetml.template.main+xml")
            || has("ms-excel.sheet.macroEnabled.main+xml")
            || has("ms-excel.template.macroEnabled.main+xml")
        {
            return Ok(Sniffed::Xlsx);
        }
        if has("ms-excel.sheet.binary") {
            return Err(unsupported("an Excel binary workbook (.xlsb)"));
        }
        if has("presentationml") {
            return Err(unsupported("a PowerPoint presentation (.pptx)"));
        }
    }
    // A producer that wrote a wrong or no content-types part: its main
    // part still says what it is.
    if zip.has("word/document.xml") {
        return Ok(Sniffed::Docx);
    }
    if zip.has("xl/workbook.xml") {
        return Ok(Sniffed::Xlsx);
    }
    Err(unsupported("a zip archive"))
}

fn unsupported(what: &str) -> DocumentError {
    DocumentError::Unsupported {
        detected: what.to_owned(),
    }
}

/// Where `needle` first occurs in `haystack`.
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let mut from = 0;
    while let Some(i) = haystack[from..=haystack.len() - needle.len()]
        .iter()
        .position(|&b| b == first)
    {
        let at = from + i;
        if haystack[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniffed(bytes: &[u8], name: &str, mime: &str) -> Result<Sniffed, DocumentError> {
        sniff(bytes, name, mime, &Caps::default())
    }

    fn detected(bytes: &[u8]) -> String {
        match sniffed(bytes, "x.pdf", "application/pdf") {
            Err(DocumentError::Unsupported { detected }) => detected,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_bytes_win_over_the_name() {
        assert_eq!(detected(b"\x89PNG\r\n\x1a\n...."), "a PNG image");
        assert_eq!(detected(b"\xFF\xD8\xFF\xE0"), "a JPEG image");
        assert_eq!(detected(b"RIFF\0\0\0\0WEBPVP8 "), "a WebP image");
        assert_eq!(detected(b"\x7fELF\x02\x01"), "a program (ELF)");
        assert_eq!(
            detected(&[0, 1, 2, 3, 0, 5]),
            "binary data of a kind not known"
        );
        assert_eq!(
            sniffed(b"junk\n%PDF-1.7\n", "a.txt", "text/plain"),
            Ok(Sniffed::Pdf)
        );
        assert_eq!(
            sniffed(b"hello", "a.pdf", "application/pdf"),
            Ok(Sniffed::Text)
        );
    }

    #[test]
    fn text_flavours_come_from_the_name_or_type() {
        assert_eq!(
            sniffed(b"a,b", "t.CSV", ""),
            Ok(Sniffed::Csv { tab: false })
        );
        assert_eq!(
            sniffed(b"a\tb", "t", "text/tab-separated-values"),
            Ok(Sniffed::Csv { tab: true })
        );
        assert_eq!(sniffed(b"# x", "notes.md", ""), Ok(Sniffed::Markdown));
        assert_eq!(
            sniffed(b"# x", "notes", "text/markdown; charset=utf-8"),
            Ok(Sniffed::Markdown)
        );
        assert_eq!(
            sniffed(b"# x", "notes.txt", "application/octet-stream"),
            Ok(Sniffed::Text)
        );
    }

    #[test]
    fn ole_files_are_legacy_or_encrypted() {
        let mut ole = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1".to_vec();
        ole.extend_from_slice(&[0; 64]);
        assert!(matches!(
            sniffed(&ole, "a.doc", ""),
            Err(DocumentError::Unsupported { .. })
        ));
        ole.extend("EncryptedPackage".encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(
            sniffed(&ole, "a.docx", ""),
            Err(DocumentError::Encrypted {
                format: "Office document"
            })
        );
    }

    #[test]
    fn find_finds() {
        assert_eq!(find(b"abcabd", b"abd"), Some(3));
        assert_eq!(find(b"ab", b"abc"), None);
        assert_eq!(find(b"", b"a"), None);
    }
}
