//! Reading a stored message as SEARCH and FETCH need it: its header and
//! body, its header fields, their decoded values, its `Date:`.

use base64::Engine;

use super::wire::{self, Date};

/// A message's header (with the blank line that ends it) and its body.
pub fn split(raw: &[u8]) -> (&[u8], &[u8]) {
    if let Some(end) = find(raw, b"\r\n\r\n") {
        return raw.split_at(end + 4);
    }
    if let Some(end) = find(raw, b"\n\n") {
        return raw.split_at(end + 2);
    }
    (raw, &[])
}

/// The header of `raw` as a section: with the blank line that ends it,
/// added when the message has none.
pub fn header_section(raw: &[u8]) -> Vec<u8> {
    let (header, body) = split(raw);
    let mut out = header.to_vec();
    if body.is_empty() && !out.ends_with(b"\r\n\r\n") && !out.ends_with(b"\n\n") {
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The header's fields: each name with its raw lines, folded lines and
/// line breaks kept.
pub fn fields(raw: &[u8]) -> Vec<(String, &[u8])> {
    let (header, _) = split(raw);
    let mut out: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    let mut pos = 0;
    while pos < header.len() {
        let end = find(&header[pos..], b"\n").map_or(header.len(), |i| pos + i + 1);
        let line = &header[pos..end];
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        let folded = matches!(line.first(), Some(b' ' | b'\t'));
        match out.last_mut() {
            Some((_, range)) if folded => range.end = end,
            _ => {
                let name = line.split(|&b| b == b':').next().unwrap_or_default();
                let name = String::from_utf8_lossy(name).trim().to_owned();
                out.push((name, pos..end));
            }
        }
        pos = end;
    }
    out.into_iter()
        .map(|(name, range)| (name, &header[range]))
        .collect()
}

/// The values of every field called `name` (case-insensitive), unfolded
/// and with RFC 2047 encoded words decoded, as a server searches them.
pub fn values(raw: &[u8], name: &str) -> Vec<String> {
    fields(raw)
        .into_iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, lines)| {
            let text = String::from_utf8_lossy(lines);
            let value = text.split_once(':').map_or("", |(_, v)| v);
            let unfolded: String = value.replace("\r\n", "").replace('\n', "");
            decode_words(unfolded.trim())
        })
        .collect()
}

/// The header lines of the fields named in `names` (or, with `not`, of
/// all others), in the message's order, and the blank line.
pub fn select_fields(raw: &[u8], names: &[String], not: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, lines) in fields(raw) {
        let listed = names.iter().any(|n| n.eq_ignore_ascii_case(&name));
        if listed != not {
            out.extend_from_slice(lines);
            if !lines.ends_with(b"\n") {
                out.extend_from_slice(b"\r\n");
            }
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The date of the `Date:` field (`[Day, ]d Mon yyyy ...`), for the
/// SENT* search keys.
pub fn sent_date(raw: &[u8]) -> Option<Date> {
    let value = values(raw, "Date").into_iter().next()?;
    let mut words = value.split_whitespace().skip_while(|w| w.ends_with(','));
    let day: u8 = words.next()?.parse().ok()?;
    let month = wire::month_number(words.next()?)?;
    let year: i32 = words.next()?.parse().ok()?;
    Some((year, month, day))
}

/// Decodes RFC 2047 encoded words (`=?UTF-8?B?...?=`, `=?utf-8?Q?...?=`)
/// in UTF-8 or US-ASCII; others are left as they are.
fn decode_words(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    let mut after_word = false;
    while let Some(start) = rest.find("=?") {
        let (before, candidate) = rest.split_at(start);
        let Some((decoded, used)) = decode_word(candidate) else {
            out.push_str(&rest[..start + 2]);
            rest = &rest[start + 2..];
            after_word = false;
            continue;
        };
        // Whitespace between two encoded words is not part of the text.
        if !(after_word && before.trim().is_empty()) {
            out.push_str(before);
        }
        out.push_str(&decoded);
        rest = &candidate[used..];
        after_word = true;
    }
    out.push_str(rest);
    out
}

/// One encoded word at the start of `text`: its text and its length.
fn decode_word(text: &str) -> Option<(String, usize)> {
    let body = text.strip_prefix("=?")?;
    let (charset, body) = body.split_once('?')?;
    let (encoding, body) = body.split_once('?')?;
    let end = body.find("?=")?;
    let data = &body[..end];
    let used = 2 + charset.len() + 1 + encoding.len() + 1 + end + 2;
    if !charset.eq_ignore_ascii_case("utf-8") && !charset.eq_ignore_ascii_case("us-ascii") {
        return None;
    }
    let bytes = if encoding.eq_ignore_ascii_case("B") {
        crate::fake_mail::base64().decode(data).ok()?
    } else if encoding.eq_ignore_ascii_case("Q") {
        decode_q(data)?
    } else {
        return None;
    };
    Some((String::from_utf8_lossy(&bytes).into_owned(), used))
}

/// The "Q" encoding: `_` for a space, `=XX` for a byte.
fn decode_q(data: &str) -> Option<Vec<u8>> {
    let bytes = data.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'_' => out.push(b' '),
            b'=' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Some(out)
}

/// Whether `haystack` holds `needle`, ignoring ASCII case (what IMAP's
/// SEARCH does with its strings).
pub fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
