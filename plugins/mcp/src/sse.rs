//! Server-Sent Events, read incrementally: a Streamable HTTP server may
//! answer a request with an event stream (notifications, then the
//! response), and the long-lived listening streams are event streams too.
//!
//! Only what MCP needs of the format: `data:` lines joined by `\n`, `id:`,
//! `retry:`, comments ignored, any of `\r\n`, `\n` or `\r` ending a line.
//! The bytes come in arbitrary pieces from the socket, so the parser keeps
//! the unfinished line between calls. Every event is bounded: a server
//! streaming one endless event cannot make us hold it all.

/// One event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// Its `event:` type (`message` when absent).
    pub kind: Option<String>,
    /// Its `data:` lines joined with `\n`.
    pub data: String,
    /// Its `id:`, if any.
    pub id: Option<String>,
}

/// Why a stream was given up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event (or one line) was larger than the bound.
    #[error("an event of the stream is larger than {0} bytes")]
    TooLarge(usize),
}

/// The parser's state between pieces of a stream.
#[derive(Debug)]
pub struct Parser {
    max: usize,
    line: Vec<u8>,
    after_cr: bool,
    event: Event,
    has_data: bool,
    /// The last `retry:` the server asked for, in milliseconds.
    pub retry_ms: Option<u64>,
    /// The id of the last event seen (kept across events, as the format
    /// says), for resuming a stream.
    pub last_id: Option<String>,
}

impl Parser {
    /// A parser that refuses events over `max` bytes.
    pub fn new(max: usize) -> Parser {
        Parser {
            max,
            line: Vec::new(),
            after_cr: false,
            event: Event::default(),
            has_data: false,
            retry_ms: None,
            last_id: None,
        }
    }

    /// Takes the next piece of the stream; returns the events it completed.
    /// Events without data (a 2025-11-25 server's priming event, a
    /// keep-alive) are left out.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, SseError> {
        let mut done = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        done.push(event);
                    }
                }
                _ => {
                    self.line.push(b);
                    if self.line.len() + self.event.data.len() > self.max {
                        return Err(SseError::TooLarge(self.max));
                    }
                }
            }
        }
        Ok(done)
    }

    fn line_done(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            let had = std::mem::take(&mut self.has_data);
            return (had && !event.data.is_empty()).then_some(event);
        }
        if line[0] == b':' {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(at) => {
                let value = &text[at + 1..];
                (&text[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event.kind = Some(value.to_owned()),
            // An id holding NUL is ignored, as the SSE spec says.
            "id" if !value.contains('\0') => {
                self.event.id = Some(value.to_owned());
                self.last_id = Some(value.to_owned());
            }
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(pieces: &[&[u8]]) -> (Vec<Event>, Parser) {
        let mut p = Parser::new(1 << 20);
        let mut events = Vec::new();
        for piece in pieces {
            events.extend(p.feed(piece).unwrap());
        }
        (events, p)
    }

    fn data(events: &[Event]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn streams_are_parsed_whatever_the_pieces_and_line_endings() {
        let cases: Vec<(Vec<&[u8]>, Vec<&str>)> = vec![
            (vec![b"data: {\"a\":1}\n\n"], vec!["{\"a\":1}"]),
            (vec![b"data: one\r\n\r\ndata: two\n\n"], vec!["one", "two"]),
            (vec![b"data: cr\r\rdata: x\r\r"], vec!["cr", "x"]),
            (vec![b"da", b"ta: sp", b"lit\n", b"\n"], vec!["split"]),
            (vec![b"data: a\r", b"\n\r", b"\n"], vec!["a"]),
            (vec![b"data: line1\ndata: line2\n\n"], vec!["line1\nline2"]),
            (vec![b"data:nospace\n\n"], vec!["nospace"]),
            (vec![b": keep-alive\n\ndata: after\n\n"], vec!["after"]),
            // A 2025-11-25 priming event: an id and empty data.
            (
                vec![b"id: 5707f53c\ndata: \n\nevent: message\nid: 2\ndata: {}\n\n"],
                vec!["{}"],
            ),
            (vec![b"data: unfinished"], vec![]),
            (vec![b"event: message\ndata: x\nunknown: y\n\n"], vec!["x"]),
        ];
        for (pieces, expected) in cases {
            let (events, _) = parse_all(&pieces);
            assert_eq!(data(&events), expected, "for {pieces:?}");
        }
    }

    #[test]
    fn ids_and_retry_are_kept() {
        let (events, p) = parse_all(&[b"retry: 1500\nid: e1\nevent: message\ndata: x\n\n"]);
        assert_eq!(events[0].id.as_deref(), Some("e1"));
        assert_eq!(events[0].kind.as_deref(), Some("message"));
        assert_eq!(p.retry_ms, Some(1500));
        assert_eq!(p.last_id.as_deref(), Some("e1"));
    }

    #[test]
    fn an_oversized_event_is_refused() {
        let mut p = Parser::new(16);
        assert_eq!(
            p.feed(b"data: 0123456789abcdefgh\n\n"),
            Err(SseError::TooLarge(16))
        );
        let mut p = Parser::new(16);
        assert!(p.feed(b"data: 0123456789\n").is_ok());
        assert!(
            p.feed(b"data: 0123456789\n").is_err(),
            "bounded across lines"
        );
    }
}
