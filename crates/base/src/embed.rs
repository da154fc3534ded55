//! What recall by meaning needs of an embeddings endpoint, as a trait:
//! the knowledge layer (`hearth-data`) indexes and searches with it, the
//! model layer (`hearth-model`) implements it over HTTP. It sits here,
//! below both, so neither depends on the other.

use std::path::PathBuf;
use std::time::Duration;

/// `[memory.embeddings]`, validated (by `config`): the endpoint recall by
/// meaning asks, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddingsConfig {
    /// The API base; `/embeddings` is appended.
    pub base_url: String,
    /// The model asked for, stored with every vector: changing it embeds
    /// everything again.
    pub model: String,
    /// The environment variable holding the API key; `None` (a local
    /// server) sends none.
    pub api_key_env: Option<String>,
    /// The secret holding the API key instead, by name.
    pub api_key_secret: Option<String>,
    /// `$HEARTH_HOME`, whose secret store holds `api_key_secret`.
    pub secrets_home: PathBuf,
    /// The vectors' length asked for (`dimensions`, for models that can
    /// shorten theirs); `None`: the model's own, and every answer must
    /// keep to the length of the first.
    pub dimensions: Option<usize>,
    /// The most texts in one request.
    pub batch_size: usize,
    /// One indexing request's timeout.
    pub timeout_ms: u64,
    /// How long a search waits for its query's vector before answering
    /// by keyword only.
    pub query_timeout_ms: u64,
    /// The least cosine similarity a hit by meaning needs.
    pub min_similarity: f32,
}

/// The longest vector taken (OpenAI's largest model has 3,072).
pub const MAX_DIMENSIONS: usize = 8_192;

/// Turns texts into vectors.
pub trait Embed: Send + Sync {
    /// The model's name, stored with every vector: a vector is compared
    /// only with vectors of the same model.
    fn model(&self) -> &str;

    /// One vector per text, in order, each of the same length, finite and
    /// not all zero; within `timeout` or an error.
    fn embed(&self, texts: &[String], timeout: Duration) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Why texts could not be embedded. Every case keeps what was asked for:
/// the caller tries again later, or searches by keyword.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// No answer: the endpoint refused the connection, broke it off or
    /// did not answer in time.
    #[error("the embeddings endpoint did not answer: {0}")]
    Unreachable(String),
    /// The endpoint said to slow down (HTTP 429).
    #[error("the embeddings endpoint is rate limiting (429): {message}")]
    RateLimited {
        /// What it said.
        message: String,
        /// Its `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The endpoint answered with an error status.
    #[error("the embeddings endpoint answered {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// Its error message (`error.message` and `error.type`).
        message: String,
    },
    /// The answer was not a valid embeddings answer for the texts sent:
    /// not JSON, the wrong number of vectors, a wrong size, a value that
    /// is not a finite number, or more bytes than allowed.
    #[error("the embeddings endpoint's answer is not usable: {0}")]
    Malformed(String),
    /// The API key is missing (its secret or variable is not set).
    #[error("the embeddings endpoint's key is not available: {0}")]
    NoKey(String),
}

impl EmbedError {
    /// Whether the failure is the endpoint's state rather than these
    /// texts' fault, so the same texts may succeed later: everything but a
    /// refusal of the request itself (a 4xx other than 401, 403, 404, 408,
    /// 409, 425 and 429, such as a text too long for the model).
    pub fn transient(&self) -> bool {
        match self {
            EmbedError::Refused { status, .. } => {
                matches!(status, 401 | 403 | 404 | 408 | 409 | 425 | 500..=599)
            }
            _ => true,
        }
    }
}
