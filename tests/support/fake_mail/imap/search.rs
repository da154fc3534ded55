//! SEARCH's criteria (RFC 3501 section 6.4.4): parsed from the command's
//! tokens into a [`Key`], then matched against each message of the view.

use super::Message;
use super::message;
use super::wire::{self, Date, SeqSet, Token};

/// One search key; a list of keys is their AND.
#[derive(Debug, Clone)]
pub enum Key {
    All,
    /// A flag the message has (`true`) or lacks (`false`).
    Flag(String, bool),
    /// `RECENT`/`OLD`: whether the message is recent to this session.
    Recent(bool),
    /// A header field holds a string (`FROM`, `SUBJECT`, `HEADER`...); an
    /// empty string matches any message that has the field.
    Header(String, Vec<u8>),
    Body(Vec<u8>),
    Text(Vec<u8>),
    /// INTERNALDATE against a date: before, on, since.
    Internal(Cmp, Date),
    /// The `Date:` header against a date.
    Sent(Cmp, Date),
    Larger(usize),
    Smaller(usize),
    Uid(SeqSet),
    Seq(SeqSet),
    Not(Box<Key>),
    Or(Box<Key>, Box<Key>),
    And(Vec<Key>),
}

/// How a date is compared: RFC 3501 compares dates only, not times.
#[derive(Debug, Clone, Copy)]
pub enum Cmp {
    Before,
    On,
    Since,
}

impl Cmp {
    fn holds(self, date: Date, against: Date) -> bool {
        match self {
            Cmp::Before => date < against,
            Cmp::On => date == against,
            Cmp::Since => date >= against,
        }
    }
}

/// A message as the search sees it: its number in the session's view and
/// whether it is recent to the session.
pub struct Candidate<'a> {
    pub seq: u32,
    pub message: &'a Message,
    pub recent: bool,
}

/// What `*` stands for in the view: the highest sequence number and UID.
pub struct Stars {
    pub seq: u32,
    pub uid: u32,
}

/// Parses the criteria of a SEARCH (after any `CHARSET`).
pub fn parse(tokens: &[Token]) -> Result<Key, String> {
    let mut rest = tokens;
    let mut keys = Vec::new();
    while !rest.is_empty() {
        keys.push(parse_key(&mut rest)?);
    }
    match keys.len() {
        0 => Err("Missing search criteria".into()),
        1 => Ok(keys.remove(0)),
        _ => Ok(Key::And(keys)),
    }
}

