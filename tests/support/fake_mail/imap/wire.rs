//! IMAP's wire syntax, as the fake reads and writes it: a command with its
//! literals, split into tokens; sequence sets; dates; quoting.

use std::io::{self, BufRead, Write};

/// The largest literal the fake reads (a client sending more is broken).
const MAX_LITERAL: usize = 64 << 20;

/// One argument of a command.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    /// An atom: `ALL`, `\Seen`, `1:*`, or a fetch item with its section,
    /// `BODY.PEEK[HEADER.FIELDS (FROM)]<0.10>` (brackets hold spaces).
    Atom(String),
    /// A quoted string or a literal.
    Str(Vec<u8>),
    /// A parenthesized list.
    List(Vec<Token>),
}

impl Token {
    /// The token as an atom.
    pub fn atom(&self) -> Option<&str> {
        match self {
            Token::Atom(a) => Some(a),
            _ => None,
        }
    }

    /// The token as an astring (an atom or a string), in bytes.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Token::Atom(a) => Some(a.as_bytes()),
            Token::Str(s) => Some(s),
            Token::List(_) => None,
        }
    }

    /// The token as an astring, as text.
    pub fn text(&self) -> Option<String> {
        self.bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

/// A command as it came off the wire.
pub struct RawCommand {
    /// The whole command without its last CRLF, literals inline
    /// (`{n}\r\n` and their bytes), as [`tokenize`] reads it.
    pub bytes: Vec<u8>,
    /// Its first line (up to the first literal), for the command log.
    pub first_line: String,
    /// A non-synchronizing literal came while LITERAL+ is off.
    pub unwanted_literal_plus: bool,
}

/// Reads one command and the literals in it, answering each synchronizing
/// literal (`{n}`) with a continuation request first; `None` at the end of
/// the connection.
pub fn read_command(
    reader: &mut impl BufRead,
    out: &mut impl Write,
) -> io::Result<Option<RawCommand>> {
    let mut bytes = Vec::new();
    let mut first_line = None;
    let mut unwanted_literal_plus = false;
    loop {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        trim_crlf(&mut line);
        first_line.get_or_insert_with(|| String::from_utf8_lossy(&line).into_owned());
        let announced = literal_at_end(&line);
        bytes.extend_from_slice(&line);
        let Some((size, synchronizing)) = announced else {
            break;
        };
        if size > MAX_LITERAL {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "literal too large",
            ));
        }
        if synchronizing {
            out.write_all(b"+ Ready for literal data\r\n")?;
            out.flush()?;
        } else {
            unwanted_literal_plus = true;
        }
        bytes.extend_from_slice(b"\r\n");
        let start = bytes.len();
        bytes.resize(start + size, 0);
        reader.read_exact(&mut bytes[start..])?;
    }
    Ok(Some(RawCommand {
        bytes,
        first_line: first_line.unwrap_or_default(),
        unwanted_literal_plus,
    }))
}

/// Drops a line's CRLF (or a bare LF).
pub fn trim_crlf(line: &mut Vec<u8>) {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
}

/// The literal a line ends with, `{n}` or `{n+}`: its size and whether
/// it is synchronizing.
fn literal_at_end(line: &[u8]) -> Option<(usize, bool)> {
    let inner = line.strip_suffix(b"}")?;
    let open = inner.iter().rposition(|&b| b == b'{')?;
    let spec = &inner[open + 1..];
    let (digits, synchronizing) = match spec.strip_suffix(b"+") {
        Some(digits) => (digits, false),
        None => (spec, true),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let size = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((size, synchronizing))
}

/// Splits a command into tokens: atoms, strings (quoted or literal) and
/// parenthesized lists.
pub fn tokenize(input: &[u8]) -> Result<Vec<Token>, String> {
    let mut pos = 0;
    tokens(input, &mut pos, false)
}

fn tokens(input: &[u8], pos: &mut usize, nested: bool) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    loop {
        while input.get(*pos) == Some(&b' ') {
            *pos += 1;
        }
        let Some(&byte) = input.get(*pos) else {
            return if nested {
                Err("Missing ')'".into())
            } else {
                Ok(out)
            };
        };
        match byte {
            b'(' => {
                *pos += 1;
                out.push(Token::List(tokens(input, pos, true)?));
            }
            b')' if nested => {
                *pos += 1;
                return Ok(out);
            }
            b')' => return Err("Unexpected ')'".into()),
            b'"' => out.push(Token::Str(quoted(input, pos)?)),
            b'{' => out.push(Token::Str(literal(input, pos)?)),
            _ => out.push(Token::Atom(atom(input, pos)?)),
        }
    }
}

fn quoted(input: &[u8], pos: &mut usize) -> Result<Vec<u8>, String> {
    *pos += 1;
    let mut out = Vec::new();
    loop {
        match input.get(*pos) {
            None => return Err("Missing '\"'".into()),
            Some(b'"') => {
                *pos += 1;
                return Ok(out);
            }
            Some(b'\\') => {
                match input.get(*pos + 1) {
                    Some(&c @ (b'\\' | b'"')) => out.push(c),
                    _ => return Err("Invalid escape in a quoted string".into()),
                }
                *pos += 2;
            }
            Some(b'\r' | b'\n') => return Err("Line break in a quoted string".into()),
            Some(&c) => {
                out.push(c);
                *pos += 1;
            }
        }
    }
}

