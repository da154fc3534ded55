//! What a file is, from its first bytes: an image hearth reads, an image
//! in a format it does not read (so the note can say which), or anything
//! else. Names and stated types are never trusted: a sender chooses them.

use hearth_sdk::files::image_mime;

/// How many leading bytes [`sniff`] looks at.
pub const SNIFF_BYTES: usize = 16;

/// What a file's first bytes say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An image hearth decodes, with its media type.
    Image(&'static str),
    /// An image format hearth does not decode, by name.
    UnsupportedImage(&'static str),
    /// Not an image.
    Other,
}

/// Judges `head`, the first [`SNIFF_BYTES`] of a file (fewer if it is
/// shorter).
pub fn sniff(head: &[u8]) -> Kind {
    if let Some(mime) = image_mime(head) {
        return Kind::Image(mime);
    }
    let brand = head.get(8..12);
    match head {
        // Bytes 6 to 9 of a BMP are reserved zeros: text starting "BM" is
        // not taken for one.
        [b'B', b'M', _, _, _, _, 0, 0, 0, 0, ..] => Kind::UnsupportedImage("BMP"),
        [b'I', b'I', 42, 0, ..] | [b'M', b'M', 0, 42, ..] => Kind::UnsupportedImage("TIFF"),
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => match brand {
            Some(b"avif" | b"avis") => Kind::UnsupportedImage("AVIF"),
            Some(b"heic" | b"heix" | b"hevc" | b"heim" | b"heis" | b"mif1" | b"msf1") => {
                Kind::UnsupportedImage("HEIC")
            }
            _ => Kind::Other,
        },
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_told_apart_from_everything_else() {
        let cases: [(&[u8], Kind); 10] = [
            (
                b"BM\x36\0\x0c\0\0\0\0\0\x36\0\0\0",
                Kind::UnsupportedImage("BMP"),
            ),
            (b"BMI: 23.1, fine", Kind::Other),
            (
                b"\xFF\xD8\xFF\xE1\0\x10Exif\0\0MM",
                Kind::Image("image/jpeg"),
            ),
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Kind::Image("image/png")),
            (
                b"\0\0\0\x1cftypheic\0\0\0\0",
                Kind::UnsupportedImage("HEIC"),
            ),
            (
                b"\0\0\0\x1cftypavif\0\0\0\0",
                Kind::UnsupportedImage("AVIF"),
            ),
            (b"\0\0\0\x1cftypisom\0\0\0\0", Kind::Other),
            (
                b"II*\0\x08\0\0\0\0\0\0\0\0\0\0\0",
                Kind::UnsupportedImage("TIFF"),
            ),
            (b"this is plain text, renamed .jpg", Kind::Other),
            (b"", Kind::Other),
        ];
        for (head, wanted) in cases {
            assert_eq!(sniff(head), wanted, "{head:?}");
        }
    }
}
