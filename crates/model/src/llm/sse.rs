//! Server-sent events: turns a byte stream into `(event, data)` pairs.
//!
//! Follows the WHATWG rules: lines end in LF, CR or CRLF; a blank line ends
//! an event; `:` starts a comment (keep-alives); `data` lines join with
//! newlines; one optional space after the colon is dropped. Chunks may split
//! anywhere, even inside a UTF-8 character or a CRLF.
//!
//! The stream comes from the network, so nothing it sends may grow memory
//! without bound: a line longer than [`MAX_LINE`] or an event whose data
//! passes [`MAX_EVENT`] stops the parser, which then says why
//! ([`Parser::overflow`]) and ignores the rest. The check is made byte by
//! byte, so the events before it are the same however the stream was cut.

/// One event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, empty for the default ("message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The longest line a stream may send: a whole tool call in one chunk
/// (a file being written) fits many times over.
pub const MAX_LINE: usize = 8 << 20;

/// The most data one event may carry, its lines together.
pub const MAX_EVENT: usize = 8 << 20;

/// An incremental SSE parser.
#[derive(Default)]
pub struct Parser {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
    /// The bytes of `data` so far.
    data_len: usize,
    last_was_cr: bool,
    overflow: Option<String>,
}

impl Parser {
    /// Why the parser stopped: a line or an event past its bound.
    pub fn overflow(&self) -> Option<&str> {
        self.overflow.as_deref()
    }

    /// Feeds a chunk; returns the events it completed. Once a bound is
    /// passed, returns nothing more.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in chunk {
            if self.overflow.is_some() {
                break;
            }
            if self.last_was_cr {
                self.last_was_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.last_was_cr = b == b'\r';
                    let line = std::mem::take(&mut self.pending);
                    self.line(&String::from_utf8_lossy(&line), &mut out);
                }
                _ if self.pending.len() >= MAX_LINE => {
                    self.stop(format!(
                        "a line of the stream is longer than {MAX_LINE} bytes"
                    ));
                }
                _ => self.pending.push(b),
            }
        }
        out
    }

    fn stop(&mut self, why: String) {
        self.overflow = Some(why);
        self.pending = Vec::new();
        self.data = Vec::new();
    }

    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                out.push(Event {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            self.data_len = 0;
            self.event.clear();
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                self.data_len += value.len() + 1;
                if self.data_len > MAX_EVENT {
                    self.stop(format!(
                        "an event of the stream carries over {MAX_EVENT} bytes"
                    ));
                } else {
                    self.data.push(value.to_owned());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Event, MAX_EVENT, MAX_LINE, Parser};

    fn ev(event: &str, data: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn parses_events_split_anywhere() {
        let stream = b": keep-alive\r\n\r\nevent: ping\r\ndata: {}\r\n\r\ndata: a\ndata:b\n\nevent: x\rdata: \xc3\xa9\r\r";
        let expected = vec![ev("ping", "{}"), ev("", "a\nb"), ev("x", "é")];
        // Whole, and split at every byte.
        assert_eq!(Parser::default().feed(stream), expected);
        let mut p = Parser::default();
        let mut got = Vec::new();
        for b in stream.iter() {
            got.extend(p.feed(std::slice::from_ref(b)));
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn a_line_or_an_event_past_its_bound_stops_the_parser() {
        let long_line = [b"data: ".as_slice(), &vec![b'x'; MAX_LINE]].concat();
        let many_lines: Vec<u8> = std::iter::repeat_n(
            [b"data: ".as_slice(), &vec![b'y'; 1 << 20], b"\n"].concat(),
            MAX_EVENT / (1 << 20) + 1,
        )
        .flatten()
        .collect();
        for (stream, why) in [(long_line, "line"), (many_lines, "event")] {
            let mut parser = Parser::default();
            // One event before, then the flood, in pieces.
            let mut got = parser.feed(b"data: first\n\n");
            for piece in stream.chunks(64 << 10) {
                got.extend(parser.feed(piece));
            }
            got.extend(parser.feed(b"\n\ndata: after\n\n"));
            assert_eq!(got, vec![ev("", "first")], "{why}");
            let overflow = parser.overflow().unwrap_or_default();
            assert!(overflow.contains(why), "{overflow}");
        }
    }
}
