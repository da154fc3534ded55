//! The zip container under DOCX, XLSX and ODS, read with a cap on the
//! bytes unpacked from every entry: a zip's declared sizes can lie, and a
//! few kilobytes of deflate can unpack to gigabytes (a zip bomb), so no
//! entry is ever read past the cap, whatever it claims.

use std::io::{Cursor, Read};

use zip::ZipArchive;
use zip::result::ZipError;

use crate::error::DocumentError;

/// An opened zip and the cap on each entry.
pub(crate) struct Zip<'a> {
    archive: ZipArchive<Cursor<&'a [u8]>>,
    cap: usize,
    format: &'static str,
}

impl<'a> Zip<'a> {
    /// Opens the zip in `bytes`; `format` names it in errors.
    pub(crate) fn open(
        bytes: &'a [u8],
        cap: usize,
        format: &'static str,
    ) -> Result<Zip<'a>, DocumentError> {
        let archive = ZipArchive::new(Cursor::new(bytes)).map_err(|e| DocumentError::Corrupt {
            format,
            place: format!("zip directory: {e}"),
        })?;
        Ok(Zip {
            archive,
            cap,
            format,
        })
    }

    /// Whether the zip has an entry of this name.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.archive.index_for_name(name).is_some()
    }

    /// The entry `name` unpacked, at most `cap` bytes: `None` if there is
    /// no such entry, else the bytes and whether the cap cut them.
    pub(crate) fn read(&mut self, name: &str) -> Result<Option<(Vec<u8>, bool)>, DocumentError> {
        let format = self.format;
        let Some(mut entry) = self.open_entry(name)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| DocumentError::Corrupt {
                format,
                place: format!("{name}: {e}"),
            })?;
        let cut = entry.hit_cap();
        Ok(Some((bytes, cut)))
    }

    /// The entry `name` as a reader that stops at the cap (and says
    /// whether it did), for the XML parts read as a stream.
    pub(crate) fn open_entry(
        &mut self,
        name: &str,
    ) -> Result<Option<Entry<'_, 'a>>, DocumentError> {
        let format = self.format;
        let cap = self.cap;
        match self.archive.by_name(name) {
            Ok(entry) => Ok(Some(Capped::new(entry, cap))),
            Err(ZipError::FileNotFound) => Ok(None),
            Err(ZipError::UnsupportedArchive(ZipError::PASSWORD_REQUIRED))
            | Err(ZipError::InvalidPassword) => Err(DocumentError::Encrypted { format }),
            Err(e) => Err(DocumentError::Corrupt {
                format,
                place: format!("{name}: {e}"),
            }),
        }
    }
}

/// An entry being read, capped.
pub(crate) type Entry<'z, 'a> = Capped<zip::read::ZipFile<'z, Cursor<&'a [u8]>>>;

/// A reader that gives at most `left` bytes and remembers whether its
/// source had more.
pub(crate) struct Capped<R> {
    inner: R,
    left: usize,
    hit: bool,
}

impl<R: Read> Capped<R> {
    pub(crate) fn new(inner: R, cap: usize) -> Capped<R> {
        Capped {
            inner,
            left: cap,
            hit: false,
        }
    }

    /// Whether a read was refused because the cap was reached and the
    /// source had more: the entry was cut, not whole.
    pub(crate) fn hit_cap(&self) -> bool {
        self.hit
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            if !self.hit {
                // One byte more tells a cut entry from one that ends
                // exactly at the cap.
                let mut probe = [0u8; 1];
                self.hit = self.inner.read(&mut probe)? > 0;
            }
            return Ok(0);
        }
        let want = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_stops_and_tells_a_cut_from_an_exact_fit() {
        let mut cut = Capped::new(&b"abcdef"[..], 4);
        let mut out = Vec::new();
        cut.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abcd");
        assert!(cut.hit_cap());

        let mut exact = Capped::new(&b"abcd"[..], 4);
        out.clear();
        exact.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abcd");
        assert!(!exact.hit_cap());
    }
}
