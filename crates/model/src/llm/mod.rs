//! Model providers: the Anthropic Messages API and OpenAI-compatible chat
//! completions, both streamed over SSE, with retries.
//!
//! `types` is the provider-neutral conversation; `anthropic` and `openai`
//! translate it to and from each wire format (`images` the image blocks
//! for both); `sse` splits the stream into events. [`Llm::complete`] adds
//! what every caller needs: retries with backoff on 429, 5xx, 529 and
//! broken connections (honouring `retry-after`), a request timeout, and a
//! list of fallback models.
//!
//! Architecture invariant: the API key never leaves this module. It is read
//! from the environment variable the config names, sent only in the request
//! header, and never logged, stored or shown to the model.

mod anthropic;
pub mod cache;
mod check;
mod documents;
#[cfg(test)]
mod fuzz;
mod images;
mod openai;
pub mod sse;
pub mod types;

use std::time::Duration;

use serde_json::Value;

pub use check::ModelCheck;
pub use types::{Block, ChatRequest, ChatResponse, Message, Pdf, Role, StopReason, ToolDef, Usage};

use hearth_base::config::{LlmConfig, ProviderKind};

/// What [`Llm::stream`] hands on while an answer arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// An attempt starts: text streamed so far is void.
    Restart,
    /// More of the answer's text.
    Text(&'a str),
}

