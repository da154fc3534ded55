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

use hearth_base::config::Config;

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

    /// What `hearth check` should warn about: a key variable that is not
    /// set, and no ffmpeg to convert with.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some(why) = self.stt.as_ref().and_then(Stt::key_problem) {
            warnings.push(format!(
                "[stt]: {why}; voice messages will not be transcribed"
            ));
        }
        if let Some(why) = self.tts.as_ref().and_then(Tts::key_problem) {
            warnings.push(format!("[tts]: {why}; reply_with_voice will fail"));
        }
        if (self.stt.is_some() || self.tts.is_some()) && !convert::available() {
            warnings.push(
                "ffmpeg is not on PATH: voice messages in a format the [stt] endpoint does not take \
                 (Signal's AAC; anything but WAV for whisper.cpp's server) cannot be converted, and \
                 spoken replies that are not Ogg/Opus go as audio files, not voice messages \
                 (Debian: apt install ffmpeg)"
                    .into(),
            );
        }
        warnings
    }
}

/// Whether an attachment is something to transcribe: audio by its media
/// type, or a voice message by the channel's word.
pub fn is_audio(attachment: &Attachment) -> bool {
    attachment.voice || attachment.mime.starts_with("audio/")
}
