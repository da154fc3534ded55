//! Mutations of one input: byte flips, truncations, splices, repeats (deep
//! nesting, very long lines), line shuffles, huge numbers, invalid UTF-8,
//! NULs and the unicode that breaks naive code (surrogates, ZWJ
//! sequences, RTL overrides, combining marks, astral characters whose
//! UTF-16 length is 2).

use crate::Rng;

/// The largest input a mutation may build: big enough for "very long
/// line" and "deep nesting", small enough to keep a case quick.
pub const MAX_INPUT: usize = 256 * 1024;

/// Text that breaks code which counts bytes, chars or UTF-16 units as if
/// they were the same thing, or trusts what it is shown.
pub const UNICODE_EDGES: &[&str] = &[
    "\0",
    "\u{200D}",
    "\u{200B}",
    "\u{202E}",
    "\u{2066}",
    "\u{FEFF}",
    "\u{2028}",
    "\u{85}",
    "\u{301}",
    "\u{FFFD}",
    "\u{10FFFF}",
    "😀",
    "👨\u{200D}👩\u{200D}👧",
    "🏳\u{FE0F}\u{200D}🌈",
    "𝔘",
    "é",
    "e\u{301}",
    "\u{0440}",
    "\u{FF52}",
    "\r\n",
    "\r",
    "\t",
    "\u{1b}[2K",
    "\u{a0}",
    "\u{3000}",
];

/// Bytes that are not UTF-8: a lone continuation byte, an overlong NUL,
/// a surrogate in WTF-8, a truncated sequence, bytes never valid.
pub const INVALID_UTF8: &[&[u8]] = &[
    b"\x80",
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xff",
    b"\xfe",
    b"\xf8\x88\x80\x80\x80",
];

/// Numbers no field expects.
pub const HUGE_NUMBERS: &[&str] = &[
    "18446744073709551616",
    "-9223372036854775809",
    "9223372036854775807",
    "-0",
    "1e999999",
    "-1e-999999",
    "0.0000000000000000000000000001",
    "340282366920938463463374607431768211456",
    "99999999999999999999999999999999999999999999999999",
    "NaN",
    "inf",
    "0x7fffffff",
    "1_000",
];

/// Applies one to eight mutations to `input`. `others` are inputs to
/// splice from; `tokens` the target's dictionary.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, others: &[Vec<u8>], tokens: &[Vec<u8>]) {
    for _ in 0..rng.between(1, 8) {
        one(rng, input, others, tokens);
        input.truncate(MAX_INPUT);
    }
}

/// Random bytes or a soup of dictionary tokens, unicode and random
/// characters: input no seed resembles.
pub fn generate(rng: &mut Rng, tokens: &[Vec<u8>]) -> Vec<u8> {
    if rng.one_in(3) {
        let len = if rng.one_in(8) {
            rng.below(8192)
        } else {
            rng.below(256)
        };
        return rng.bytes(len);
    }
    let mut out = Vec::new();
    for _ in 0..rng.below(64) {
        match rng.below(4) {
            0 if !tokens.is_empty() => out.extend_from_slice(rng.pick(tokens).as_slice()),
            1 => out.extend_from_slice(rng.choose(UNICODE_EDGES).as_bytes()),
            2 => out.push(b' ' + rng.below(95) as u8),
            _ => out.push(rng.choose(b" \n\t\"'\\{}[]()<>=:,;*_`|#-!&$")),
        }
    }
    out
}

