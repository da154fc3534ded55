//! What the transcription and speech clients share: one HTTP client, the
//! API key, and reading an endpoint's error answers.
//!
//! The key is read from the environment variable the config names, sent
//! only in the `Authorization` header, and kept out of every message: an
//! endpoint that refuses it is reported by status and variable name, since
//! some (OpenAI's) quote part of the key back.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

/// An API key, kept out of `Debug` and logs.
#[derive(Clone)]
pub struct ApiKey {
    /// The variable it came from, named in messages.
    pub var: String,
    value: String,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({} = <redacted>)", self.var)
    }
}

impl ApiKey {
    /// The key in `var`, or why there is none.
    pub fn from_env(var: &str) -> Result<ApiKey, String> {
        match std::env::var(var) {
            Ok(value) if !value.trim().is_empty() => Ok(ApiKey {
                var: var.to_owned(),
                value: value.trim().to_owned(),
            }),
            _ => Err(format!(
                "the environment variable {var} (api_key_env) is not set"
            )),
        }
    }

    /// `request` with the key as a bearer token.
    pub fn authorize(
        &self,
        request: reqwest::blocking::RequestBuilder,
    ) -> reqwest::blocking::RequestBuilder {
        request.bearer_auth(&self.value)
    }

    /// `text` with the key, should it appear, replaced by its variable's
    /// name.
    pub fn scrub(&self, text: &str) -> String {
        text.replace(&self.value, &format!("[{}]", self.var))
    }
}

/// The client every speech request goes through. It lives as long as the
/// process: a blocking client must not be dropped inside the daemon's
/// async runtime, and a static never is.
pub fn http() -> Result<&'static reqwest::blocking::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::blocking::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            hearth_base::tls::install_crypto_provider();
            reqwest::blocking::Client::builder()
                .tls_backend_rustls()
                .connect_timeout(Duration::from_secs(10))
                // A POST that is redirected would lose its body, or carry
                // the key somewhere else: a redirect is an error.
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The most of an error body read into a message.
const ERROR_CHARS: usize = 300;

/// What an endpoint's error answer says: OpenAI's
/// `{"error": {"message", "type"}}`, a FastAPI `{"detail": ...}`, or the
/// start of the body as text.
pub fn error_message(body: &[u8]) -> String {
    let said = match serde_json::from_slice::<Value>(body) {
        Ok(json) => {
            let error = &json["error"];
            let message = error["message"]
                .as_str()
                .or_else(|| error.as_str())
                .or_else(|| json["detail"].as_str())
                .or_else(|| json["message"].as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| json.to_string());
            match error["type"].as_str() {
                Some(kind) if !kind.is_empty() => format!("{message} ({kind})"),
                _ => message,
            }
        }
        Err(_) => String::from_utf8_lossy(body).trim().to_owned(),
    };
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    if said.chars().count() > ERROR_CHARS {
        let short: String = said.chars().take(ERROR_CHARS).collect();
        format!("{short}…")
    } else if said.is_empty() {
        "(no message)".into()
    } else {
        said
    }
}

/// Whether trying again may help after an answer with `status`.
pub fn retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429 | 500..=599)
}

/// What an exchange with an endpoint came to.
#[derive(Debug)]
pub enum Exchange {
    /// An answer: its status, its `content-type` and its body (at most the
    /// cap given).
    Answer {
        /// The HTTP status.
        status: u16,
        /// The `content-type` header, when sent.
        content_type: Option<String>,
        /// The body.
        body: Vec<u8>,
    },
    /// The body was longer than the cap.
    TooLarge,
    /// No answer: the connection failed or timed out.
    Unreachable(String),
}

/// Sends the request `build` makes, again on a connection failure or a
/// status worth retrying, at most `retries` more times with a backoff from
/// half a second; reads at most `cap` bytes of the answer.
pub fn exchange(
    build: impl Fn() -> Result<reqwest::blocking::RequestBuilder, String>,
    retries: u32,
    cap: u64,
) -> Exchange {
    let mut wait = Duration::from_millis(500);
    let mut attempt = 0;
    loop {
        let outcome = match build() {
            Ok(request) => once(request, cap),
            Err(why) => return Exchange::Unreachable(why),
        };
        let again = match &outcome {
            Exchange::Answer { status, .. } => retryable(*status),
            Exchange::Unreachable(_) => true,
            Exchange::TooLarge => false,
        };
        if !again || attempt >= retries {
            return outcome;
        }
        attempt += 1;
        tracing::debug!(attempt, "speech endpoint: trying again: {outcome:?}");
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_secs(8));
    }
}

fn once(request: reqwest::blocking::RequestBuilder, cap: u64) -> Exchange {
    use std::io::Read;
    let response = match request.send() {
        Ok(response) => response,
        // The URL may carry credentials (`http://user:pass@host`).
        Err(e) => return Exchange::Unreachable(e.without_url().to_string()),
    };
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if response.content_length().is_some_and(|l| l > cap) {
        return Exchange::TooLarge;
    }
    let mut body = Vec::new();
    match response.take(cap + 1).read_to_end(&mut body) {
        Ok(_) if body.len() as u64 > cap => Exchange::TooLarge,
        Ok(_) => Exchange::Answer {
            status,
            content_type,
            body,
        },
        Err(e) => Exchange::Unreachable(format!("the answer broke off: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_read_in_every_common_shape() {
        let long = "x".repeat(400);
        let cases = [
            (
                r#"{"error":{"message":"Audio file might be corrupted or unsupported","type":"invalid_request_error","param":"file","code":"invalid_value"}}"#.to_owned(),
                "Audio file might be corrupted or unsupported (invalid_request_error)".to_owned(),
            ),
            (r#"{"detail":"Model not found"}"#.to_owned(), "Model not found".to_owned()),
            (r#"{"error":"bad file"}"#.to_owned(), "bad file".to_owned()),
            ("upstream\n  timed out".to_owned(), "upstream timed out".to_owned()),
            (String::new(), "(no message)".to_owned()),
            (long.clone(), format!("{}…", &long[..300])),
        ];
        for (body, said) in cases {
            assert_eq!(error_message(body.as_bytes()), said, "{body}");
        }
    }

    #[test]
    fn a_key_never_survives_in_a_message() {
        let key = ApiKey {
            var: "STT_KEY".into(),
            value: "sk-secret-123".into(),
        };
        assert_eq!(
            key.scrub("Incorrect API key provided: sk-secret-123."),
            "Incorrect API key provided: [STT_KEY]."
        );
        assert!(!format!("{key:?}").contains("sk-secret"));
    }
}
