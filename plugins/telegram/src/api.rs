//! The Bot API client: one method call, one upload, one file download.
//!
//! Every request has a deadline over the whole exchange (connect, headers
//! and body), because a connection that hangs halfway must count as dead
//! just like one that never answers. The bot token is part of every URL, so
//! transport errors are stripped of their URL before anyone sees them: the
//! token never reaches a log or an error message.

use std::time::Duration;

use serde_json::Value;

/// A Bot API client for one bot.
pub struct Api {
    client: reqwest::Client,
    /// `<api_url>/bot<token>/`.
    methods: String,
    /// `<api_url>/file/bot<token>/`.
    files: String,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No complete answer within the deadline: the connection is treated as
    /// dead and dropped.
    #[error("no answer within {} s", .0.as_secs_f32())]
    Timeout(Duration),
    /// The connection failed (refused, reset, TLS).
    #[error("{0}")]
    Transport(String),
    /// The Bot API answered `"ok": false`.
    #[error("{code} {description}")]
    Refused {
        /// `error_code` (the HTTP status).
        code: i64,
        /// `description`.
        description: String,
        /// `parameters.retry_after`, in seconds, on a 429.
        retry_after: Option<u64>,
    },
    /// The answer was not the Bot API's JSON shape.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// A file is larger than the cap.
    #[error("the file is {size} bytes, over the {cap}-byte limit")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The cap.
        cap: u64,
    },
}

/// A file to upload.
pub struct Upload<'a> {
    /// Its content.
    pub bytes: &'a [u8],
    /// The name it is sent under.
    pub name: &'a str,
    /// Its media type (`application/octet-stream` when not a valid one).
    pub mime: &'a str,
}

impl ApiError {
    /// Whether sending the same request again cannot help: the Bot API
    /// refused it as a bad request or forbidden (a chat that is gone, a
    /// bot the user blocked), or a file is over the cap. A 429 and the
    /// server's own errors (5xx) pass with time.
    pub fn is_for_good(&self) -> bool {
        matches!(
            self,
            ApiError::Refused {
                code: 400 | 403,
                ..
            } | ApiError::TooLarge { .. }
        )
    }

    /// Whether the Bot API said the HTML could not be parsed.
    pub fn is_parse_error(&self) -> bool {
        matches!(self, ApiError::Refused { code: 400, description, .. } if description.contains("can't parse entities"))
    }
}

impl Api {
    /// A client for the bot with `token` at `api_url`.
    pub fn new(api_url: &str, token: &str) -> Result<Api, String> {
        let client = reqwest::Client::builder()
            .tls_backend_rustls()
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(50))
            .tcp_keepalive(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", e.without_url()))?;
        Ok(Api {
            client,
            methods: format!("{api_url}/bot{token}/"),
            files: format!("{api_url}/file/bot{token}/"),
        })
    }

    /// Calls `method` with JSON `params`; the `result` on success.
    pub async fn call(
        &self,
        method: &str,
        params: &Value,
        deadline: Duration,
    ) -> Result<Value, ApiError> {
        let request = self
            .client
            .post(format!("{}{method}", self.methods))
            .header("content-type", "application/json")
            .body(params.to_string());
        self.exchange(request, deadline).await
    }

    /// Calls an upload method (`sendDocument`, `sendPhoto`) with a form.
    pub async fn upload(
        &self,
        method: &str,
        form: reqwest::multipart::Form,
        deadline: Duration,
    ) -> Result<Value, ApiError> {
        let request = self
            .client
            .post(format!("{}{method}", self.methods))
            .multipart(form);
        self.exchange(request, deadline).await
    }

    /// Downloads the file at `file_path` (from `getFile`), refusing more
    /// than `cap` bytes without reading them.
    pub async fn download(
        &self,
        file_path: &str,
        cap: u64,
        deadline: Duration,
    ) -> Result<Vec<u8>, ApiError> {
        let fetch = async {
            let mut response = self
                .client
                .get(format!("{}{file_path}", self.files))
                .send()
                .await
                .map_err(transport)?;
            if !response.status().is_success() {
                return Err(ApiError::Refused {
                    code: i64::from(response.status().as_u16()),
                    description: "the file download failed".into(),
                    retry_after: None,
                });
            }
            if let Some(size) = response.content_length().filter(|s| *s > cap) {
                return Err(ApiError::TooLarge { size, cap });
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(transport)? {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > cap {
                    return Err(ApiError::TooLarge {
                        size: body.len() as u64,
                        cap,
                    });
                }
            }
            Ok(body)
        };
        tokio::time::timeout(deadline, fetch)
            .await
            .map_err(|_| ApiError::Timeout(deadline))?
    }

    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        deadline: Duration,
    ) -> Result<Value, ApiError> {
        let exchange = async {
            let response = request.send().await.map_err(transport)?;
            let status = response.status().as_u16();
            let body = response.bytes().await.map_err(transport)?;
            let answer: Value = serde_json::from_slice(&body).map_err(|e| {
                ApiError::Malformed(format!("HTTP {status}, body is not JSON: {e}"))
            })?;
            if answer["ok"] == Value::Bool(true) {
                return Ok(answer["result"].clone());
            }
            Err(ApiError::Refused {
                code: answer["error_code"]
                    .as_i64()
                    .unwrap_or_else(|| i64::from(status)),
                description: answer["description"]
                    .as_str()
                    .unwrap_or("(no description)")
                    .to_owned(),
                retry_after: answer["parameters"]["retry_after"].as_u64(),
            })
        };
        tokio::time::timeout(deadline, exchange)
            .await
            .map_err(|_| ApiError::Timeout(deadline))?
    }
}

fn transport(e: reqwest::Error) -> ApiError {
    // The URL holds the token: drop it from the message.
    ApiError::Transport(e.without_url().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bad_requests_forbidden_ones_and_files_over_the_cap_are_for_good() {
        let refused = |code: i64| ApiError::Refused {
            code,
            description: "x".into(),
            retry_after: None,
        };
        let cases = [
            (refused(400), true),
            (refused(403), true),
            (ApiError::TooLarge { size: 2, cap: 1 }, true),
            (refused(429), false),
            (refused(500), false),
            (refused(502), false),
            (ApiError::Transport("reset".into()), false),
            (ApiError::Malformed("html".into()), false),
        ];
        for (error, for_good) in cases {
            assert_eq!(error.is_for_good(), for_good, "{error}");
        }
    }
}
