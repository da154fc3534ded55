//! Converting audio with ffmpeg, when an endpoint needs another format.
//!
//! ffmpeg is an optional tool found on `PATH` when a conversion is needed,
//! never a build dependency: a machine without it still transcribes every
//! format its endpoint takes, and a conversion it would need fails with a
//! note saying what to install. A conversion has a deadline, after which
//! ffmpeg is killed, and only the end of what it said on standard error is
//! kept for the note.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::format::AudioFormat;

/// What ffmpeg is asked to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// 16 kHz mono 16-bit PCM WAV: what Whisper works on, and all that
    /// whisper.cpp's server reads.
    Wav,
    /// 16 kHz mono FLAC.
    Flac,
    /// Mono MP3.
    Mp3,
    /// Mono Opus in Ogg: a Telegram voice message.
    OggOpus,
}

impl Target {
    /// The container of what it makes.
    pub fn container(self) -> AudioFormat {
        match self {
            Target::Wav => AudioFormat::Wav,
            Target::Flac => AudioFormat::Flac,
            Target::Mp3 => AudioFormat::Mp3,
            Target::OggOpus => AudioFormat::Ogg,
        }
    }

    /// The media type of what it makes.
    pub fn mime(self) -> &'static str {
        match self {
            Target::Wav => "audio/wav",
            Target::Flac => "audio/flac",
            Target::Mp3 => "audio/mpeg",
            Target::OggOpus => "audio/ogg",
        }
    }

    fn args(self) -> &'static [&'static str] {
        match self {
            Target::Wav => &["-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav"],
            Target::Flac => &["-ac", "1", "-ar", "16000", "-c:a", "flac", "-f", "flac"],
            Target::Mp3 => &["-ac", "1", "-c:a", "libmp3lame", "-q:a", "4", "-f", "mp3"],
            Target::OggOpus => &[
                "-ac",
                "1",
                "-ar",
                "48000",
                "-c:a",
                "libopus",
                "-b:a",
                "32k",
                "-application",
                "voip",
                "-f",
                "ogg",
            ],
        }
    }
}

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// No `ffmpeg` on `PATH`.
    #[error(
        "ffmpeg is not installed (no `ffmpeg` on the daemon's PATH); install it (Debian: apt install ffmpeg)"
    )]
    Missing,
    /// ffmpeg could not read the input or write the output.
    #[error("ffmpeg could not convert it: {0}")]
    Failed(String),
    /// ffmpeg ran past the deadline and was killed.
    #[error("ffmpeg took longer than {} s and was stopped", .0.as_secs())]
    TimedOut(Duration),
    /// Starting or waiting for ffmpeg failed.
    #[error("cannot run ffmpeg: {0}")]
    Io(#[from] std::io::Error),
}

/// Whether `ffmpeg` runs from `PATH`.
pub fn available() -> bool {
    Command::new("ffmpeg")
        .arg("-version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The most of ffmpeg's standard error kept for a note.
const STDERR_KEPT: usize = 600;

/// Converts `input` into `output` as `target`, within `deadline`.
pub fn convert(
    input: &Path,
    output: &Path,
    target: Target,
    deadline: Duration,
) -> Result<(), ConvertError> {
    let mut command = Command::new("ffmpeg");
    command
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i"])
        .arg(input)
        .args(["-vn", "-map_metadata", "-1"])
        .args(target.args())
        .arg(output)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // The media is a stranger's bytes: ffmpeg runs as a helper, unable to
    // read hearth's credentials or reach the owner's terminal.
    hearth_base::helpers::sandbox()
        .apply(&mut command)
        .map_err(|e| ConvertError::Failed(format!("ffmpeg cannot be confined: {e}")))?;
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ConvertError::Missing,
        _ => ConvertError::Io(e),
    })?;
    // Read standard error on its own thread, so a chatty ffmpeg never
    // blocks on a full pipe while this one waits for it to exit.
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            // What ffmpeg said is only for the note; a read error leaves it short.
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() >= deadline {
            // Already exited or killed: either way it is gone.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let said = reader.join().unwrap_or_default();
    match status {
        None => Err(ConvertError::TimedOut(deadline)),
        Some(status) if status.success() => Ok(()),
        Some(status) => {
            let said = said.trim();
            let tail: String = said
                .chars()
                .rev()
                .take(STDERR_KEPT)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            // ffmpeg names the input before each complaint about it.
            let input = input.display().to_string();
            Err(ConvertError::Failed(if tail.is_empty() {
                format!("it exited with {status}")
            } else {
                tail.replace(&format!("{input}: "), "")
                    .replace(&input, "the file")
            }))
        }
    }
}
