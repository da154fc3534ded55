//! A JPEG's marker structure, walked from its start to its end marker.
//!
//! The JPEG decoder is lenient: data cut short decodes into an image
//! whose lower part is grey, with no error. A download that broke off is
//! better refused with a note than shown to a model as if it were the
//! picture. The walk stops at the end marker, so data some cameras append
//! after it (a motion photo's video) is left alone.

use super::ImageError;

/// Checks that `bytes` hold a JPEG from its start marker to its end
/// marker, every segment whole.
pub fn check_complete(bytes: &[u8]) -> Result<(), ImageError> {
    let cut =
        || ImageError::Corrupt("the JPEG data ends before its end marker (cut short?)".into());
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return Err(ImageError::NotAnImage);
    }
    let mut at = 2;
    loop {
        if *bytes.get(at).ok_or_else(cut)? != 0xFF {
            return Err(ImageError::Corrupt(format!(
                "the JPEG has stray data at byte {at} where a marker belongs"
            )));
        }
        // A marker may be preceded by any number of fill bytes.
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let marker = *bytes.get(at).ok_or_else(cut)?;
        at += 1;
        match marker {
            0xD9 => return Ok(()),
            // Markers without a length: TEM and the restart markers.
            0x01 | 0xD0..=0xD7 => continue,
            _ => {}
        }
        let length = match bytes.get(at..at + 2) {
            Some(&[hi, lo]) => usize::from(u16::from_be_bytes([hi, lo])),
            _ => return Err(cut()),
        };
        if length < 2 {
            return Err(ImageError::Corrupt(format!(
                "a JPEG segment at byte {at} has an impossible length"
            )));
        }
        at += length;
        if at > bytes.len() {
            return Err(cut());
        }
        if marker == 0xDA {
            at = after_scan(bytes, at).ok_or_else(cut)?;
        }
    }
}

/// Where the entropy-coded data starting at `from` ends: the first marker
/// that is neither a stuffed `FF 00` nor a restart marker.
fn after_scan(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        at += bytes.get(at..)?.iter().position(|&b| b == 0xFF)?;
        match *bytes.get(at + 1)? {
            0x00 | 0xD0..=0xD7 | 0xFF => at += 1,
            _ => return Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SOI, an APP0 segment, SOS with a little scan data, then `tail`.
    fn jpeg(tail: &[u8]) -> Vec<u8> {
        let mut out = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, b'h', b'i'];
        out.extend([0xFF, 0xDA, 0x00, 0x03, 0x01]);
        out.extend([0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56]);
        out.extend(tail);
        out
    }

    #[test]
    fn only_whole_jpegs_pass() {
        let mut whole = jpeg(&[0xFF, 0xD9]);
        let end = whole.len();
        assert_eq!(check_complete(&whole), Ok(()));
        // What comes after the end marker is not the image's.
        whole.extend(b"trailing video data \xFF\xD8");
        assert_eq!(check_complete(&whole), Ok(()));
        for cut in 2..end {
            assert!(
                check_complete(&whole[..cut]).is_err(),
                "cut at {cut} passed"
            );
        }
        let bad_length = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01, 0xFF, 0xD9];
        assert!(matches!(
            check_complete(&bad_length),
            Err(ImageError::Corrupt(_))
        ));
        let stray = [0xFF, 0xD8, 0x00, 0xFF, 0xD9];
        assert!(matches!(
            check_complete(&stray),
            Err(ImageError::Corrupt(_))
        ));
    }
}
