//! The picture on a scanned PDF's first page, as an image file a model
//! can be shown: a scanned page is normally one image XObject filling it.
//! A JPEG (`DCTDecode`) is passed through as its bytes; a Flate-encoded or
//! raw grey or RGB picture becomes a PNG (its rows, with PNG's filter
//! byte, deflated; Flate data already carrying PNG predictors goes into
//! the PNG as it is). Nothing is decoded into pixels here: the caller's
//! image path checks and decodes the file as it does a photo.
//!
//! Bounded as the text reader is: the raw bytes pass `guard`, every
//! stream but pictures and object streams is emptied as lopdf loads it
//! (only the page's resources matter), and a picture is inflated only up
//! to the size its width and height declare.

use std::io::Write;

use lopdf::{Dictionary, Document as Pdf, LoadOptions, Object, Stream};

use crate::document::Caps;
use crate::error::{DocumentError, PictureError};

use super::decode::{Filter, decode};
use super::{STREAM_CAP, corrupt, guard, inflates_past, is_image};

/// The largest side and pixel count a picture may declare (those the
/// image path decodes at most).
const MAX_SIDE: u64 = 20_000;
const MAX_PIXELS: u64 = 64_000_000;

/// An image file made from a PDF page's picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageImage {
    /// The file: a JPEG or a PNG.
    pub bytes: Vec<u8>,
    /// `image/jpeg` or `image/png`.
    pub mime: &'static str,
    /// Its width in pixels, as the PDF declares it.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
}

/// The largest picture on the first page of the PDF `bytes`, as an image
/// file.
pub fn first_page_image(bytes: &[u8], caps: &Caps) -> Result<PageImage, PictureError> {
    // Written not to panic; this is for lopdf's lookups on hostile input.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| picture_of(bytes, caps)))
        .unwrap_or_else(|_| Err(corrupt("the reader failed on it").into()))
}

fn picture_of(bytes: &[u8], caps: &Caps) -> Result<PageImage, PictureError> {
    if bytes.len() > caps.max_bytes {
        return Err(PictureError::Document(DocumentError::TooLarge {
            format: "PDF",
            what: format!(
                "{} bytes, over the limit of {}",
                bytes.len(),
                caps.max_bytes
            ),
        }));
    }
    guard::check(bytes, caps)?;
    let options = LoadOptions {
        filter: Some(keep_pictures),
        ..LoadOptions::default()
    };
    let pdf = match std::panic::catch_unwind(|| Pdf::load_mem_with_options(bytes, options)) {
        Ok(Ok(pdf)) => pdf,
        Ok(Err(lopdf::Error::Decryption(_))) => {
            return Err(DocumentError::Encrypted { format: "PDF" }.into());
        }
        Ok(Err(e)) => return Err(corrupt(&format!("structure: {e}")).into()),
        Err(_) => return Err(corrupt("structure: the parser gave up").into()),
    };
    let page = pdf
        .page_iter()
        .next()
        .ok_or_else(|| corrupt("page tree: no pages"))?;
    let (own, inherited) = pdf
        .get_page_resources(page)
        .map_err(|e| corrupt(&format!("page 1's resources: {e}")))?;
    let mut dicts: Vec<&Dictionary> = own.into_iter().collect();
    dicts.extend(
        inherited
            .into_iter()
            .filter_map(|id| pdf.get_dictionary(id).ok()),
    );
    let picture = dicts
        .iter()
        .filter_map(|d| d.get_deref(b"XObject", &pdf).ok()?.as_dict().ok())
        .flat_map(|xobjects| xobjects.iter())
        .filter_map(|(_, o)| pdf.dereference(o).ok()?.1.as_stream().ok())
        .filter(|s| is_image(s))
        .max_by_key(|s| number(&s.dict, b"Width").saturating_mul(number(&s.dict, b"Height")))
        .ok_or(PictureError::NoPicture)?;
    image_file(&pdf, picture)
}

/// lopdf's load hook here: pictures kept as they are (never inflated
/// here), object streams kept unless they inflate past the cap (they may
/// hold the resources), every other stream emptied.
fn keep_pictures(id: lopdf::ObjectId, object: &mut Object) -> Option<(lopdf::ObjectId, Object)> {
    if let Object::Stream(stream) = object {
        let objects = stream
            .dict
            .get(b"Type")
            .and_then(Object::as_name)
            .is_ok_and(|t| t == b"ObjStm");
        if !is_image(stream) && (!objects || inflates_past(stream, STREAM_CAP)) {
            stream.dict.remove(b"Filter");
            stream.dict.remove(b"DecodeParms");
            stream.set_content(Vec::new());
        }
    }
    Some((id, object.clone()))
}

