//! The PDF reader on PDFs built in the test: text pages, a scan, caps,
//! encryption, and the hostile shapes the guards are for (inflation
//! bombs, a page that is its own parent, a form that draws itself).

use super::*;
use crate::error::PictureError;
use crate::testdata::{pdf, pdf_pages, stream, text_pdf, zlib};

fn caps() -> Caps {
    Caps::default()
}

#[test]
fn text_pages_read_with_title_and_counts() {
    let bytes = text_pdf(&["Hello from page one", "And page two"]);
    let d = read(&bytes, &caps()).unwrap();
    assert_eq!(d.kind, Kind::Pdf);
    assert_eq!(d.page_count, 2);
    assert_eq!(d.byte_len, bytes.len());
    assert_eq!(d.title.as_deref(), Some("Test document"));
    assert!(!d.scanned);
    assert!(!d.truncated, "{:?}", d.notes);
    assert_eq!(d.sections.len(), 2);
    assert_eq!(d.sections[0].name.as_deref(), Some("page 1"));
    assert_eq!(d.sections[0].text, "Hello from page one");
    assert_eq!(
        d.text(),
        "## page 1\nHello from page one\n\n## page 2\nAnd page two"
    );
}

fn image_object() -> Vec<u8> {
    stream(
        "/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode",
        b"\xFF\xD8\xFF\xE0 not really a jpeg \xFF\xD9",
    )
}

#[test]
fn a_scan_is_reported_as_scanned_with_its_page_count() {
    let page: &[u8] = b"q 612 0 0 792 0 0 cm /Im1 Do Q";
    // Objects: 1-3 fixed, pages 4-5, contents 6-7, the image 8.
    let bytes = pdf_pages(&[page, page], "/Im1 8 0 R", &[image_object()]);
    let d = read(&bytes, &caps()).unwrap();
    assert!(d.scanned);
    assert_eq!(d.page_count, 2);
    assert!(d.sections.is_empty());
    assert_eq!(
        d.notes,
        ["the PDF has no text layer (a scan?): 2 pages, none with text"]
    );
}

#[test]
fn a_page_without_text_among_text_pages_is_named() {
    let text: &[u8] = b"BT /F1 12 Tf 72 720 Td (Words) Tj ET";
    let scan: &[u8] = b"q 612 0 0 792 0 0 cm /Im1 Do Q";
    let bytes = pdf_pages(&[text, scan, text], "/Im1 10 0 R", &[image_object()]);
    let d = read(&bytes, &caps()).unwrap();
    assert!(!d.scanned);
    assert_eq!(d.sections.len(), 2);
    assert_eq!(d.notes, ["page 2 has no text (scanned or pictures?)"]);
}

#[test]
fn pages_past_the_cap_are_counted_not_read() {
    let pages: Vec<String> = (1..=7).map(|n| format!("Page number {n}")).collect();
    let refs: Vec<&str> = pages.iter().map(String::as_str).collect();
    let caps = Caps {
        max_pages: 3,
        ..caps()
    };
    let d = read(&text_pdf(&refs), &caps).unwrap();
    assert_eq!(d.page_count, 7);
    assert_eq!(d.sections.len(), 3);
    assert!(d.truncated);
    assert_eq!(d.notes, ["showed 3 of 7 pages"]);
}

#[test]
fn the_character_budget_stops_the_pages() {
    let long = "word ".repeat(40);
    let pages = vec![long.as_str(); 6];
    let caps = Caps {
        max_chars: 300,
        ..caps()
    };
    let d = read(&text_pdf(&pages), &caps).unwrap();
    assert!(d.text().len() < 600);
    assert_eq!(d.sections.len(), 2);
    assert_eq!(
        d.notes,
        ["the text was cut at 300 characters", "showed 2 of 6 pages"]
    );
}

#[test]
fn an_encrypted_pdf_is_refused() {
    let bytes = pdf(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [] /Count 0 >>".to_vec(),
            b"<< /Filter /Standard /V 1 /R 2 /O <00> /U <00> /P -4 >>".to_vec(),
        ],
        "/Encrypt 3 0 R /ID [<01> <01>]",
    );
    assert_eq!(
        read(&bytes, &caps()),
        Err(DocumentError::Encrypted { format: "PDF" })
    );
}

#[test]
fn broken_pdfs_are_corrupt_not_panics() {
    for bytes in [
        &b"%PDF-1.7\n"[..],
        b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF",
    ] {
        assert!(
            matches!(
                read(bytes, &caps()),
                Err(DocumentError::Corrupt { format: "PDF", .. })
            ),
            "{:?}",
            read(bytes, &caps())
        );
    }
    // No pages at all.
    let empty = pdf(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [] /Count 0 >>".to_vec(),
        ],
        "",
    );
    assert_eq!(
        read(&empty, &caps()),
        Err(DocumentError::Corrupt {
            format: "PDF",
            place: "page tree: no pages".into()
        })
    );
}

#[test]
fn a_content_stream_that_inflates_past_the_cap_is_left_out() {
    let small = Caps {
        max_bytes: 1 << 20,
        ..caps()
    };
    let bomb = zlib(&vec![b' '; 4 << 20]);
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 7 0 R >> >> /Contents 4 0 R >>".to_vec(),
        stream("/Filter /FlateDecode", &bomb),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 7 0 R >> >> /Contents 6 0 R >>".to_vec(),
        stream("/Filter /FlateDecode", &zlib(b"BT /F1 12 Tf 72 720 Td (Still here) Tj ET")),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    let d = read(&pdf(&objects, ""), &small).unwrap();
    assert_eq!(d.sections.len(), 1);
    assert_eq!(d.sections[0].text, "Still here");
    assert_eq!(
        d.notes,
        [
            "page 1 has no text (scanned or pictures?)",
            "1 part of the PDF was left out (too large, or drawn in a loop)"
        ]
    );
}

