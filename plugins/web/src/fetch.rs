//! One `web_fetch`: the request, hop by hop, and the body as text.
//!
//! Redirects are followed here rather than by reqwest, so each hop goes
//! through the same steps: check the URL, resolve its name ourselves, check
//! every address, and build a client that can reach only those addresses
//! (`resolve_to_addrs`, with a resolver that refuses every other lookup and
//! no proxy). That closes DNS rebinding: nothing is resolved a second time
//! between the check and the connection.

use std::io::Read;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::Url;
use serde_json::{Value, json};
use url::Host;

use crate::guard::Policy;
use crate::html;

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// What to fetch and how much of it.
#[derive(Debug, Clone)]
pub struct Request {
    /// Where to start.
    pub url: Url,
    /// Body bytes read at most; the rest is dropped and `truncated` set.
    pub max_bytes: usize,
    /// For the whole fetch: every hop, and the body.
    pub timeout: Duration,
    /// Return the body as text without converting HTML.
    pub raw: bool,
}

/// Fetches `request` under `policy`: the result object of `web_fetch`, or
/// a message saying what was refused or what failed.
pub fn fetch(policy: &Policy, request: &Request) -> Result<Value, String> {
    let deadline = Instant::now() + request.timeout;
    let mut url = request.url.clone();
    let mut redirects = 0;
    loop {
        let response = send(policy, &url, request.timeout, deadline)?;
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok());
        let next = match location {
            Some(location) if status.is_redirection() => Some(url.join(location).map_err(|e| {
                format!("{url} redirects to {location:?}, which is not a valid URL: {e}")
            })?),
            _ => None,
        };
        let Some(next) = next else {
            return read(response, request, deadline);
        };
        redirects += 1;
        if redirects > MAX_REDIRECTS {
            return Err(format!(
                "refused: more than {MAX_REDIRECTS} redirects (the last was from {url} to {next})"
            ));
        }
        // Each hop is judged like the first: a public page must not be a
        // way to reach a private address.
        if let Err(refused) = policy.check_url(&next) {
            return Err(format!("{url} redirects to {next}: {refused}"));
        }
        url = next;
    }
}

