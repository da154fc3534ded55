//! OpenDocument spreadsheets: every `table:table` of `content.xml` a
//! sheet, each cell's displayed text (its `text:p`s, which already show
//! dates and numbers as formatted). Repeated rows and columns, which ODS
//! uses to pad a sheet to a million empty rows, expand only within the
//! caps and never cost memory past them.

use std::io::Read;

use crate::document::{Caps, Document, Kind};
use crate::error::DocumentError;
use crate::out::{Meta, Out, count};
use crate::sheets::{self, SheetInfo};
use crate::table::Grid;
use crate::xml::{Ev, Xml};
use crate::zipped::Zip;

const FORMAT: &str = "ODS";

/// The most spaces one `<text:s text:c="N"/>` gives.
const MAX_SPACES: usize = 64;

/// An ODS file.
pub(crate) fn read(bytes: &[u8], caps: &Caps) -> Result<Document, DocumentError> {
    let mut zip = Zip::open(bytes, caps.max_bytes, FORMAT)?;
    let title = sheets::title_in(&mut zip, "meta.xml")?;
    let Some(entry) = zip.open_entry("content.xml")? else {
        return Err(DocumentError::Corrupt {
            format: FORMAT,
            place: "content.xml is missing".to_owned(),
        });
    };
    let mut xml = Xml::new(entry);
    let (tables, cut) = tables(&mut xml, caps).map_err(|e| DocumentError::Corrupt {
        format: FORMAT,
        place: format!("content.xml: {e}"),
    })?;
    let mut out = Out::new(caps);
    let infos: Vec<SheetInfo> = tables
        .iter()
        .map(|t| SheetInfo {
            name: t.name.clone(),
            hidden: false,
        })
        .collect();
    for i in sheets::choose(&infos, caps, &mut out) {
        let table = &tables[i];
        if out.is_full() {
            out.note(format!("sheet '{}' left out: no room left", table.name));
            continue;
        }
        if let Some(grid) = &table.grid {
            sheets::add(&mut out, &table.name, grid, false, caps);
        }
    }
    if cut {
        out.note(format!(
            "content.xml is over {} bytes; the rest was not read",
            count(caps.max_bytes)
        ));
    }
    let meta = Meta {
        title,
        scanned: false,
        page_count: tables.len(),
    };
    Ok(out.finish(Kind::Ods, bytes, meta))
}

/// A sheet of the content: its name, and its cells if it is among the
/// first `max_sheets` (the others are only named).
struct Table {
    name: String,
    grid: Option<Grid>,
}

/// Reads every table of the content; returns them and whether the byte
/// cap cut the part.
fn tables<R: Read>(xml: &mut Xml<R>, caps: &Caps) -> Result<(Vec<Table>, bool), String> {
    let mut tables: Vec<Table> = Vec::new();
    // Nested tables (rare) are read as text of the cell they sit in.
    let mut depth = 0usize;
    let mut col = 0usize;
    let mut row_repeat = 1usize;
    let mut cell_repeat = 1usize;
    let mut cell: Option<String> = None;
    let mut paragraphs = 0usize;
    let mut skipping = 0usize;
    loop {
        let ev = xml.next()?;
        if skipping > 0 {
            match &ev {
                Ev::Start { empty: false, .. } => skipping += 1,
                Ev::End { .. } => skipping -= 1,
                Ev::Eof { cut } => return Ok((tables, *cut)),
                _ => {}
            }
            continue;
        }
        let grid = tables.last_mut().and_then(|t| t.grid.as_mut());
        match &ev {
            Ev::Eof { cut } => return Ok((tables, *cut)),
            Ev::Start { name, empty, .. } if name == b"table" => {
                if *empty {
                    continue;
                }
                depth += 1;
                if depth == 1 {
                    let shown = tables.len() < caps.max_sheets;
                    tables.push(Table {
                        name: ev.attr(b"name").unwrap_or("?").to_owned(),
                        grid: shown.then(|| Grid::new(caps.max_rows, caps.max_cols)),
                    });
                }
            }
            ev if ev.is_end(b"table") => depth = depth.saturating_sub(1),
            // A cell's comment is not its value.
            Ev::Start {
                name, empty: false, ..
            } if name == b"annotation" => skipping = 1,
            Ev::Start { name, empty, .. } if depth == 1 && name == b"table-row" => {
                col = 0;
                row_repeat = repeat(ev.attr(b"number-rows-repeated"));
                if *empty {
                    if let Some(grid) = grid {
                        grid.end_row(row_repeat);
                    }
                }
            }
            ev if depth == 1 && ev.is_end(b"table-row") => {
                if let Some(grid) = grid {
                    grid.end_row(row_repeat);
                }
            }
            Ev::Start { name, empty, .. }
                if depth == 1 && (name == b"table-cell" || name == b"covered-table-cell") =>
            {
                cell_repeat = repeat(ev.attr(b"number-columns-repeated"));
                paragraphs = 0;
                // A cell without paragraphs shows its value attribute.
                let value = ev
                    .attr(b"string-value")
                    .or_else(|| ev.attr(b"date-value"))
                    .or_else(|| ev.attr(b"time-value"))
                    .or_else(|| ev.attr(b"boolean-value"))
                    .or_else(|| ev.attr(b"value"))
                    .unwrap_or("")
                    .to_owned();
                if *empty {
                    put(grid, &mut col, cell_repeat, &value, caps.max_cols);
                } else {
                    cell = Some(value);
                }
            }
            Ev::End { name }
                if depth == 1 && (name == b"table-cell" || name == b"covered-table-cell") =>
            {
                let value = cell.take().unwrap_or_default();
                put(grid, &mut col, cell_repeat, &value, caps.max_cols);
            }
            Ev::Start { name, .. } if name == b"p" || name == b"h" => {
                if let Some(text) = &mut cell {
                    if paragraphs == 0 {
                        text.clear();
                    } else {
                        text.push(' ');
                    }
                    paragraphs += 1;
                }
            }
            Ev::Start { name, .. } if name == b"s" => {
                if let Some(text) = &mut cell {
                    let n = ev.attr(b"c").and_then(|c| c.parse().ok()).unwrap_or(1);
                    text.extend(std::iter::repeat_n(' ', usize::min(n, MAX_SPACES)));
                }
            }
            Ev::Start { name, .. } if name == b"tab" || name == b"line-break" => {
                if let Some(text) = &mut cell {
                    text.push(' ');
                }
            }
            Ev::Text(t) => {
                if let Some(text) = &mut cell {
                    if paragraphs > 0 && text.len() < 64 << 10 {
                        text.push_str(t);
                    }
                }
            }
            _ => {}
        }
    }
}

