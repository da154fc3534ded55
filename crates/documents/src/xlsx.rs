//! Excel workbooks (Office Open XML): the sheet list from the workbook
//! part, shared strings, the styles that mark a number as a date (a model
//! cannot read 45292 as 2024-01-01), and each sheet shown read as a
//! stream into a capped table. Formulas are shown by their cached values,
//! as Excel shows them; charts, pictures and comments are not read.

use std::collections::HashMap;
use std::io::Read;

use crate::document::{Caps, Document, Kind};
use crate::error::DocumentError;
use crate::out::{Meta, Out, count};
use crate::sheets::{self, SheetInfo};
use crate::table::{Grid, column_of};
use crate::xml::{Ev, Xml};
use crate::zipped::Zip;

const FORMAT: &str = "XLSX";

/// At most this many shared strings are kept: past it a cell shows
/// nothing, and a note says so. Each costs a little even when empty.
const MAX_SHARED: usize = 2_000_000;

/// An XLSX (or XLSM) file.
pub(crate) fn read(bytes: &[u8], caps: &Caps) -> Result<Document, DocumentError> {
    let mut zip = Zip::open(bytes, caps.max_bytes, FORMAT)?;
    let workbook_path = office_document(&mut zip)?;
    let workbook = workbook(&mut zip, &workbook_path)?;
    let rels = relationships(&mut zip, &workbook_path)?;
    let title = sheets::core_title(&mut zip)?;
    let mut out = Out::new(caps);

    let part_of = |kind: &str, fallback: &str| {
        rels.iter()
            .find(|r| r.kind.ends_with(kind))
            .map(|r| sheets::resolve(&workbook_path, &r.target))
            .unwrap_or_else(|| fallback.to_owned())
    };
    let shared = shared_strings(
        &mut zip,
        &part_of("/sharedStrings", "xl/sharedStrings.xml"),
        caps,
        &mut out,
    )?;
    let styles = date_styles(&mut zip, &part_of("/styles", "xl/styles.xml"))?;

    let infos: Vec<SheetInfo> = workbook
        .sheets
        .iter()
        .map(|s| SheetInfo {
            name: s.name.clone(),
            hidden: s.hidden,
        })
        .collect();
    for i in sheets::choose(&infos, caps, &mut out) {
        if out.is_full() {
            out.note(format!(
                "sheet '{}' left out: no room left",
                workbook.sheets[i].name
            ));
            continue;
        }
        let sheet = &workbook.sheets[i];
        let Some(target) = rels.iter().find(|r| r.id == sheet.rel) else {
            out.note(format!(
                "sheet '{}' could not be found in the file",
                sheet.name
            ));
            continue;
        };
        let path = sheets::resolve(&workbook_path, &target.target);
        let Some(entry) = zip.open_entry(&path)? else {
            out.note(format!("sheet '{}' is missing from the file", sheet.name));
            continue;
        };
        let mut grid = Grid::new(caps.max_rows, caps.max_cols);
        let context = Context {
            shared: &shared,
            styles: &styles,
            date1904: workbook.date1904,
        };
        let cut = sheet_cells(&mut Xml::new(entry), &context, &mut grid).map_err(|e| {
            DocumentError::Corrupt {
                format: FORMAT,
                place: format!("{path}: {e}"),
            }
        })?;
        sheets::add(&mut out, &sheet.name, &grid, cut, caps);
    }
    let meta = Meta {
        title,
        scanned: false,
        page_count: workbook.sheets.len(),
    };
    Ok(out.finish(Kind::Xlsx, bytes, meta))
}

/// The workbook part's path, from the package relationships.
fn office_document(zip: &mut Zip<'_>) -> Result<String, DocumentError> {
    let rels = relationships(zip, "")?;
    Ok(rels
        .into_iter()
        .find(|r| r.kind.ends_with("/officeDocument"))
        .map(|r| sheets::resolve("", &r.target))
        .unwrap_or_else(|| "xl/workbook.xml".to_owned()))
}

struct Workbook {
    sheets: Vec<Sheet>,
    date1904: bool,
}