/// The receiver of [`StreamEvent`]s.
pub type OnText<'a> = &'a (dyn Fn(StreamEvent<'_>) + Sync);

/// A configured model client.
pub struct Llm {
    http: reqwest::Client,
    config: LlmConfig,
    key: Option<ApiKey>,
}

/// The key, kept out of `Debug` and logs.
#[derive(Clone)]
struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// The config names a key variable that is not set.
    #[error("the model is not configured: {0}")]
    NotConfigured(String),
    /// The API answered with an error status.
    #[error("the model API answered {status}: {message}")]
    Http {
        /// The status.
        status: u16,
        /// The API's message.
        message: String,
        /// What `retry-after` asked for.
        retry_after: Option<Duration>,
    },
    /// The connection failed or timed out.
    #[error("cannot reach the model API: {0}")]
    Connection(String),
    /// The stream ended early.
    #[error("the model's stream broke off: {0}")]
    Truncated(String),
    /// The stream held something that is not the documented format.
    #[error("the model API sent something malformed: {0}")]
    Malformed(String),
    /// The API sent more than hearth reads from one answer (a broken or
    /// hostile endpoint): what passed which bound.
    #[error("the model API sent too much: {0}")]
    TooLarge(String),
    /// The stream carried an error event (overloaded, rate limited).
    #[error("the model API reported {kind}: {message}")]
    Stream {
        /// The error type.
        kind: String,
        /// The message.
        message: String,
    },
}

impl LlmError {
    /// Whether trying again may help.
    pub fn retryable(&self) -> bool {
        match self {
            LlmError::NotConfigured(_) | LlmError::TooLarge(_) => false,
            LlmError::Http { status, .. } => matches!(status, 408 | 409 | 425 | 429 | 500..=599),
            LlmError::Stream { kind, .. } => {
                !kind.contains("invalid_request") && !kind.contains("authentication")
            }
            LlmError::Connection(_) | LlmError::Truncated(_) | LlmError::Malformed(_) => true,
        }
    }
}

impl Llm {
    /// A client for `config`; reads the key from the secret store or the
    /// environment.
    pub fn new(config: &LlmConfig) -> Result<Llm, LlmError> {
        hearth_base::tls::install_crypto_provider();
        let key = match (&config.api_key_secret, &config.api_key_env) {
            (Some(secret), _) => {
                let secrets = hearth_base::secrets::Secrets::open(&secret.home);
                let snapshot = secrets.current().map_err(|e| {
                    LlmError::NotConfigured(format!(
                        "the secret {} cannot be read: {e}",
                        secret.name
                    ))
                })?;
                let value = snapshot.value(&secret.name).map_err(|_| {
                    LlmError::NotConfigured(format!(
                        "the secret {name} is not set: `hearth secret set {name}` (or `hearth setup`)",
                        name = secret.name
                    ))
                })?;
                Some(ApiKey(value.trim().to_owned()))
            }
            (None, env) => match env {
                Some(var) => match std::env::var(var) {
                    Ok(k) if !k.trim().is_empty() => Some(ApiKey(k.trim().to_owned())),
                    _ if config.provider == ProviderKind::Anthropic => {
                        return Err(LlmError::NotConfigured(format!(
                            "set the environment variable {var} to your Anthropic API key"
                        )));
                    }
                    _ => None,
                },
                None => None,
            },
        };
        let http = reqwest::Client::builder()
            .tls_backend_rustls()
            .timeout(Duration::from_millis(config.timeout_ms))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Connection(e.to_string()))?;
        Ok(Llm {
            http,
            config: config.clone(),
            key,
        })
    }

    /// The same client asking `model` first (a sub-agent's override); the
    /// fallbacks stay.
    pub fn with_model(&self, model: &str) -> Llm {
        let mut config = self.config.clone();
        config.model = model.to_owned();
        Llm {
            http: self.http.clone(),
            config,
            key: self.key.clone(),
        }
    }

    /// The models the owner may switch the conversation to (`/model`,
    /// `hearth model`): `[llm] model` and its `fallback_models`, in that
    /// order, each once. They share this client's provider, address and
    /// key, so any of them can be asked in place of another.
    pub fn choices(&self) -> Vec<String> {
        choices(&self.config)
    }

    /// The primary model's name.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// The wire format's name, as usage is recorded: `anthropic` or
    /// `openai`.
    pub fn provider(&self) -> &'static str {
        match self.config.provider {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
        }
    }

    /// How this client's model is shown images (`[llm] vision`,
    /// `image_turns`, `image_max_side`, the provider's limits).
    pub fn image_settings(&self) -> crate::media::ImageSettings {
        crate::media::ImageSettings::for_model(&self.config)
    }

    /// How the provider may cache prompts (`[llm] prompt_cache`,
    /// `cache_ttl`).
    pub fn cache(&self) -> hearth_base::config::PromptCache {
        self.config.cache
    }

    /// The most tokens per answer.
    pub fn max_tokens(&self) -> u32 {
        self.config.max_tokens
    }

    /// Sends `request`, retrying what can be retried, then trying each
    /// fallback model in turn.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.stream(request, &|_| {}).await
    }

    /// As [`Llm::complete`], handing the answer's text to `on_text` as it
    /// arrives. Every attempt (the first, a retry, a fallback) starts the
    /// text over, which `on_text` is told with [`StreamEvent::Restart`].
    pub async fn stream(
        &self,
        request: &ChatRequest,
        on_text: OnText<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let models = std::iter::once(&self.config.model).chain(&self.config.fallback_models);
        let mut last = LlmError::NotConfigured("no model".into());
        for model in models {
            match self.with_retries(model, request, on_text).await {
                Ok(response) => return Ok(response),
                Err(e) if e.retryable() => {
                    tracing::warn!(model = %model, "model failed after retries: {e}");
                    last = e;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    async fn with_retries(
        &self,
        model: &str,
        request: &ChatRequest,
        on_text: OnText<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let mut attempt = 0;
        loop {
            on_text(StreamEvent::Restart);
            match self.attempt(model, request, on_text).await {
                Ok(response) => return Ok(response),
                Err(e) if e.retryable() && attempt < self.config.max_retries => {
                    let wait = match &e {
                        LlmError::Http {
                            retry_after: Some(after),
                            ..
                        } => *after,
                        _ => backoff(self.config.retry_base_ms, attempt),
                    };
                    tracing::warn!(model = %model, attempt = attempt + 1, wait_ms = wait.as_millis() as u64, "model call failed, retrying: {e}");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn attempt(
        &self,
        model: &str,
        request: &ChatRequest,
        on_text: OnText<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let base = self.config.base_url.trim_end_matches('/');
        let (url, body) = match self.config.provider {
            ProviderKind::Anthropic => (
                format!("{base}/v1/messages"),
                anthropic::body(model, request, &self.config.cache, self.config.thinking),
            ),
            ProviderKind::OpenAi => (
                format!("{base}/chat/completions"),
                openai::body(model, request, self.cache_key(request)),
            ),
        };
        let body =
            body.map_err(|e| LlmError::Malformed(format!("cannot encode the request: {e}")))?;
        let builder = self
            .http
            .post(&url)
            .body(body)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        let mut response = self
            .authorized(builder)
            .send()
            .await
            .map_err(|e| LlmError::Connection(describe(&e)))?;
        if !response.status().is_success() {
            return Err(http_error(response).await);
        }
        let mut parser = sse::Parser::default();
        let mut anthropic = anthropic::Decoder::default();
        let mut openai = openai::Decoder::default();
        let mut read = 0usize;
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => return Err(LlmError::Truncated(describe(&e))),
            };
            read = read.saturating_add(chunk.len());
            if read > MAX_STREAM {
                return Err(LlmError::TooLarge(format!(
                    "the answer's stream passed {} MiB",
                    MAX_STREAM >> 20
                )));
            }
            let events = parser.feed(&chunk);
            if let Some(why) = parser.overflow() {
                return Err(LlmError::TooLarge(why.to_owned()));
            }
            for event in events {
                let fresh = match self.config.provider {
                    ProviderKind::Anthropic => {
                        anthropic.event(&event)?;
                        anthropic.take_fresh_text()
                    }
                    ProviderKind::OpenAi => {
                        openai.event(&event)?;
                        openai.take_fresh_text()
                    }
                };
                if !fresh.is_empty() {
                    on_text(StreamEvent::Text(&fresh));
                }
            }
        }
        let response = match self.config.provider {
            ProviderKind::Anthropic => anthropic.finish(),
            ProviderKind::OpenAi => openai.finish(),
        };
        response.map(|response| ChatResponse {
            model: model.to_owned(),
            ..response
        })
    }
}

impl Llm {
    /// `builder` with the provider's version header and the API key, the
    /// one place the key is put into a request.
    fn authorized(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = match (self.config.provider, &self.key) {
            (ProviderKind::Anthropic, Some(key)) => builder
                .header("x-api-key", &key.0)
                .header("anthropic-version", "2023-06-01"),
            (ProviderKind::Anthropic, None) => builder.header("anthropic-version", "2023-06-01"),
            (ProviderKind::OpenAi, Some(key)) => builder.bearer_auth(&key.0),
            (ProviderKind::OpenAi, None) => builder,
        };
        let cache = &self.config.cache;
        if self.config.provider == ProviderKind::Anthropic
            && cache.enabled
            && cache.ttl == hearth_base::config::CacheTtl::OneHour
        {
            // The hour-long entries were a beta under this name; the API
            // ignores a beta it no longer needs.
            builder.header("anthropic-beta", "extended-cache-ttl-2025-04-11")
        } else {
            builder
        }
    }

    /// The `prompt_cache_key` an OpenAI-compatible request carries: the
    /// request's, when `[llm] prompt_cache_key` says so, or by default
    /// only to OpenAI's own API (other servers may refuse a field they do
    /// not know, and cache by prefix without it).
    fn cache_key<'a>(&self, request: &'a ChatRequest) -> Option<&'a str> {
        let send = self.config.cache.enabled
            && self
                .config
                .prompt_cache_key
                .unwrap_or_else(|| self.config.base_url.starts_with("https://api.openai.com/"));
        request.cache_key.as_deref().filter(|_| send)
    }
}

/// The most bytes one answer's stream may have: far past any answer a
/// model writes within its `max_tokens`, small enough that an endpoint
/// that never stops cannot take the daemon's memory.
const MAX_STREAM: usize = 64 << 20;

/// The most of an error body that is read: its message is at the start.
const MAX_ERROR_BODY: usize = 64 << 10;

/// At most `limit` bytes of `response`'s body, as text; the rest is not
/// read. `None` when the connection failed first.
pub(crate) async fn body_prefix(mut response: reqwest::Response, limit: usize) -> Option<String> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk[..chunk.len().min(limit - body.len())])
            }
            Ok(None) => break,
            Err(_) => return None,
        }
    }
    Some(String::from_utf8_lossy(&body).into_owned())
}

