//! FETCH's data items (RFC 3501 section 6.4.5): parsed from the command,
//! then written as one `* n FETCH (...)` line per message.

use super::Message;
use super::message;
use super::wire::{self, Token};

/// One data item a FETCH asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Uid,
    Flags,
    InternalDate,
    Size,
    /// `RFC822`: the whole message; sets `\Seen`.
    Rfc822,
    /// `RFC822.HEADER`: the header, as `BODY.PEEK[HEADER]`.
    Rfc822Header,
    /// `RFC822.TEXT`: the body; sets `\Seen`.
    Rfc822Text,
    /// `BODY[section]<partial>`, or `BODY.PEEK[...]`, which leaves `\Seen`.
    Body {
        peek: bool,
        section: Section,
        /// `<offset.count>`.
        partial: Option<(usize, usize)>,
    },
}

/// The part of the message a `BODY[...]` item names.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// `BODY[]`: the whole message.
    Full,
    Header,
    Text,
    /// `HEADER.FIELDS (...)`, or with `not`, `HEADER.FIELDS.NOT (...)`;
    /// the names upper-cased, as servers echo them.
    Fields(Vec<String>, bool),
}

impl Item {
    /// Whether fetching this item marks the message `\Seen`.
    pub fn sets_seen(&self) -> bool {
        matches!(
            self,
            Item::Rfc822 | Item::Rfc822Text | Item::Body { peek: false, .. }
        )
    }
}

/// Parses FETCH's items: one item or macro, or a parenthesized list.
pub fn parse(tokens: &[Token]) -> Result<Vec<Item>, String> {
    match tokens {
        [Token::Atom(word)] => match word.to_ascii_uppercase().as_str() {
            "FAST" => Ok(vec![Item::Flags, Item::InternalDate, Item::Size]),
            "ALL" | "FULL" => Err(format!(
                "The fake server does not support the {word} macro (it holds ENVELOPE)"
            )),
            _ => Ok(vec![parse_item(word)?]),
        },
        [Token::List(items)] if !items.is_empty() => items
            .iter()
            .map(|t| t.atom().ok_or("Expected a fetch item".to_owned()))
            .map(|a| a.and_then(parse_item))
            .collect(),
        [] => Err("Missing fetch items".into()),
        _ => Err("Invalid fetch items".into()),
    }
}

fn parse_item(word: &str) -> Result<Item, String> {
    let upper = word.to_ascii_uppercase();
    let item = match upper.as_str() {
        "UID" => Item::Uid,
        "FLAGS" => Item::Flags,
        "INTERNALDATE" => Item::InternalDate,
        "RFC822.SIZE" => Item::Size,
        "RFC822" => Item::Rfc822,
        "RFC822.HEADER" => Item::Rfc822Header,
        "RFC822.TEXT" => Item::Rfc822Text,
        "ENVELOPE" | "BODYSTRUCTURE" | "BODY" => {
            return Err(format!(
                "The fake server does not support the fetch item {upper}"
            ));
        }
        _ => {
            let (peek, rest) = if let Some(rest) = upper.strip_prefix("BODY.PEEK[") {
                (true, rest)
            } else if let Some(rest) = upper.strip_prefix("BODY[") {
                (false, rest)
            } else {
                return Err(format!("Unknown fetch item {word}"));
            };
            let (inner, after) = rest.split_once(']').ok_or("Missing ']'")?;
            Item::Body {
                peek,
                section: parse_section(inner)?,
                partial: parse_partial(after)?,
            }
        }
    };
    Ok(item)
}