fn number(dict: &Dictionary, key: &[u8]) -> u64 {
    dict.get(key)
        .and_then(Object::as_i64)
        .ok()
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

/// The picture `stream` as a JPEG or PNG file.
fn image_file(pdf: &Pdf, stream: &Stream) -> Result<PageImage, PictureError> {
    let dict = &stream.dict;
    let (width, height) = (number(dict, b"Width"), number(dict, b"Height"));
    if width == 0 || height == 0 {
        return Err(PictureError::Unsupported("a picture without a size".into()));
    }
    if width > MAX_SIDE || height > MAX_SIDE || width * height > MAX_PIXELS {
        return Err(PictureError::TooLarge { width, height });
    }
    let (w, h) = (
        u32::try_from(width).unwrap_or(u32::MAX),
        u32::try_from(height).unwrap_or(u32::MAX),
    );
    let filters: Vec<Vec<u8>> = match dict.get(b"Filter") {
        Ok(Object::Name(name)) => vec![name.clone()],
        Ok(Object::Array(list)) => list
            .iter()
            .filter_map(|o| o.as_name().ok().map(<[u8]>::to_vec))
            .collect(),
        _ => Vec::new(),
    };
    let names: Vec<&[u8]> = filters.iter().map(Vec::as_slice).collect();
    match names.as_slice() {
        [b"DCTDecode"] => {
            if !stream.content.starts_with(&[0xFF, 0xD8]) {
                return Err(corrupt("page 1's JPEG picture has no JPEG header").into());
            }
            Ok(PageImage {
                bytes: stream.content.clone(),
                mime: "image/jpeg",
                width: w,
                height: h,
            })
        }
        [] | [b"FlateDecode"] => {
            let flate = !names.is_empty();
            let png = png_of(pdf, stream, (w, h), flate)?;
            Ok(PageImage {
                bytes: png,
                mime: "image/png",
                width: w,
                height: h,
            })
        }
        other => Err(PictureError::Unsupported(format!(
            "encoded with {}",
            other
                .iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect::<Vec<_>>()
                .join(" and ")
        ))),
    }
}

/// The PNG of a raw or Flate picture: grey (1 or 8 bits) or RGB (8 bits).
fn png_of(
    pdf: &Pdf,
    stream: &Stream,
    (w, h): (u32, u32),
    flate: bool,
) -> Result<Vec<u8>, PictureError> {
    let dict = &stream.dict;
    let mask = dict
        .get(b"ImageMask")
        .and_then(Object::as_bool)
        .unwrap_or(false);
    let colours = if mask { 1 } else { colours(pdf, dict)? };
    let bits = if mask {
        1
    } else {
        number(dict, b"BitsPerComponent")
    };
    let colour_type = match (colours, bits) {
        (1, 1 | 8) => 0,
        (3, 8) => 2,
        _ => {
            return Err(PictureError::Unsupported(format!(
                "{colours} colour components of {bits} bits"
            )));
        }
    };
    let row = (u64::from(w) * colours * bits).div_ceil(8);
    let raw = row * u64::from(h);
    let params = dict.get(b"DecodeParms").and_then(Object::as_dict).ok();
    let predictor = params.map_or(1, |p| number(p, b"Predictor"));
    // Flate data with PNG predictors is a PNG's image data already, when
    // its rows are the picture's.
    let png_rows = flate
        && predictor >= 10
        && params.is_some_and(|p| {
            number(p, b"Colors").max(1) == colours
                && (number(p, b"BitsPerComponent").max(1) == bits || !p.has(b"BitsPerComponent"))
                && number(p, b"Columns") == u64::from(w)
        });
    let idat = if png_rows {
        stream.content.clone()
    } else if flate && predictor > 1 {
        return Err(PictureError::Unsupported(format!(
            "Flate with predictor {predictor}"
        )));
    } else {
        let cap = usize::try_from(raw).unwrap_or(usize::MAX);
        let pixels = if flate {
            decode(Filter::Flate, &stream.content, cap).map_err(|()| {
                PictureError::Unsupported("a picture that unpacks past its declared size".into())
            })?
        } else {
            stream.content.clone()
        };
        let row = usize::try_from(row).unwrap_or(usize::MAX);
        if pixels.len() < cap {
            return Err(corrupt("page 1's picture is cut short").into());
        }
        let mut filtered = Vec::with_capacity(cap + pixels.len() / row.max(1));
        for line in pixels.chunks(row).take(h as usize) {
            filtered.push(0);
            filtered.extend_from_slice(line);
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&filtered)
            .and_then(|()| z.finish())
            .map_err(|e| {
                PictureError::Unsupported(format!("a picture that could not be packed: {e}"))
            })?
    };
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[bits as u8, colour_type, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &idat);
    chunk(&mut png, b"IEND", &[]);
    Ok(png)
}

/// The colour components of a picture's colour space: 1 or 3 (or what
/// an ICC profile says); an error for the ones a PNG cannot hold.
fn colours(pdf: &Pdf, dict: &Dictionary) -> Result<u64, PictureError> {
    let space = dict
        .get_deref(b"ColorSpace", pdf)
        .map_err(|_| PictureError::Unsupported("a picture without a colour space".into()))?;
    let name = match space {
        Object::Name(name) => name.as_slice(),
        Object::Array(list) => match list.first().and_then(|o| o.as_name().ok()) {
            Some(b"ICCBased") => {
                let n = list
                    .get(1)
                    .and_then(|o| pdf.dereference(o).ok())
                    .and_then(|(_, o)| o.as_stream().ok())
                    .map_or(0, |s| number(&s.dict, b"N"));
                return match n {
                    1 | 3 => Ok(n),
                    _ => Err(PictureError::Unsupported(format!(
                        "an ICC colour space of {n} components"
                    ))),
                };
            }
            Some(name) => name,
            None => b"",
        },
        _ => b"",
    };
    match name {
        b"DeviceGray" | b"CalGray" | b"G" => Ok(1),
        b"DeviceRGB" | b"CalRGB" | b"RGB" => Ok(3),
        other => Err(PictureError::Unsupported(format!(
            "in the colour space {}",
            String::from_utf8_lossy(other)
        ))),
    }
}

/// Appends a PNG chunk: length, type, data, CRC of type and data.
fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    png.extend_from_slice(&len.to_be_bytes());
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    png.extend_from_slice(&crc.sum().to_be_bytes());
}
