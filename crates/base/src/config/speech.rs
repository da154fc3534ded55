//! `[stt]` and `[tts]`: the OpenAI-compatible endpoints voice messages are
//! transcribed by and replies are spoken by.
//!
//! Both sections are optional: without `[stt]` a voice message reaches the
//! model as a file with a note saying it could not be transcribed, and
//! without `[tts]` the agent has no `reply_with_voice` tool. Keys are named
//! by environment variable (`api_key_env`), never written here, as in
//! `[llm]`.

use serde::Deserialize;

/// What OpenAI's transcription endpoint takes, by file extension: the
/// default of `[stt] formats`.
pub const OPENAI_STT_FORMATS: [&str; 9] = [
    "flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "ogg", "wav", "webm",
];

/// Every name `[stt] formats` may hold: the extensions an endpoint is
/// told a file has.
pub const KNOWN_STT_FORMATS: [&str; 15] = [
    "aac", "amr", "caf", "flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "opus", "wav",
    "webm", "weba",
];

/// What `[tts] response_format` may ask for (OpenAI's list without `pcm`,
/// which has no header to tell its rate by).
pub const TTS_FORMATS: [&str; 5] = ["opus", "mp3", "aac", "flac", "wav"];

/// `[stt]`, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct SttConfig {
    /// The API base; `/audio/transcriptions` is appended.
    pub base_url: String,
    /// The model the endpoint is asked for (`whisper-1`; local servers
    /// often ignore it).
    pub model: String,
    /// The environment variable holding the API key; `None` sends none.
    pub api_key_env: Option<String>,
    /// The file formats (by extension) the endpoint takes; anything else is
    /// converted with ffmpeg first.
    pub formats: Vec<String>,
    /// The spoken language (ISO 639-1, `en`), when known: it helps Whisper.
    pub language: Option<String>,
    /// The largest file sent, after any conversion.
    pub max_bytes: u64,
    /// One request's timeout.
    pub timeout_ms: u64,
    /// Retries on 429, 5xx and connection failures.
    pub max_retries: u32,
}

/// `[tts]`, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct TtsConfig {
    /// The API base; `/audio/speech` is appended.
    pub base_url: String,
    /// The model (`gpt-4o-mini-tts`, `tts-1`).
    pub model: String,
    /// The voice (`alloy`, `nova`, ...).
    pub voice: String,
    /// The environment variable holding the API key; `None` sends none.
    pub api_key_env: Option<String>,
    /// The audio format asked for; `opus` (OGG/Opus) is what Telegram plays
    /// as a voice message.
    pub response_format: String,
    /// The longest text spoken, in characters.
    pub max_chars: usize,
    /// The largest answer taken, in bytes.
    pub max_bytes: u64,
    /// One request's timeout.
    pub timeout_ms: u64,
}

/// `[stt]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStt {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    formats: Option<Vec<String>>,
    language: Option<String>,
    max_bytes: Option<u64>,
    timeout_ms: Option<u64>,
    max_retries: Option<u32>,
}

/// `[tts]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTts {
    base_url: Option<String>,
    model: Option<String>,
    voice: Option<String>,
    api_key_env: Option<String>,
    response_format: Option<String>,
    max_chars: Option<usize>,
    max_bytes: Option<u64>,
    timeout_ms: Option<u64>,
}

const OPENAI: &str = "https://api.openai.com/v1";