/// Sends one GET to `url`, connecting only to checked addresses.
fn send(
    policy: &Policy,
    url: &Url,
    timeout: Duration,
    deadline: Instant,
) -> Result<reqwest::blocking::Response, String> {
    policy.check_url(url)?;
    let remaining = remaining(deadline, timeout, url)?;
    let client = guarded_client(policy, url, remaining, timeout).map_err(|e| e.to_string())?;
    client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/plain;q=0.9, */*;q=0.5",
        )
        .send()
        .map_err(|e| describe(&e, url, timeout))
}

/// Why no client could be made for a URL; each is the whole message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClientError {
    /// The policy refused the URL, or an address its name resolves to.
    #[error("{0}")]
    Refused(String),
    /// The name did not resolve.
    #[error("{0}")]
    Resolve(String),
    /// The lookup took longer than the time left.
    #[error("{0}")]
    TimedOut(String),
    /// reqwest could not build the client.
    #[error("{0}")]
    Setup(String),
}

/// A client for `url` that can reach only the addresses `policy` allowed
/// for its host: the URL checked, the name resolved here within
/// `remaining` and every address judged, then pinned, with no proxy and no
/// redirects. `web_fetch` makes one per hop; the DuckDuckGo backend one
/// per search, so a changed DNS answer is judged again each time.
pub fn guarded_client(
    policy: &Policy,
    url: &Url,
    remaining: Duration,
    timeout: Duration,
) -> Result<reqwest::blocking::Client, ClientError> {
    policy.check_url(url).map_err(ClientError::Refused)?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| ClientError::Refused(format!("refused: {url} has no port")))?;
    let mut builder = reqwest::blocking::Client::builder()
        .tls_backend_rustls()
        // A proxy would resolve the name itself, out of our sight; the
        // environment's proxy settings must not undo the address checks.
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(remaining)
        .connect_timeout(remaining)
        .dns_resolver(Arc::new(NoLookups))
        .user_agent(concat!("hearth-web/", env!("CARGO_PKG_VERSION")));
    if let Some(Host::Domain(name)) = url.host() {
        let addrs = resolve(name, port, remaining, timeout)?;
        if let Err(refused) = policy.check_resolved(name, port, &addrs) {
            return Err(ClientError::Refused(if refused.starts_with("refused") {
                refused
            } else {
                format!("refused: {refused}")
            }));
        }
        builder = builder.resolve_to_addrs(name, &addrs);
    }
    builder
        .build()
        .map_err(|e| ClientError::Setup(format!("cannot set up the HTTP client: {}", chain(&e))))
}

/// Reads the body, up to the cap and the deadline, and shapes the result.
fn read(
    response: reqwest::blocking::Response,
    request: &Request,
    deadline: Instant,
) -> Result<Value, String> {
    let url = response.url().clone();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut body = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    // One byte past the cap tells a body of exactly `max_bytes` from a
    // longer one.
    let mut reader = response.take(request.max_bytes as u64 + 1);
    loop {
        remaining(deadline, request.timeout, &url)?;
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let timed_out = e.kind() == std::io::ErrorKind::TimedOut
                    || chain(&e).to_ascii_lowercase().contains("timed out");
                return Err(if timed_out {
                    timed_out_message(request.timeout, &url)
                } else {
                    format!("reading the body of {url} failed: {}", chain(&e))
                });
            }
        }
    }
    let truncated = body.len() > request.max_bytes;
    body.truncate(request.max_bytes);
    let kind = Kind::of(content_type.as_deref(), &body);
    let (title, text) = match kind {
        Kind::Binary => (
            None,
            format!(
                "[{} bytes of {} content, not shown]",
                body.len(),
                content_type.as_deref().unwrap_or("binary")
            ),
        ),
        Kind::Text => (None, decode(&body, content_type.as_deref(), truncated)),
        Kind::Html => {
            let source = decode(&body, content_type.as_deref(), truncated);
            if request.raw {
                (html::title(&source), source)
            } else {
                let page = html::to_text(&source, Some(&url));
                (page.title, page.text)
            }
        }
    };
    let mut result = json!({
        "url": url.as_str(),
        "status": status,
        "content_type": content_type,
        "text": text,
        "truncated": truncated,
        "bytes": body.len(),
    });
    if let Some(title) = title {
        result["title"] = Value::String(title);
    }
    Ok(result)
}

/// How the body is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

impl Kind {
    fn of(content_type: Option<&str>, body: &[u8]) -> Kind {
        let essence = content_type
            .and_then(|c| c.split(';').next())
            .map(|c| c.trim().to_ascii_lowercase());
        match essence.as_deref() {
            Some(t) if t.contains("html") => Kind::Html,
            Some(t)
                if t.starts_with("text/")
                    || [
                        "json",
                        "xml",
                        "javascript",
                        "ecmascript",
                        "yaml",
                        "toml",
                        "csv",
                    ]
                    .iter()
                    .any(|k| t.contains(k)) =>
            {
                Kind::Text
            }
            // Servers often send no type, or a generic one, for text.
            None | Some("application/octet-stream") => sniff(body),
            Some(_) => Kind::Binary,
        }
    }
}

/// Guesses from the first bytes: HTML by its opening, binary by a NUL.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    if head.contains(&0) {
        return Kind::Binary;
    }
    let start = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

/// The body as a string: Latin-1 when the server says so, UTF-8 otherwise
/// (invalid bytes become U+FFFD). A character cut by the size cap is
/// dropped rather than shown as U+FFFD.
fn decode(body: &[u8], content_type: Option<&str>, truncated: bool) -> String {
    let charset = content_type
        .and_then(|c| {
            c.split(';')
                .filter_map(|p| p.trim().split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
                .map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase())
        })
        .unwrap_or_default();
    // windows-1252 differs from Latin-1 only in 0x80-0x9f (curly quotes and
    // the like): close enough for reading, and needs no table.
    if matches!(
        charset.as_str(),
        "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" | "us-ascii"
    ) {
        return body.iter().map(|&b| char::from(b)).collect();
    }
    let mut body = body;
    if truncated {
        if let Err(e) = std::str::from_utf8(body) {
            if e.error_len().is_none() {
                body = &body[..e.valid_up_to()];
            }
        }
    }
    String::from_utf8_lossy(body).into_owned()
}

/// Resolves `name` within the time left; the lookup runs on its own thread
/// because the system resolver has no timeout of its own.
fn resolve(
    name: &str,
    port: u16,
    remaining: Duration,
    timeout: Duration,
) -> Result<Vec<SocketAddr>, ClientError> {
    let (tx, rx) = mpsc::channel();
    let host = name.to_owned();
    std::thread::Builder::new()
        .name("hearth-web-dns".into())
        .spawn(move || {
            let answer = (host.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect::<Vec<_>>);
            // The caller may have stopped waiting; then nobody needs this.
            let _ = tx.send(answer);
        })
        .map_err(|e| ClientError::Setup(format!("cannot start a DNS lookup: {e}")))?;
    match rx.recv_timeout(remaining) {
        Ok(Ok(addrs)) => Ok(addrs),
        Ok(Err(e)) => Err(ClientError::Resolve(format!("cannot resolve {name}: {e}"))),
        Err(_) => Err(ClientError::TimedOut(format!(
            "timed out after {} ms resolving {name}",
            timeout.as_millis()
        ))),
    }
}

/// The resolver behind the pinned addresses: every lookup that reaches it
/// is one we did not check, so it fails.
struct NoLookups;

impl reqwest::dns::Resolve for NoLookups {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let message = format!(
            "refused: {} was not checked before connecting",
            name.as_str()
        );
        Box::pin(std::future::ready(Err(message.into())))
    }
}

/// The time left before `deadline`, or the timeout error.
fn remaining(deadline: Instant, timeout: Duration, url: &Url) -> Result<Duration, String> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| timed_out_message(timeout, url))
}

fn timed_out_message(timeout: Duration, url: &Url) -> String {
    format!("timed out after {} ms fetching {url}", timeout.as_millis())
}

/// A reqwest error as one line, with its causes: "error sending request"
/// alone says nothing.
fn describe(e: &reqwest::Error, url: &Url, timeout: Duration) -> String {
    if e.is_timeout() {
        return timed_out_message(timeout, url);
    }
    let what = if e.is_connect() {
        format!(
            "cannot connect to {}",
            url.host_str().unwrap_or("the server")
        )
    } else {
        format!("fetching {url} failed")
    };
    format!("{what}: {}", chain(e))
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        // Some errors repeat their cause in their own message.
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}
