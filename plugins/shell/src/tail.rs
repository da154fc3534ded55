//! The last lines of a file, read from its end.
//!
//! A background process's log can grow without bound; `process_logs` and
//! the exit notice only want its end. Reading backwards in blocks touches
//! only the bytes needed, and a byte cap bounds the answer even when the
//! last lines are enormous.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// The end of a file.
#[derive(Debug, PartialEq, Eq)]
pub struct Tail {
    /// The last lines, as text (invalid UTF-8 replaced).
    pub text: String,
    /// How many lines `text` holds.
    pub lines: usize,
    /// Whether the file holds more before `text`.
    pub earlier: bool,
    /// The file's size in bytes.
    pub size: u64,
}

/// The last `lines` lines of `path`, at most `max_bytes` of them (the
/// first line is then cut at its start). A missing file reads as empty.
pub fn tail(path: &Path, lines: usize, max_bytes: usize) -> io::Result<Tail> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Tail {
                text: String::new(),
                lines: 0,
                earlier: false,
                size: 0,
            });
        }
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    // Blocks read from the end, last block first.
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut held = 0usize;
    let mut newlines = 0usize;
    let mut pos = size;
    // A final newline ends the last line; it does not start another.
    let mut skip_final_newline = true;
    while pos > 0 && newlines < lines && held < max_bytes {
        let want = (pos.min(BLOCK as u64) as usize).min(max_bytes - held);
        pos -= want as u64;
        let mut block = vec![0u8; want];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut block)?;
        let mut counted = &block[..];
        if skip_final_newline {
            if counted.last() == Some(&b'\n') {
                counted = &counted[..counted.len() - 1];
            }
            skip_final_newline = false;
        }
        newlines += counted.iter().filter(|&&b| b == b'\n').count();
        held += block.len();
        blocks.push(block);
    }
    let mut bytes = Vec::with_capacity(held);
    for block in blocks.iter().rev() {
        bytes.extend_from_slice(block);
    }
    // Keep the last `lines` lines: cut after the newline that precedes them.
    let body_end = if bytes.last() == Some(&b'\n') {
        bytes.len() - 1
    } else {
        bytes.len()
    };
    let mut start = 0;
    let mut seen = 0;
    for (i, &b) in bytes[..body_end].iter().enumerate().rev() {
        if b == b'\n' {
            seen += 1;
            if seen == lines {
                start = i + 1;
                break;
            }
        }
    }
    if lines == 0 {
        start = bytes.len();
    }
    let kept = &bytes[start..];
    let counted = kept.iter().filter(|&&b| b == b'\n').count()
        + usize::from(!kept.is_empty() && kept.last() != Some(&b'\n'));
    Ok(Tail {
        text: String::from_utf8_lossy(kept).into_owned(),
        lines: counted,
        earlier: pos + (start as u64) > 0,
        size,
    })
}

/// How much is read at a time.
const BLOCK: usize = 8192;

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(text: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn the_last_lines_are_returned_with_or_without_a_final_newline() {
        let cases: [(&[u8], usize, &str, usize, bool); 7] = [
            (b"a\nb\nc\n", 2, "b\nc\n", 2, true),
            (b"a\nb\nc", 2, "b\nc", 2, true),
            (b"a\nb\nc\n", 3, "a\nb\nc\n", 3, false),
            (b"a\nb\nc\n", 10, "a\nb\nc\n", 3, false),
            (b"", 5, "", 0, false),
            (b"\n\n", 1, "\n", 1, true),
            (b"only", 1, "only", 1, false),
        ];
        for (text, n, expected, lines, earlier) in cases {
            let (_dir, path) = file_with(text);
            let got = tail(&path, n, 1 << 20).unwrap();
            assert_eq!(got.text, expected, "{text:?} {n}");
            assert_eq!(got.lines, lines, "{text:?} {n}");
            assert_eq!(got.earlier, earlier, "{text:?} {n}");
            assert_eq!(got.size, text.len() as u64);
        }
    }

    #[test]
    fn a_big_file_is_read_from_its_end_only() {
        let text: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
        let (_dir, path) = file_with(text.as_bytes());
        let got = tail(&path, 3, 1 << 20).unwrap();
        assert_eq!(got.text, "line 199997\nline 199998\nline 199999\n");
        assert!(got.earlier);
        // Lines spanning block boundaries come out whole.
        let got = tail(&path, 2000, 1 << 20).unwrap();
        assert_eq!(got.lines, 2000);
        assert!(got.text.starts_with("line 198000\n"));
    }

    #[test]
    fn the_byte_cap_bounds_huge_lines() {
        let text = format!("start\n{}\n", "z".repeat(100_000));
        let (_dir, path) = file_with(text.as_bytes());
        let got = tail(&path, 2, 1000).unwrap();
        assert_eq!(got.text, format!("{}\n", "z".repeat(999)));
        assert!(got.earlier);
    }

    #[test]
    fn a_missing_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let got = tail(&dir.path().join("none"), 5, 100).unwrap();
        assert_eq!(got.text, "");
    }
}
