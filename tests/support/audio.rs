//! Real audio for the tests, made at test time with Debian's tools:
//! `espeak-ng` speaks a sentence to WAV, `opusenc` (opus-tools) makes the
//! Ogg/Opus of a Telegram voice note, `ffmpeg` makes the other formats
//! (a browser's WebM, Signal's AAC), and `ffprobe` and `opusinfo` check
//! what a file really is. `.ci/run` installs all of them.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// What `ffprobe` says a file is.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// The container, as ffprobe names it (`ogg`, `wav`, `matroska,webm`).
    pub format: String,
    /// The first audio stream's codec (`opus`, `pcm_s16le`, `aac`).
    pub codec: String,
    /// Its sample rate in Hz.
    pub sample_rate: u32,
    /// Its channels.
    pub channels: u32,
    /// The length in seconds.
    pub seconds: f64,
}

/// `text` spoken by espeak-ng, as 22 kHz mono WAV.
pub fn speech_wav(text: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let wav = dir.path().join("speech.wav");
    run(Command::new("espeak-ng").arg("-w").arg(&wav).arg(text));
    std::fs::read(&wav).expect("espeak-ng wrote the WAV")
}

/// `text` spoken, as Ogg/Opus: what Telegram's apps send as a voice note.
pub fn ogg_opus(text: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let wav = dir.path().join("speech.wav");
    let ogg = dir.path().join("speech.ogg");
    std::fs::write(&wav, speech_wav(text)).expect("write the WAV");
    run(Command::new("opusenc").arg("--quiet").arg(&wav).arg(&ogg));
    std::fs::read(&ogg).expect("opusenc wrote the Ogg")
}

/// `text` spoken, encoded by ffmpeg with `args` (codec and container, e.g.
/// `["-c:a", "libopus", "-f", "webm"]`).
pub fn encoded(text: &str, args: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let wav = dir.path().join("speech.wav");
    let out = dir.path().join("speech.out");
    std::fs::write(&wav, speech_wav(text)).expect("write the WAV");
    run(Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-y", "-i"])
        .arg(&wav)
        .args(args)
        .arg(&out));
    std::fs::read(&out).expect("ffmpeg wrote the file")
}

/// `text` spoken, as a browser's MediaRecorder records it: Opus in WebM.
pub fn webm_opus(text: &str) -> Vec<u8> {
    encoded(text, &["-c:a", "libopus", "-f", "webm"])
}

/// `text` spoken, as Signal's Android app records a voice note: AAC in
/// ADTS frames.
pub fn aac_adts(text: &str) -> Vec<u8> {
    encoded(text, &["-c:a", "aac", "-f", "adts"])
}

/// What `ffprobe` makes of `bytes`, or what it said when it could not read
/// them.
pub fn probe(bytes: &[u8]) -> Result<Probe, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("probed");
    std::fs::write(&file, bytes).map_err(|e| e.to_string())?;
    probe_file(&file)
}

/// What `ffprobe` makes of the file at `path`.
pub fn probe_file(path: &Path) -> Result<Probe, String> {
    let output = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-of",
            "json",
            "-show_format",
            "-show_streams",
        ])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run ffprobe (apt install ffmpeg): {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
    }
    let json: Value = serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
    let stream = json["streams"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["codec_type"] == "audio"))
        .ok_or("no audio stream")?;
    let number = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .or_else(|| v.as_f64())
    };
    Ok(Probe {
        format: json["format"]["format_name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        codec: stream["codec_name"].as_str().unwrap_or_default().to_owned(),
        sample_rate: number(&stream["sample_rate"]).unwrap_or(0.0) as u32,
        channels: stream["channels"].as_u64().unwrap_or(0) as u32,
        seconds: number(&json["format"]["duration"])
            .or_else(|| number(&stream["duration"]))
            .unwrap_or(0.0),
    })
}

/// What `opusinfo` says of `bytes`; `Err` with its words when it finds the
/// file is not valid Ogg/Opus.
pub fn opusinfo(bytes: &[u8]) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("checked.ogg");
    std::fs::write(&file, bytes).map_err(|e| e.to_string())?;
    let output = Command::new("opusinfo")
        .arg(&file)
        .output()
        .map_err(|e| format!("cannot run opusinfo (apt install opus-tools): {e}"))?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() && !said.contains("WARNING") && !said.contains("ERROR") {
        Ok(said)
    } else {
        Err(said)
    }
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?} (.ci/run installs it): {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
