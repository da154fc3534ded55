//! `[memory]`: how the agent recalls and what it keeps.
//! `[memory.capture]` (`capture.rs`) is automatic memory capture by the
//! cheap model. `[memory.embeddings]` names an OpenAI-compatible `/embeddings`
//! endpoint (OpenAI, Ollama, llama.cpp, vLLM): with it, messages, memories
//! and scratchpad entries are embedded in the background and searches
//! rank by meaning as well as by words; without it, search is by keyword
//! only, as before. The key is named (`api_key_env` or `api_key_secret`,
//! as in `[llm]`), never written here.

use std::path::Path;

use serde::Deserialize;

pub use super::capture::CaptureConfig;
pub use crate::embed::{EmbeddingsConfig, MAX_DIMENSIONS};

/// `[memory]`, validated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryConfig {
    /// `[memory.embeddings]`; `None`: keyword search only.
    pub embeddings: Option<EmbeddingsConfig>,
    /// `[memory.capture]`: automatic capture by the cheap model.
    pub capture: CaptureConfig,
}

/// `[memory]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMemory {
    embeddings: Option<RawEmbeddings>,
    capture: Option<super::capture::RawCapture>,
}

/// `[memory.embeddings]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEmbeddings {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    api_key_secret: Option<String>,
    dimensions: Option<usize>,
    batch_size: Option<usize>,
    timeout_ms: Option<u64>,
    query_timeout_ms: Option<u64>,
    min_similarity: Option<f32>,
}