fn parse_key(rest: &mut &[Token]) -> Result<Key, String> {
    let (first, tail) = rest.split_first().ok_or("Missing search key")?;
    *rest = tail;
    let word = match first {
        Token::List(inner) => return parse(inner),
        Token::Str(_) => return Err("Expected a search key, got a string".into()),
        Token::Atom(word) => word.to_ascii_uppercase(),
    };
    let flag = |name: &str, has: bool| Ok(Key::Flag(name.to_owned(), has));
    match word.as_str() {
        "ALL" => Ok(Key::All),
        "ANSWERED" => flag("\\Answered", true),
        "DELETED" => flag("\\Deleted", true),
        "DRAFT" => flag("\\Draft", true),
        "FLAGGED" => flag("\\Flagged", true),
        "SEEN" => flag("\\Seen", true),
        "UNANSWERED" => flag("\\Answered", false),
        "UNDELETED" => flag("\\Deleted", false),
        "UNDRAFT" => flag("\\Draft", false),
        "UNFLAGGED" => flag("\\Flagged", false),
        "UNSEEN" => flag("\\Seen", false),
        "KEYWORD" => Ok(Key::Flag(string(rest)?, true)),
        "UNKEYWORD" => Ok(Key::Flag(string(rest)?, false)),
        "RECENT" => Ok(Key::Recent(true)),
        "OLD" => Ok(Key::Recent(false)),
        "NEW" => Ok(Key::And(vec![
            Key::Recent(true),
            Key::Flag("\\Seen".into(), false),
        ])),
        "FROM" | "TO" | "CC" | "BCC" | "SUBJECT" => Ok(Key::Header(word, bytes(rest)?)),
        "HEADER" => {
            let field = string(rest)?;
            Ok(Key::Header(field, bytes(rest)?))
        }
        "BODY" => Ok(Key::Body(bytes(rest)?)),
        "TEXT" => Ok(Key::Text(bytes(rest)?)),
        "BEFORE" => Ok(Key::Internal(Cmp::Before, date(rest)?)),
        "ON" => Ok(Key::Internal(Cmp::On, date(rest)?)),
        "SINCE" => Ok(Key::Internal(Cmp::Since, date(rest)?)),
        "SENTBEFORE" => Ok(Key::Sent(Cmp::Before, date(rest)?)),
        "SENTON" => Ok(Key::Sent(Cmp::On, date(rest)?)),
        "SENTSINCE" => Ok(Key::Sent(Cmp::Since, date(rest)?)),
        "LARGER" => Ok(Key::Larger(number(rest)?)),
        "SMALLER" => Ok(Key::Smaller(number(rest)?)),
        "UID" => {
            let set = string(rest)?;
            Ok(Key::Uid(SeqSet::parse(&set).ok_or("Invalid UID set")?))
        }
        "NOT" => Ok(Key::Not(Box::new(parse_key(rest)?))),
        "OR" => {
            let a = parse_key(rest)?;
            Ok(Key::Or(Box::new(a), Box::new(parse_key(rest)?)))
        }
        _ => match SeqSet::parse(&word) {
            Some(set) => Ok(Key::Seq(set)),
            None => Err(format!("Unknown search key {word}")),
        },
    }
}

fn bytes(rest: &mut &[Token]) -> Result<Vec<u8>, String> {
    let (first, tail) = rest.split_first().ok_or("Missing a string")?;
    *rest = tail;
    first
        .bytes()
        .map(<[u8]>::to_vec)
        .ok_or("Expected a string".into())
}

fn string(rest: &mut &[Token]) -> Result<String, String> {
    bytes(rest).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn date(rest: &mut &[Token]) -> Result<Date, String> {
    let text = string(rest)?;
    wire::parse_date(&text).ok_or(format!("Invalid date {text}"))
}

fn number(rest: &mut &[Token]) -> Result<usize, String> {
    let text = string(rest)?;
    text.parse().map_err(|_| format!("Invalid number {text}"))
}

/// Whether `candidate` matches `key`.
pub fn matches(key: &Key, candidate: &Candidate, stars: &Stars) -> bool {
    let message = candidate.message;
    match key {
        Key::All => true,
        Key::Flag(name, has) => message.has_flag(name) == *has,
        Key::Recent(recent) => candidate.recent == *recent,
        Key::Header(field, needle) => {
            let values = message::values(&message.raw, field);
            if needle.is_empty() {
                !values.is_empty()
            } else {
                values
                    .iter()
                    .any(|v| message::contains_ignore_case(v.as_bytes(), needle))
            }
        }
        Key::Body(needle) => message::contains_ignore_case(message::split(&message.raw).1, needle),
        Key::Text(needle) => message::contains_ignore_case(&message.raw, needle),
        Key::Internal(cmp, against) => {
            wire::date_of(&message.internal_date).is_some_and(|d| cmp.holds(d, *against))
        }
        Key::Sent(cmp, against) => {
            message::sent_date(&message.raw).is_some_and(|d| cmp.holds(d, *against))
        }
        Key::Larger(size) => message.raw.len() > *size,
        Key::Smaller(size) => message.raw.len() < *size,
        Key::Uid(set) => set.contains(message.uid, stars.uid),
        Key::Seq(set) => set.contains(candidate.seq, stars.seq),
        Key::Not(inner) => !matches(inner, candidate, stars),
        Key::Or(a, b) => matches(a, candidate, stars) || matches(b, candidate, stars),
        Key::And(keys) => keys.iter().all(|k| matches(k, candidate, stars)),
    }
}
