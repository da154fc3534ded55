//! Transcription through an OpenAI-compatible endpoint
//! (`POST <base_url>/audio/transcriptions`, `multipart/form-data` with
//! `file` and `model`, answering `{"text": ...}`): OpenAI itself, or a
//! local Whisper server.
//!
//! The file is sent as what it is (named by its sniffed format, since
//! endpoints judge a file by its extension) when the endpoint takes that
//! format, and otherwise converted with ffmpeg to the first of WAV, FLAC,
//! MP3 or Ogg/Opus the endpoint takes. Every way this can fail is an
//! [`SttError`] whose message says what happened and what would fix it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::client::{self, ApiKey, Exchange};
use super::convert::{self, ConvertError, Target};
use super::format::{AudioFormat, HEAD_BYTES};
use hearth_base::config::SttConfig;

/// The most a transcription answer may hold.
const MAX_ANSWER_BYTES: u64 = 4 << 20;
/// How long one conversion may take.
const CONVERT_DEADLINE: Duration = Duration::from_secs(120);

/// A configured transcription endpoint.
#[derive(Debug)]
pub struct Stt {
    config: SttConfig,
    key: Result<Option<ApiKey>, String>,
}

/// Why a file was not transcribed.
#[derive(Debug, thiserror::Error)]
pub enum SttError {
    /// The key's environment variable is not set.
    #[error("{0}")]
    NoKey(String),
    /// The saved file cannot be read.
    #[error("cannot read the file: {0}")]
    Read(#[from] std::io::Error),
    /// Larger than `[stt] max_bytes`.
    #[error("the file is {size} bytes, over the {cap}-byte limit ([stt] max_bytes)")]
    TooLarge {
        /// Its size (of the converted file, after a conversion).
        size: u64,
        /// `max_bytes`.
        cap: u64,
    },
    /// Not a format hearth recognises, and ffmpeg could not read it (or is
    /// not there to try).
    #[error("it is not audio hearth can read ({why})")]
    UnknownFormat {
        /// What ffmpeg said, or that it is missing.
        why: String,
    },
    /// The endpoint does not take the file's format, and the conversion
    /// failed.
    #[error(
        "the transcription endpoint does not take {format} files ([stt] formats = {formats:?}) and converting it failed: {error}"
    )]
    Convert {
        /// The file's format.
        format: &'static str,
        /// `[stt] formats`.
        formats: Vec<String>,
        /// Why the conversion failed.
        error: ConvertError,
    },
    /// The file needs converting, but `[stt] formats` names nothing
    /// hearth can convert to.
    #[error(
        "the transcription endpoint does not take {format} files, and [stt] formats = {formats:?} names none of wav, flac, mp3 or ogg to convert it to"
    )]
    NoTarget {
        /// The file's format.
        format: &'static str,
        /// `[stt] formats`.
        formats: Vec<String>,
    },
    /// The endpoint refused the credentials.
    #[error("the transcription endpoint refused the credentials (HTTP {status}); {hint}")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
        /// Which key to check.
        hint: String,
    },
    /// The endpoint answered with an error.
    #[error("the transcription endpoint answered HTTP {status}: {message}")]
    Refused {
        /// The status.
        status: u16,
        /// What it said.
        message: String,
    },
    /// No answer.
    #[error("cannot reach the transcription endpoint at {url}: {why}")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// Why.
        why: String,
    },
    /// An answer that is not `{"text": ...}`.
    #[error("the transcription endpoint's answer is not {{\"text\": ...}}: {0}")]
    Malformed(String),
}

impl Stt {
    /// A client for `config`; reads the key from the environment now (a
    /// missing key fails each transcription with a note saying so).
    pub fn new(config: &SttConfig) -> Stt {
        let key = match &config.api_key_env {
            Some(var) => ApiKey::from_env(var).map(Some),
            None => Ok(None),
        };
        Stt {
            config: config.clone(),
            key,
        }
    }

    /// Why the key cannot be used, if it cannot.
    pub fn key_problem(&self) -> Option<&str> {
        self.key.as_ref().err().map(String::as_str)
    }

    /// The transcript of the audio file at `path`. Blocks: network and
    /// possibly ffmpeg.
    pub fn transcribe(&self, path: &Path) -> Result<String, SttError> {
        let key = self.key.clone().map_err(SttError::NoKey)?;
        let cap = self.config.max_bytes;
        let size = std::fs::metadata(path)?.len();
        if size > cap {
            return Err(SttError::TooLarge { size, cap });
        }
        let head = read_head(path)?;
        let format = AudioFormat::sniff(&head);
        let as_is = format.and_then(|f| Some((f.accepted_as(&self.config.formats)?, f.mime())));
        let (bytes, extension, mime) = match as_is {
            Some((extension, mime)) => (std::fs::read(path)?, extension, mime),
            None => self.converted(path, format)?,
        };
        let size = bytes.len() as u64;
        if size > cap {
            return Err(SttError::TooLarge { size, cap });
        }
        self.send(bytes, extension, mime, key.as_ref())
    }

