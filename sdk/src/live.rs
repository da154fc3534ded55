//! Live tool output, paced and bounded: what goes from a running call to
//! the owner's screen while it runs.
//!
//! Both sides use [`Throttle`]. A plugin uses it so that a command printing
//! megabytes a second costs a few host calls a second; the host uses it
//! again because it cannot trust a plugin to pace itself, so a channel gets
//! a few events a second per call whatever a plugin sends. Output comes in
//! as bytes per stream; the throttle holds what came since the last piece
//! went out, keeping the newest bytes of a flood (a live view shows what
//! happens now; the call's result carries the whole output), and gives out
//! pieces at most once per interval, each at most `piece` bytes, and at
//! most `total` bytes per call. Every byte left out is counted in the next
//! piece's `skipped`, so a reader can say that something was.

use std::time::{Duration, Instant};

use crate::protocol::OutputStream;

/// How a [`Throttle`] paces and bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The least time between two batches of pieces.
    pub interval: Duration,
    /// The most bytes of one stream in one piece.
    pub piece: usize,
    /// The most bytes of text given out per call, over both streams.
    pub total: u64,
}

impl Limits {
    /// What a plugin sends the host: four batches a second, 8 KiB of each
    /// stream, 1 MiB per call.
    pub const PLUGIN: Limits = Limits {
        interval: Duration::from_millis(250),
        piece: 8 * 1024,
        total: 1024 * 1024,
    };
}

/// A piece of output to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Which stream.
    pub stream: OutputStream,
    /// The text (invalid UTF-8 replaced; never a split character).
    pub text: String,
    /// Bytes of the stream left out just before `text`.
    pub skipped: u64,
}

/// Output held between pieces; see the module's documentation.
#[derive(Debug)]
pub struct Throttle {
    limits: Limits,
    held: [Held; 2],
    /// When the next batch may go out.
    ready_at: Instant,
    /// Bytes of text given out so far.
    sent: u64,
    /// Orders the streams by which had output first since the last batch.
    arrivals: u64,
}

#[derive(Debug, Default)]
struct Held {
    bytes: Vec<u8>,
    skipped: u64,
    first: u64,
}

impl Held {
    fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.skipped == 0
    }
}

/// How far into a piece that follows skipped bytes a line's start is
/// looked for, as a share of the piece: a live view reads better from a
/// line's start, but not at the cost of most of the piece.
const LINE_SEARCH_SHARE: usize = 4;

impl Throttle {
    /// Nothing held; the first output may go out at once.
    pub fn new(limits: Limits) -> Throttle {
        Throttle {
            limits,
            held: [Held::default(), Held::default()],
            ready_at: Instant::now(),
            sent: 0,
            arrivals: 0,
        }
    }

    /// Takes `bytes` of `stream`, after `skipped` bytes of it its sender
    /// left out.
    pub fn push(&mut self, stream: OutputStream, bytes: &[u8], skipped: u64) {
        if bytes.is_empty() && skipped == 0 {
            return;
        }
        let exhausted = self.sent >= self.limits.total;
        self.arrivals += 1;
        let held = &mut self.held[index(stream)];
        if held.is_empty() {
            held.first = self.arrivals;
        }
        held.skipped += skipped;
        if exhausted {
            held.skipped += bytes.len() as u64;
            return;
        }
        let piece = self.limits.piece.max(1);
        // Of a chunk larger than a piece, only its end can be shown.
        let keep = bytes.len().min(piece);
        held.skipped += (bytes.len() - keep) as u64;
        held.bytes.extend_from_slice(&bytes[bytes.len() - keep..]);
        if held.bytes.len() > piece {
            let over = held.bytes.len() - piece;
            held.bytes.drain(..over);
            held.skipped += over as u64;
        }
    }

    /// When a batch is due: `None` while nothing waits to go out.
    pub fn next_due(&self) -> Option<Instant> {
        let waiting =
            self.sent < self.limits.total && self.held.iter().any(|h| !h.bytes.is_empty());
        waiting.then_some(self.ready_at)
    }

    /// The pieces due at `now`: none before the interval since the last
    /// batch has passed, or once the call's total is given out (the rest
    /// waits for [`Throttle::finish`]).
    pub fn take_due(&mut self, now: Instant) -> Vec<Piece> {
        match self.next_due() {
            Some(due) if due <= now => {}
            _ => return Vec::new(),
        }
        let pieces = self.take(false);
        if !pieces.is_empty() {
            self.ready_at = now + self.limits.interval;
        }
        pieces
    }

    /// Everything still held, whatever the time: the call has ended. A
    /// piece may have no text and only say what was skipped.
    pub fn finish(&mut self) -> Vec<Piece> {
        self.take(true)
    }

    fn take(&mut self, last: bool) -> Vec<Piece> {
        let mut order: Vec<usize> = (0..2).filter(|&i| !self.held[i].is_empty()).collect();
        order.sort_by_key(|&i| self.held[i].first);
        let mut pieces = Vec::new();
        for i in order {
            let stream = if i == 0 {
                OutputStream::Stdout
            } else {
                OutputStream::Stderr
            };
            let held = &mut self.held[i];
            let mut bytes = std::mem::take(&mut held.bytes);
            let mut skipped = std::mem::take(&mut held.skipped);
            if skipped > 0 {
                let start = readable_start(&bytes);
                skipped += start as u64;
                bytes.drain(..start);
            }
            if !last {
                // A character cut by the pipe's chunking waits for its end.
                let keep = incomplete_end(&bytes);
                held.bytes = bytes.split_off(bytes.len() - keep);
            }
            let room = self.limits.total.saturating_sub(self.sent) as usize;
            if bytes.len() > room {
                let cut = char_floor(&bytes, room);
                held.skipped += (bytes.len() - cut) as u64;
                bytes.truncate(cut);
            }
            if bytes.is_empty() && (skipped == 0 || !last) {
                // Nothing to show yet: what was skipped rides on the next.
                held.skipped += skipped;
                continue;
            }
            self.sent += bytes.len() as u64;
            pieces.push(Piece {
                stream,
                text: String::from_utf8_lossy(&bytes).into_owned(),
                skipped,
            });
        }
        pieces
    }
}

