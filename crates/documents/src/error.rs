//! What can go wrong reading a document, one variant per case, so a caller
//! can tell the model (and the person) why a file was not read instead of
//! guessing from a string.

use thiserror::Error;

/// Why a document's bytes could not be turned into text.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DocumentError {
    /// The bytes are something this crate does not read: an image, an
    /// archive, a legacy Office file, a program. `detected` names what the
    /// bytes are (by their magic numbers, not by the file's name), so the
    /// caller can route an image to the image path or say what it got.
    #[error("not a document hearth reads: {detected}")]
    Unsupported {
        /// What the bytes were found to be, in words ("a PNG image").
        detected: String,
    },
    /// The bytes claim a format they do not keep to: a PDF whose
    /// cross-reference table cannot be read, a DOCX without
    /// `word/document.xml`, XML that breaks off. `place` says where.
    #[error("the {format} is damaged ({place})")]
    Corrupt {
        /// The format the bytes were sniffed as ("PDF", "DOCX").
        format: &'static str,
        /// Where it breaks, in words ("word/document.xml: unexpected end").
        place: String,
    },
    /// The document is encrypted or password-protected (a PDF with an
    /// `/Encrypt` dictionary, even one that opens without a password; an
    /// Office file saved with a password). Nothing is read from it.
    #[error("the {format} is encrypted or password-protected")]
    Encrypted {
        /// The format ("PDF", "Office document").
        format: &'static str,
    },
    /// The document is over a size limit: the file itself over
    /// [`Caps::max_bytes`](crate::Caps::max_bytes), or a part of it that
    /// would unpack to more than the limit (a decompression bomb).
    #[error("the {format} is too large: {what}")]
    TooLarge {
        /// The format ("PDF", "file").
        format: &'static str,
        /// What is over which limit, in words.
        what: String,
    },
}

/// Why a scanned PDF's first page could not be had as an image.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PictureError {
    /// The PDF itself could not be read (damaged, encrypted, too large).
    #[error("{0}")]
    Document(#[from] DocumentError),
    /// The first page holds no picture (its drawing is vector paths, or
    /// its picture sits inside a form).
    #[error("its first page has no picture hearth can find")]
    NoPicture,
    /// The picture is in an encoding or colour space hearth does not turn
    /// into an image file (CCITT fax, JBIG2, JPEG 2000, CMYK).
    #[error("its first page's picture is {0}, which hearth cannot show")]
    Unsupported(String),
    /// The picture declares more pixels than are ever decoded.
    #[error("its first page's picture declares {width}x{height} pixels, more than hearth decodes")]
    TooLarge {
        /// The declared width.
        width: u64,
        /// The declared height.
        height: u64,
    },
}
