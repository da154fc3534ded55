//! Images for the model: what a file is by its content, and a copy of an
//! image prepared for a provider.
//!
//! An image a channel delivers or a tool returns is untrusted bytes. Before
//! a model sees it, it is known by its first bytes (a text file renamed
//! `.jpg` is not an image), its declared size is checked before anything
//! is allocated for its pixels (a PNG declaring 50000×50000 is refused from
//! its header), it is decoded on the calling thread only when needed (no
//! thread pool, nothing held at idle), turned upright by its EXIF
//! orientation, downscaled to the provider's limits and encoded again
//! without any of the original's metadata (EXIF with its GPS position, XMP,
//! comments, ICC profiles). The prepared copy is saved by its hash under
//! `$HEARTH_HOME/media` and referred to from the conversation; its bytes
//! are read back and checked against the hash for each request.
//!
//! - `sniff`: what a file is, from its first bytes;
//! - `files`: reading a candidate file, within the size cap;
//! - `prepare`: decode within limits, orient, downscale, re-encode;
//! - `shrink`: area-averaging downscale of 8-bit pixels;
//! - `jpeg`: a JPEG's marker structure (truncated files are refused);
//! - `saved`: the prepared copies on disk, and their base64 for a request;
//! - `vision`: which models see images, when the config does not say.

mod files;
mod jpeg;
mod prepare;
mod saved;
mod shrink;
mod sniff;
mod vision;

pub use files::{kind_of, read_image};
pub use prepare::{Info, Prepared, inspect, prepare};
pub use saved::{encoded, encoded_pdf, save, save_bytes};
pub use sniff::{Kind, sniff};
pub use vision::sees_images;

use hearth_base::config::{LlmConfig, ProviderKind};

/// The largest file read as an image: a 48-megapixel phone photo is well
/// under it; anything bigger is refused before it is read.
pub const MAX_FILE_BYTES: u64 = 40 * 1024 * 1024;

/// The longest side decoded; larger images are refused from their header.
pub const MAX_DECODE_SIDE: u32 = 20_000;

/// The most pixels decoded (a 48-megapixel photo fits). With four bytes a
/// pixel, decoding never allocates more than about 256 MiB.
pub const MAX_DECODE_PIXELS: u64 = 64_000_000;

/// Anthropic refuses an image whose base64 is over 5 MiB; the raw bytes
/// that encode to that.
const ANTHROPIC_MAX_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;

/// The limits a prepared image keeps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longer side, in pixels.
    pub long_side: u32,
    /// The shorter side, in pixels.
    pub short_side: u32,
    /// Width × height.
    pub pixels: u64,
    /// The encoded file, in bytes.
    pub bytes: usize,
}

impl Limits {
    /// A provider's limits, with the longer side capped at `max_side` when
    /// given. Anthropic shrinks anything over 1568 pixels a side or about
    /// 1.15 megapixels itself (costing time, adding nothing); OpenAI fits
    /// an image into 2048 pixels, then its shorter side into 768.
    pub fn for_provider(provider: ProviderKind, max_side: Option<u32>) -> Limits {
        let base = match provider {
            ProviderKind::Anthropic => Limits {
                long_side: 1568,
                short_side: 1568,
                pixels: 1_150_000,
                bytes: ANTHROPIC_MAX_BYTES,
            },
            ProviderKind::OpenAi => Limits {
                long_side: 2048,
                short_side: 768,
                pixels: 2048 * 768,
                bytes: ANTHROPIC_MAX_BYTES,
            },
        };
        match max_side {
            Some(side) => Limits {
                long_side: base.long_side.min(side),
                short_side: base.short_side.min(side),
                ..base
            },
            None => base,
        }
    }

    /// The size `(width, height)` shrinks to within these limits, its
    /// aspect ratio kept; never larger than it is.
    pub fn fit(&self, width: u32, height: u32) -> (u32, u32) {
        let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
        let scale = [
            f64::from(self.long_side) / w.max(h),
            f64::from(self.short_side) / w.min(h),
            (self.pixels as f64 / (w * h)).sqrt(),
            1.0,
        ]
        .into_iter()
        .fold(f64::INFINITY, f64::min);
        let side = |v: f64| ((v * scale).floor() as u32).max(1);
        (side(w), side(h))
    }

