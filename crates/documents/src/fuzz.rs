//! Fuzzing every reader through [`crate::read`]: seeds of each format
//! (built by `testdata`), mutated, truncated and spliced by the shared
//! driver, plus zip bombs. Properties: no panic, an answer within the
//! driver's hang limit, and a document that keeps to its caps; for a PDF,
//! its first page's picture too (`first_page_image`).

use hearth_fuzz::{Rng, Target};

use crate::testdata::{docx, ods, pdf_pages, text_pdf, xlsx, zip_of, zlib};
use crate::{Caps, read};

/// Small caps, so a case that gets far still stays quick.
fn caps() -> Caps {
    Caps {
        max_bytes: 1 << 20,
        max_pages: 5,
        max_chars: 5_000,
        max_sheets: 3,
        max_rows: 50,
        max_cols: 10,
    }
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let para = r#"<w:p><w:r><w:t>Some text</w:t></w:r></w:p><w:tbl><w:tr><w:tc><w:p><w:r><w:t>cell</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#;
    let rows = r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1"><v>1.5</v></c><c r="C1" s="1"><v>45000</v></c></row>"#;
    let table = r#"<table:table table:name="S"><table:table-row table:number-rows-repeated="3"><table:table-cell table:number-columns-repeated="4"><text:p>v</text:p></table:table-cell></table:table-row></table:table>"#;
    let image_page: &[u8] = b"q 10 0 0 10 0 0 cm /Im1 Do Q BT /F1 9 Tf (x) Tj ET";
    vec![
        (
            "a.pdf",
            text_pdf(&["First page text", "Second (page) \\(x\\)"]),
        ),
        (
            "b.pdf",
            pdf_pages(
                &[image_page],
                "/Im1 6 0 R",
                &[crate::testdata::stream(
                    "/Subtype /Image /Width 1 /Height 1 /Filter /FlateDecode",
                    &zlib(&[0]),
                )],
            ),
        ),
        (
            "s.pdf",
            pdf_pages(
                &[image_page],
                "/Im1 6 0 R",
                &[crate::testdata::stream(
                    "/Subtype /Image /Width 4 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
                    &zlib(&[9; 8]),
                )],
            ),
        ),
        ("c.docx", docx(para, Some("T"))),
        ("d.xlsx", xlsx(&[("One", rows), ("Two", rows)])),
        ("e.ods", ods(table, None)),
        ("f.csv", b"a,b,\"c\nd\"\n1,2,3\n".to_vec()),
        ("g.md", b"# Title\n\nbody\n".to_vec()),
    ]
}

/// Zips whose entries unpack to much more than the cap; the first two
/// in parts that are read for their text.
fn bombs() -> Vec<Vec<u8>> {
    let zeros = vec![b'<'; 3 << 20];
    let spaces = vec![b' '; 3 << 20];
    let mut document = b"<w:document><w:body>".to_vec();
    document.extend_from_slice(&spaces);
    vec![
        zip_of(&[
            ("[Content_Types].xml", b"wordprocessingml.document.main+xml"),
            ("word/document.xml", &document),
        ]),
        zip_of(&[
            (
                "mimetype",
                b"application/vnd.oasis.opendocument.spreadsheet",
            ),
            ("content.xml", &spaces),
        ]),
        zip_of(&[
            ("[Content_Types].xml", &zeros),
            ("word/document.xml", b"<w:document/>"),
        ]),
    ]
}

fn check(input: &[u8], rng: &mut Rng) {
    let names = ["x.pdf", "x.docx", "x.xlsx", "x.csv", "x.md", "x"];
    let name = *rng.pick(&names);
    let caps = caps();
    let result = read(input, name, "", &caps);
    // The last-resort catch in `read` is for dependencies; reaching it
    // means a reader of ours panicked (pdf-extract's panics are caught
    // page by page, nearer to them).
    if let Err(crate::DocumentError::Corrupt { place, .. }) = &result {
        assert_ne!(place, "the reader failed on it");
    }
    if let Err(crate::DocumentError::Unsupported { detected }) = &result {
        assert_ne!(detected, "a file whose kind could not be told");
    }
    // A scan's first page, as the agent asks for it: never a panic, and
    // a picture no larger than the image path decodes.
    if input.windows(5).any(|w| w == b"%PDF-") {
        match crate::first_page_image(input, &caps) {
            Ok(page) => {
                assert!(u64::from(page.width) * u64::from(page.height) <= 64_000_000);
                assert!(page.bytes.starts_with(b"\xFF\xD8") || page.bytes.starts_with(b"\x89PNG"));
            }
            Err(crate::PictureError::Document(crate::DocumentError::Corrupt { place, .. })) => {
                assert_ne!(place, "the reader failed on it");
            }
            Err(_) => {}
        }
    }
    if let Ok(doc) = result {
        let chars: usize = doc.sections.iter().map(|s| s.text.chars().count()).sum();
        assert!(chars <= caps.max_chars, "{chars} characters over the cap");
        assert!(doc.sections.len() <= caps.max_pages.max(caps.max_sheets).max(1));
        assert_eq!(doc.truncated, !doc.notes.is_empty());
    }
}

#[test]
fn no_input_panics_hangs_or_breaks_the_caps() {
    let mut target = Target::new("documents").tokens(&[
        "obj",
        "endobj",
        "stream\n",
        "endstream",
        "/Filter /FlateDecode",
        "/Parent 3 0 R",
        "/Type /Page",
        "/XObject",
        " Do ",
        "BT",
        "ET",
        "Tj",
        "xref",
        "trailer",
        "startxref",
        "%%EOF",
        "<w:p>",
        "<w:t>",
        "</w:t>",
        "<row>",
        "<c t=\"s\">",
        "<v>",
        "PK\x03\x04",
    ]);
    for (_, bytes) in seeds() {
        // Cut short too: truncated downloads are the commonest damage.
        let half = bytes[..bytes.len() / 2].to_vec();
        target = target.seed(bytes).seed(half);
    }
    for bomb in bombs() {
        target = target.seed(bomb);
    }
    target.max_len(256 << 10).run(check);
}

#[test]
fn zip_bombs_stop_at_the_cap() {
    for (i, bomb) in bombs().iter().enumerate() {
        let started = std::time::Instant::now();
        let result = read(bomb, "x", "", &caps());
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
        if i < 2 {
            let doc = result.unwrap();
            assert!(
                doc.truncated && doc.notes[0].contains("the rest was not read"),
                "{:?}",
                doc.notes
            );
        }
    }
}

#[test]
fn every_seed_reads_whole() {
    for (name, bytes) in seeds() {
        let doc = read(&bytes, name, "", &Caps::default());
        assert!(doc.is_ok(), "{name}: {doc:?}");
    }
}