#[test]
fn a_cross_reference_stream_bomb_is_refused_before_parsing() {
    let bomb = zlib(&zlib(&vec![0u8; 8 << 20]));
    let mut bytes = b"%PDF-1.5\n".to_vec();
    let xref = bytes.len();
    bytes.extend_from_slice(&stream(
        "/Type /XRef /Size 2 /W [1 2 1] /Root 1 0 R /Filter [/FlateDecode /FlateDecode]",
        &bomb,
    ));
    bytes.extend_from_slice(format!("\nstartxref\n{xref}\n%%EOF\n").as_bytes());
    let small = Caps {
        max_bytes: 1 << 20,
        ..caps()
    };
    assert!(matches!(
        read(&bytes, &small),
        Err(DocumentError::TooLarge { format: "PDF", .. })
    ));
}

#[test]
fn a_page_that_is_its_own_parent_still_reads() {
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        // No MediaBox, no Resources, and a parent that is itself.
        b"<< /Type /Page /Parent 3 0 R /Contents 4 0 R >>".to_vec(),
        stream("", b"BT 72 720 Td (Loop) Tj ET"),
    ];
    let d = read(&pdf(&objects, ""), &caps());
    assert!(d.is_ok(), "{d:?}");
}

#[test]
fn a_form_that_draws_itself_is_cut_not_recursed_into() {
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 6 0 R >> /XObject << /X1 5 0 R >> >> /Contents 4 0 R >>".to_vec(),
        stream("", b"BT /F1 12 Tf 72 720 Td (Outside) Tj ET /X1 Do"),
        // No resources of its own: it inherits the page's, /X1 is itself.
        stream("/Type /XObject /Subtype /Form /BBox [0 0 612 792]", b"/X1 Do"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    let d = read(&pdf(&objects, ""), &caps()).unwrap();
    assert_eq!(d.sections[0].text, "Outside");
    assert_eq!(
        d.notes,
        ["1 part of the PDF was left out (too large, or drawn in a loop)"]
    );
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    // lopdf stops at 100 levels; the test thread has the 2 MiB stack a
    // daemon's blocking thread has.
    let deep = |open: &str, close: &str| {
        let mut body = open.repeat(5_000);
        body.push_str(&close.repeat(5_000));
        body.into_bytes()
    };
    for (open, close) in [("[", "]"), ("<< /A ", " >>"), ("(", ")")] {
        let bytes = pdf(
            &[
                b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
                b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>".to_vec(),
                stream("", &deep(open, close)),
                deep(open, close),
            ],
            "",
        );
        let result = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || read(&bytes, &caps()).map(|d| d.notes))
            .unwrap()
            .join();
        assert!(result.is_ok(), "{open}");
    }
}

#[test]
fn a_scanned_first_page_gives_its_picture_as_an_image_file() {
    let page: &[u8] = b"q 612 0 0 792 0 0 cm /Im1 Do Q";
    // A JPEG goes through as its bytes.
    let bytes = pdf_pages(&[page], "/Im1 6 0 R", &[image_object()]);
    let jpeg = first_page_image(&bytes, &caps()).unwrap();
    assert_eq!((jpeg.mime, jpeg.width, jpeg.height), ("image/jpeg", 1, 1));
    assert!(jpeg.bytes.starts_with(b"\xFF\xD8") && jpeg.bytes.ends_with(b"\xFF\xD9"));
    // A Flate grey picture (2x2) becomes a PNG of the same size.
    let grey = stream(
        "/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
        &zlib(&[0, 255, 255, 0]),
    );
    let bytes = pdf_pages(&[page], "/Im1 6 0 R", &[grey]);
    let png = first_page_image(&bytes, &caps()).unwrap();
    assert_eq!((png.mime, png.width, png.height), ("image/png", 2, 2));
    assert!(png.bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(&png.bytes[16..24], &[0, 0, 0, 2, 0, 0, 0, 2]);
    // Data that unpacks past what the picture declares is refused.
    let bomb = stream(
        "/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
        &zlib(&[7; 100_000]),
    );
    let bytes = pdf_pages(&[page], "/Im1 6 0 R", &[bomb]);
    assert!(matches!(
        first_page_image(&bytes, &caps()),
        Err(PictureError::Unsupported(_))
    ));
    // Fax-encoded scans, and pages without pictures, are said to be so.
    let fax = stream(
        "/Type /XObject /Subtype /Image /Width 8 /Height 8 /ImageMask true /Filter /CCITTFaxDecode",
        b"\0\0",
    );
    let bytes = pdf_pages(&[page], "/Im1 6 0 R", &[fax]);
    let e = first_page_image(&bytes, &caps()).unwrap_err().to_string();
    assert_eq!(
        e,
        "its first page's picture is encoded with CCITTFaxDecode, which hearth cannot show"
    );
    let bytes = text_pdf(&["words"]);
    assert_eq!(
        first_page_image(&bytes, &caps()),
        Err(PictureError::NoPicture)
    );
}
