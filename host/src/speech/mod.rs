//! Voice in and voice out: voice messages transcribed through an
//! OpenAI-compatible transcription endpoint (`[stt]`), replies spoken
//! through an OpenAI-compatible speech endpoint (`[tts]`).
//!
//! - `format`: what an audio file is, from its first bytes;
//! - `convert`: ffmpeg, found on `PATH` when a format must change;
//! - `client`: the HTTP client, the API key and endpoint errors;
//! - `stt`: one file to its transcript;
//! - `tts`: one text to a saved audio file.
//!
//! Transcription runs in the turn that takes the message (so every channel
//! gets it), and its transcript is stored with the message's attachment
//! (`agent/voice.rs`). Speaking is the `reply_with_voice` tool
//! (`tools/voice.rs`). Everything here blocks: callers run it on blocking
//! threads.

mod client;
pub mod convert;
pub mod format;
pub mod stt;
pub mod tts;

use hearth_sdk::protocol::Attachment;

pub use stt::{Stt, SttError};
pub use tts::{Spoken, Tts, TtsError};

use crate::config::Config;

/// Both directions, as configured.
#[derive(Debug, Default)]
pub struct Speech {
    stt: Option<Stt>,
    tts: Option<Tts>,
}

/// Why a voice message was not transcribed when `[stt]` is absent.
pub const NO_STT: &str = "speech-to-text is not configured: add an [stt] section to hearth.toml \
(OpenAI's endpoint, or a local Whisper server; see docs/operations.md)";

impl Speech {
    /// The endpoints `config` names; nothing is contacted yet.
    pub fn new(config: &Config) -> Speech {
        Speech {
            stt: config.stt.as_ref().map(Stt::new),
            tts: config.tts.as_ref().map(|t| Tts::new(t, &config.home)),
        }
    }

    /// The transcription endpoint, or why there is none.
    pub fn stt(&self) -> Result<&Stt, &'static str> {
        self.stt.as_ref().ok_or(NO_STT)
    }

    /// The speech endpoint, when configured.
    pub fn tts(&self) -> Option<&Tts> {
        self.tts.as_ref()
    }
}

/// Whether an attachment is something to transcribe: audio by its media
/// type, or a voice message by the channel's word.
pub fn is_audio(attachment: &Attachment) -> bool {
    attachment.voice || attachment.mime.starts_with("audio/")
}

