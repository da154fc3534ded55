//! Making the copy of an image a model is sent: decoded within limits,
//! downscaled to the provider's, turned upright, and encoded again, so
//! nothing of the original's metadata survives.
//!
//! The pixel count is checked against the header before any pixel memory
//! is allocated. A JPEG (most photos) is decoded straight at 1/2, 1/4 or
//! 1/8 of its size when that still covers the target (the IDCT does the
//! first step of the shrinking, and the decoded pixels take a quarter of
//! the memory or less); jpeg-decoder then runs each colour component on a
//! short-lived thread of its own, none outliving the decode. The rest is
//! shrunk by area averaging (`shrink`) and turned upright on the small
//! image.

use std::io::Cursor;

use image::metadata::Orientation;
use image::{DynamicImage, ImageBuffer, ImageDecoder, ImageFormat, ImageReader, RgbImage};

use super::shrink::shrink;
use super::sniff::{Kind, SNIFF_BYTES, sniff};
use super::{ImageError, Limits, MAX_DECODE_PIXELS, MAX_DECODE_SIDE, jpeg};

/// The most bytes a decoder may hold at once: the pixels of the largest
/// image read, four bytes each, and room for its working buffers.
const MAX_DECODE_BYTES: u64 = MAX_DECODE_PIXELS * 4 + 16 * 1024 * 1024;

/// JPEG qualities tried in turn until the copy fits the byte limit.
const JPEG_QUALITIES: [u8; 4] = [85, 70, 55, 40];

/// A copy of an image ready for a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The encoded copy: JPEG, or PNG when it has transparency.
    pub bytes: Vec<u8>,
    /// `image/jpeg` or `image/png`.
    pub media_type: &'static str,
    /// The copy's width.
    pub width: u32,
    /// The copy's height.
    pub height: u32,
    /// The original's size, upright.
    pub original: (u32, u32),
}

/// What an image's header says, read without decoding its pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// Its media type.
    pub media_type: &'static str,
    /// Its width, upright.
    pub width: u32,
    /// Its height, upright.
    pub height: u32,
}

/// Reads an image's header: its type and upright size. Refuses what
/// [`prepare`] would refuse before decoding (not an image, too many
/// pixels).
pub fn inspect(bytes: &[u8]) -> Result<Info, ImageError> {
    let (format, media_type) = format_of(bytes)?;
    let (stored, orientation) = if format == ImageFormat::Jpeg {
        let header = guarded(|| jpeg_header(bytes))?;
        ((header.width, header.height), header.orientation)
    } else {
        let mut decoder = open(bytes, format)?;
        let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
        (decoder.dimensions(), orientation)
    };
    let (width, height) = upright(stored, orientation);
    Ok(Info {
        media_type,
        width,
        height,
    })
}

/// The copy of the image in `bytes` that a model with `limits` is sent.
pub fn prepare(bytes: &[u8], limits: &Limits) -> Result<Prepared, ImageError> {
    let (format, _) = format_of(bytes)?;
    let (image, stored, orientation) = if format == ImageFormat::Jpeg {
        jpeg::check_complete(bytes)?;
        guarded(|| decode_jpeg(bytes, limits))?
    } else {
        decode_other(bytes, format)?
    };
    // `fit` treats both sides alike, so fitting before the rotation gives
    // the rotated fit.
    let (width, height) = limits.fit(stored.0, stored.1);
    let mut image = shrunk(image, width, height)?;
    image.apply_orientation(orientation);
    let (bytes, media_type) = encode(&image, limits)?;
    Ok(Prepared {
        bytes,
        media_type,
        width: image.width(),
        height: image.height(),
        original: upright(stored, orientation),
    })
}