    /// The file converted to a format the endpoint takes.
    fn converted(
        &self,
        path: &Path,
        format: Option<AudioFormat>,
    ) -> Result<(Vec<u8>, &'static str, &'static str), SttError> {
        let formats = &self.config.formats;
        let name = format.map_or("unrecognised", |f| f.extensions()[0]);
        let (target, extension) = [Target::Wav, Target::Flac, Target::Mp3, Target::OggOpus]
            .into_iter()
            .find_map(|t| Some((t, t.container().accepted_as(formats)?)))
            .ok_or_else(|| SttError::NoTarget {
                format: name,
                formats: formats.clone(),
            })?;
        let output = Scratch(PathBuf::from(format!(
            "{}.stt.{}",
            path.display(),
            target.container().extensions()[0]
        )));
        match convert::convert(path, &output.0, target, CONVERT_DEADLINE) {
            Ok(()) => {}
            Err(error) if format.is_none() => {
                return Err(SttError::UnknownFormat {
                    why: match error {
                        ConvertError::Failed(said) => format!("ffmpeg says: {said}"),
                        other => other.to_string(),
                    },
                });
            }
            Err(error) => {
                return Err(SttError::Convert {
                    format: name,
                    formats: formats.clone(),
                    error,
                });
            }
        }
        tracing::debug!(
            from = name,
            to = extension,
            "audio converted for transcription"
        );
        Ok((std::fs::read(&output.0)?, extension, target.mime()))
    }

    fn send(
        &self,
        bytes: Vec<u8>,
        extension: &str,
        mime: &str,
        key: Option<&ApiKey>,
    ) -> Result<String, SttError> {
        let url = format!("{}/audio/transcriptions", self.config.base_url);
        let http = client::http().map_err(|why| SttError::Unreachable {
            url: url.clone(),
            why,
        })?;
        let build = || {
            let file = reqwest::blocking::multipart::Part::bytes(bytes.clone())
                .file_name(format!("voice.{extension}"))
                .mime_str(mime)
                .map_err(|e| e.to_string())?;
            let mut form = reqwest::blocking::multipart::Form::new()
                .text("model", self.config.model.clone())
                .text("response_format", "json")
                .part("file", file);
            if let Some(language) = &self.config.language {
                form = form.text("language", language.clone());
            }
            let request = http
                .post(&url)
                .timeout(Duration::from_millis(self.config.timeout_ms))
                .multipart(form);
            Ok(match key {
                Some(key) => key.authorize(request),
                None => request,
            })
        };
        let scrub = |text: String| match key {
            Some(key) => key.scrub(&text),
            None => text,
        };
        match client::exchange(build, self.config.max_retries, MAX_ANSWER_BYTES) {
            Exchange::Unreachable(why) => Err(SttError::Unreachable {
                url,
                why: scrub(why),
            }),
            Exchange::TooLarge => Err(SttError::Malformed(format!(
                "it is over {MAX_ANSWER_BYTES} bytes"
            ))),
            Exchange::Answer { status, body, .. } if (200..300).contains(&status) => {
                let answer: Value = serde_json::from_slice(&body).map_err(|e| {
                    SttError::Malformed(format!("not JSON ({e}): {}", client::error_message(&body)))
                })?;
                answer["text"]
                    .as_str()
                    .map(|text| text.trim().to_owned())
                    .ok_or_else(|| SttError::Malformed(client::error_message(&body)))
            }
            Exchange::Answer {
                status: status @ (401 | 403),
                ..
            } => Err(SttError::Unauthorized {
                status,
                hint: match key {
                    Some(key) => format!("check the key in the environment variable {}", key.var),
                    None => {
                        "it wants an API key: name its environment variable in [stt] api_key_env"
                            .into()
                    }
                },
            }),
            Exchange::Answer { status, body, .. } => Err(SttError::Refused {
                status,
                message: scrub(client::error_message(&body)),
            }),
        }
    }
}

/// A file made for one request, removed when done with.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        // Absent when the conversion failed early; nothing to undo then.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The first bytes of the file, for sniffing.
fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    std::fs::File::open(path)?
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    Ok(head)
}