struct Sheet {
    name: String,
    rel: String,
    hidden: bool,
}

fn workbook(zip: &mut Zip<'_>, path: &str) -> Result<Workbook, DocumentError> {
    let Some(entry) = zip.open_entry(path)? else {
        return Err(DocumentError::Corrupt {
            format: FORMAT,
            place: format!("{path} is missing"),
        });
    };
    let mut xml = Xml::new(entry);
    let mut book = Workbook {
        sheets: Vec::new(),
        date1904: false,
    };
    loop {
        let ev = xml.next().map_err(|e| DocumentError::Corrupt {
            format: FORMAT,
            place: format!("{path}: {e}"),
        })?;
        match &ev {
            Ev::Eof { .. } => break,
            ev if ev.is_start(b"workbookPr") => {
                book.date1904 = matches!(ev.attr(b"date1904"), Some("1" | "true"));
            }
            ev if ev.is_start(b"sheet") => book.sheets.push(Sheet {
                name: ev.attr(b"name").unwrap_or("?").to_owned(),
                rel: ev.attr(b"id").unwrap_or("").to_owned(),
                hidden: matches!(ev.attr(b"state"), Some("hidden" | "veryHidden")),
            }),
            _ => {}
        }
    }
    Ok(book)
}

struct Rel {
    id: String,
    kind: String,
    target: String,
}

/// The relationships of the part at `path` (`""` for the package's own).
fn relationships(zip: &mut Zip<'_>, path: &str) -> Result<Vec<Rel>, DocumentError> {
    let rels_path = match path.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
        None if path.is_empty() => "_rels/.rels".to_owned(),
        None => format!("_rels/{path}.rels"),
    };
    let Some(entry) = zip.open_entry(&rels_path)? else {
        return Ok(Vec::new());
    };
    let mut xml = Xml::new(entry);
    let mut rels = Vec::new();
    // Relationships are a nicety over the usual paths: a broken list
    // leaves what was read of it.
    while let Ok(ev) = xml.next() {
        match &ev {
            Ev::Eof { .. } => break,
            ev if ev.is_start(b"Relationship") => rels.push(Rel {
                id: ev.attr(b"Id").unwrap_or("").to_owned(),
                kind: ev.attr(b"Type").unwrap_or("").to_owned(),
                target: ev.attr(b"Target").unwrap_or("").to_owned(),
            }),
            _ => {}
        }
    }
    Ok(rels)
}

/// The shared strings, each `<si>` the text of its `<t>`s (phonetic
/// guides, `<rPh>`, left out).
fn shared_strings(
    zip: &mut Zip<'_>,
    path: &str,
    caps: &Caps,
    out: &mut Out,
) -> Result<Vec<String>, DocumentError> {
    let Some(entry) = zip.open_entry(path)? else {
        return Ok(Vec::new());
    };
    let mut xml = Xml::new(entry);
    let mut strings = Vec::new();
    let mut current = String::new();
    let (mut in_t, mut in_phonetic) = (false, false);
    loop {
        let ev = xml.next().map_err(|e| DocumentError::Corrupt {
            format: FORMAT,
            place: format!("{path}: {e}"),
        })?;
        match &ev {
            Ev::Eof { cut } => {
                if *cut {
                    out.note(format!(
                        "the shared strings are over {} bytes; cells past them are empty",
                        count(caps.max_bytes)
                    ));
                }
                break;
            }
            ev if ev.is_start(b"si") => current.clear(),
            ev if ev.is_end(b"si") => {
                if strings.len() >= MAX_SHARED {
                    out.note(format!(
                        "over {} shared strings; cells past them are empty",
                        count(MAX_SHARED)
                    ));
                    break;
                }
                strings.push(std::mem::take(&mut current));
            }
            ev if ev.is_start(b"rPh") => in_phonetic = true,
            ev if ev.is_end(b"rPh") => in_phonetic = false,
            Ev::Start { name, empty, .. } if name == b"t" => in_t = !empty,
            ev if ev.is_end(b"t") => in_t = false,
            Ev::Text(text) if in_t && !in_phonetic => current.push_str(text),
            _ => {}
        }
    }
    Ok(strings)
}