/// The decoder's format and the media type, from the first bytes.
fn format_of(bytes: &[u8]) -> Result<(ImageFormat, &'static str), ImageError> {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    match sniff(head) {
        Kind::Image(mime) => {
            let format = match mime {
                "image/png" => ImageFormat::Png,
                "image/gif" => ImageFormat::Gif,
                "image/webp" => ImageFormat::WebP,
                // `sniff` knows no other image it reads.
                _ => ImageFormat::Jpeg,
            };
            Ok((format, mime))
        }
        Kind::UnsupportedImage(name) => Err(ImageError::Unsupported(name)),
        Kind::Other => Err(ImageError::NotAnImage),
    }
}

/// Refuses a size beyond what is ever decoded.
fn check_size(width: u32, height: u32) -> Result<(), ImageError> {
    if width > MAX_DECODE_SIDE
        || height > MAX_DECODE_SIDE
        || u64::from(width) * u64::from(height) > MAX_DECODE_PIXELS
    {
        return Err(ImageError::TooManyPixels { width, height });
    }
    if width == 0 || height == 0 {
        return Err(ImageError::Corrupt("it has no pixels".into()));
    }
    Ok(())
}

/// Runs a decoder on hostile data: a panic inside it (jpeg-decoder has a
/// few for malformed headers) is a refusal, not a lost turn.
fn guarded<T>(decode: impl FnOnce() -> Result<T, ImageError>) -> Result<T, ImageError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)).unwrap_or_else(|_| {
        Err(ImageError::Corrupt(
            "the decoder could not make sense of it".into(),
        ))
    })
}

/// A JPEG's header: its size and orientation.
struct JpegHeader {
    width: u32,
    height: u32,
    orientation: Orientation,
}

fn jpeg_header(bytes: &[u8]) -> Result<JpegHeader, ImageError> {
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.read_info().map_err(jpeg_error)?;
    let info = decoder
        .info()
        .ok_or_else(|| ImageError::Corrupt("the JPEG has no frame header".into()))?;
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    check_size(width, height)?;
    Ok(JpegHeader {
        width,
        height,
        orientation: decoder
            .exif_data()
            .and_then(Orientation::from_exif_chunk)
            .unwrap_or(Orientation::NoTransforms),
    })
}

/// A JPEG decoded at the smallest scale that still covers the size
/// `limits` fit it to; with its full size and its orientation.
fn decode_jpeg(
    bytes: &[u8],
    limits: &Limits,
) -> Result<(DynamicImage, (u32, u32), Orientation), ImageError> {
    let header = jpeg_header(bytes)?;
    let (width, height) = (header.width, header.height);
    let (w, h) = limits.fit(width, height);
    let denominator = [8, 4, 2, 1]
        .into_iter()
        .find(|d| width.div_ceil(*d) >= w && height.div_ceil(*d) >= h)
        .unwrap_or(1);
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.set_max_decoding_buffer_size(MAX_DECODE_BYTES as usize);
    let (sw, sh) = decoder
        .scale(
            width.div_ceil(denominator) as u16,
            height.div_ceil(denominator) as u16,
        )
        .map_err(jpeg_error)?;
    let pixels = decoder.decode().map_err(jpeg_error)?;
    let format = decoder
        .info()
        .map(|i| i.pixel_format)
        .ok_or_else(|| ImageError::Corrupt("the JPEG has no frame header".into()))?;
    let (sw, sh) = (u32::from(sw), u32::from(sh));
    let short = || ImageError::Corrupt("the decoded data is shorter than its size".into());
    let image = match format {
        jpeg_decoder::PixelFormat::L8 => {
            DynamicImage::ImageLuma8(ImageBuffer::from_raw(sw, sh, pixels).ok_or_else(short)?)
        }
        jpeg_decoder::PixelFormat::RGB24 => {
            DynamicImage::ImageRgb8(ImageBuffer::from_raw(sw, sh, pixels).ok_or_else(short)?)
        }
        jpeg_decoder::PixelFormat::CMYK32 => DynamicImage::ImageRgb8(
            ImageBuffer::from_raw(sw, sh, cmyk_to_rgb(&pixels)).ok_or_else(short)?,
        ),
        jpeg_decoder::PixelFormat::L16 => return Err(ImageError::Unsupported("12-bit JPEG")),
    };
    Ok((image, (width, height), header.orientation))
}

