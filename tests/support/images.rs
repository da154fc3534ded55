//! Test images made in the test, and what a model request carries of them.
//!
//! A photo with EXIF (a GPS position and an orientation), a JPEG cut
//! short, a PNG declaring 50000×50000 pixels in a few dozen bytes; and the
//! images a request to the fake model holds, in either provider's shape,
//! decoded back to bytes.

use base64::Engine;
use image::{ImageEncoder, Rgb, RgbImage};
use serde_json::Value;

/// The latitude the test EXIF carries, as it is stored (the degrees'
/// rational): finding these bytes means the GPS block survived.
pub const GPS_MARK: [u8; 8] = [0, 0, 0, 52, 0, 0, 0, 1];

/// A `width`×`height` JPEG with stripes and gradients.
pub fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        let stripe = if (x / 40) % 2 == 0 { 60 } else { 0 };
        Rgb([
            ((x * 190 / width) as u8).saturating_add(stripe),
            (y * 255 / height) as u8,
            ((x + y) % 256) as u8,
        ])
    });
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 90)
        .encode(
            image.as_raw(),
            width as u16,
            height as u16,
            jpeg_encoder::ColorType::Rgb,
        )
        .expect("encode a JPEG");
    out
}

/// A PNG of `width`×`height` whose left half is transparent.
pub fn transparent_png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbaImage::from_fn(width, height, |x, _| {
        image::Rgba([20, 120, 220, if x < width / 2 { 0 } else { 255 }])
    });
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(
            image.as_raw(),
            width,
            height,
            image::ExtendedColorType::Rgba8,
        )
        .expect("encode a PNG");
    out
}

/// [`jpeg`] as a phone saves it: an EXIF block with orientation 6 (the
/// picture is upright when turned 90° clockwise, so it shows
/// `height`×`width`) and a GPS position.
pub fn photo_with_exif(width: u32, height: u32) -> Vec<u8> {
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
    tiff.extend([0, 2]);
    tiff.extend([0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]);
    tiff.extend([0x88, 0x25, 0, 4, 0, 0, 0, 1, 0, 0, 0, 38]);
    tiff.extend([0, 0, 0, 0]);
    tiff.extend([0, 2]);
    tiff.extend([0, 1, 0, 2, 0, 0, 0, 2, b'N', 0, 0, 0]);
    tiff.extend([0, 2, 0, 5, 0, 0, 0, 3, 0, 0, 0, 68]);
    tiff.extend([0, 0, 0, 0]);
    for (n, d) in [(52u32, 1u32), (31, 1), (1234, 100)] {
        tiff.extend(n.to_be_bytes());
        tiff.extend(d.to_be_bytes());
    }
    let plain = jpeg(width, height);
    let mut out = plain[..2].to_vec();
    out.extend([0xFF, 0xE1]);
    out.extend(((tiff.len() + 8) as u16).to_be_bytes());
    out.extend(b"Exif\0\0");
    out.extend(tiff);
    out.extend(&plain[2..]);
    out
}

/// A PNG whose header declares `width`×`height` RGB pixels, with almost
/// no data: a decompression bomb when large.
pub fn declared_png(width: u32, height: u32) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend(kind);
        out.extend(data);
        let mut crc = !0u32;
        for &byte in &out[start..] {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        out.extend((!crc).to_be_bytes());
    }
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(
        &mut out,
        b"IDAT",
        &[0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0, 0, 0, 1],
    );
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// One image a request carried.
#[derive(Debug)]
pub struct Sent {
    /// Its media type.
    pub media_type: String,
    /// Its bytes, decoded from base64.
    pub bytes: Vec<u8>,
}

impl Sent {
    /// The image decoded: its width and height.
    pub fn size(&self) -> (u32, u32) {
        if self.media_type == "image/jpeg" {
            let mut decoder = jpeg_decoder::Decoder::new(&self.bytes[..]);
            decoder.decode().expect("the model got a readable JPEG");
            let info = decoder.info().expect("a decoded JPEG has a size");
            return (u32::from(info.width), u32::from(info.height));
        }
        let image = image::load_from_memory(&self.bytes).expect("the model got a readable image");
        (image.width(), image.height())
    }
}

/// Every image in a request body: Anthropic `image` blocks (in messages
/// and in tool results) or OpenAI `image_url` parts with `data:` URIs.
pub fn images_in(body: &Value) -> Vec<Sent> {
    let mut out = Vec::new();
    collect(body, &mut out);
    out
}

fn collect(value: &Value, out: &mut Vec<Sent>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("image") {
                let source = &map["source"];
                assert_eq!(source["type"], "base64", "{source}");
                out.push(Sent {
                    media_type: source["media_type"].as_str().unwrap_or_default().into(),
                    bytes: decode(source["data"].as_str().unwrap_or_default()),
                });
            } else if map.get("type").and_then(Value::as_str) == Some("image_url") {
                let url = map["image_url"]["url"].as_str().unwrap_or_default();
                let (head, data) = url.split_once(',').expect("a data URI");
                let media_type = head
                    .strip_prefix("data:")
                    .and_then(|h| h.strip_suffix(";base64"))
                    .expect("data:<type>;base64,");
                out.push(Sent {
                    media_type: media_type.into(),
                    bytes: decode(data),
                });
            } else {
                map.values().for_each(|v| collect(v, out));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        _ => {}
    }
}

fn decode(data: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("valid base64")
}
