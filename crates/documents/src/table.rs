//! Tables as a model reads them: rows of cells as `| a | b |` lines,
//! collected under the row and column caps while counting what is left
//! out, shared by the sheets, CSV and DOCX tables so each says alike
//! "showed 200 of 5,000 rows".

use crate::out::count;

/// The longest cell shown, in characters: one cell holding a whole essay
/// should not eat the budget of the table around it.
const MAX_CELL_CHARS: usize = 1_000;

/// A table being collected row by row, cell by cell.
pub(crate) struct Grid {
    max_rows: usize,
    max_cols: usize,
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    row_has_value: bool,
    rows_seen: usize,
    cols_seen: usize,
}

impl Grid {
    pub(crate) fn new(max_rows: usize, max_cols: usize) -> Grid {
        Grid {
            max_rows,
            max_cols,
            rows: Vec::new(),
            row: Vec::new(),
            row_has_value: false,
            rows_seen: 0,
            cols_seen: 0,
        }
    }

    /// Whether the rows kept are at the cap: a reader may then only count.
    pub(crate) fn rows_full(&self) -> bool {
        self.rows.len() >= self.max_rows
    }

    /// Sets the cell in column `col` (from 0) of the current row. Empty
    /// values only hold their place; cells past the column cap are counted.
    pub(crate) fn cell(&mut self, col: usize, value: &str) {
        let value = value.trim();
        if value.is_empty() {
            return;
        }
        self.row_has_value = true;
        self.cols_seen = self.cols_seen.max(col.saturating_add(1));
        if col >= self.max_cols || self.rows_full() {
            return;
        }
        if self.row.len() <= col {
            self.row.resize(col + 1, String::new());
        }
        self.row[col] = clean_cell(value);
    }

    /// Ends the current row, `times` times over (a spreadsheet's repeated
    /// rows). A row with no value is dropped: sheets pad with empty rows.
    pub(crate) fn end_row(&mut self, times: usize) {
        let row = std::mem::take(&mut self.row);
        if !std::mem::take(&mut self.row_has_value) {
            return;
        }
        let times = times.max(1);
        self.rows_seen = self.rows_seen.saturating_add(times);
        for _ in 0..times {
            if self.rows_full() {
                break;
            }
            self.rows.push(row.clone());
        }
    }

    /// Whether no row has a value.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows_seen == 0
    }

    /// The rows as `| a | b |` lines, the first row set off as a header
    /// (most tables have one, and the model reads it as Markdown).
    pub(crate) fn render(&self) -> String {
        let width = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut out = String::new();
        for (i, row) in self.rows.iter().enumerate() {
            out.push('|');
            for c in 0..width {
                out.push(' ');
                out.push_str(row.get(c).map(String::as_str).unwrap_or(""));
                out.push_str(" |");
            }
            out.push('\n');
            if i == 0 && self.rows.len() > 1 {
                out.push('|');
                for _ in 0..width {
                    out.push_str("---|");
                }
                out.push('\n');
            }
        }
        out
    }

    /// What the caps left out, for a table called `what` ("sheet 'Raw'").
    pub(crate) fn notes(&self, what: &str) -> Vec<String> {
        let mut parts = Vec::new();
        if self.rows_seen > self.rows.len() {
            parts.push(format!(
                "showed {} of {} rows",
                count(self.rows.len()),
                count(self.rows_seen)
            ));
        }
        if self.cols_seen > self.max_cols {
            parts.push(format!(
                "{} of {} columns",
                count(self.max_cols),
                count(self.cols_seen)
            ));
        }
        if parts.is_empty() {
            Vec::new()
        } else {
            vec![format!("{what}: {}", parts.join(", "))]
        }
    }
}

/// A cell's text on one line, its pipes escaped, at most
/// [`MAX_CELL_CHARS`] characters.
fn clean_cell(value: &str) -> String {
    let mut out = String::with_capacity(value.len().min(MAX_CELL_CHARS));
    let mut chars = 0;
    let mut space = false;
    for c in value.chars() {
        if chars >= MAX_CELL_CHARS {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        if c == '|' {
            out.push('\\');
        }
        out.push(c);
        chars += 1;
    }
    out
}

/// Column letters ("A", "AB") to an index from 0, as in a cell reference
/// like `AB12`; `None` when the reference has no letters.
pub(crate) fn column_of(reference: &str) -> Option<usize> {
    let mut col: usize = 0;
    let mut any = false;
    for b in reference.bytes() {
        if !b.is_ascii_alphabetic() {
            break;
        }
        any = true;
        col = col
            .saturating_mul(26)
            .saturating_add(usize::from(b.to_ascii_uppercase() - b'A') + 1);
    }
    any.then(|| col - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_renders_with_a_header_and_counts_what_it_drops() {
        let mut grid = Grid::new(2, 2);
        for r in 0..5 {
            for c in 0..3 {
                grid.cell(c, &format!("r{r}c{c}"));
            }
            grid.end_row(1);
        }
        grid.end_row(1); // an empty row is not a row
        assert_eq!(
            grid.render(),
            "| r0c0 | r0c1 |\n|---|---|\n| r1c0 | r1c1 |\n"
        );
        assert_eq!(
            grid.notes("sheet 'S'"),
            ["sheet 'S': showed 2 of 5 rows, 2 of 3 columns"]
        );
    }

    #[test]
    fn cells_are_one_line_with_pipes_escaped_and_gaps_kept() {
        let mut grid = Grid::new(10, 10);
        grid.cell(0, "a|b");
        grid.cell(2, " two\n lines ");
        grid.end_row(1);
        assert_eq!(grid.render(), "| a\\|b |  | two lines |\n");
        assert!(grid.notes("t").is_empty());
    }

    #[test]
    fn column_letters_map_to_indices() {
        assert_eq!(column_of("A1"), Some(0));
        assert_eq!(column_of("Z9"), Some(25));
        assert_eq!(column_of("AA1"), Some(26));
        assert_eq!(column_of("xfd1048576"), Some(16383));
        assert_eq!(column_of("12"), None);
        assert!(column_of(&"Z".repeat(100)).is_some());
    }
}