/// CMYK (as print workflows save JPEGs) as RGB on screen.
fn cmyk_to_rgb(cmyk: &[u8]) -> Vec<u8> {
    cmyk.chunks_exact(4)
        .flat_map(|p| {
            let k = u32::from(255 - p[3]);
            let ink = |c: u8| (u32::from(255 - c) * k / 255) as u8;
            [ink(p[0]), ink(p[1]), ink(p[2])]
        })
        .collect()
}

fn jpeg_error(e: jpeg_decoder::Error) -> ImageError {
    ImageError::Corrupt(format!("the JPEG data is not valid: {e}"))
}

/// A PNG, GIF (its first frame) or WebP, decoded whole; with its size and
/// orientation.
fn decode_other(
    bytes: &[u8],
    format: ImageFormat,
) -> Result<(DynamicImage, (u32, u32), Orientation), ImageError> {
    let mut decoder = open(bytes, format)?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;
    let size = (image.width(), image.height());
    Ok((image, size, orientation))
}

/// A decoder for `bytes` whose header has been read and whose size is
/// within the limits; no pixel has been decoded yet.
fn open(bytes: &[u8], format: ImageFormat) -> Result<impl ImageDecoder + '_, ImageError> {
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits.clone());
    let mut decoder = reader.into_decoder().map_err(decode_error)?;
    let (width, height) = decoder.dimensions();
    check_size(width, height)?;
    if decoder.total_bytes() > MAX_DECODE_BYTES {
        return Err(ImageError::TooManyPixels { width, height });
    }
    limits.max_image_width = Some(MAX_DECODE_SIDE);
    limits.max_image_height = Some(MAX_DECODE_SIDE);
    decoder.set_limits(limits).map_err(decode_error)?;
    Ok(decoder)
}

/// A stored size as seen once the orientation is applied.
fn upright((width, height): (u32, u32), orientation: Orientation) -> (u32, u32) {
    match orientation {
        Orientation::Rotate90
        | Orientation::Rotate270
        | Orientation::Rotate90FlipH
        | Orientation::Rotate270FlipH => (height, width),
        _ => (width, height),
    }
}

fn decode_error(e: image::ImageError) -> ImageError {
    match e {
        image::ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            ImageError::Corrupt("the data ends early".into())
        }
        image::ImageError::Limits(limit) => ImageError::Corrupt(format!(
            "decoding it would go past hearth's limits ({limit})"
        )),
        other => ImageError::Corrupt(other.to_string()),
    }
}

/// `image` at `width`×`height` (when smaller), in 8 bits a channel.
fn shrunk(image: DynamicImage, width: u32, height: u32) -> Result<DynamicImage, ImageError> {
    // Grey, grey with alpha, RGB and RGBA in 8 bits; deeper or float
    // images are brought to 8 bits first.
    let image = match image {
        DynamicImage::ImageLuma8(_)
        | DynamicImage::ImageLumaA8(_)
        | DynamicImage::ImageRgb8(_)
        | DynamicImage::ImageRgba8(_) => image,
        other if other.color().has_alpha() => DynamicImage::ImageRgba8(other.into_rgba8()),
        other => DynamicImage::ImageRgb8(other.into_rgb8()),
    };
    if (image.width(), image.height()) == (width, height) {
        return Ok(image);
    }
    let channels = usize::from(image.color().channel_count());
    let from = (image.width() as usize, image.height() as usize);
    let to = (width as usize, height as usize);
    let pixels = shrink(image.as_bytes(), from, channels, to);
    let wrong = || ImageError::Encode("the shrunk image has the wrong size".into());
    Ok(match image {
        DynamicImage::ImageLuma8(_) => DynamicImage::ImageLuma8(
            ImageBuffer::from_raw(width, height, pixels).ok_or_else(wrong)?,
        ),
        DynamicImage::ImageLumaA8(_) => DynamicImage::ImageLumaA8(
            ImageBuffer::from_raw(width, height, pixels).ok_or_else(wrong)?,
        ),
        DynamicImage::ImageRgba8(_) => DynamicImage::ImageRgba8(
            ImageBuffer::from_raw(width, height, pixels).ok_or_else(wrong)?,
        ),
        _ => {
            DynamicImage::ImageRgb8(ImageBuffer::from_raw(width, height, pixels).ok_or_else(wrong)?)
        }
    })
}

