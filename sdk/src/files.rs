//! Helpers for plugins that handle files: a channel names a downloaded
//! attachment after what the sender called it, and that name may hold `/`,
//! `..` or control characters; and a file is an image the host can show a
//! model only if its first bytes say so, whatever its name or stated type.

/// How many leading bytes [`image_mime`] needs.
pub const IMAGE_SNIFF_BYTES: usize = 12;

/// The media type of an image the host shows to a model (JPEG, PNG, GIF,
/// WebP), judged by its first bytes (at least [`IMAGE_SNIFF_BYTES`] of
/// them); `None` for anything else. A text file renamed `.jpg` is not an
/// image here.
pub fn image_mime(head: &[u8]) -> Option<&'static str> {
    match head {
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, ..] => Some("image/png"),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// `name` made safe as one path component: letters (any script), digits,
/// `.`, `-` and `_` are kept, anything else becomes `_`, leading dots go
/// (no hidden files, no `..`), at most 100 characters, and `file` when
/// nothing is left.
pub fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    match cleaned.trim_start_matches('.') {
        "" => "file".into(),
        rest => rest.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{image_mime, safe_file_name};

    #[test]
    fn images_are_known_by_their_first_bytes() {
        let cases: [(&[u8], Option<&str>); 9] = [
            (b"\xFF\xD8\xFF\xE0\0\x10JFIF\0", Some("image/jpeg")),
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Some("image/png")),
            (b"GIF89a\x01\0\x01\0\0\0", Some("image/gif")),
            (b"GIF87a\x01\0\x01\0\0\0", Some("image/gif")),
            (b"RIFF\x24\0\0\0WEBPVP8 ", Some("image/webp")),
            (b"RIFF\x24\0\0\0WAVEfmt ", None),
            (b"hello, I am text", None),
            (b"\xFF\xD8", None),
            (b"", None),
        ];
        for (head, wanted) in cases {
            assert_eq!(image_mime(head), wanted, "{head:?}");
        }
    }

    #[test]
    fn file_names_cannot_escape_the_directory() {
        for (name, wanted) in [
            ("photo.jpg", "photo.jpg"),
            ("a.pdf", "a.pdf"),
            ("../../etc/passwd", "_.._etc_passwd"),
            ("..", "file"),
            ("", "file"),
            ("a b\nc.txt", "a_b_c.txt"),
            ("my file (1).txt", "my_file__1_.txt"),
            ("résumé.pdf", "résumé.pdf"),
        ] {
            assert_eq!(safe_file_name(name), wanted, "{name:?}");
        }
    }
}