/// Checks `[memory]`; the error names the key. `home` holds the secret
/// store a key may come from.
pub(super) fn build(raw: RawMemory, home: &Path) -> Result<MemoryConfig, (String, String)> {
    let capture = super::capture::build(raw.capture)?;
    let Some(raw) = raw.embeddings else {
        return Ok(MemoryConfig {
            embeddings: None,
            capture,
        });
    };
    let invalid = |key: &str, message: String| (format!("memory.embeddings.{key}"), message);
    let base_url = raw
        .base_url
        .ok_or_else(|| {
            invalid(
                "base_url",
                "required: the endpoint's API base, such as \"https://api.openai.com/v1\" or \
                 \"http://127.0.0.1:11434/v1\" (Ollama)"
                    .into(),
            )
        })?
        .trim()
        .trim_end_matches('/')
        .to_owned();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(invalid(
            "base_url",
            format!("{base_url:?} must start with http:// or https://"),
        ));
    }
    let model = match raw.model {
        Some(m) if !m.trim().is_empty() => m.trim().to_owned(),
        Some(_) => return Err(invalid("model", "must not be empty".into())),
        None => {
            return Err(invalid(
                "model",
                "required: the embedding model, such as \"text-embedding-3-small\" or \
                 \"nomic-embed-text\""
                    .into(),
            ));
        }
    };
    if raw.api_key_env.is_some() && raw.api_key_secret.is_some() {
        return Err(invalid(
            "api_key_secret",
            "give api_key_env or api_key_secret, not both".into(),
        ));
    }
    let api_key_env = match raw.api_key_env {
        Some(name) if name.trim().is_empty() || name.contains(['=', '\0', ' ']) => {
            return Err(invalid(
                "api_key_env",
                format!(
                    "{name:?} is not an environment variable name (name the variable, never \
                     the key)"
                ),
            ));
        }
        other => other,
    };
    if let Some(name) = &raw.api_key_secret {
        crate::secrets::check_name(name).map_err(|e| invalid("api_key_secret", e.to_string()))?;
    }
    if let Some(d) = raw.dimensions
        && !(1..=MAX_DIMENSIONS).contains(&d)
    {
        return Err(invalid(
            "dimensions",
            format!("must be 1 to {MAX_DIMENSIONS}"),
        ));
    }
    let batch_size = raw.batch_size.unwrap_or(64);
    if !(1..=2_048).contains(&batch_size) {
        return Err(invalid("batch_size", "must be 1 to 2048".into()));
    }
    let timeout_ms = raw.timeout_ms.unwrap_or(30_000);
    if !(100..=600_000).contains(&timeout_ms) {
        return Err(invalid(
            "timeout_ms",
            "must be 100 to 600000 (0.1 s to 10 min)".into(),
        ));
    }
    let query_timeout_ms = raw.query_timeout_ms.unwrap_or(2_000);
    if !(50..=60_000).contains(&query_timeout_ms) {
        return Err(invalid(
            "query_timeout_ms",
            "must be 50 to 60000 (a search waits this long for its query's vector)".into(),
        ));
    }
    let min_similarity = raw.min_similarity.unwrap_or(0.25);
    if !(-1.0..=1.0).contains(&min_similarity) {
        return Err(invalid(
            "min_similarity",
            "must be a cosine similarity from -1.0 to 1.0".into(),
        ));
    }
    Ok(MemoryConfig {
        embeddings: Some(EmbeddingsConfig {
            base_url,
            model,
            api_key_env,
            api_key_secret: raw.api_key_secret,
            secrets_home: home.to_owned(),
            dimensions: raw.dimensions,
            batch_size,
            timeout_ms,
            query_timeout_ms,
            min_similarity,
        }),
        capture,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(toml: &str) -> Result<MemoryConfig, (String, String)> {
        build(toml::from_str(toml).expect("valid TOML"), Path::new("/h"))
    }

    #[test]
    fn no_table_is_keyword_search_and_a_local_server_needs_no_key() {
        assert_eq!(memory(""), Ok(MemoryConfig::default()));
        let e = memory(
            "[embeddings]\nbase_url = \"http://127.0.0.1:11434/v1/\"\nmodel = \"nomic-embed-text\"",
        )
        .unwrap()
        .embeddings
        .unwrap();
        assert_eq!(e.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!((e.api_key_env, e.api_key_secret), (None, None));
        assert_eq!((e.batch_size, e.dimensions), (64, None));
        assert_eq!((e.timeout_ms, e.query_timeout_ms), (30_000, 2_000));
    }

    #[test]
    fn bad_values_name_their_key() {
        let head = "[embeddings]\nbase_url = \"http://x\"\nmodel = \"m\"\n";
        let cases = [
            (
                "[embeddings]\nmodel = \"m\"",
                "memory.embeddings.base_url",
                "required",
            ),
            (
                "[embeddings]\nbase_url = \"ftp://x\"\nmodel = \"m\"",
                "memory.embeddings.base_url",
                "http://",
            ),
            (
                "[embeddings]\nbase_url = \"http://x\"",
                "memory.embeddings.model",
                "required",
            ),
            (
                "[embeddings]\nbase_url = \"http://x\"\nmodel = \" \"",
                "memory.embeddings.model",
                "empty",
            ),
            (
                "dimensions = 0",
                "memory.embeddings.dimensions",
                "1 to 8192",
            ),
            (
                "batch_size = 0",
                "memory.embeddings.batch_size",
                "1 to 2048",
            ),
            ("timeout_ms = 5", "memory.embeddings.timeout_ms", "100 to"),
            (
                "query_timeout_ms = 0",
                "memory.embeddings.query_timeout_ms",
                "50 to",
            ),
            (
                "min_similarity = 2.0",
                "memory.embeddings.min_similarity",
                "-1.0 to 1.0",
            ),
            (
                "api_key_env = \"KEY=sk-1\"",
                "memory.embeddings.api_key_env",
                "never the key",
            ),
            (
                "api_key_secret = \"lower\"",
                "memory.embeddings.api_key_secret",
                "",
            ),
            (
                "api_key_env = \"K\"\napi_key_secret = \"K\"",
                "memory.embeddings.api_key_secret",
                "not both",
            ),
        ];
        for (toml, key, says) in cases {
            let text = if toml.starts_with('[') {
                toml.to_owned()
            } else {
                format!("{head}{toml}")
            };
            let (k, message) = memory(&text).unwrap_err();
            assert_eq!(k, key, "{text}");
            assert!(message.contains(says), "{text}: {message}");
        }
    }
}
