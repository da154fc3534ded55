//! What an audio file is, read from its first bytes.
//!
//! A channel's media type is a hint, not a fact (Telegram calls every voice
//! note `audio/ogg`, a browser names its own recordings, a sender names
//! files as they like), and an endpoint judges a file by the extension it
//! is sent under. So hearth looks at the container's magic bytes, names the
//! file for what it is, and converts it when the endpoint does not take
//! that format.

/// The containers hearth recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AudioFormat {
    /// Ogg (Opus or Vorbis): Telegram's voice notes.
    Ogg,
    /// WebM/Matroska: what browsers record (MediaRecorder).
    WebM,
    /// RIFF WAVE.
    Wav,
    /// FLAC.
    Flac,
    /// MPEG audio (MP3), with or without an ID3 tag.
    Mp3,
    /// MPEG-4 audio (M4A): iPhone recordings.
    Mp4,
    /// Raw AAC in ADTS frames: Signal's voice notes.
    Aac,
    /// AMR: old phones' recordings.
    Amr,
    /// Apple's Core Audio Format.
    Caf,
}

/// The bytes [`AudioFormat::sniff`] needs at most.
pub const HEAD_BYTES: usize = 64;

impl AudioFormat {
    /// The format of a file starting with `head`, if it is one hearth
    /// knows.
    pub fn sniff(head: &[u8]) -> Option<AudioFormat> {
        let at =
            |offset: usize, magic: &[u8]| head.get(offset..offset + magic.len()) == Some(magic);
        if at(0, b"OggS") {
            Some(AudioFormat::Ogg)
        } else if at(0, &[0x1A, 0x45, 0xDF, 0xA3]) {
            Some(AudioFormat::WebM)
        } else if at(0, b"RIFF") && at(8, b"WAVE") {
            Some(AudioFormat::Wav)
        } else if at(0, b"fLaC") {
            Some(AudioFormat::Flac)
        } else if at(4, b"ftyp") {
            Some(AudioFormat::Mp4)
        } else if at(0, b"#!AMR") {
            Some(AudioFormat::Amr)
        } else if at(0, b"caff") {
            Some(AudioFormat::Caf)
        } else if at(0, b"ID3") {
            Some(AudioFormat::Mp3)
        } else {
            match head {
                // An MPEG frame sync: layer bits 00 are AAC in ADTS, the
                // others MPEG audio layers (MP3 is layer III).
                [0xFF, second, ..] if second & 0xF6 == 0xF0 => Some(AudioFormat::Aac),
                [0xFF, second, ..] if second & 0xE0 == 0xE0 && second & 0x06 != 0 => {
                    Some(AudioFormat::Mp3)
                }
                _ => None,
            }
        }
    }

    /// The file extensions it goes by, the usual one first: an endpoint's
    /// list of formats may name any of them.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            AudioFormat::Ogg => &["ogg", "oga", "opus"],
            AudioFormat::WebM => &["webm", "weba"],
            AudioFormat::Wav => &["wav"],
            AudioFormat::Flac => &["flac"],
            AudioFormat::Mp3 => &["mp3", "mpeg", "mpga"],
            AudioFormat::Mp4 => &["m4a", "mp4"],
            AudioFormat::Aac => &["aac"],
            AudioFormat::Amr => &["amr"],
            AudioFormat::Caf => &["caf"],
        }
    }

    /// Its media type.
    pub fn mime(self) -> &'static str {
        match self {
            AudioFormat::Ogg => "audio/ogg",
            AudioFormat::WebM => "audio/webm",
            AudioFormat::Wav => "audio/wav",
            AudioFormat::Flac => "audio/flac",
            AudioFormat::Mp3 => "audio/mpeg",
            AudioFormat::Mp4 => "audio/mp4",
            AudioFormat::Aac => "audio/aac",
            AudioFormat::Amr => "audio/amr",
            AudioFormat::Caf => "audio/x-caf",
        }
    }

    /// The extension to send it under when the endpoint takes it: the
    /// first of its names that `accepted` lists.
    pub fn accepted_as(self, accepted: &[String]) -> Option<&'static str> {
        self.extensions()
            .iter()
            .copied()
            .find(|ext| accepted.iter().any(|a| a == ext))
    }
}

