//! Server-sent events: turns a byte stream into `(event, data)` pairs.
//!
//! Follows the WHATWG rules: lines end in LF, CR or CRLF; a blank line ends
//! an event; `:` starts a comment (keep-alives); `data` lines join with
//! newlines; one optional space after the colon is dropped. Chunks may split
//! anywhere, even inside a UTF-8 character or a CRLF.

/// One event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, empty for the default ("message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// An incremental SSE parser.
#[derive(Default)]
pub struct Parser {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
    last_was_cr: bool,
}

impl Parser {
    /// Feeds a chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in chunk {
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
                _ => self.pending.push(b),
            }
        }
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                out.push(Event {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
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
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Event, Parser};

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
}