/// A repeat count: at least 1.
fn repeat(attr: Option<&str>) -> usize {
    attr.and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

/// Puts `value` into `times` columns from `col`, expanding only up to
/// the column cap, then moves `col` past them.
fn put(grid: Option<&mut Grid>, col: &mut usize, times: usize, value: &str, max_cols: usize) {
    if let Some(grid) = grid {
        if !value.trim().is_empty() {
            let shown = times.min(max_cols.saturating_sub(*col));
            for i in 0..shown {
                grid.cell(*col + i, value);
            }
            // The last of the run, past the cap, only counts the width.
            grid.cell(col.saturating_add(times - 1), value);
        }
    }
    *col = col.saturating_add(times);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::ods;

    #[test]
    fn sheets_read_with_repeats_expanded_within_the_caps() {
        let content = concat!(
            r#"<table:table table:name="Budget">"#,
            r#"<table:table-row><table:table-cell office:value-type="string"><text:p>Item</text:p></table:table-cell>"#,
            r#"<table:table-cell><text:p>Cost</text:p><office:annotation><text:p>note</text:p></office:annotation></table:table-cell></table:table-row>"#,
            r#"<table:table-row table:number-rows-repeated="3"><table:table-cell><text:p>Tea<text:s text:c="2"/>bags</text:p></table:table-cell>"#,
            r#"<table:table-cell office:value-type="float" office:value="2.5"/><table:table-cell table:number-columns-repeated="16384"/></table:table-row>"#,
            r#"<table:table-row table:number-rows-repeated="1048000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>"#,
            r#"</table:table><table:table table:name="Notes"/>"#,
        );
        let d = read(&ods(content, Some("Home")), &Caps::default()).unwrap();
        assert_eq!(d.kind, Kind::Ods);
        assert_eq!(d.title.as_deref(), Some("Home"));
        assert_eq!(d.sections[0].name.as_deref(), Some("sheet 'Budget'"));
        assert_eq!(
            d.sections[0].text,
            "| Item | Cost |\n|---|---|\n| Tea bags | 2.5 |\n| Tea bags | 2.5 |\n| Tea bags | 2.5 |\n"
        );
        assert!(!d.truncated, "{:?}", d.notes);
    }

    #[test]
    fn a_million_repeated_full_rows_cost_only_the_caps() {
        let content = concat!(
            r#"<table:table table:name="Big"><table:table-row table:number-rows-repeated="1000000">"#,
            r#"<table:table-cell table:number-columns-repeated="1000000"><text:p>x</text:p></table:table-cell>"#,
            r#"</table:table-row></table:table>"#,
        );
        let d = read(&ods(content, None), &Caps::default()).unwrap();
        assert_eq!(
            d.notes,
            ["sheet 'Big': showed 200 of 1,000,000 rows, 30 of 1,000,000 columns"]
        );
    }
}
