//! One configured search backend: its HTTP client, the request it sends,
//! and every way that can fail, as a message that says what happened.
//!
//! A SearXNG's or Brave's address is the owner's choice (SearXNG usually
//! runs on 127.0.0.1), so it is not put through the private-address guard
//! that `web_fetch` applies to addresses the model chooses. DuckDuckGo is
//! the default nobody chose, reached by name on the public internet, so it
//! goes through that guard (`guard`, via `fetch::guarded_client`): its name
//! is resolved and judged for every search, and a DuckDuckGo pointed at a
//! private address must be allow-listed like any other. What any backend
//! answers is untrusted: the body read is capped, redirects are not
//! followed (a backend must not be able to point hearth somewhere else),
//! and the texts of its error bodies are shortened before they are shown.

use std::io::Read;
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, REFERER};

use super::config::{ApiKey, BackendConfig, Kind};
use super::duckduckgo::{self, BACKOFF, Backoff};
use super::reply::{BackendError, Reply, shorten};
use super::{Answer, Query, brave, searxng};
use crate::fetch::{ClientError, guarded_client};
use crate::guard::Policy;

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
    region: Option<String>,
    timeout: Duration,
    how: Transport,
}

/// How a backend's requests go out.
enum Transport {
    /// One client, to the owner's own address.
    Direct(reqwest::blocking::Client),
    /// A client per request, through the egress guard, with the backoff
    /// that follows DuckDuckGo's bot check.
    Guarded { policy: Policy, backoff: Backoff },
}

impl Backend {
    /// Sets up the client for `config`; `policy` is `[plugins.web]`'s
    /// egress policy, which DuckDuckGo's requests go through.
    pub fn new(config: BackendConfig, policy: &Policy) -> Result<Backend, String> {
        let label = format!(
            "{} ({})",
            config.kind.name(),
            host_port(&config.base_url).unwrap_or_default()
        );
        let endpoint = endpoint(&config.base_url, config.kind)
            .map_err(|e| format!("{label}: base_url cannot take the API's path: {e}"))?;
        if config.kind == Kind::DuckDuckGo {
            return Ok(Backend {
                kind: config.kind,
                label,
                endpoint,
                key: None,
                region: config.region,
                timeout: config.timeout,
                how: Transport::Guarded {
                    policy: policy.clone(),
                    backoff: Backoff::new(BACKOFF),
                },
            });
        }
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
            region: None,
            timeout: config.timeout,
            how: Transport::Direct(client),
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
        let deadline = Instant::now() + self.timeout;
        let client = match &self.how {
            Transport::Direct(client) => client,
            Transport::Guarded { policy, backoff } => {
                return self.search_guarded(query, policy, backoff, deadline);
            }
        };
        let mut url = self.endpoint.clone();
        match self.kind {
            Kind::Searxng => searxng::add_params(&mut url, query),
            Kind::Brave => brave::add_params(&mut url, query),
            Kind::DuckDuckGo => {}
        }
        let mut request = client.get(url).header(ACCEPT, "application/json");
        if let Some(key) = &self.key {
            request = request.header(brave::KEY_HEADER, key.expose());
        }
        let reply = self.send(request, deadline)?;
        self.not_redirected(&reply)?;
        match self.kind {
            Kind::Searxng => searxng::read(&reply, query),
            Kind::Brave => brave::read(&reply, query),
            Kind::DuckDuckGo => duckduckgo::read(&reply, query),
        }
    }

    /// DuckDuckGo: the backoff, the guard, then the form posted as its
    /// page posts it.
    fn search_guarded(
        &self,
        query: &Query,
        policy: &Policy,
        backoff: &Backoff,
        deadline: Instant,
    ) -> Result<Answer, BackendError> {
        backoff.check(Instant::now())?;
        let left = deadline.saturating_duration_since(Instant::now());
        let client =
            guarded_client(policy, &self.endpoint, left, self.timeout).map_err(|e| match e {
                ClientError::Refused(why) => {
                    BackendError::Guarded(why.strip_prefix("refused: ").unwrap_or(&why).to_owned())
                }
                ClientError::Resolve(why) => BackendError::Unreachable(why),
                ClientError::TimedOut(_) => BackendError::TimedOut(self.timeout.as_millis()),
                ClientError::Setup(why) => BackendError::Transport(why),
            })?;
        let request = client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "text/html")
            // Its own form posts from its own page; a post from nowhere
            // looks more like a bot.
            .header(REFERER, origin(&self.endpoint))
            .body(duckduckgo::form(query, self.region.as_deref()));
        let reply = self.send(request, deadline)?;
        self.not_redirected(&reply)?;
        let answer = duckduckgo::read(&reply, query);
        if matches!(answer, Err(BackendError::BotCheck { .. })) {
            backoff.start(Instant::now());
        }
        answer
    }

    /// A 3xx as the error naming the key that holds the address.
    fn not_redirected(&self, reply: &Reply) -> Result<(), BackendError> {
        if !(300..400).contains(&reply.status) {
            return Ok(());
        }
        let to = reply
            .headers
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .map_or_else(|| "nowhere".to_owned(), shorten);
        Err(BackendError::Redirect {
            to,
            key: match self.kind {
                Kind::DuckDuckGo => "[plugins.web] duckduckgo_url",
                Kind::Searxng | Kind::Brave => "base_url",
            },
        })
    }

    /// Sends `request` and reads the body, by `deadline` and within the cap.
    fn send(
        &self,
        request: reqwest::blocking::RequestBuilder,
        deadline: Instant,
    ) -> Result<Reply, BackendError> {
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
/// (an instance may sit under a path), Brave's `res/v1/web/search`;
/// DuckDuckGo's `duckduckgo_url` is the endpoint itself.
fn endpoint(base: &Url, kind: Kind) -> Result<Url, url::ParseError> {
    if kind == Kind::DuckDuckGo {
        return Ok(base.clone());
    }
    let mut base = base.clone();
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.join(match kind {
        Kind::Searxng => "search",
        Kind::Brave => "res/v1/web/search",
        Kind::DuckDuckGo => "",
    })
}

/// `https://host/`: the page a form on `url`'s site is posted from.
fn origin(url: &Url) -> String {
    format!("{}/", url.origin().ascii_serialization())
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