fn one(rng: &mut Rng, input: &mut Vec<u8>, others: &[Vec<u8>], tokens: &[Vec<u8>]) {
    let len = input.len();
    let at = rng.below(len + 1);
    match rng.below(16) {
        0 if len > 0 => {
            let i = rng.below(len);
            input[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            input[i] = rng.choose(b"\0\xff\x7f\n\r\"\\'{}[]<>&*_`|:=#.-0123456789 ");
        }
        2 => {
            let n = rng.between(1, 8);
            insert(input, at, &rng.bytes(n));
        }
        3 if !tokens.is_empty() => {
            let token = rng.pick(tokens).clone();
            insert(input, at, &token);
        }
        4 => insert(input, at, rng.choose(UNICODE_EDGES).as_bytes()),
        5 => insert(input, at, rng.choose(INVALID_UTF8)),
        6 if len > 0 => {
            let end = (at + rng.between(1, 64)).min(len);
            input.drain(at.min(end)..end);
        }
        7 => input.truncate(at),
        8 if len > 0 => {
            let start = rng.below(len);
            let end = (start + rng.between(1, 256)).min(len);
            let piece = input[start..end].to_vec();
            insert(input, at, &piece);
        }
        9 if !others.is_empty() => {
            let other = rng.pick(others);
            let from = rng.below(other.len() + 1);
            input.truncate(at);
            input.extend_from_slice(&other[from..]);
        }
        10 => repeat(rng, input, at, tokens),
        11 => lines(rng, input),
        12 => huge_number(rng, input),
        13 if len > 0 => {
            let start = rng.below(len);
            let end = (start + rng.between(1, 16)).min(len);
            input[start..end].reverse();
        }
        14 => {
            let c = rng.choose(b"a \t\n");
            let n = rng.between(1000, 70_000);
            insert(input, at, &vec![c; n]);
        }
        _ => insert(input, at, rng.choose(UNICODE_EDGES).as_bytes()),
    }
}

fn insert(input: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    let at = at.min(input.len());
    input.splice(at..at, bytes.iter().copied());
}

/// A short piece (of the input, or a token) repeated hundreds or
/// thousands of times: deep nesting when it opens something.
fn repeat(rng: &mut Rng, input: &mut Vec<u8>, at: usize, tokens: &[Vec<u8>]) {
    let piece: Vec<u8> = if !input.is_empty() && rng.one_in(2) {
        let start = rng.below(input.len());
        let end = (start + rng.between(1, 8)).min(input.len());
        input[start..end].to_vec()
    } else if !tokens.is_empty() && rng.one_in(2) {
        rng.pick(tokens).clone()
    } else {
        rng.choose(&[
            &b"["[..],
            b"{",
            b"(",
            b"> ",
            b"- ",
            b"*",
            b"$(",
            b"\"",
            b"{\"a\":",
        ])
        .to_vec()
    };
    if piece.is_empty() {
        return;
    }
    let times = rng.between(64, 20_000).min(MAX_INPUT / piece.len());
    let block: Vec<u8> = piece.repeat(times);
    insert(input, at, &block);
}

/// Line-level changes: duplicated lines (duplicate keys in TOML, repeated
/// fields in SSE), dropped lines, swapped lines.
fn lines(rng: &mut Rng, input: &mut Vec<u8>) {
    let mut lines: Vec<Vec<u8>> = input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let n = lines.len();
    match rng.below(3) {
        0 => {
            let line = lines[rng.below(n)].clone();
            lines.insert(rng.below(n + 1), line);
        }
        1 if n > 1 => {
            lines.remove(rng.below(n));
        }
        _ => lines.swap(rng.below(n), rng.below(n)),
    }
    *input = lines.join(&b'\n');
}

/// A run of digits replaced by a number no field expects.
fn huge_number(rng: &mut Rng, input: &mut Vec<u8>) {
    let digits: Vec<usize> = (0..input.len())
        .filter(|&i| input[i].is_ascii_digit())
        .collect();
    let number = rng.choose(HUGE_NUMBERS).as_bytes();
    let Some(&start) = digits.get(rng.below(digits.len().max(1))) else {
        let at = rng.below(input.len() + 1);
        insert(input, at, number);
        return;
    };
    let mut end = start;
    while end < input.len() && input[end].is_ascii_digit() {
        end += 1;
    }
    input.splice(start..end, number.iter().copied());
}
