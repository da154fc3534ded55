//! What recall by meaning needs of an embeddings endpoint, as a trait:
//! the knowledge layer (`hearth-data`) indexes and searches with it, the
//! model layer (`hearth-model`) implements it over HTTP. It sits here,
//! below both, so neither depends on the other.

use std::time::Duration;

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