/// An answer with an error status as an [`LlmError::Http`], with the API's
/// message and what `retry-after` asked for.
async fn http_error(response: reqwest::Response) -> LlmError {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(60.0)));
    let text = body_prefix(response, MAX_ERROR_BODY)
        .await
        .unwrap_or_default();
    LlmError::Http {
        status,
        message: error_message(&text),
        retry_after,
    }
}

/// Exponential backoff with a little jitter, capped at 30 s.
fn backoff(base_ms: u64, attempt: u32) -> Duration {
    let exp = base_ms.saturating_mul(1 << attempt.min(10)).min(30_000);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()))
        % (exp / 4 + 1);
    Duration::from_millis(exp + jitter)
}

/// The message in an Anthropic or OpenAI error body; for an HTML page (a
/// proxy's, or a wrong address's), its first readable line; else the
/// body's start. Never markup: this ends up in `hearth doctor` and logs.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    if let Some(message) = parsed
        .as_ref()
        .and_then(|v| v["error"]["message"].as_str().or(v["message"].as_str()))
    {
        return message.to_owned();
    }
    let trimmed = body.trim_start();
    let text = if trimmed.starts_with('<') {
        first_readable_line(trimmed)
    } else {
        trimmed.lines().next().unwrap_or_default().to_owned()
    };
    let text: String = text.chars().take(200).collect();
    if text.is_empty() {
        "(an empty body)".to_owned()
    } else {
        text
    }
}

