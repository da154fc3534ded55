//! The PDF stream filters that lopdf decodes (Flate, LZW, ASCII85), here
//! with a cap on what they may produce. lopdf inflates a stream whole, so
//! a few kilobytes of deflate, or a chain of filters, can ask it for
//! gigabytes; these decoders stop at the cap and say the stream is over
//! it, before lopdf is given the stream.

use std::io::Read;

use flate2::read::{DeflateDecoder, ZlibDecoder};
use weezl::BitOrder;
use weezl::decode::Decoder;

/// One of the filters lopdf applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filter {
    Flate,
    /// LZW; `early` is the `EarlyChange` parameter (1 by default).
    Lzw {
        early: bool,
    },
    Ascii85,
}

/// Every filter with every parameter that changes what it produces: what
/// a stream of unknown filters is tried with.
pub(crate) const ALL: [Filter; 4] = [
    Filter::Flate,
    Filter::Lzw { early: true },
    Filter::Lzw { early: false },
    Filter::Ascii85,
];

/// `data` decoded by `filter`, at most `cap` bytes; `Err(())` when it
/// would be more. A decoding error ends the output where it happened,
/// as lopdf does (it keeps what came before the error).
pub(crate) fn decode(filter: Filter, data: &[u8], cap: usize) -> Result<Vec<u8>, ()> {
    match filter {
        Filter::Flate => flate(data, cap),
        Filter::Lzw { early } => lzw(data, early, cap),
        Filter::Ascii85 => ascii85(data, cap),
    }
}

/// Zlib, and as lopdf falls back to when that yields nothing, raw
/// deflate after the two header bytes.
fn flate(data: &[u8], cap: usize) -> Result<Vec<u8>, ()> {
    let out = read_capped(ZlibDecoder::new(data), cap)?;
    if out.is_empty() && data.len() > 2 {
        return read_capped(DeflateDecoder::new(&data[2..]), cap);
    }
    Ok(out)
}

fn read_capped(reader: impl Read, cap: usize) -> Result<Vec<u8>, ()> {
    let mut out = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    // An error mid-stream keeps the bytes before it, like lopdf.
    let _ = reader.take(limit).read_to_end(&mut out);
    if out.len() > cap { Err(()) } else { Ok(out) }
}

fn lzw(data: &[u8], early: bool, cap: usize) -> Result<Vec<u8>, ()> {
    // lopdf's decoders: MSB first, 8-bit symbols, the TIFF size switch
    // for EarlyChange 1.
    let mut decoder = if early {
        Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
    } else {
        Decoder::new(BitOrder::Msb, 8)
    };
    let mut out = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut input = data;
    loop {
        let result = decoder.decode_bytes(input, &mut chunk);
        input = &input[result.consumed_in..];
        out.extend_from_slice(&chunk[..result.consumed_out]);
        if out.len() > cap {
            return Err(());
        }
        match result.status {
            Ok(weezl::LzwStatus::Ok) => {}
            // Done, stuck for want of input, or an error: what came is all.
            _ => return Ok(out),
        }
        if result.consumed_in == 0 && result.consumed_out == 0 {
            return Ok(out);
        }
    }
}

/// ASCII85 as lopdf decodes it: whitespace skipped, `z` four zeros, and
/// the first byte outside the alphabet (`~` of the end marker among
/// them) the end.
fn ascii85(data: &[u8], cap: usize) -> Result<Vec<u8>, ()> {
    let mut out = Vec::new();
    let mut group: u32 = 0;
    let mut count = 0;
    for &c in data {
        if out.len() > cap {
            return Err(());
        }
        match c {
            b'z' if count == 0 => out.extend_from_slice(&[0; 4]),
            c if c.is_ascii_whitespace() => {}
            b'!'..=b'u' => {
                group = group.wrapping_mul(85).wrapping_add(u32::from(c - b'!'));
                count += 1;
                if count == 5 {
                    out.extend_from_slice(&group.to_be_bytes());
                    group = 0;
                    count = 0;
                }
            }
            _ => break,
        }
    }
    if count > 0 {
        for _ in count..5 {
            group = group.wrapping_mul(85).wrapping_add(84);
        }
        out.extend_from_slice(&group.to_be_bytes()[..count - 1]);
    }
    if out.len() > cap { Err(()) } else { Ok(out) }
}

/// What a search of unknown filter chains found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// No chain of filters makes more than the cap.
    Within,
    /// Some chain does, or goes deeper than we follow.
    Over,
}

/// How many filters deep a chain is followed. A real xref stream has
/// one or two; one that still decodes this deep is taken as an attack
/// (bytes that are not a filter's output decode to a few bytes at most,
/// so five levels of it do not happen by chance).
const MAX_DEPTH: usize = 5;

/// Whether any chain of filters (each step one of [`ALL`]) makes more
/// than `cap` bytes of `data`, for a stream whose filters are not known
/// before lopdf parses it. `work` is the decoding budget in bytes for the
/// whole search, spent as output is made, so a crafted input cannot make
/// the search itself slow.
pub(crate) fn probe(data: &[u8], cap: usize, work: &mut usize, depth: usize) -> Probe {
    for filter in ALL {
        let Ok(out) = decode(filter, data, cap) else {
            return Probe::Over;
        };
        // A few bytes decode from almost anything; only what grew (or a
        // chain that goes on) is worth following.
        if out.len() < 16 {
            continue;
        }
        *work = match work.checked_sub(out.len()) {
            Some(left) => left,
            None => return Probe::Over,
        };
        if depth + 1 >= MAX_DEPTH {
            return Probe::Over;
        }
        if probe(&out, cap, work, depth + 1) == Probe::Over {
            return Probe::Over;
        }
    }
    Probe::Within
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::ZlibEncoder;
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn flate_stops_at_the_cap() {
        let bomb = zlib(&vec![0u8; 1 << 20]);
        assert!(bomb.len() < 2_000);
        assert_eq!(
            decode(Filter::Flate, &bomb, 1 << 20).map(|v| v.len()),
            Ok(1 << 20)
        );
        assert_eq!(decode(Filter::Flate, &bomb, 1000), Err(()));
    }

    #[test]
    fn ascii85_decodes_like_the_spec() {
        assert_eq!(
            decode(Filter::Ascii85, b"87cURD]i,\"Ebo80~>", 100).unwrap(),
            b"Hello World!"
        );
        assert_eq!(decode(Filter::Ascii85, b"zz", 100).unwrap(), [0; 8]);
    }

    #[test]
    fn lzw_round_trips() {
        let data = b"-----A---B".repeat(50);
        let encoded = weezl::encode::Encoder::with_tiff_size_switch(BitOrder::Msb, 8)
            .encode(&data)
            .unwrap();
        assert_eq!(
            decode(Filter::Lzw { early: true }, &encoded, 1 << 20).unwrap(),
            data
        );
        assert_eq!(decode(Filter::Lzw { early: true }, &encoded, 10), Err(()));
    }

    #[test]
    fn the_probe_finds_a_bomb_inside_a_chain() {
        let inner = zlib(&vec![b'x'; 4 << 20]);
        let outer = zlib(&inner);
        let mut work = 64 << 20;
        assert_eq!(probe(&outer, 1 << 20, &mut work, 0), Probe::Over);
        let mut work = 64 << 20;
        assert_eq!(
            probe(&zlib(b"1 0 obj 2 0 obj"), 1 << 20, &mut work, 0),
            Probe::Within
        );
        let mut work = 64 << 20;
        assert_eq!(probe(&[0xAB; 4096], 1 << 20, &mut work, 0), Probe::Within);
    }
}