fn literal(input: &[u8], pos: &mut usize) -> Result<Vec<u8>, String> {
    let rest = &input[*pos + 1..];
    let close = rest.iter().position(|&b| b == b'}').ok_or("Missing '}'")?;
    let spec = String::from_utf8_lossy(&rest[..close]);
    let size: usize = spec
        .trim_end_matches('+')
        .parse()
        .map_err(|_| "Invalid literal size")?;
    let data_start = *pos + 1 + close + 1 + 2;
    if input.get(data_start - 2..data_start) != Some(b"\r\n") {
        return Err("A literal's size must end its line".into());
    }
    let data = input
        .get(data_start..data_start + size)
        .ok_or("Literal shorter than announced")?;
    *pos = data_start + size;
    Ok(data.to_vec())
}

/// An atom, with any `[...]` in it kept whole, spaces and all.
fn atom(input: &[u8], pos: &mut usize) -> Result<String, String> {
    let start = *pos;
    let mut depth = 0usize;
    while let Some(&byte) = input.get(*pos) {
        match byte {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b' ' | b'(' | b')' if depth == 0 => break,
            b'"' | b'{' if depth == 0 => return Err("Invalid character in an atom".into()),
            c if c < b' ' || c == 0x7f => return Err("Control character in an atom".into()),
            _ => {}
        }
        *pos += 1;
    }
    if depth > 0 {
        return Err("Missing ']'".into());
    }
    String::from_utf8(input[start..*pos].to_vec()).map_err(|_| "An atom must be ASCII".into())
}

/// A sequence set, `1,3:4,9:*`: of message sequence numbers or of UIDs.
#[derive(Debug, Clone, PartialEq)]
pub struct SeqSet(Vec<(Bound, Bound)>);

/// One end of a range: a number or `*`, the largest number in use.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bound {
    Number(u32),
    Star,
}

impl SeqSet {
    /// Parses a set; `None` for bad syntax (numbers start at 1).
    pub fn parse(text: &str) -> Option<SeqSet> {
        let bound = |s: &str| match s {
            "*" => Some(Bound::Star),
            _ if s.bytes().all(|b| b.is_ascii_digit()) => match s.parse() {
                Ok(0) | Err(_) => None,
                Ok(n) => Some(Bound::Number(n)),
            },
            _ => None,
        };
        let mut ranges = Vec::new();
        for part in text.split(',') {
            let range = match part.split_once(':') {
                Some((a, b)) => (bound(a)?, bound(b)?),
                None => (bound(part)?, bound(part)?),
            };
            ranges.push(range);
        }
        Some(SeqSet(ranges))
    }

    /// Whether `n` is in the set when `*` is `star`. A range holds every
    /// number between its ends whichever comes first, so with `*` standing
    /// for the largest number in use, `9:*` holds that largest number even
    /// when it is below 9 (RFC 3501 section 6.4.8), as real servers answer.
    pub fn contains(&self, n: u32, star: u32) -> bool {
        let value = |b: Bound| match b {
            Bound::Number(v) => v,
            Bound::Star => star,
        };
        self.0.iter().any(|&(a, b)| {
            let (a, b) = (value(a), value(b));
            a.min(b) <= n && n <= a.max(b)
        })
    }
}

/// Writes a set of numbers as a sequence set, ranges joined: `3:5,9`.
pub fn format_set(numbers: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            numbers[i].to_string()
        } else {
            format!("{}:{}", numbers[i], numbers[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A calendar date, comparable: (year, month, day).
pub type Date = (i32, u8, u8);

/// A search date, `1-Feb-1994` or `01-Feb-1994`.
pub fn parse_date(text: &str) -> Option<Date> {
    let mut parts = text.trim().split('-');
    let (day, month, year) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let day: u8 = day.trim().parse().ok().filter(|d| (1..=31).contains(d))?;
    Some((year.parse().ok()?, month_number(month)?, day))
}

/// A month's number (1 to 12) from its English abbreviation.
pub fn month_number(name: &str) -> Option<u8> {
    let index = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(name))?;
    u8::try_from(index + 1).ok()
}

/// Checks an INTERNALDATE, `dd-Mon-yyyy hh:mm:ss +zzzz` (the day may be
/// space-padded), and writes it with a two-digit day.
pub fn normalize_date_time(text: &str) -> Option<String> {
    let (date, rest) = text.split_at_checked(11)?;
    let (year, month, day) = parse_date(date)?;
    let rest = rest.strip_prefix(' ')?;
    let (time, zone) = rest.split_once(' ')?;
    let time_ok = time.len() == 8
        && time.bytes().enumerate().all(|(i, b)| {
            if i == 2 || i == 5 {
                b == b':'
            } else {
                b.is_ascii_digit()
            }
        });
    let zone_ok = zone.len() == 5
        && matches!(zone.as_bytes()[0], b'+' | b'-')
        && zone[1..].bytes().all(|b| b.is_ascii_digit());
    if !time_ok || !zone_ok {
        return None;
    }
    let month = MONTHS[usize::from(month) - 1];
    Some(format!("{day:02}-{month}-{year:04} {time} {zone}"))
}

/// Now, as an INTERNALDATE in UTC.
pub fn now_date_time() -> String {
    jiff::Timestamp::now()
        .strftime("%d-%b-%Y %H:%M:%S +0000")
        .to_string()
}

/// The calendar date of an INTERNALDATE (in its own zone, as RFC 3501's
/// date searches compare).
pub fn date_of(date_time: &str) -> Option<Date> {
    parse_date(date_time.get(..11)?)
}

/// ATOM-CHAR: what an atom may hold without quoting.
fn is_atom_char(b: u8) -> bool {
    b > b' ' && b < 0x7f && !b"(){%*\"\\]".contains(&b)
}

/// `text` as an astring: an atom when it can be one, else quoted.
pub fn astring(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(is_atom_char) {
        text.to_owned()
    } else {
        quote(text)
    }
}

/// `text` as a quoted string.
pub fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Appends `data` to `out` as a literal, `{n}\r\n` and exactly n bytes.
pub fn push_literal(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(format!("{{{}}}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
}
