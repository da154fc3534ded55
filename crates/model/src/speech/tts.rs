//! Speech through an OpenAI-compatible endpoint (`POST
//! <base_url>/audio/speech` with `{model, input, voice, response_format}`,
//! answering the audio's bytes): the audio of a reply the agent speaks.
//!
//! The endpoint is asked for `opus`, which is Ogg/Opus: what Telegram
//! shows as a voice message. An endpoint that answers another format has
//! it converted to Ogg/Opus with ffmpeg when ffmpeg is there; otherwise the
//! file is kept as it came and the channel sends it as audio. Files are
//! saved under `$HEARTH_HOME/voice`, where only the newest [`KEPT`] stay.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::client::{self, ApiKey, Exchange};
use super::convert::{self, Target};
use super::format::{AudioFormat, is_ogg_opus};
use hearth_base::config::TtsConfig;

/// How many spoken replies stay in `$HEARTH_HOME/voice`: enough for the
/// outbox to deliver the newest, few enough that the folder stays small.
pub const KEPT: usize = 200;

/// A configured speech endpoint.
#[derive(Debug)]
pub struct Tts {
    config: TtsConfig,
    key: Result<Option<ApiKey>, String>,
    dir: PathBuf,
    counter: AtomicU64,
}

/// A spoken reply, saved.
#[derive(Clone, Debug, PartialEq)]
pub struct Spoken {
    /// Where it is.
    pub path: PathBuf,
    /// Its media type.
    pub mime: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// Whether it is Ogg/Opus (a voice message on Telegram).
    pub ogg_opus: bool,
}

/// Why nothing was spoken.
#[derive(Debug, thiserror::Error)]
pub enum TtsError {
    /// The key's environment variable is not set.
    #[error("{0}")]
    NoKey(String),
    /// Nothing to say.
    #[error("the text is empty")]
    Empty,
    /// Longer than `[tts] max_chars`.
    #[error("the text is {chars} characters, over the {max}-character limit ([tts] max_chars)")]
    TooLong {
        /// Its length.
        chars: usize,
        /// `max_chars`.
        max: usize,
    },
    /// The endpoint refused the credentials.
    #[error("the speech endpoint refused the credentials (HTTP {status}); {hint}")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
        /// Which key to check.
        hint: String,
    },
    /// The endpoint answered with an error.
    #[error("the speech endpoint answered HTTP {status}: {message}")]
    Refused {
        /// The status.
        status: u16,
        /// What it said.
        message: String,
    },
    /// No answer.
    #[error("cannot reach the speech endpoint at {url}: {why}")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// Why.
        why: String,
    },
    /// The audio is larger than `[tts] max_bytes`.
    #[error("the speech endpoint's audio is over the {cap}-byte limit ([tts] max_bytes)")]
    TooLarge {
        /// `max_bytes`.
        cap: u64,
    },
    /// The answer is not audio hearth recognises.
    #[error("the speech endpoint answered something that is not audio ({0})")]
    NotAudio(String),
    /// Saving the file failed.
    #[error("cannot save the audio in {dir}: {error}")]
    Save {
        /// `$HEARTH_HOME/voice`.
        dir: String,
        /// Why.
        error: std::io::Error,
    },
}

impl Tts {
    /// A client for `config`, saving under `home`/voice; reads the key from
    /// the environment now.
    pub fn new(config: &TtsConfig, home: &Path) -> Tts {
        let key = match &config.api_key_env {
            Some(var) => ApiKey::from_env(var).map(Some),
            None => Ok(None),
        };
        Tts {
            config: config.clone(),
            key,
            dir: home.join("voice"),
            counter: AtomicU64::new(0),
        }
    }

    /// Why the key cannot be used, if it cannot.
    pub fn key_problem(&self) -> Option<&str> {
        self.key.as_ref().err().map(String::as_str)
    }

