//! Real files built in the tests: DOCX, XLSX and ODS zips written with
//! the zip crate, and PDFs written byte by byte with a correct
//! cross-reference table, so each reader is tested on what producers
//! write, and hostile variants are a small change away.

use std::io::Write;

use zip::CompressionMethod;
use zip::write::{SimpleFileOptions, ZipWriter};

/// A zip of `entries`, deflated (`mimetype` stored, as ODF wants).
pub(crate) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        let method = if *name == "mimetype" {
            CompressionMethod::Stored
        } else {
            CompressionMethod::Deflated
        };
        let options = SimpleFileOptions::default().compression_method(method);
        writer.start_file(*name, options).unwrap();
        writer.write_all(data).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

const RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="TARGET"/></Relationships>"#;

fn core(title: Option<&str>) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">{}</cp:coreProperties>"#,
        title
            .map(|t| format!("<dc:title>{t}</dc:title>"))
            .unwrap_or_default()
    )
}

/// A DOCX whose body is `body` (WordprocessingML inside `<w:body>`).
pub(crate) fn docx(body: &str, title: Option<&str>) -> Vec<u8> {
    let types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}<w:sectPr/></w:body></w:document>"#
    );
    zip_of(&[
        ("[Content_Types].xml", types.as_bytes()),
        (
            "_rels/.rels",
            RELS.replace("TARGET", "word/document.xml").as_bytes(),
        ),
        ("word/document.xml", document.as_bytes()),
        ("docProps/core.xml", core(title).as_bytes()),
    ])
}

/// An XLSX with a sheet per `(name, sheetData)`, shared string 0
/// "Name", and cell style 1 a date (built-in format 14).
pub(crate) fn xlsx(sheets: &[(&str, &str)]) -> Vec<u8> {
    let types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>"#;
    let mut list = String::new();
    let mut rels = String::new();
    let mut parts = Vec::new();
    for (i, (name, data)) in sheets.iter().enumerate() {
        let n = i + 1;
        list.push_str(&format!(
            r#"<sheet name="{name}" sheetId="{n}" r:id="rId{n}"/>"#
        ));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.xml"/>"#
        ));
        parts.push((
            format!("xl/worksheets/sheet{n}.xml"),
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{data}</sheetData></worksheet>"#
            ),
        ));
    }
    let workbook = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><workbookPr/><sheets>{list}</sheets></workbook>"#
    );
    let workbook_rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}<Relationship Id="rIdS" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/><Relationship Id="rIdT" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>"#
    );
    let shared = r#"<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1"><si><r><t>Na</t></r><r><t>me</t></r><rPh><t>ネーム</t></rPh></si></sst>"#;
    let styles = r#"<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><cellStyleXfs count="1"><xf numFmtId="14"/></cellStyleXfs><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>"#;
    let package_rels = RELS.replace("TARGET", "xl/workbook.xml");
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", types.as_bytes()),
        ("_rels/.rels", package_rels.as_bytes()),
        ("xl/workbook.xml", workbook.as_bytes()),
        ("xl/_rels/workbook.xml.rels", workbook_rels.as_bytes()),
        ("xl/sharedStrings.xml", shared.as_bytes()),
        ("xl/styles.xml", styles.as_bytes()),
    ];
    for (path, data) in &parts {
        entries.push((path.as_str(), data.as_bytes()));
    }
    zip_of(&entries)
}

/// An ODS whose `office:spreadsheet` holds `tables`.
pub(crate) fn ods(tables: &str, title: Option<&str>) -> Vec<u8> {
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet>{tables}</office:spreadsheet></office:body></office:document-content>"#
    );
    let meta = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta>{}</office:meta></office:document-meta>"#,
        title
            .map(|t| format!("<dc:title>{t}</dc:title>"))
            .unwrap_or_default()
    );
    zip_of(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        ),
        ("content.xml", content.as_bytes()),
        ("meta.xml", meta.as_bytes()),
    ])
}

/// A PDF of `objects` (object `n` is `objects[n - 1]`; object 1 must be
/// the catalog), with its cross-reference table and trailer.
pub(crate) fn pdf(objects: &[Vec<u8>], trailer_extra: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R {trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A stream object's body: `dict` (without `/Length`) and `data`.
pub(crate) fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// Zlib-compressed `data`.
pub(crate) fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A PDF of pages drawing `contents` (content streams, as they are), with
/// Helvetica as `/F1` and `extra` objects from number 4 + pages on, and
/// the page resources' `XObject` dictionary `xobjects`.
pub(crate) fn pdf_pages(contents: &[&[u8]], xobjects: &str, extra: &[Vec<u8>]) -> Vec<u8> {
    let n = contents.len();
    // 1 catalog, 2 page tree, 3 font, then n pages, n contents, extras.
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + i)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    for i in 0..n {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> /XObject << {xobjects} >> >> /Contents {} 0 R >>",
                4 + n + i
            )
            .into_bytes(),
        );
    }
    for content in contents {
        objects.push(stream("", content));
    }
    objects.extend(extra.iter().cloned());
    pdf(&objects, "/Info << /Title (Test document) >>")
}

/// A PDF with one page of `text` per entry, in Helvetica.
pub(crate) fn text_pdf(pages: &[&str]) -> Vec<u8> {
    let contents: Vec<Vec<u8>> = pages
        .iter()
        .map(|text| format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
    pdf_pages(&refs, "", &[])
}