/// Checks `[stt]`; the error names the key.
pub(super) fn build_stt(raw: Option<RawStt>) -> Result<Option<SttConfig>, (String, String)> {
    let Some(raw) = raw else { return Ok(None) };
    let invalid = |key: &str, message: String| (format!("stt.{key}"), message);
    let base_url = base_url(raw.base_url).map_err(|m| invalid("base_url", m))?;
    let model = non_empty(raw.model, "whisper-1").map_err(|m| invalid("model", m))?;
    let formats: Vec<String> = raw
        .formats
        .unwrap_or_else(|| OPENAI_STT_FORMATS.map(str::to_owned).to_vec())
        .into_iter()
        .map(|f| f.trim().trim_start_matches('.').to_ascii_lowercase())
        .collect();
    if formats.is_empty() {
        return Err(invalid(
            "formats",
            "must name at least one format the endpoint takes (\"wav\" for whisper.cpp's server)"
                .into(),
        ));
    }
    if let Some(unknown) = formats
        .iter()
        .find(|f| !KNOWN_STT_FORMATS.contains(&f.as_str()))
    {
        return Err(invalid(
            "formats",
            format!(
                "{unknown:?} is not a format hearth knows; use some of {}",
                KNOWN_STT_FORMATS.join(", ")
            ),
        ));
    }
    let language = raw.language.map(|l| l.trim().to_owned());
    if let Some(language) = &language {
        let code = (1..=16).contains(&language.len())
            && language
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !code {
            return Err(invalid(
                "language",
                format!("{language:?} is not a language code like \"en\""),
            ));
        }
    }
    let max_bytes = raw.max_bytes.unwrap_or(25 << 20);
    if !(1..=1 << 30).contains(&max_bytes) {
        return Err(invalid("max_bytes", "must be 1 to 1073741824".into()));
    }
    let timeout_ms = timeout(raw.timeout_ms, 120_000).map_err(|m| invalid("timeout_ms", m))?;
    let max_retries = raw.max_retries.unwrap_or(2);
    if max_retries > 10 {
        return Err(invalid("max_retries", "must be 0 to 10".into()));
    }
    Ok(Some(SttConfig {
        base_url,
        model,
        api_key_env: key_env(raw.api_key_env).map_err(|m| invalid("api_key_env", m))?,
        formats,
        language,
        max_bytes,
        timeout_ms,
        max_retries,
    }))
}

/// Checks `[tts]`; the error names the key.
pub(super) fn build_tts(raw: Option<RawTts>) -> Result<Option<TtsConfig>, (String, String)> {
    let Some(raw) = raw else { return Ok(None) };
    let invalid = |key: &str, message: String| (format!("tts.{key}"), message);
    let response_format = raw
        .response_format
        .unwrap_or_else(|| "opus".into())
        .to_ascii_lowercase();
    if !TTS_FORMATS.contains(&response_format.as_str()) {
        return Err(invalid(
            "response_format",
            format!(
                "{response_format:?} is not one of {}",
                TTS_FORMATS.join(", ")
            ),
        ));
    }
    let max_chars = raw.max_chars.unwrap_or(4096);
    if !(1..=100_000).contains(&max_chars) {
        return Err(invalid("max_chars", "must be 1 to 100000".into()));
    }
    let max_bytes = raw.max_bytes.unwrap_or(20 << 20);
    if !(1..=1 << 30).contains(&max_bytes) {
        return Err(invalid("max_bytes", "must be 1 to 1073741824".into()));
    }
    Ok(Some(TtsConfig {
        base_url: base_url(raw.base_url).map_err(|m| invalid("base_url", m))?,
        model: non_empty(raw.model, "tts-1").map_err(|m| invalid("model", m))?,
        voice: non_empty(raw.voice, "alloy").map_err(|m| invalid("voice", m))?,
        api_key_env: key_env(raw.api_key_env).map_err(|m| invalid("api_key_env", m))?,
        response_format,
        max_chars,
        max_bytes,
        timeout_ms: timeout(raw.timeout_ms, 60_000).map_err(|m| invalid("timeout_ms", m))?,
    }))
}

fn base_url(raw: Option<String>) -> Result<String, String> {
    let url = raw.unwrap_or_else(|| OPENAI.into());
    let url = url.trim_end_matches('/').to_owned();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url)
    } else {
        Err(format!("{url:?} must start with http:// or https://"))
    }
}

fn non_empty(raw: Option<String>, default: &str) -> Result<String, String> {
    match raw {
        None => Ok(default.into()),
        Some(v) if v.trim().is_empty() => Err("must not be empty".into()),
        Some(v) => Ok(v.trim().to_owned()),
    }
}

