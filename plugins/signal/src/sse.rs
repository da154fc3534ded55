//! An incremental parser for server-sent events, as signal-cli's
//! `GET /api/v1/events` writes them.
//!
//! Bytes arrive in whatever pieces TCP and chunked encoding make, so the
//! parser keeps a partial line between calls. It follows the HTML
//! specification's rules: lines end in LF, CRLF or CR; `:` starts a comment
//! (signal-cli's keep-alive is a bare `:` line); `data:` lines accumulate,
//! joined by LF; a blank line dispatches the event; one space after the
//! colon is dropped. Liveness is not the parser's business: any byte
//! read, comment or not, proves the stream alive to its reader.

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field; `message` when the server gave none.
    pub event: String,
    /// The `data:` lines, joined by LF.
    pub data: String,
}

/// Why the stream cannot be parsed further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line grew past [`MAX_LINE`] bytes without ending: the peer is not
    /// speaking SSE, or is broken; reading on would only grow memory.
    #[error("an event-stream line exceeded {MAX_LINE} bytes")]
    LineTooLong,
}

/// The longest line kept: a message with a few long quotes fits many times.
pub const MAX_LINE: usize = 8 << 20;

/// The parser's state between pieces of the stream.
#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    /// The last piece ended in CR: an LF starting the next one belongs to it.
    after_cr: bool,
    /// Past the first line (a byte-order mark is only skipped before it).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl Parser {
    /// A parser at the start of a stream.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Feeds the next piece of the stream; returns the events it completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, SseError> {
        let mut events = Vec::new();
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut events),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut events);
                }
                _ => {
                    if self.line.len() >= MAX_LINE {
                        return Err(SseError::LineTooLong);
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(events)
    }

    fn end_line(&mut self, events: &mut Vec<Event>) {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if line.starts_with("\u{feff}".as_bytes()) {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` matter to browsers reconnecting by
            // themselves; signal-cli sends neither, and unknown fields are
            // ignored by the specification.
            _ => {}
        }
    }

    fn dispatch(&mut self, events: &mut Vec<Event>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        events.push(Event {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, data: &str) -> Event {
        Event {
            event: name.into(),
            data: data.into(),
        }
    }

    /// Feeds `stream` in pieces of every size from 1 to its length and
    /// checks each split gives the same events.
    fn parse_split(stream: &str) -> Vec<Event> {
        let whole = Parser::new().feed(stream.as_bytes()).unwrap();
        for size in 1..=stream.len() {
            let mut parser = Parser::new();
            let mut got = Vec::new();
            for piece in stream.as_bytes().chunks(size) {
                got.extend(parser.feed(piece).unwrap());
            }
            assert_eq!(got, whole, "pieces of {size} bytes");
        }
        whole
    }

    #[test]
    fn events_split_anywhere_parse_the_same() {
        let cases: &[(&str, Vec<Event>)] = &[
            (
                "event:receive\ndata:{\"a\":1}\n\n",
                vec![event("receive", "{\"a\":1}")],
            ),
            (
                ":\n:\nevent:receive\ndata:x\n\n:\n",
                vec![event("receive", "x")],
            ),
            (
                "data: one\ndata:two\ndata\n\n",
                vec![event("message", "one\ntwo\n")],
            ),
            (
                "event: receive\r\ndata: a\r\n\r\nevent:receive\rdata:b\r\r",
                vec![event("receive", "a"), event("receive", "b")],
            ),
            ("\u{feff}data:x\n\n", vec![event("message", "x")]),
            ("event:receive\n\ndata:y\n\n", vec![event("message", "y")]),
            (
                "id:7\nretry:10\nfoo:bar\ndata:z\n\n",
                vec![event("message", "z")],
            ),
            ("data:unfinished\n", vec![]),
            ("data:é🦀\n\n", vec![event("message", "é🦀")]),
        ];
        for (stream, want) in cases {
            assert_eq!(&parse_split(stream), want, "{stream:?}");
        }
    }

    #[test]
    fn a_runaway_line_is_an_error() {
        let mut parser = Parser::new();
        let chunk = vec![b'a'; 1 << 20];
        let mut result = Ok(Vec::new());
        for _ in 0..=(MAX_LINE >> 20) {
            result = parser.feed(&chunk);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(SseError::LineTooLong));
    }
}