    /// Whether `(width, height)` is within these limits.
    pub fn holds(&self, width: u32, height: u32) -> bool {
        self.fit(width, height) == (width, height)
    }
}

/// How a model is shown images: `[llm]`'s `vision`, `image_turns` and
/// `image_max_side`, with the provider's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageSettings {
    /// Whether the model sees images (else it gets a note per image).
    pub vision: bool,
    /// How many turns an image is sent in, the one it came in included.
    pub turns: u32,
    /// The prepared copy's limits.
    pub limits: Limits,
    /// Whether the model reads a PDF sent as the file (Anthropic's, when
    /// they see images: each page as text and as a picture).
    pub pdfs: bool,
}

impl ImageSettings {
    /// The settings for the model `config` names (a sub-agent's client
    /// carries its own model's name).
    pub fn for_model(config: &LlmConfig) -> ImageSettings {
        let vision = config
            .vision
            .unwrap_or_else(|| sees_images(config.provider, &config.model));
        ImageSettings {
            vision,
            turns: config.image_turns,
            limits: Limits::for_provider(config.provider, config.image_max_side),
            pdfs: vision && config.provider == ProviderKind::Anthropic,
        }
    }
}

/// Why a file cannot be shown to a model as an image. The message is what
/// the model (and through it the owner) is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// The file is over [`MAX_FILE_BYTES`].
    #[error("it is {size} bytes; images up to {limit} bytes are read", limit = MAX_FILE_BYTES)]
    FileTooLarge {
        /// Its size.
        size: u64,
    },
    /// Its content is no image format at all, whatever its name says.
    #[error("its content is not an image (not JPEG, PNG, GIF or WebP data)")]
    NotAnImage,
    /// An image format hearth does not decode.
    #[error("it is a {0} image, which hearth cannot read; JPEG, PNG, GIF and WebP can be shown")]
    Unsupported(&'static str),
    /// Its header declares more pixels than are ever decoded: refused
    /// before anything is allocated for them.
    #[error(
        "it declares {width}×{height} pixels; images up to {MAX_DECODE_SIDE} pixels a side and \
         {MAX_DECODE_PIXELS} pixels in all are read"
    )]
    TooManyPixels {
        /// The declared width.
        width: u32,
        /// The declared height.
        height: u32,
    },
    /// The data is broken: cut short, or not what its header says.
    #[error("it is damaged or cut short: {0}")]
    Corrupt(String),
    /// Encoding the prepared copy failed.
    #[error("it could not be re-encoded: {0}")]
    Encode(String),
    /// Reading or writing a file failed.
    #[error("{0}")]
    Io(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_keeps_the_aspect_ratio_and_never_grows() {
        let anthropic = Limits::for_provider(ProviderKind::Anthropic, None);
        let openai = Limits::for_provider(ProviderKind::OpenAi, None);
        let small = Limits::for_provider(ProviderKind::Anthropic, Some(512));
        let cases = [
            (anthropic, (4000, 3000), (1238, 928)),
            (anthropic, (3000, 4000), (928, 1238)),
            (anthropic, (8000, 1000), (1568, 196)),
            (anthropic, (800, 600), (800, 600)),
            (anthropic, (1, 1), (1, 1)),
            (openai, (4000, 3000), (1024, 768)),
            (openai, (4000, 1000), (2048, 512)),
            (small, (4000, 3000), (512, 384)),
        ];
        for (limits, (w, h), wanted) in cases {
            let got = limits.fit(w, h);
            assert_eq!(got, wanted, "{w}x{h} in {limits:?}");
            assert!(limits.holds(got.0, got.1), "{got:?}");
            assert!(u64::from(got.0) * u64::from(got.1) <= limits.pixels);
        }
    }
}