fn index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
    }
}

/// Where text that follows skipped bytes reads well from: past any
/// continuation bytes of a cut character, and past the rest of a cut line
/// when the next line starts near.
fn readable_start(bytes: &[u8]) -> usize {
    let char_start = bytes
        .iter()
        .position(|&b| !is_continuation(b))
        .unwrap_or(bytes.len());
    let near = (bytes.len() / LINE_SEARCH_SHARE).max(1);
    match bytes[char_start..]
        .iter()
        .take(near)
        .position(|&b| b == b'\n')
    {
        Some(newline) => char_start + newline + 1,
        None => char_start,
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 character they do
/// not finish.
fn incomplete_end(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if is_continuation(b) {
            continue;
        }
        let width = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if width > back { back } else { 0 };
    }
    0
}

/// The largest index at most `limit` that does not split a character.
fn char_floor(bytes: &[u8], limit: usize) -> usize {
    let mut at = limit.min(bytes.len());
    while at > 0 && at < bytes.len() && is_continuation(bytes[at]) {
        at -= 1;
    }
    at
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: OutputStream = OutputStream::Stdout;
    const ERR: OutputStream = OutputStream::Stderr;

    fn limits(piece: usize, total: u64) -> Limits {
        Limits {
            interval: Duration::from_millis(250),
            piece,
            total,
        }
    }

    fn piece(stream: OutputStream, text: &str, skipped: u64) -> Piece {
        Piece {
            stream,
            text: text.into(),
            skipped,
        }
    }

    #[test]
    fn pieces_go_out_at_once_then_at_most_once_an_interval() {
        let mut t = Throttle::new(limits(1024, 1 << 20));
        let start = Instant::now();
        t.push(OUT, b"one\n", 0);
        assert_eq!(t.take_due(start), vec![piece(OUT, "one\n", 0)]);
        t.push(OUT, b"two\n", 0);
        t.push(ERR, b"oops\n", 0);
        t.push(OUT, b"three\n", 0);
        assert_eq!(t.next_due(), Some(start + Duration::from_millis(250)));
        assert!(t.take_due(start + Duration::from_millis(100)).is_empty());
        assert_eq!(
            t.take_due(start + Duration::from_millis(250)),
            vec![piece(OUT, "two\nthree\n", 0), piece(ERR, "oops\n", 0)]
        );
        assert_eq!(t.next_due(), None);
    }

    #[test]
    fn a_flood_keeps_its_newest_bytes_from_a_line_start_and_counts_the_rest() {
        let cases: [(Vec<&[u8]>, usize, String, u64); 4] = [
            // (chunks pushed, piece size, text given out, skipped)
            (vec![b"0123456789"], 4, "6789".into(), 6),
            (vec![b"aaaa\nbb\ncc", b"dd"], 8, "bb\nccdd".into(), 5),
            (vec![&[b'x'; 100]], 16, "x".repeat(16), 84),
            // A cut character is dropped whole, never shown half.
            (vec!["éééééééééé".as_bytes()], 5, "éé".into(), 16),
        ];
        for (chunks, size, text, skipped) in cases {
            let mut t = Throttle::new(limits(size, 1 << 20));
            for chunk in &chunks {
                t.push(OUT, chunk, 0);
            }
            assert_eq!(
                t.take_due(Instant::now()),
                vec![piece(OUT, &text, skipped)],
                "{chunks:?} in pieces of {size}"
            );
        }
    }

    #[test]
    fn a_character_split_between_chunks_waits_for_its_end() {
        let mut t = Throttle::new(limits(1024, 1 << 20));
        let snow = "☃".as_bytes();
        t.push(OUT, &[b"a", &snow[..1]].concat(), 0);
        let now = Instant::now();
        assert_eq!(t.take_due(now), vec![piece(OUT, "a", 0)]);
        t.push(OUT, &snow[1..], 0);
        assert_eq!(
            t.take_due(now + Duration::from_secs(1)),
            vec![piece(OUT, "☃", 0)]
        );
    }

    #[test]
    fn the_total_bounds_a_call_and_the_end_says_what_was_left_out() {
        let mut t = Throttle::new(limits(8, 10));
        let mut now = Instant::now();
        t.push(OUT, b"12345678", 0);
        assert_eq!(t.take_due(now), vec![piece(OUT, "12345678", 0)]);
        t.push(OUT, b"abcdefgh", 0);
        now += Duration::from_secs(1);
        assert_eq!(t.take_due(now), vec![piece(OUT, "ab", 0)]);
        // Spent: nothing more goes out until the end, which counts it all.
        t.push(OUT, &[b'z'; 5000], 0);
        t.push(ERR, b"late", 3);
        assert_eq!(t.next_due(), None);
        assert!(t.take_due(now + Duration::from_secs(5)).is_empty());
        assert_eq!(
            t.finish(),
            vec![piece(OUT, "", 6 + 5000), piece(ERR, "", 3 + 4)]
        );
    }

    #[test]
    fn what_the_sender_skipped_is_passed_on() {
        let mut t = Throttle::new(limits(1024, 1 << 20));
        t.push(ERR, b"\nrest\n", 40);
        assert_eq!(t.finish(), vec![piece(ERR, "rest\n", 41)]);
        assert!(t.finish().is_empty());
    }
}