/// The first line of text in an HTML page once its tags, scripts and
/// styles are gone (its title, usually).
fn first_readable_line(html: &str) -> String {
    let mut text = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        let tag = &rest[open..];
        let lower = tag.get(..7).unwrap_or(tag).to_ascii_lowercase();
        // Skip a script's or style's content with its tags.
        let skip_to = match () {
            _ if lower.starts_with("<script") => {
                tag.to_ascii_lowercase().find("</script>").map(|i| i + 9)
            }
            _ if lower.starts_with("<style") => {
                tag.to_ascii_lowercase().find("</style>").map(|i| i + 8)
            }
            _ => tag.find('>').map(|i| i + 1),
        };
        let Some(skip) = skip_to else {
            rest = "";
            break;
        };
        text.push('\n');
        rest = &tag[skip..];
    }
    text.push_str(rest);
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// The whole error chain, which is where reqwest puts the reason.
pub fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// [`Llm::choices`] for a configuration, for callers without a client
/// (the `hearth model` command).
pub fn choices(config: &LlmConfig) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for model in std::iter::once(&config.model).chain(&config.fallback_models) {
        if !out.contains(model) {
            out.push(model.clone());
        }
    }
    out
}

#[cfg(test)]
mod error_body_tests {
    use super::error_message;

    #[test]
    fn error_bodies_become_one_readable_line() {
        let cases = [
            (
                r#"{"error":{"message":"invalid x-api-key"}}"#,
                "invalid x-api-key",
            ),
            (
                "<!DOCTYPE html>\n<html><head><style>p{color:red}</style><title>502 Bad Gateway</title></head>\n<body><h1>502 Bad Gateway</h1><hr>nginx</body></html>",
                "502 Bad Gateway",
            ),
            (
                "<html><script>var x = '<b>';</script><body>Not Found</body></html>",
                "Not Found",
            ),
            ("upstream timed out\nmore", "upstream timed out"),
            ("", "(an empty body)"),
        ];
        for (body, expected) in cases {
            assert_eq!(error_message(body), expected, "{body}");
        }
    }
}