/// Whether `head` starts an Ogg stream of Opus: what Telegram shows as a
/// voice message.
pub fn is_ogg_opus(head: &[u8]) -> bool {
    // The first page's header is 27 bytes and its segment table; the Opus
    // identification header (`OpusHead`) is the page's first packet.
    let Some(&segments) = head.get(26) else {
        return false;
    };
    let start = 27 + usize::from(segments);
    head.starts_with(b"OggS") && head.get(start..start + 8) == Some(b"OpusHead".as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_told_by_their_first_bytes() {
        let mut wav = b"RIFF\x24\0\0\0WAVEfmt ".to_vec();
        wav.resize(32, 0);
        let mut m4a = b"\0\0\0\x20ftypM4A ".to_vec();
        m4a.resize(32, 0);
        let cases: [(&[u8], Option<AudioFormat>); 13] = [
            (b"OggS\0\x02", Some(AudioFormat::Ogg)),
            (&[0x1A, 0x45, 0xDF, 0xA3, 0x9F], Some(AudioFormat::WebM)),
            (&wav, Some(AudioFormat::Wav)),
            (b"fLaC\0\0\0\x22", Some(AudioFormat::Flac)),
            (&m4a, Some(AudioFormat::Mp4)),
            (b"ID3\x04\0", Some(AudioFormat::Mp3)),
            (&[0xFF, 0xFB, 0x90, 0x64], Some(AudioFormat::Mp3)),
            (&[0xFF, 0xF1, 0x50, 0x80], Some(AudioFormat::Aac)),
            (&[0xFF, 0xF9, 0x50, 0x80], Some(AudioFormat::Aac)),
            (b"#!AMR\n", Some(AudioFormat::Amr)),
            (b"caff\0\x01", Some(AudioFormat::Caf)),
            (b"RIFF\x24\0\0\0AVI LIST", None),
            (b"not audio at all", None),
        ];
        for (head, format) in cases {
            assert_eq!(AudioFormat::sniff(head), format, "{head:?}");
        }
        assert_eq!(AudioFormat::sniff(&[]), None);
    }

    #[test]
    fn a_format_is_sent_under_a_name_the_endpoint_takes() {
        let openai: Vec<String> = hearth_base::config::OPENAI_STT_FORMATS
            .map(str::to_owned)
            .to_vec();
        let cases = [
            (AudioFormat::Ogg, &openai, Some("ogg")),
            (AudioFormat::Mp4, &openai, Some("m4a")),
            (AudioFormat::Mp3, &openai, Some("mp3")),
            (AudioFormat::Aac, &openai, None),
            (AudioFormat::Ogg, &vec!["opus".to_owned()], Some("opus")),
            (AudioFormat::Ogg, &vec!["wav".to_owned()], None),
        ];
        for (format, accepted, name) in cases {
            assert_eq!(
                format.accepted_as(accepted),
                name,
                "{format:?} {accepted:?}"
            );
        }
    }

    #[test]
    fn ogg_opus_is_told_from_other_ogg() {
        let mut opus = b"OggS\0\x02".to_vec();
        opus.resize(26, 0);
        opus.push(1);
        opus.push(19);
        opus.extend_from_slice(b"OpusHead\x01\x01");
        let mut vorbis = opus.clone();
        vorbis[28..36].copy_from_slice(b"\x01vorbis\0");
        assert!(is_ogg_opus(&opus));
        assert!(!is_ogg_opus(&vorbis));
        assert!(!is_ogg_opus(b"OggS"));
        assert!(!is_ogg_opus(b""));
    }
}
