//! What the workbook readers (XLSX, ODS) share: one section per sheet
//! shown, the sheets left out by the cap (or hidden) named in a note, the
//! title from the package's metadata part, and relative part paths.

use crate::document::Caps;
use crate::error::DocumentError;
use crate::out::{Out, count, plural};
use crate::table::Grid;
use crate::xml::{Ev, Xml};
use crate::zipped::Zip;

/// A sheet as listed by its workbook.
pub(crate) struct SheetInfo {
    pub(crate) name: String,
    pub(crate) hidden: bool,
}

/// Which sheets to read: the first `max_sheets` that are not hidden. The
/// notes name the others.
pub(crate) fn choose(sheets: &[SheetInfo], caps: &Caps, out: &mut Out) -> Vec<usize> {
    let visible: Vec<usize> = (0..sheets.len()).filter(|&i| !sheets[i].hidden).collect();
    let hidden: Vec<&str> = sheets
        .iter()
        .filter(|s| s.hidden)
        .map(|s| s.name.as_str())
        .collect();
    let shown: Vec<usize> = visible.iter().copied().take(caps.max_sheets).collect();
    if visible.len() > shown.len() {
        let left: Vec<&str> = visible[shown.len()..]
            .iter()
            .map(|&i| sheets[i].name.as_str())
            .collect();
        out.note(format!(
            "showed {} of {} sheets; left out {}",
            count(shown.len()),
            count(visible.len()),
            quoted_list(&left)
        ));
    }
    if !hidden.is_empty() {
        out.note(format!(
            "{} hidden, left out: {}",
            plural(hidden.len(), "sheet is", "sheets are"),
            quoted_list(&hidden)
        ));
    }
    shown
}

/// `'a', 'b'`, and how many more past twenty.
fn quoted_list(names: &[&str]) -> String {
    let mut list: Vec<String> = names.iter().take(20).map(|n| format!("'{n}'")).collect();
    if names.len() > 20 {
        list.push(format!("and {} more", count(names.len() - 20)));
    }
    list.join(", ")
}

/// Adds a sheet's section and its notes; `cut` when the byte cap stopped
/// its part early.
pub(crate) fn add(out: &mut Out, name: &str, grid: &Grid, cut: bool, caps: &Caps) {
    let what = format!("sheet '{name}'");
    let text = if grid.is_empty() {
        "(empty)".to_owned()
    } else {
        grid.render()
    };
    out.section(Some(what.clone()), &text);
    for note in grid.notes(&what) {
        out.note(note);
    }
    if cut {
        out.note(format!(
            "{what} is over {} bytes; the rest was not read",
            count(caps.max_bytes)
        ));
    }
}

/// The `title` element of a metadata part (`docProps/core.xml` in Office
/// files, `meta.xml` in OpenDocument). A broken metadata part is no
/// reason to refuse the document: it only gives no title.
pub(crate) fn title_in(zip: &mut Zip<'_>, part: &str) -> Result<Option<String>, DocumentError> {
    let Some(entry) = zip.open_entry(part)? else {
        return Ok(None);
    };
    let mut xml = Xml::new(entry);
    let mut inside = false;
    let mut title = String::new();
    while let Ok(ev) = xml.next() {
        match ev {
            Ev::Eof { .. } => break,
            ref ev if ev.is_start(b"title") => inside = true,
            ref ev if ev.is_end(b"title") => break,
            Ev::Text(t) if inside => {
                title.push_str(&t);
                if title.len() > 1_000 {
                    break;
                }
            }
            _ => {}
        }
    }
    let title = title.trim();
    Ok((!title.is_empty()).then(|| title.to_owned()))
}

/// The title of an Office Open XML package.
pub(crate) fn core_title(zip: &mut Zip<'_>) -> Result<Option<String>, DocumentError> {
    title_in(zip, "docProps/core.xml")
}

/// `target` (a relationship's) as a path in the zip, relative to the
/// folder of the part `from`; an absolute target is from the root.
pub(crate) fn resolve(from: &str, target: &str) -> String {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        let mut dir: Vec<&str> = from.split('/').collect();
        dir.pop();
        dir
    };
    for piece in target.split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            piece => parts.push(piece),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_like_paths() {
        assert_eq!(
            resolve("xl/workbook.xml", "worksheets/sheet1.xml"),
            "xl/worksheets/sheet1.xml"
        );
        assert_eq!(
            resolve("xl/workbook.xml", "/xl/worksheets/s.xml"),
            "xl/worksheets/s.xml"
        );
        assert_eq!(resolve("xl/workbook.xml", "../x/./y.xml"), "x/y.xml");
        assert_eq!(resolve("workbook.xml", "../../a.xml"), "a.xml");
    }

    #[test]
    fn sheets_past_the_cap_and_hidden_ones_are_named() {
        let caps = Caps {
            max_sheets: 2,
            ..Caps::default()
        };
        let sheets: Vec<SheetInfo> = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(i, n)| SheetInfo {
                name: n.to_string(),
                hidden: i == 1,
            })
            .collect();
        let mut out = Out::new(&caps);
        assert_eq!(choose(&sheets, &caps, &mut out), [0, 2]);
        assert_eq!(
            out.notes,
            [
                "showed 2 of 3 sheets; left out 'd'",
                "1 sheet is hidden, left out: 'b'"
            ]
        );
    }
}
