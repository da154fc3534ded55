//! One answer from a search backend, read whole, and the ways it can
//! fail: what the backend module (`backend`) and each API's reader
//! (`brave`, `searxng`, `duckduckgo`) share, so none imports another.

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// The longest piece of a backend's error text put in a message.
const MAX_DETAIL_CHARS: usize = 200;

/// What the model is told when DuckDuckGo suspects a bot: the limit, and
/// the two ways past it.
pub const DDG_RATE_LIMITED: &str =
    "DuckDuckGo is rate limiting; try again in a minute or configure SearXNG/Brave";

/// One HTTP answer, read whole (up to the cap).
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

/// Why a backend gave no results.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BackendError {
    /// No connection: nothing listens there, or the name does not resolve.
    #[error("cannot be reached: {0}")]
    Unreachable(String),
    /// No complete answer within the configured timeout.
    #[error("did not answer within {0} ms")]
    TimedOut(u128),
    /// The connection broke, or the HTTP exchange failed another way.
    #[error("failed: {0}")]
    Transport(String),
    /// A 3xx: the configured address is not where the service answers.
    #[error("answered with a redirect to {to}; set {key} to where the service answers")]
    Redirect {
        /// The `Location`, shortened.
        to: String,
        /// The config key that holds the address.
        key: &'static str,
    },
    /// The address checks of `[plugins.web]` refused the backend's address
    /// (DuckDuckGo's, which goes through the same guard as `web_fetch`).
    #[error("was not asked: {0}")]
    Guarded(String),
    /// The answer was over [`MAX_RESPONSE_BYTES`].
    #[error("answered more than {0} bytes; the answer was not read")]
    TooLarge(usize),
    /// 401, or Brave's `SUBSCRIPTION_TOKEN_INVALID`: the key was refused.
    #[error(
        "refused the API key (HTTP {status}{}); check the key in the variable named by api_key_env",
        suffix(.detail)
    )]
    KeyRefused {
        /// The status code.
        status: u16,
        /// The backend's own words, if it gave any.
        detail: Option<String>,
    },
    /// 429: too many requests, or the plan's quota is used up.
    #[error("is rate-limiting hearth (HTTP 429{}){}", suffix(.detail), retry(.retry_after_s))]
    RateLimited {
        /// The backend's own words, if it gave any.
        detail: Option<String>,
        /// Seconds until it takes requests again, if it said.
        retry_after_s: Option<u64>,
    },
    /// SearXNG's 403: the JSON format is not enabled on the instance.
    #[error(
        "refused the JSON format (HTTP 403); add json to search.formats in SearXNG's settings.yml"
    )]
    JsonDisabled,
    /// A 5xx.
    #[error("had a server error (HTTP {status}{})", suffix(.detail))]
    ServerError {
        /// The status code.
        status: u16,
        /// The backend's own words, if it gave any.
        detail: Option<String>,
    },
    /// Any other status that is not success.
    #[error("refused the search (HTTP {status}{})", suffix(.detail))]
    Refused {
        /// The status code.
        status: u16,
        /// The backend's own words, if it gave any.
        detail: Option<String>,
    },
    /// DuckDuckGo's bot check (its anomaly page, or a 202, 403 or 429):
    /// it is rate limiting this address.
    #[error("answered its bot check (HTTP {status}). {DDG_RATE_LIMITED}")]
    BotCheck {
        /// The status code.
        status: u16,
    },
    /// DuckDuckGo was not asked: its bot check came recently, and asking
    /// again at once would prolong the block.
    #[error("was not asked: it answered its bot check {ago_s} s ago. {DDG_RATE_LIMITED}")]
    BackingOff {
        /// Seconds since the bot check.
        ago_s: u64,
    },
    /// An HTML page with neither results nor the "No results." notice: not
    /// DuckDuckGo's results page (a captive portal), or a changed one.
    #[error(
        "answered a page with no results and no \"No results\" notice ({0}); its page may have changed"
    )]
    UnexpectedPage(String),
    /// A success whose body is not JSON.
    #[error("answered with something that is not JSON ({0})")]
    InvalidJson(String),
    /// JSON, but not the shape the API documents.
    #[error("answered JSON without {0}")]
    UnexpectedShape(&'static str),
}

impl Reply {
    /// The status as an error, for a reply that is not a success, with
    /// `detail` (the backend's own words) where it gave some; `None` for a
    /// success. 401, 429 and 5xx mean the same everywhere; the rest is up
    /// to the backend's module.
    pub fn common_error(&self, detail: Option<String>) -> Option<BackendError> {
        match self.status {
            200..=299 => None,
            401 => Some(BackendError::KeyRefused {
                status: 401,
                detail,
            }),
            429 => Some(BackendError::RateLimited {
                detail,
                retry_after_s: self.retry_after(),
            }),
            500..=599 => Some(BackendError::ServerError {
                status: self.status,
                detail,
            }),
            status => Some(BackendError::Refused { status, detail }),
        }
    }

    /// The body parsed as JSON, or the error saying it is not.
    pub fn json(&self) -> Result<serde_json::Value, BackendError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            let what = self
                .headers
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|c| c.to_str().ok())
                .map_or_else(String::new, |c| format!("{}, ", shorten(c)));
            BackendError::InvalidJson(format!("{what}{e}"))
        })
    }

    /// Seconds until the backend takes requests again: `Retry-After`, or
    /// the first (shortest) window of Brave's `X-RateLimit-Reset`.
    fn retry_after(&self) -> Option<u64> {
        let header = |name: &str| self.headers.get(name).and_then(|v| v.to_str().ok());
        header(RETRY_AFTER.as_str())
            .and_then(|v| v.trim().parse().ok())
            .or_else(|| {
                header("x-ratelimit-reset")
                    .and_then(|v| v.split(',').next())
                    .and_then(|v| v.trim().parse().ok())
            })
    }
}

/// Text from a backend, made fit for a message: control characters and
/// runs of whitespace become one space, and it is cut at
/// [`MAX_DETAIL_CHARS`].
pub fn shorten(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat: String = flat.chars().filter(|c| !c.is_control()).collect();
    if flat.chars().count() <= MAX_DETAIL_CHARS {
        flat
    } else {
        let cut: String = flat.chars().take(MAX_DETAIL_CHARS).collect();
        format!("{cut}…")
    }
}

/// ": detail", or nothing.
fn suffix(detail: &Option<String>) -> String {
    detail
        .as_deref()
        .map_or_else(String::new, |d| format!(": {d}"))
}

/// "; it says to try again in N s", or nothing.
fn retry(seconds: &Option<u64>) -> String {
    seconds.map_or_else(String::new, |s| format!("; it says to try again in {s} s"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_text_is_flattened_and_cut() {
        assert_eq!(shorten("a\n\tb\u{1b}[31m  c"), "a b[31m c");
        let long = "x".repeat(500);
        let cut = shorten(&long);
        assert_eq!(cut.chars().count(), MAX_DETAIL_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