fn key_env(raw: Option<String>) -> Result<Option<String>, String> {
    match raw {
        Some(name) if name.is_empty() || name.contains(['=', '\0']) => Err(format!(
            "{name:?} is not an environment variable name (name the variable, never the key)"
        )),
        other => Ok(other),
    }
}

fn timeout(raw: Option<u64>, default: u64) -> Result<u64, String> {
    let ms = raw.unwrap_or(default);
    if (1_000..=600_000).contains(&ms) {
        Ok(ms)
    } else {
        Err("must be 1000 to 600000 (1 s to 10 min)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stt(toml: &str) -> Result<Option<SttConfig>, (String, String)> {
        build_stt(Some(toml::from_str(toml).expect("valid TOML")))
    }

    fn tts(toml: &str) -> Result<Option<TtsConfig>, (String, String)> {
        build_tts(Some(toml::from_str(toml).expect("valid TOML")))
    }

    #[test]
    fn absent_sections_are_off_and_an_empty_one_is_openai() {
        assert_eq!(build_stt(None), Ok(None));
        assert_eq!(build_tts(None), Ok(None));
        let stt = stt("").unwrap().unwrap();
        assert_eq!(stt.base_url, "https://api.openai.com/v1");
        assert_eq!(stt.model, "whisper-1");
        assert_eq!(stt.formats, OPENAI_STT_FORMATS.map(str::to_owned));
        assert_eq!(stt.api_key_env, None);
        let tts = tts("").unwrap().unwrap();
        assert_eq!(
            (
                tts.model.as_str(),
                tts.voice.as_str(),
                tts.response_format.as_str()
            ),
            ("tts-1", "alloy", "opus")
        );
    }

    #[test]
    fn a_local_whisper_server_is_configured_by_its_url_and_formats() {
        let stt = stt(
            "base_url = \"http://127.0.0.1:8178/v1/\"\nformats = [\".WAV\"]\nlanguage = \"de\"",
        )
        .unwrap()
        .unwrap();
        assert_eq!(stt.base_url, "http://127.0.0.1:8178/v1");
        assert_eq!(stt.formats, ["wav"]);
        assert_eq!(stt.language.as_deref(), Some("de"));
    }

    #[test]
    fn bad_values_name_their_key() {
        let stt_cases = [
            ("base_url = \"ftp://x\"", "stt.base_url", "http://"),
            ("model = \" \"", "stt.model", "empty"),
            ("formats = []", "stt.formats", "at least one"),
            ("formats = [\"wav\", \"xyz\"]", "stt.formats", "\"xyz\""),
            ("language = \"en us\"", "stt.language", "language code"),
            ("max_bytes = 0", "stt.max_bytes", "1 to"),
            ("timeout_ms = 5", "stt.timeout_ms", "1000 to"),
            ("max_retries = 11", "stt.max_retries", "0 to 10"),
            (
                "api_key_env = \"KEY=sk-1\"",
                "stt.api_key_env",
                "never the key",
            ),
        ];
        for (toml, key, says) in stt_cases {
            let (k, message) = stt(toml).unwrap_err();
            assert_eq!(k, key, "{toml}");
            assert!(message.contains(says), "{toml}: {message}");
        }
        let tts_cases = [
            ("response_format = \"pcm\"", "tts.response_format", "opus"),
            ("voice = \"\"", "tts.voice", "empty"),
            ("max_chars = 0", "tts.max_chars", "1 to"),
            ("max_bytes = 0", "tts.max_bytes", "1 to"),
            ("timeout_ms = 999999", "tts.timeout_ms", "1000 to"),
        ];
        for (toml, key, says) in tts_cases {
            let (k, message) = tts(toml).unwrap_err();
            assert_eq!(k, key, "{toml}");
            assert!(message.contains(says), "{toml}: {message}");
        }
    }
}