/// The encoded copy and its media type: PNG when some pixel is not
/// opaque (and the PNG fits), else JPEG at the best quality that fits.
fn encode(image: &DynamicImage, limits: &Limits) -> Result<(Vec<u8>, &'static str), ImageError> {
    if image.color().has_alpha() {
        let rgba = image.to_rgba8();
        if rgba.pixels().any(|p| p.0[3] < u8::MAX) {
            let mut out = Vec::new();
            let encoder = image::codecs::png::PngEncoder::new_with_quality(
                &mut out,
                image::codecs::png::CompressionType::Fast,
                image::codecs::png::FilterType::Adaptive,
            );
            rgba.write_with_encoder(encoder)
                .map_err(|e| ImageError::Encode(e.to_string()))?;
            if out.len() <= limits.bytes {
                return Ok((out, "image/png"));
            }
        }
    }
    let gray = matches!(
        image.color(),
        image::ColorType::L8
            | image::ColorType::L16
            | image::ColorType::La8
            | image::ColorType::La16
    );
    let (pixels, color) = if gray {
        let luma = DynamicImage::ImageRgb8(on_white(image)).into_luma8();
        (luma.into_raw(), jpeg_encoder::ColorType::Luma)
    } else {
        (on_white(image).into_raw(), jpeg_encoder::ColorType::Rgb)
    };
    // Both sides are within the provider's limits, far below 65535.
    let (w, h) = (image.width() as u16, image.height() as u16);
    for quality in JPEG_QUALITIES {
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, quality)
            .encode(&pixels, w, h, color)
            .map_err(|e| ImageError::Encode(e.to_string()))?;
        if out.len() <= limits.bytes {
            return Ok((out, "image/jpeg"));
        }
    }
    Err(ImageError::Encode(format!(
        "even at the lowest quality it is over {} bytes",
        limits.bytes
    )))
}

