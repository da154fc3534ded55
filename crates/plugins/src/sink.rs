//! Result sinks: the host-owned buffers a plugin writes its answers into.
//!
//! Architecture invariant: whoever allocates, frees. The host allocates a
//! sink, the plugin appends borrowed bytes through `write_result`, and the
//! host copies them; no buffer ever changes hands. A sink has a size cap so
//! a runaway plugin cannot make the host allocate without bound.

use hearth_sdk::abi::{HearthSink, HearthStr};

/// The most bytes one answer may carry.
pub const MAX_RESULT_BYTES: usize = 16 << 20;

/// A growable buffer behind a `*mut HearthSink`.
#[derive(Default)]
pub struct Sink {
    bytes: Vec<u8>,
    overflowed: bool,
}

impl Sink {
    /// The pointer handed to the plugin, valid while `self` is borrowed.
    pub fn as_ptr(&mut self) -> *mut HearthSink {
        (self as *mut Sink).cast()
    }

    /// The bytes written, or `None` if the plugin wrote more than
    /// [`MAX_RESULT_BYTES`].
    pub fn into_bytes(self) -> Option<Vec<u8>> {
        (!self.overflowed).then_some(self.bytes)
    }

    /// The bytes written, as text, for error messages.
    pub fn into_text(self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// `HearthHostApi.write_result`.
pub(super) unsafe extern "C" fn host_write_result(sink: *mut HearthSink, bytes: HearthStr) {
    // SAFETY: the plugin passes back the sink pointer the host gave it for
    // the current call, and borrowed bytes.
    let (Some(sink), bytes) = (unsafe { (sink.cast::<Sink>().as_mut(), bytes.as_bytes()) }) else {
        return;
    };
    if sink.overflowed || sink.bytes.len() + bytes.len() > MAX_RESULT_BYTES {
        sink.overflowed = true;
        return;
    }
    sink.bytes.extend_from_slice(bytes);
}
