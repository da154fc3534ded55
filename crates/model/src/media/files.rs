//! Reading a file that may be an image: its kind from its first bytes
//! (cheap, for every attachment), and its content within the size cap
//! (only for what is worth decoding).

use std::io::Read;
use std::path::Path;

use super::sniff::{Kind, SNIFF_BYTES, sniff};
use super::{ImageError, MAX_FILE_BYTES};

/// What the file at `path` is, by its first bytes.
pub fn kind_of(path: &Path) -> std::io::Result<Kind> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    std::fs::File::open(path)?
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    Ok(sniff(&head))
}

/// The content of the image file at `path`: refused unheard when it is
/// over [`MAX_FILE_BYTES`] or is no image hearth reads.
pub fn read_image(path: &Path) -> Result<Vec<u8>, ImageError> {
    let io = |e: std::io::Error| ImageError::Io(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > MAX_FILE_BYTES {
        return Err(ImageError::FileTooLarge { size });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // The cap holds even if the file grows while it is read.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ImageError::FileTooLarge {
            size: bytes.len() as u64,
        });
    }
    match sniff(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        Kind::Image(_) => Ok(bytes),
        Kind::UnsupportedImage(name) => Err(ImageError::Unsupported(name)),
        Kind::Other => Err(ImageError::NotAnImage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_judged_by_content_and_refused_over_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let huge = dir.path().join("huge.jpg");
        // Sparse: the cap is checked before a byte is read.
        let file = std::fs::File::create(&huge).unwrap();
        file.set_len(MAX_FILE_BYTES + 1).unwrap();
        assert_eq!(
            read_image(&huge),
            Err(ImageError::FileTooLarge {
                size: MAX_FILE_BYTES + 1
            })
        );
        let text = dir.path().join("photo.jpg");
        std::fs::write(&text, "not a photo").unwrap();
        assert_eq!(read_image(&text), Err(ImageError::NotAnImage));
        assert_eq!(kind_of(&text).unwrap(), Kind::Other);
        let png = dir.path().join("x.bin");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        assert_eq!(kind_of(&png).unwrap(), Kind::Image("image/png"));
        assert!(read_image(&png).is_ok());
        assert!(matches!(
            read_image(&dir.path().join("missing.png")),
            Err(ImageError::Io(_))
        ));
    }
}