/// For each cell style (`s` index into `cellXfs`), whether it shows a
/// number as a date or a time.
fn date_styles(zip: &mut Zip<'_>, path: &str) -> Result<Vec<bool>, DocumentError> {
    let Some(entry) = zip.open_entry(path)? else {
        return Ok(Vec::new());
    };
    let mut xml = Xml::new(entry);
    let mut custom: HashMap<u32, bool> = HashMap::new();
    let mut xfs = Vec::new();
    let mut in_cell_xfs = false;
    // Styles only make dates readable: a broken styles part leaves the
    // numbers as numbers.
    while let Ok(ev) = xml.next() {
        match &ev {
            Ev::Eof { .. } => break,
            ev if ev.is_start(b"numFmt") => {
                if let Some(id) = ev.attr(b"numFmtId").and_then(|v| v.parse().ok()) {
                    custom.insert(id, is_date_format(ev.attr(b"formatCode").unwrap_or("")));
                }
            }
            Ev::Start { name, empty, .. } if name == b"cellXfs" => in_cell_xfs = !empty,
            ev if ev.is_end(b"cellXfs") => in_cell_xfs = false,
            ev if in_cell_xfs && ev.is_start(b"xf") => {
                let id: u32 = ev
                    .attr(b"numFmtId")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let date = custom
                    .get(&id)
                    .copied()
                    .unwrap_or_else(|| is_builtin_date(id));
                if xfs.len() < 1_000_000 {
                    xfs.push(date);
                }
            }
            _ => {}
        }
    }
    Ok(xfs)
}

/// The built-in number formats that are dates or times.
fn is_builtin_date(id: u32) -> bool {
    matches!(id, 14..=22 | 27..=36 | 45..=47 | 50..=58)
}

/// Whether a custom format code shows a date or time: a `y`, `m`, `d`,
/// `h` or `s` outside quoted text, brackets (colours, locales) and
/// escaped characters.
fn is_date_format(code: &str) -> bool {
    let mut quoted = false;
    let mut bracket = false;
    let mut escaped = false;
    for c in code.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '"' => quoted = !quoted,
            _ if quoted => {}
            '\\' => escaped = true,
            '[' => bracket = true,
            ']' => bracket = false,
            _ if bracket => {}
            'y' | 'Y' | 'm' | 'M' | 'd' | 'D' | 'h' | 'H' | 's' | 'S' => return true,
            _ => {}
        }
    }
    false
}

struct Context<'a> {
    shared: &'a [String],
    styles: &'a [bool],
    date1904: bool,
}

/// Reads a sheet's cells into `grid`; returns whether the byte cap cut
/// the part.
fn sheet_cells<R: Read>(
    xml: &mut Xml<R>,
    context: &Context<'_>,
    grid: &mut Grid,
) -> Result<bool, String> {
    let mut col = 0usize;
    let mut next_col = 0usize;
    let mut kind = String::new();
    let mut style = 0usize;
    let mut value = String::new();
    let mut inline = String::new();
    let mut formula = String::new();
    let (mut in_v, mut in_t, mut in_f, mut in_cell) = (false, false, false, false);
    loop {
        let ev = xml.next()?;
        match &ev {
            Ev::Eof { cut } => {
                // A sheet cut off mid-row still shows that row.
                grid.end_row(1);
                return Ok(*cut);
            }
            ev if ev.is_start(b"row") => {
                next_col = 0;
                if matches!(ev, Ev::Start { empty: true, .. }) {
                    grid.end_row(1);
                }
            }
            ev if ev.is_end(b"row") => grid.end_row(1),
            Ev::Start { name, empty, .. } if name == b"c" => {
                col = ev.attr(b"r").and_then(column_of).unwrap_or(next_col);
                next_col = col.saturating_add(1);
                kind = ev.attr(b"t").unwrap_or("n").to_owned();
                style = ev.attr(b"s").and_then(|s| s.parse().ok()).unwrap_or(0);
                value.clear();
                inline.clear();
                formula.clear();
                in_cell = !empty;
            }
            ev if ev.is_end(b"c") => {
                if in_cell {
                    let shown = cell_value(&kind, &value, &inline, style, context);
                    // A formula never calculated (files written by
                    // programs, not Excel) has no value: show the formula.
                    if shown.trim().is_empty() && !formula.trim().is_empty() {
                        grid.cell(col, &format!("={}", formula.trim()));
                    } else {
                        grid.cell(col, &shown);
                    }
                }
                in_cell = false;
            }
            Ev::Start { name, empty, .. } if name == b"v" => in_v = !empty,
            ev if ev.is_end(b"v") => in_v = false,
            Ev::Start { name, empty, .. } if name == b"t" => in_t = !empty,
            ev if ev.is_end(b"t") => in_t = false,
            Ev::Start { name, empty, .. } if name == b"f" => in_f = !empty,
            ev if ev.is_end(b"f") => in_f = false,
            Ev::Text(text) if in_cell && in_f => formula.push_str(text),
            Ev::Text(text) if in_cell && in_v => value.push_str(text),
            Ev::Text(text) if in_cell && in_t => inline.push_str(text),
            _ => {}
        }
    }
}

