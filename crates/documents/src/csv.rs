//! Comma-, semicolon-, tab- or pipe-separated values as one table, the
//! delimiter guessed from the first lines (a European spreadsheet's CSV
//! uses semicolons), quoted fields as RFC 4180 has them, under the row
//! and column caps.

use crate::document::{Caps, Document, Kind};
use crate::out::{Meta, Out};
use crate::table::Grid;
use crate::text::decode;

/// A CSV file; `tab` when its name or type says tab-separated.
pub(crate) fn read(bytes: &[u8], tab: bool, caps: &Caps) -> Document {
    let text = decode(bytes);
    let delimiter = if tab { '\t' } else { guess_delimiter(&text) };
    let mut grid = Grid::new(caps.max_rows, caps.max_cols);
    parse(&text, delimiter, &mut grid);
    let mut out = Out::new(caps);
    out.section(None, &grid.render());
    for note in grid.notes("the table") {
        out.note(note);
    }
    out.finish(Kind::Csv, bytes, Meta::single(None))
}

/// The candidate found the same number of times (and at least once) on
/// the most of the first lines; a comma when none is.
fn guess_delimiter(text: &str) -> char {
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).take(10).collect();
    let mut best = (',', 0);
    for candidate in [',', ';', '\t', '|'] {
        let counts: Vec<usize> = lines
            .iter()
            .map(|line| outside_quotes(line, candidate))
            .collect();
        let Some(&first) = counts.first() else {
            continue;
        };
        if first == 0 {
            continue;
        }
        let agreeing = counts.iter().filter(|&&n| n == first).count();
        if agreeing > best.1 {
            best = (candidate, agreeing);
        }
    }
    best.0
}

fn outside_quotes(line: &str, delimiter: char) -> usize {
    let mut quoted = false;
    let mut n = 0;
    for c in line.chars() {
        if c == '"' {
            quoted = !quoted;
        } else if c == delimiter && !quoted {
            n += 1;
        }
    }
    n
}

/// Splits `text` into records and fields into `grid`. A quote opens a
/// quoted field only at its start; `""` inside one is a quote; a newline
/// inside one is part of the field. Stops reading once the rows are full,
/// counting the rest by their line ends only.
fn parse(text: &str, delimiter: char, grid: &mut Grid) {
    let mut field = String::new();
    let mut col = 0;
    let mut quoted = false;
    let mut at_start = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            '\n' => {
                grid.cell(col, &field);
                grid.end_row(1);
                field.clear();
                col = 0;
                at_start = true;
            }
            c if c == delimiter => {
                grid.cell(col, &field);
                field.clear();
                col += 1;
                at_start = true;
            }
            c => {
                field.push(c);
                at_start = false;
            }
        }
    }
    grid.cell(col, &field);
    grid.end_row(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_are_guessed() {
        assert_eq!(guess_delimiter("a,b,c\n1,2,3"), ',');
        assert_eq!(guess_delimiter("a;b;c\n1,5;2;3"), ';');
        assert_eq!(guess_delimiter("a\tb\n1\t2"), '\t');
        assert_eq!(guess_delimiter("\"x;y\",b\n1,2"), ',');
        assert_eq!(guess_delimiter("just words"), ',');
    }

    #[test]
    fn quoted_fields_keep_delimiters_quotes_and_newlines() {
        let doc = read(
            b"name,note\n\"Smith, J\",\"said \"\"hi\"\"\nthen left\"\n",
            false,
            &Caps::default(),
        );
        assert_eq!(
            doc.text(),
            "| name | note |\n|---|---|\n| Smith, J | said \"hi\" then left |"
        );
        assert!(!doc.truncated);
        assert_eq!(doc.kind, Kind::Csv);
    }

    #[test]
    fn rows_and_columns_are_capped_with_a_note() {
        let mut csv = String::new();
        for r in 0..50 {
            let row: Vec<String> = (0..8).map(|c| format!("{r}-{c}")).collect();
            csv.push_str(&row.join(";"));
            csv.push_str("\r\n");
        }
        let caps = Caps {
            max_rows: 10,
            max_cols: 3,
            ..Caps::default()
        };
        let doc = read(csv.as_bytes(), false, &caps);
        assert!(doc.truncated);
        assert_eq!(
            doc.notes,
            ["the table: showed 10 of 50 rows, 3 of 8 columns"]
        );
        assert!(doc.sections[0].text.starts_with("| 0-0 | 0-1 | 0-2 |\n"));
        assert_eq!(doc.sections[0].text.lines().count(), 11);
    }
}