fn parse_section(inner: &str) -> Result<Section, String> {
    let fields = |list: &str, not: bool| {
        let names = match wire::tokenize(list.trim().as_bytes())?.as_slice() {
            [Token::List(names)] if !names.is_empty() => names
                .iter()
                .map(|n| n.text().ok_or("Expected a header field name".to_owned()))
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err("Expected a list of header field names".to_owned()),
        };
        Ok(Section::Fields(
            names.iter().map(|n| n.to_ascii_uppercase()).collect(),
            not,
        ))
    };
    match inner {
        "" => Ok(Section::Full),
        "HEADER" => Ok(Section::Header),
        "TEXT" => Ok(Section::Text),
        _ => {
            if let Some(list) = inner.strip_prefix("HEADER.FIELDS.NOT ") {
                fields(list, true)
            } else if let Some(list) = inner.strip_prefix("HEADER.FIELDS ") {
                fields(list, false)
            } else {
                Err(format!(
                    "The fake server does not support the section [{inner}] (MIME parts)"
                ))
            }
        }
    }
}

fn parse_partial(after: &str) -> Result<Option<(usize, usize)>, String> {
    if after.is_empty() {
        return Ok(None);
    }
    let inner = after
        .strip_prefix('<')
        .and_then(|a| a.strip_suffix('>'))
        .ok_or("Invalid partial")?;
    let (offset, count) = inner.split_once('.').ok_or("Invalid partial")?;
    match (offset.parse(), count.parse()) {
        (Ok(offset), Ok(count)) if count > 0 => Ok(Some((offset, count))),
        _ => Err("Invalid partial".into()),
    }
}

/// Writes `* seq FETCH (...)` for `message`: `UID` first (always for a
/// UID FETCH), then `FLAGS` (also when this fetch just set `\Seen`), then
/// `RFC822.SIZE`, `INTERNALDATE`, and the message's parts in the order
/// asked.
pub fn render(
    out: &mut Vec<u8>,
    seq: u32,
    message: &Message,
    flags: &str,
    items: &[Item],
    by_uid: bool,
    seen_now: bool,
) {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    if by_uid || items.contains(&Item::Uid) {
        parts.push(format!("UID {}", message.uid).into_bytes());
    }
    if seen_now || items.contains(&Item::Flags) {
        parts.push(format!("FLAGS {flags}").into_bytes());
    }
    if items.contains(&Item::Size) {
        parts.push(format!("RFC822.SIZE {}", message.raw.len()).into_bytes());
    }
    if items.contains(&Item::InternalDate) {
        parts.push(format!("INTERNALDATE \"{}\"", message.internal_date).into_bytes());
    }
    for item in items {
        let (name, data) = match item {
            Item::Rfc822 => ("RFC822".to_owned(), message.raw.clone()),
            Item::Rfc822Header => (
                "RFC822.HEADER".to_owned(),
                message::header_section(&message.raw),
            ),
            Item::Rfc822Text => (
                "RFC822.TEXT".to_owned(),
                message::split(&message.raw).1.to_vec(),
            ),
            Item::Body {
                section, partial, ..
            } => {
                let data = section_data(&message.raw, section);
                match partial {
                    None => (format!("BODY[{}]", section_name(section)), data),
                    Some((offset, count)) => {
                        let start = (*offset).min(data.len());
                        let end = offset.saturating_add(*count).min(data.len());
                        (
                            format!("BODY[{}]<{offset}>", section_name(section)),
                            data[start..end].to_vec(),
                        )
                    }
                }
            }
            _ => continue,
        };
        let mut part = name.into_bytes();
        part.push(b' ');
        wire::push_literal(&mut part, &data);
        parts.push(part);
    }
    out.extend_from_slice(format!("* {seq} FETCH (").as_bytes());
    out.extend_from_slice(&parts.join(&b' '));
    out.extend_from_slice(b")\r\n");
}

fn section_data(raw: &[u8], section: &Section) -> Vec<u8> {
    match section {
        Section::Full => raw.to_vec(),
        Section::Header => message::header_section(raw),
        Section::Text => message::split(raw).1.to_vec(),
        Section::Fields(names, not) => message::select_fields(raw, names, *not),
    }
}

fn section_name(section: &Section) -> String {
    match section {
        Section::Full => String::new(),
        Section::Header => "HEADER".into(),
        Section::Text => "TEXT".into(),
        Section::Fields(names, not) => format!(
            "HEADER.FIELDS{} ({})",
            if *not { ".NOT" } else { "" },
            names.join(" ")
        ),
    }
}
