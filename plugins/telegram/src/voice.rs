//! Spoken replies: a file the host flags as voice goes out as a Telegram
//! voice message.
//!
//! The Bot API's `sendVoice` shows a playable voice bubble only for Ogg
//! files of Opus; anything else goes with `sendAudio` (MP3 and M4A, which
//! Telegram plays as music) or `sendDocument`. A short reply rides along as
//! the voice message's caption (1024 characters at most) instead of a text
//! message of its own. A chat whose owner forbids voice messages
//! (`VOICE_MESSAGES_FORBIDDEN`) gets the file as a document.

use hearth_sdk::protocol::{Attachment, OutboundMessage};

use crate::api::ApiError;
use crate::api::Upload;
use crate::channel::Shared;
use crate::format;

/// The longest caption, in UTF-16 code units of visible text.
pub const MAX_CAPTION: usize = 1024;

/// The reply's text as HTML, when it goes as the caption of its one voice
/// file: there is exactly one, and the text fits a caption.
pub fn caption(message: &OutboundMessage) -> Option<String> {
    let mut voices = message.attachments.iter().filter(|a| a.voice);
    let (Some(_), None) = (voices.next(), voices.next()) else {
        return None;
    };
    let mut parts = format::messages_within(&message.text, MAX_CAPTION);
    match parts.len() {
        1 => parts.pop(),
        _ => None,
    }
}

/// How a voice file goes: Bot API method and file field.
fn method_for(file: &Attachment, bytes: &[u8]) -> (&'static str, &'static str) {
    if is_ogg_opus(bytes) {
        ("sendVoice", "voice")
    } else if matches!(
        file.mime.as_str(),
        "audio/mpeg" | "audio/mp3" | "audio/mp4" | "audio/m4a" | "audio/x-m4a"
    ) {
        ("sendAudio", "audio")
    } else {
        ("sendDocument", "document")
    }
}

impl Shared {
    /// Sends a voice file, with `caption` (HTML) when given; its message
    /// id.
    pub async fn send_voice(
        &self,
        chat: i64,
        file: &Attachment,
        caption: Option<&str>,
    ) -> Result<Option<i64>, ApiError> {
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| ApiError::Transport(format!("cannot read {}: {e}", file.path)))?;
        let (method, field) = method_for(file, &bytes);
        let mut fields = Vec::new();
        if let Some(caption) = caption {
            fields.push(("caption", caption.to_owned()));
            fields.push(("parse_mode", "HTML".to_owned()));
        }
        if let Some(seconds) = (method == "sendVoice")
            .then(|| ogg_seconds(&bytes))
            .flatten()
        {
            fields.push(("duration", seconds.to_string()));
        }
        let upload = Upload {
            bytes: &bytes,
            name: &file.name,
            mime: &file.mime,
        };
        match self.upload(chat, method, field, &upload, &fields).await {
            Err(ApiError::Refused {
                code: 400,
                description,
                ..
            }) if description.contains("VOICE_MESSAGES_FORBIDDEN") => {
                tracing::info!(
                    "telegram: the chat takes no voice messages; sending the reply's audio as a file"
                );
                fields.retain(|(key, _)| *key != "duration");
                self.upload(chat, "sendDocument", "document", &upload, &fields)
                    .await
            }
            other => other,
        }
    }
}

/// Whether `bytes` start an Ogg stream of Opus.
pub fn is_ogg_opus(bytes: &[u8]) -> bool {
    // The first page: a 27-byte header, its segment table, then the Opus
    // identification header.
    let Some(&segments) = bytes.get(26) else {
        return false;
    };
    let start = 27 + usize::from(segments);
    bytes.starts_with(b"OggS") && bytes.get(start..start + 8) == Some(b"OpusHead".as_slice())
}

/// The length of an Ogg/Opus file in whole seconds (rounded up): the last
/// page's granule position, less the pre-skip, at Opus's 48 kHz.
pub fn ogg_seconds(bytes: &[u8]) -> Option<u64> {
    let start = 27 + usize::from(*bytes.get(26)?);
    let head = bytes.get(start..start + 12)?;
    let pre_skip = u64::from(u16::from_le_bytes([head[10], head[11]]));
    let last = bytes.windows(4).rposition(|w| w == b"OggS")?;
    let granule = u64::from_le_bytes(bytes.get(last + 6..last + 14)?.try_into().ok()?);
    Some(granule.checked_sub(pre_skip)?.div_ceil(48_000).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ogg page header with `granule`, one segment, and `packet`.
    fn page(granule: u64, packet: &[u8]) -> Vec<u8> {
        let mut page = b"OggS\0\0".to_vec();
        page.extend_from_slice(&granule.to_le_bytes());
        page.resize(26, 0);
        page.push(1);
        page.push(u8::try_from(packet.len()).unwrap());
        page.extend_from_slice(packet);
        page
    }

    fn opus_file(last_granule: u64) -> Vec<u8> {
        let mut head = b"OpusHead\x01\x01".to_vec();
        head.extend_from_slice(&312u16.to_le_bytes());
        head.extend_from_slice(&[0x80, 0xbb, 0, 0, 0, 0, 0]);
        let mut file = page(0, &head);
        file.extend(page(0, b"OpusTags"));
        file.extend(page(last_granule, b"audio"));
        file
    }

    #[test]
    fn an_ogg_opus_file_is_known_and_timed() {
        let cases = [
            (opus_file(312 + 48_000 * 3), Some(3)),
            (opus_file(312 + 48_000 * 3 + 1), Some(4)),
            (opus_file(312 + 100), Some(1)),
        ];
        for (file, seconds) in cases {
            assert!(is_ogg_opus(&file));
            assert_eq!(ogg_seconds(&file), seconds);
        }
        assert!(!is_ogg_opus(b"ID3\x04 an mp3"));
        assert_eq!(ogg_seconds(b"OggS"), None);
    }

    #[test]
    fn a_short_reply_is_the_caption_of_its_one_voice_file() {
        let voice = Attachment {
            voice: true,
            ..Attachment::default()
        };
        let message = |text: &str, files: Vec<Attachment>| OutboundMessage {
            chat: "1".into(),
            text: text.into(),
            key: None,
            in_reply_to: None,
            at_ms: 0,
            attachments: files,
        };
        let long = "word ".repeat(300);
        let cases = [
            (
                message("**Sunny**, 21°", vec![voice.clone()]),
                Some("<b>Sunny</b>, 21°"),
            ),
            (message(&long, vec![voice.clone()]), None),
            (message("two", vec![voice.clone(), voice.clone()]), None),
            (message("no voice", vec![Attachment::default()]), None),
        ];
        for (message, expected) in cases {
            assert_eq!(caption(&message).as_deref(), expected, "{}", message.text);
        }
    }
}
