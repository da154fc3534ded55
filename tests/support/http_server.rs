//! The HTTP/1.1 plumbing the fake servers share: reading one request
//! (with a `content-length` or chunked body, keep-alive or not) and
//! writing a JSON answer. Enough of the protocol for the clients under
//! test, written out so the fakes need nothing but std.

use std::io::{self, BufRead, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, MutexGuard, PoisonError};
use std::time::Duration;

/// One parsed HTTP request.
pub struct HttpRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The request target as sent, e.g. `/v1/messages?x=1`.
    pub target: String,
    /// Every header in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, as sent (chunked bodies joined).
    pub body: Vec<u8>,
    /// Whether the connection may be kept open after the answer.
    pub keep_alive: bool,
}

impl HttpRequest {
    /// A header by name, matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Reads one request; `None` when the client closed the connection between
/// requests.
/// Accepts connections until `stopping` says so, serving each on a thread
/// of its own: the accept loop every fake server runs.
pub fn accept_each<S: Send + Sync + 'static>(
    listener: &TcpListener,
    shared: &Arc<S>,
    stopping: fn(&S) -> bool,
    serve: fn(TcpStream, &S) -> io::Result<()>,
) {
    for stream in listener.incoming() {
        if stopping(shared) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let shared = Arc::clone(shared);
        std::thread::spawn(move || {
            // An error here is the client hanging up; nothing is waiting for it.
            let _ = serve(stream, &shared);
        });
    }
}

/// Waits on `changed` until `done` holds for the state or `timeout`
/// passes; returns the guard and whether `done` held.
pub fn wait_until<'a, T>(
    changed: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
    mut done: impl FnMut(&T) -> bool,
) -> (MutexGuard<'a, T>, bool) {
    let (guard, _) = changed
        .wait_timeout_while(guard, timeout, |state| !done(state))
        .unwrap_or_else(PoisonError::into_inner);
    let held = done(&guard);
    (guard, held)
}

pub fn read_request(reader: &mut impl BufRead) -> io::Result<Option<HttpRequest>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("malformed request line"));
    };
    let mut http = HttpRequest {
        method: method.to_owned(),
        target: target.to_owned(),
        headers: Vec::new(),
        body: Vec::new(),
        keep_alive: version == "HTTP/1.1",
    };
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid("malformed header"))?;
        http.headers
            .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    if http
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    {
        http.keep_alive = false;
    }
    let chunked = http
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    http.body = if chunked {
        read_chunked(reader)?
    } else {
        let length = match http.header("content-length") {
            Some(v) => v.parse().map_err(|_| invalid("bad content-length"))?,
            None => 0,
        };
        let mut bytes = vec![0; length];
        reader.read_exact(&mut bytes)?;
        bytes
    };
    Ok(Some(http))
}

/// Reads a `transfer-encoding: chunked` request body.
fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the blank line that ends the body.
            loop {
                line.clear();
                if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("fake server: {what}"))
}

/// Writes a JSON answer with `status` and any extra `headers`.
pub fn write_json(
    out: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &str,
) -> io::Result<()> {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
        reason(status),
        body.len()
    );
    out.write_all(format!("{head}{body}").as_bytes())?;
    out.flush()
}

/// The reason phrase for `status`.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        408 => "Request Timeout",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

/// One part of a `multipart/form-data` body.
pub struct FormPart {
    /// The field's name.
    pub name: String,
    /// The file name, for a file field.
    pub filename: Option<String>,
    /// The part's `content-type`, when given.
    pub content_type: Option<String>,
    /// Its content.
    pub data: Vec<u8>,
}

/// The parts of a `multipart/form-data` body whose `content-type` header
/// is `content_type`; `None` when it is not multipart or has no boundary.
pub fn form_parts(content_type: &str, body: &[u8]) -> Option<Vec<FormPart>> {
    if !content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        return None;
    }
    let boundary = content_type.split("boundary=").nth(1)?.trim_matches('"');
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(at) = find(rest, delimiter) {
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let part = rest.strip_prefix(b"\r\n").unwrap_or(rest);
        let end = find(part, delimiter).unwrap_or(part.len());
        let part = &part[..end];
        let Some(split) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]).into_owned();
        let data = &part[split + 4..];
        let data = data.strip_suffix(b"\r\n").unwrap_or(data);
        let header = |name: &str| {
            head.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                key.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| value.trim().to_owned())
            })
        };
        let disposition = header("content-disposition").unwrap_or_default();
        let attribute = |key: &str| {
            disposition.split(';').find_map(|piece| {
                let (k, v) = piece.trim().split_once('=')?;
                (k == key).then(|| v.trim_matches('"').to_owned())
            })
        };
        let Some(name) = attribute("name") else {
            continue;
        };
        parts.push(FormPart {
            name,
            filename: attribute("filename"),
            content_type: header("content-type"),
            data: data.to_vec(),
        });
    }
    Some(parts)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Writes an answer with `status`, `content_type` and a binary `body`.
pub fn write_bytes(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        reason(status),
        body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}
