//! One configured search backend: its HTTP client, the GET it sends, and
//! every way that can fail, as a message that says what happened.
//!
//! The backend's address is the owner's choice (SearXNG usually runs on
//! 127.0.0.1), so it is not put through the private-address guard that
//! `web_fetch` applies to addresses the model chooses. What it answers is
//! still untrusted: the body read is capped, redirects are not followed
//! (an instance must not be able to point hearth somewhere else), and the
//! texts of its error bodies are shortened before they are shown.

use std::io::Read;
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::header::{ACCEPT, LOCATION};

use super::config::{ApiKey, BackendConfig, Kind};
use super::reply::{BackendError, Reply, shorten};
use super::{Answer, Query, brave, searxng};

/// The most bytes read from one backend answer: a page of results is tens
/// of kilobytes, so this leaves room without letting a broken or hostile
/// backend fill memory.
pub const MAX_RESPONSE_BYTES: usize = 2 << 20;

/// A backend ready to be asked.
pub struct Backend {
    kind: Kind,
    label: String,
    endpoint: Url,
    key: Option<ApiKey>,
    timeout: Duration,
    client: reqwest::blocking::Client,
}

impl Backend {
    /// Sets up the client for `config`.
    pub fn new(config: BackendConfig) -> Result<Backend, String> {
        let label = format!(
            "{} ({})",
            config.kind.name(),
            host_port(&config.base_url).unwrap_or_default()
        );
        let endpoint = endpoint(&config.base_url, config.kind)
            .map_err(|e| format!("{label}: base_url cannot take the API's path: {e}"))?;
        let client = reqwest::blocking::Client::builder()
            .tls_backend_rustls()
            // The owner chose this address; an instance must not move it.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .user_agent(concat!("hearth-web/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("{label}: cannot set up the HTTP client: {}", chain(&e)))?;
        Ok(Backend {
            kind: config.kind,
            label,
            endpoint,
            key: config.api_key,
            timeout: config.timeout,
            client,
        })
    }

    /// `searxng (127.0.0.1:8888)`: how messages name this backend.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The service's name.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Runs `query` and reads the results.
    pub fn search(&self, query: &Query) -> Result<Answer, BackendError> {
        let mut url = self.endpoint.clone();
        match self.kind {
            Kind::Searxng => searxng::add_params(&mut url, query),
            Kind::Brave => brave::add_params(&mut url, query),
        }
        let mut request = self.client.get(url).header(ACCEPT, "application/json");
        if let Some(key) = &self.key {
            request = request.header(brave::KEY_HEADER, key.expose());
        }
        let reply = self.send(request)?;
        if (300..400).contains(&reply.status) {
            let to = reply
                .headers
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .map_or_else(|| "nowhere".to_owned(), shorten);
            return Err(BackendError::Redirect(to));
        }
        match self.kind {
            Kind::Searxng => searxng::read(&reply, query),
            Kind::Brave => brave::read(&reply, query),
        }
    }

    /// Sends `request` and reads the body, within the timeout and the cap.
    fn send(&self, request: reqwest::blocking::RequestBuilder) -> Result<Reply, BackendError> {
        let deadline = Instant::now() + self.timeout;
        let response = request.send().map_err(|e| {
            if e.is_timeout() {
                BackendError::TimedOut(self.timeout.as_millis())
            } else if e.is_connect() {
                BackendError::Unreachable(root_cause(&e))
            } else {
                BackendError::Transport(chain(&e))
            }
        })?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        // One byte past the cap tells a body of exactly the cap from a
        // longer one.
        let mut reader = response.take(MAX_RESPONSE_BYTES as u64 + 1);
        loop {
            if Instant::now() >= deadline {
                return Err(BackendError::TimedOut(self.timeout.as_millis()));
            }
            match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => body.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let text = chain(&e);
                    return Err(
                        if e.kind() == std::io::ErrorKind::TimedOut
                            || text.to_ascii_lowercase().contains("timed out")
                        {
                            BackendError::TimedOut(self.timeout.as_millis())
                        } else {
                            BackendError::Transport(format!("reading the answer: {text}"))
                        },
                    );
                }
            }
            if body.len() > MAX_RESPONSE_BYTES {
                return Err(BackendError::TooLarge(MAX_RESPONSE_BYTES));
            }
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

/// The API's endpoint under `base`: SearXNG's `search` next to its root
/// (an instance may sit under a path), Brave's `res/v1/web/search`.
fn endpoint(base: &Url, kind: Kind) -> Result<Url, url::ParseError> {
    let mut base = base.clone();
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.join(match kind {
        Kind::Searxng => "search",
        Kind::Brave => "res/v1/web/search",
    })
}

fn host_port(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// The innermost cause ("Connection refused (os error 111)"): for a
/// failed connection, that is the part that says what went wrong.
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

/// An error with its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_keeps_the_base_path() {
        let cases = [
            (
                "http://127.0.0.1:8888",
                Kind::Searxng,
                "http://127.0.0.1:8888/search",
            ),
            (
                "https://h.example/searx",
                Kind::Searxng,
                "https://h.example/searx/search",
            ),
            (
                "https://h.example/searx/",
                Kind::Searxng,
                "https://h.example/searx/search",
            ),
            (
                "https://api.search.brave.com",
                Kind::Brave,
                "https://api.search.brave.com/res/v1/web/search",
            ),
        ];
        for (base, kind, wanted) in cases {
            let got = endpoint(&Url::parse(base).unwrap(), kind).unwrap();
            assert_eq!(got.as_str(), wanted, "{base}");
        }
    }
}