    /// Speaks `text` and saves the audio. Blocks: network and possibly
    /// ffmpeg.
    pub fn speak(&self, text: &str) -> Result<Spoken, TtsError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(TtsError::Empty);
        }
        let chars = text.chars().count();
        if chars > self.config.max_chars {
            return Err(TtsError::TooLong {
                chars,
                max: self.config.max_chars,
            });
        }
        let key = self.key.clone().map_err(TtsError::NoKey)?;
        let (audio, content_type) = self.request(text, key.as_ref())?;
        let Some(format) = AudioFormat::sniff(&audio) else {
            return Err(TtsError::NotAudio(format!(
                "{} bytes of {}, starting {:02x?}",
                audio.len(),
                content_type.as_deref().unwrap_or("no stated type"),
                &audio[..audio.len().min(8)]
            )));
        };
        let saved = self.save(&audio, format)?;
        prune(&self.dir, KEPT);
        Ok(saved)
    }

    /// The endpoint's audio and its stated `content-type`.
    fn request(
        &self,
        text: &str,
        key: Option<&ApiKey>,
    ) -> Result<(Vec<u8>, Option<String>), TtsError> {
        let url = format!("{}/audio/speech", self.config.base_url);
        let http = client::http().map_err(|why| TtsError::Unreachable {
            url: url.clone(),
            why,
        })?;
        let body = serde_json::json!({
            "model": self.config.model,
            "input": text,
            "voice": self.config.voice,
            "response_format": self.config.response_format,
        })
        .to_string();
        let build = || {
            let request = http
                .post(&url)
                .timeout(Duration::from_millis(self.config.timeout_ms))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            Ok(match key {
                Some(key) => key.authorize(request),
                None => request,
            })
        };
        let scrub = |text: String| match key {
            Some(key) => key.scrub(&text),
            None => text,
        };
        match client::exchange(build, 1, self.config.max_bytes) {
            Exchange::Answer {
                status,
                body,
                content_type,
            } if (200..300).contains(&status) => Ok((body, content_type)),
            Exchange::Answer {
                status: status @ (401 | 403),
                ..
            } => Err(TtsError::Unauthorized {
                status,
                hint: match key {
                    Some(key) => format!("check the key in the environment variable {}", key.var),
                    None => {
                        "it wants an API key: name its environment variable in [tts] api_key_env"
                            .into()
                    }
                },
            }),
            Exchange::Answer { status, body, .. } => Err(TtsError::Refused {
                status,
                message: scrub(client::error_message(&body)),
            }),
            Exchange::TooLarge => Err(TtsError::TooLarge {
                cap: self.config.max_bytes,
            }),
            Exchange::Unreachable(why) => Err(TtsError::Unreachable {
                url,
                why: scrub(why),
            }),
        }
    }

    /// Saves `audio`, converted to Ogg/Opus when it is another format and
    /// ffmpeg can.
    fn save(&self, audio: &[u8], format: AudioFormat) -> Result<Spoken, TtsError> {
        let save_error = |error| TtsError::Save {
            dir: self.dir.display().to_string(),
            error,
        };
        std::fs::create_dir_all(&self.dir).map_err(save_error)?;
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let stem = self
            .dir
            .join(format!("reply-{}-{n}", hearth_base::store::now_ms()));
        let ogg_opus = format == AudioFormat::Ogg && is_ogg_opus(audio);
        let original = stem.with_extension(format.extensions()[0]);
        write_atomically(&original, audio).map_err(save_error)?;
        if ogg_opus {
            return Ok(spoken(original, format.mime(), audio.len() as u64, true));
        }
        let converted = stem.with_extension("opus.ogg");
        match convert::convert(
            &original,
            &converted,
            Target::OggOpus,
            Duration::from_secs(60),
        ) {
            Ok(()) => {
                // The original served only as ffmpeg's input.
                let _ = std::fs::remove_file(&original);
                let size = std::fs::metadata(&converted).map_err(save_error)?.len();
                Ok(spoken(converted, Target::OggOpus.mime(), size, true))
            }
            Err(e) => {
                tracing::info!(
                    "the spoken reply stays {} (it goes as audio, not a voice message): {e}",
                    format.extensions()[0]
                );
                // ffmpeg may have left half a file behind.
                let _ = std::fs::remove_file(&converted);
                Ok(spoken(original, format.mime(), audio.len() as u64, false))
            }
        }
    }
}

fn spoken(path: PathBuf, mime: &'static str, size: u64, ogg_opus: bool) -> Spoken {
    Spoken {
        path,
        mime,
        size,
        ogg_opus,
    }
}

/// Writes through a temporary name, so a channel never sends half a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let partial = path.with_extension("part");
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}

/// Removes all but the newest `keep` files in `dir`.
fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let modified = meta.modified().ok()?;
            meta.is_file().then(|| (modified, e.path()))
        })
        .collect();
    if files.len() <= keep {
        return;
    }
    files.sort();
    for (_, path) in &files[..files.len() - keep] {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::debug!("cannot remove the old spoken reply {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_newest_replies_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..5u64 {
            let path = dir.path().join(format!("reply-{n}.ogg"));
            std::fs::write(&path, b"x").unwrap();
            let at = std::time::UNIX_EPOCH + Duration::from_secs(1_000 + n);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(at)
                .unwrap();
        }
        prune(dir.path(), 3);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["reply-2.ogg", "reply-3.ogg", "reply-4.ogg"]);
    }
}
