//! A running call's output shown as it comes (`tool.output`), paced and
//! bounded by the SDK's throttle, so a command printing megabytes a second
//! costs a few host calls a second.
//!
//! Live output is a courtesy to the owner: it never fails the call. A host
//! that does not offer the service, or refuses a piece, gets nothing more
//! from this call.

use std::time::Instant;

use hearth_sdk::HostCallError;
use hearth_sdk::live::{Limits, Throttle};
use hearth_sdk::protocol::{OutputStream, ToolOutput};

use crate::output::Stream;

/// Hands a piece to the host (the plugin's `Host::tool_output`; a test's
/// recorder).
pub type SendOutput = dyn Fn(&ToolOutput) -> Result<(), HostCallError> + Send + Sync;

/// One call's live output.
pub struct Live<'a> {
    send: &'a SendOutput,
    call_id: String,
    throttle: Throttle,
    /// Set once the host refused a piece: nothing more is sent.
    off: bool,
}

impl<'a> Live<'a> {
    /// Live output for the call `call_id`, through `send`.
    pub fn new(send: &'a SendOutput, call_id: &str) -> Live<'a> {
        Live {
            send,
            call_id: call_id.to_owned(),
            throttle: Throttle::new(Limits::PLUGIN),
            off: false,
        }
    }

    /// Takes the next bytes of `stream`; sends what is due.
    pub fn push(&mut self, stream: Stream, bytes: &[u8]) {
        if self.off {
            return;
        }
        let stream = match stream {
            Stream::Stdout => OutputStream::Stdout,
            Stream::Stderr => OutputStream::Stderr,
        };
        self.throttle.push(stream, bytes, 0);
        self.flush();
    }

    /// When held output is due to go out, if any is held.
    pub fn next_due(&self) -> Option<Instant> {
        if self.off {
            return None;
        }
        self.throttle.next_due()
    }

    /// Sends what is due now.
    pub fn flush(&mut self) {
        let pieces = self.throttle.take_due(Instant::now());
        self.send_all(pieces);
    }

    /// Sends everything held: the call has ended.
    pub fn finish(mut self) {
        let pieces = self.throttle.finish();
        self.send_all(pieces);
    }

    fn send_all(&mut self, pieces: Vec<hearth_sdk::live::Piece>) {
        for piece in pieces {
            if self.off {
                return;
            }
            let output = ToolOutput {
                call_id: self.call_id.clone(),
                stream: piece.stream,
                text: piece.text,
                skipped: piece.skipped,
            };
            if let Err(e) = (self.send)(&output) {
                tracing::debug!(call_id = %self.call_id, "live output stops here: {e}");
                self.off = true;
            }
        }
    }
}