/// A cell as Excel would show it, near enough.
fn cell_value(
    kind: &str,
    value: &str,
    inline: &str,
    style: usize,
    context: &Context<'_>,
) -> String {
    let value = value.trim();
    match kind {
        "s" => value
            .parse::<usize>()
            .ok()
            .and_then(|i| context.shared.get(i))
            .cloned()
            .unwrap_or_default(),
        "inlineStr" => inline.to_owned(),
        "b" => match value {
            "1" => "TRUE".to_owned(),
            "0" => "FALSE".to_owned(),
            other => other.to_owned(),
        },
        "str" | "e" | "d" => value.to_owned(),
        _ => {
            let Ok(number) = value.parse::<f64>() else {
                return value.to_owned();
            };
            if context.styles.get(style).copied().unwrap_or(false) {
                if let Some(date) = excel_date(number, context.date1904) {
                    return date;
                }
            }
            number_text(number, value)
        }
    }
}

/// A number with at most 15 significant digits, as Excel shows it
/// (`0.30000000000000004` is `0.3`); very large or small ones as written.
fn number_text(number: f64, written: &str) -> String {
    let magnitude = number.abs();
    if !number.is_finite() || magnitude >= 1e15 || (magnitude < 1e-5 && magnitude > 0.0) {
        return written.to_owned();
    }
    if number.fract() == 0.0 {
        return format!("{number:.0}");
    }
    let digits = if magnitude >= 1.0 {
        magnitude.log10().floor() as i32 + 1
    } else {
        0
    };
    let decimals = (15 - digits).clamp(0, 15) as usize;
    let text = format!("{number:.decimals$}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// An Excel date serial as `2024-01-31`, `2024-01-31 14:05` or `14:05`.
fn excel_date(serial: f64, date1904: bool) -> Option<String> {
    if !(0.0..2_958_466.0).contains(&serial) {
        return None;
    }
    let mut days = serial.floor() as i64;
    let seconds = ((serial - serial.floor()) * 86_400.0).round() as i64;
    let (hour, minute, second) = (seconds / 3600 % 24, seconds / 60 % 60, seconds % 60);
    let time = if second == 0 {
        format!("{hour:02}:{minute:02}")
    } else {
        format!("{hour:02}:{minute:02}:{second:02}")
    };
    if days == 0 && !date1904 {
        return Some(time);
    }
    if date1904 {
        days += 1462;
    }
    // Day 0 is 1899-12-30 (Excel counts a 29 February 1900 that was not).
    let (y, m, d) = civil_from_days(days - 25_569);
    let date = format!("{y:04}-{m:02}-{d:02}");
    Some(if seconds == 0 {
        date
    } else {
        format!("{date} {time}")
    })
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::xlsx;

    #[test]
    fn numbers_dates_and_formats_read_as_excel_shows_them() {
        assert_eq!(
            number_text(0.30000000000000004, "0.30000000000000004"),
            "0.3"
        );
        assert_eq!(number_text(42.0, "42"), "42");
        assert_eq!(number_text(-1234.5, "-1234.5"), "-1234.5");
        assert_eq!(number_text(1e20, "1E+20"), "1E+20");
        assert_eq!(excel_date(45292.0, false).as_deref(), Some("2024-01-01"));
        assert_eq!(
            excel_date(45292.5, false).as_deref(),
            Some("2024-01-01 12:00")
        );
        assert_eq!(excel_date(0.75, false).as_deref(), Some("18:00"));
        assert_eq!(excel_date(43830.0, true).as_deref(), Some("2024-01-01"));
        assert_eq!(excel_date(-1.0, false), None);
        assert!(is_date_format("yyyy-mm-dd"));
        assert!(is_date_format("[$-409]h:mm AM/PM"));
        assert!(!is_date_format("#,##0.00\"days\""));
        assert!(!is_date_format("[Red]0.00"));
        assert!(is_builtin_date(14) && !is_builtin_date(2));
    }

    #[test]
    fn a_workbook_reads_as_tables_with_names_and_dates() {
        let bytes = xlsx(&[
            (
                "Summary",
                concat!(
                    r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="inlineStr"><is><t>When</t></is></c></row>"#,
                    r#"<row r="2"><c r="A2"><v>12.5</v></c><c r="B2" s="1"><v>45292</v></c><c r="D2" t="b"><v>1</v></c></row>"#,
                    r#"<row r="4"><c r="A4" t="str"><f>A2*2</f><v>25</v></c><c r="B4"><f>SUM(A1:A3)</f></c></row>"#,
                ),
            ),
            ("Empty", ""),
        ]);
        let d = read(&bytes, &Caps::default()).unwrap();
        assert_eq!(d.kind, Kind::Xlsx);
        assert_eq!(d.page_count, 2);
        assert_eq!(d.sections.len(), 2);
        assert_eq!(d.sections[0].name.as_deref(), Some("sheet 'Summary'"));
        assert_eq!(
            d.sections[0].text,
            "| Name | When |  |  |\n|---|---|---|---|\n| 12.5 | 2024-01-01 |  | TRUE |\n| 25 | =SUM(A1:A3) |  |  |\n"
        );
        assert_eq!(d.sections[1].text, "(empty)");
        assert!(!d.truncated, "{:?}", d.notes);
    }

    #[test]
    fn sheets_rows_and_columns_are_capped_with_notes() {
        let mut rows = String::new();
        for r in 1..=300 {
            rows.push_str(&format!("<row r=\"{r}\">"));
            for c in 0..40 {
                rows.push_str(&format!("<c t=\"inlineStr\"><is><t>{r}.{c}</t></is></c>"));
            }
            rows.push_str("</row>");
        }
        let names = ["One", "Two", "Three", "Four", "Five", "Six", "Raw"];
        let sheets: Vec<(&str, &str)> = names.iter().map(|n| (*n, rows.as_str())).collect();
        let caps = Caps {
            max_chars: 1_000_000,
            ..Caps::default()
        };
        let d = read(&xlsx(&sheets), &caps).unwrap();
        assert!(d.truncated);
        assert_eq!(d.sections.len(), 5);
        assert_eq!(d.page_count, 7);
        assert!(
            d.notes
                .contains(&"showed 5 of 7 sheets; left out 'Six', 'Raw'".to_owned())
        );
        assert!(
            d.notes
                .contains(&"sheet 'One': showed 200 of 300 rows, 30 of 40 columns".to_owned()),
            "{:?}",
            d.notes
        );
        assert!(!d.notes.iter().any(|n| n.contains("cut")));

        // With the default budget the sheets stop when the text is full.
        let d = read(&xlsx(&sheets), &Caps::default()).unwrap();
        assert!(d.sections.len() < 5);
        assert!(
            d.notes
                .contains(&"sheet 'Five' left out: no room left".to_owned()),
            "{:?}",
            d.notes
        );
    }
}
