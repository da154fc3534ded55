//! The embeddings endpoint of `[memory.embeddings]`: any server speaking
//! OpenAI's `POST {base_url}/embeddings` (OpenAI, Ollama, llama.cpp,
//! vLLM), implementing `hearth_base::embed::Embed` for the knowledge
//! layer's indexer and searches.
//!
//! Everything here blocks (callers run it on blocking threads) and tries
//! once: the indexer owns retrying, with its backoff and the endpoint's
//! `Retry-After`, and a search would rather answer by keyword than wait.
//! The key is read from its secret or variable at each request (so
//! `hearth secret set` needs no restart), sent only in the
//! `Authorization` header, and kept out of every message. `wire` judges
//! the answers.

mod wire;

use std::io::Read;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hearth_base::embed::{Embed, EmbedError, EmbeddingsConfig};

/// The client of one configured endpoint.
pub struct Embeddings {
    config: EmbeddingsConfig,
    /// The vectors' length: the configured `dimensions`, else the first
    /// answer's (0 until then); every later answer must keep to it.
    dims: AtomicUsize,
}

impl Embeddings {
    /// A client for `config`; nothing is sent until the first texts.
    pub fn new(config: &EmbeddingsConfig) -> Embeddings {
        Embeddings {
            config: config.clone(),
            dims: AtomicUsize::new(config.dimensions.unwrap_or(0)),
        }
    }

    /// The key, if one is configured, or why it cannot be had.
    fn key(&self) -> Result<Option<String>, EmbedError> {
        if let Some(name) = &self.config.api_key_secret {
            let secrets = hearth_base::secrets::Secrets::open(&self.config.secrets_home);
            let snapshot = secrets
                .current()
                .map_err(|e| EmbedError::NoKey(format!("the secret {name} cannot be read: {e}")))?;
            let value = snapshot.value(name).map_err(|_| {
                EmbedError::NoKey(format!(
                    "the secret {name} is not set: `hearth secret set {name}`"
                ))
            })?;
            return Ok(Some(value.trim().to_owned()));
        }
        match &self.config.api_key_env {
            None => Ok(None),
            Some(var) => match std::env::var(var) {
                Ok(value) if !value.trim().is_empty() => Ok(Some(value.trim().to_owned())),
                _ => Err(EmbedError::NoKey(format!(
                    "the environment variable {var} (memory.embeddings.api_key_env) is not set"
                ))),
            },
        }
    }
}

impl Embed for Embeddings {
    fn model(&self) -> &str {
        &self.config.model
    }

    fn embed(&self, texts: &[String], timeout: Duration) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let key = self.key()?;
        let scrub = |text: String| match &key {
            Some(k) if !k.is_empty() => text.replace(k.as_str(), "[key]"),
            _ => text,
        };
        let mut body = serde_json::json!({ "model": self.config.model, "input": texts });
        if let Some(d) = self.config.dimensions {
            body["dimensions"] = d.into();
        }
        let mut request = http()
            .map_err(EmbedError::Unreachable)?
            .post(format!("{}/embeddings", self.config.base_url))
            .timeout(timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(key) = &key {
            request = request.bearer_auth(key);
        }
        // The URL may carry credentials (`http://user:pass@host`).
        let response = request
            .send()
            .map_err(|e| EmbedError::Unreachable(scrub(e.without_url().to_string())))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(wire::retry_after);
        let cap = wire::answer_cap(texts.len(), self.dims.load(Ordering::Relaxed));
        if response.content_length().is_some_and(|l| l > cap) {
            return Err(EmbedError::Malformed(format!(
                "the answer is larger than the {cap} bytes {} vectors can take",
                texts.len()
            )));
        }
        let mut bytes = Vec::new();
        response
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| EmbedError::Unreachable(format!("the answer broke off: {e}")))?;
        if bytes.len() as u64 > cap {
            return Err(EmbedError::Malformed(format!(
                "the answer is larger than the {cap} bytes {} vectors can take",
                texts.len()
            )));
        }
        if status == 429 {
            return Err(EmbedError::RateLimited {
                message: scrub(wire::error_message(&bytes)),
                retry_after,
            });
        }
        if !(200..300).contains(&status) {
            return Err(EmbedError::Refused {
                status,
                message: scrub(wire::error_message(&bytes)),
            });
        }
        let expected = self.dims.load(Ordering::Relaxed);
        let vectors = wire::vectors(&bytes, texts.len(), expected)?;
        if expected == 0 {
            // The first answer sets the length; a race between two first
            // answers of different lengths leaves the first stored.
            let _ = self.dims.compare_exchange(
                0,
                vectors[0].len(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        Ok(vectors)
    }
}

/// The client every embeddings request goes through: it lives as long as
/// the process (a blocking client must not be dropped inside the daemon's
/// async runtime, and a static never is).
fn http() -> Result<&'static reqwest::blocking::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::blocking::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            hearth_base::tls::install_crypto_provider();
            reqwest::blocking::Client::builder()
                .tls_backend_rustls()
                .connect_timeout(Duration::from_secs(5))
                // A redirected POST would lose its body or carry the key
                // elsewhere: a redirect is an error.
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}