/// The image's colours with any transparency laid over white (JPEG has
/// none; black, what dropping alpha gives, hides dark drawings).
fn on_white(image: &DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.to_rgb8();
    }
    let rgba = image.to_rgba8();
    RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let over = |c: u8| {
            let (c, a) = (u32::from(c), u32::from(a));
            ((c * a + 255 * (255 - a) + 127) / 255) as u8
        };
        image::Rgb([over(r), over(g), over(b)])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_base::config::ProviderKind;
    use image::{ImageEncoder, Rgb, RgbImage, Rgba, RgbaImage};

    fn anthropic() -> Limits {
        Limits::for_provider(ProviderKind::Anthropic, None)
    }

    /// A photo-like test card: gradients and edges, so encoders work.
    fn card(width: u32, height: u32) -> RgbImage {
        RgbImage::from_fn(width, height, |x, y| {
            let stripe = if (x / 37 + y / 23) % 2 == 0 { 40 } else { 0 };
            Rgb([
                (x * 255 / width) as u8,
                (y * 255 / height) as u8,
                (((x ^ y) & 0x7F) as u8).saturating_add(stripe),
            ])
        })
    }

    fn jpeg(image: &RgbImage) -> Vec<u8> {
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, 90)
            .encode(
                image.as_raw(),
                image.width() as u16,
                image.height() as u16,
                jpeg_encoder::ColorType::Rgb,
            )
            .unwrap();
        out
    }

    /// The size of an encoded copy, read back by a decoder.
    fn size_of(bytes: &[u8]) -> (u32, u32) {
        if bytes.starts_with(&[0xFF, 0xD8]) {
            let mut decoder = jpeg_decoder::Decoder::new(bytes);
            decoder.decode().unwrap();
            let info = decoder.info().unwrap();
            (u32::from(info.width), u32::from(info.height))
        } else {
            let image = image::load_from_memory(bytes).unwrap();
            (image.width(), image.height())
        }
    }

    fn png_rgba(image: &RgbaImage) -> Vec<u8> {
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new(&mut out)
            .write_image(
                image.as_raw(),
                image.width(),
                image.height(),
                image::ExtendedColorType::Rgba8,
            )
            .unwrap();
        out
    }

    /// An EXIF block (big-endian TIFF): orientation 6 (turn 90° clockwise
    /// to view) and a GPS position, 52°31'12.34" N.
    fn exif_app1() -> Vec<u8> {
        let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
        // IFD0 at 8: orientation, GPS pointer (to 38), no next IFD.
        tiff.extend([0, 2]);
        tiff.extend([0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]);
        tiff.extend([0x88, 0x25, 0, 4, 0, 0, 0, 1, 0, 0, 0, 38]);
        tiff.extend([0, 0, 0, 0]);
        // GPS IFD at 38: latitude ref "N", latitude (3 rationals at 68).
        tiff.extend([0, 2]);
        tiff.extend([0, 1, 0, 2, 0, 0, 0, 2, b'N', 0, 0, 0]);
        tiff.extend([0, 2, 0, 5, 0, 0, 0, 3, 0, 0, 0, 68]);
        tiff.extend([0, 0, 0, 0]);
        for (n, d) in [(52u32, 1u32), (31, 1), (1234, 100)] {
            tiff.extend(n.to_be_bytes());
            tiff.extend(d.to_be_bytes());
        }
        let mut app1 = vec![0xFF, 0xE1];
        app1.extend(((tiff.len() + 8) as u16).to_be_bytes());
        app1.extend(b"Exif\0\0");
        app1.extend(tiff);
        app1
    }

    fn with_exif(jpeg: &[u8]) -> Vec<u8> {
        let mut out = jpeg[..2].to_vec();
        out.extend(exif_app1());
        out.extend(&jpeg[2..]);
        out
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn a_photo_is_shrunk_turned_upright_and_loses_its_exif() {
        let original = with_exif(&jpeg(&card(2000, 1000)));
        assert!(contains(&original, b"Exif\0\0"));
        let prepared = prepare(&original, &anthropic()).unwrap();
        assert_eq!(prepared.media_type, "image/jpeg");
        assert_eq!(
            prepared.original,
            (1000, 2000),
            "upright by its orientation"
        );
        assert_eq!((prepared.width, prepared.height), (758, 1516));
        assert!(!contains(&prepared.bytes, b"Exif"), "EXIF survived");
        assert!(
            !contains(&prepared.bytes, &[0xFF, 0xE1]),
            "an APP1 segment survived"
        );
        assert_eq!(size_of(&prepared.bytes), (758, 1516));
        let info = inspect(&original).unwrap();
        assert_eq!((info.width, info.height), (1000, 2000));
    }

    #[test]
    fn each_format_is_read_and_transparency_keeps_png() {
        let small = card(300, 200);
        let opaque_png = png_rgba(&RgbaImage::from_fn(300, 200, |x, y| {
            let Rgb([r, g, b]) = *small.get_pixel(x, y);
            Rgba([r, g, b, 255])
        }));
        let clear_png = png_rgba(&RgbaImage::from_fn(300, 200, |x, _| {
            Rgba([200, 10, 10, if x < 150 { 0 } else { 255 }])
        }));
        let mut gif = Vec::new();
        image::codecs::gif::GifEncoder::new(&mut gif)
            .encode(small.as_raw(), 300, 200, image::ExtendedColorType::Rgb8)
            .unwrap();
        let mut webp = Vec::new();
        image::codecs::webp::WebPEncoder::new_lossless(&mut webp)
            .write_image(small.as_raw(), 300, 200, image::ExtendedColorType::Rgb8)
            .unwrap();
        let cases = [
            ("jpeg", jpeg(&small), "image/jpeg"),
            ("opaque png", opaque_png, "image/jpeg"),
            ("transparent png", clear_png, "image/png"),
            ("gif", gif, "image/jpeg"),
            ("webp", webp, "image/jpeg"),
        ];
        for (what, bytes, media_type) in cases {
            let prepared = prepare(&bytes, &anthropic()).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(prepared.media_type, media_type, "{what}");
            assert_eq!((prepared.width, prepared.height), (300, 200), "{what}");
            assert_eq!(size_of(&prepared.bytes), (300, 200), "{what}");
        }
    }

    /// A PNG whose header declares `width`×`height`, with a few bytes of
    /// (compressed) pixel data: a decompression bomb when large.
    fn declared_png(width: u32, height: u32) -> Vec<u8> {
        fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
            out.extend((data.len() as u32).to_be_bytes());
            let start = out.len();
            out.extend(kind);
            out.extend(data);
            let crc = crc32(&out[start..]);
            out.extend(crc.to_be_bytes());
        }
        let mut ihdr = width.to_be_bytes().to_vec();
        ihdr.extend(height.to_be_bytes());
        ihdr.extend([8, 2, 0, 0, 0]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        chunk(&mut out, b"IHDR", &ihdr);
        // zlib: a stored empty block; the data ends long before the rows.
        chunk(
            &mut out,
            b"IDAT",
            &[0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0, 0, 0, 1],
        );
        chunk(&mut out, b"IEND", &[]);
        out
    }

    fn crc32(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in data {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn bad_images_are_refused_with_the_reason() {
        let whole = jpeg(&card(640, 480));
        let truncated = whole[..whole.len() / 2].to_vec();
        let mut scrambled = whole.clone();
        for b in &mut scrambled[200..600] {
            *b = 0xFF;
        }
        /// What the refusal must be.
        type Expected = fn(&ImageError) -> bool;
        let cases: Vec<(&str, Vec<u8>, Expected)> = vec![
            (
                "text renamed .jpg",
                b"just some text, not a photo".to_vec(),
                |e| *e == ImageError::NotAnImage,
            ),
            ("a png bomb", declared_png(50_000, 50_000), |e| {
                *e == ImageError::TooManyPixels {
                    width: 50_000,
                    height: 50_000,
                }
            }),
            ("a wide png", declared_png(30_000, 10), |e| {
                matches!(e, ImageError::TooManyPixels { .. })
            }),
            ("a png cut short", declared_png(64, 64), |e| {
                matches!(e, ImageError::Corrupt(_))
            }),
            ("a truncated jpeg", truncated, |e| {
                matches!(e, ImageError::Corrupt(_))
            }),
            ("a scrambled jpeg", scrambled, |e| {
                matches!(e, ImageError::Corrupt(_))
            }),
            (
                "a heic",
                b"\0\0\0\x18ftypheic\0\0\0\0mif1heic".to_vec(),
                |e| *e == ImageError::Unsupported("HEIC"),
            ),
            ("nothing", Vec::new(), |e| *e == ImageError::NotAnImage),
            // Two colour components: a frame jpeg-decoder panics on.
            (
                "a two-component jpeg",
                vec![
                    0xFF, 0xD8, 0xFF, 0xC0, 0, 14, 8, 0, 16, 0, 16, 2, 1, 0x11, 0, 2, 0x11, 0,
                    0xFF, 0xD9,
                ],
                |e| matches!(e, ImageError::Corrupt(_)),
            ),
        ];
        for (what, bytes, expected) in cases {
            let started = std::time::Instant::now();
            match prepare(&bytes, &anthropic()) {
                Ok(p) => panic!("{what} was prepared: {}x{}", p.width, p.height),
                Err(e) => assert!(expected(&e), "{what}: {e:?}"),
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(2),
                "{what} took {:?}",
                started.elapsed()
            );
        }
    }
}
