//! The browser's only way out: an HTTP proxy on 127.0.0.1 that judges
//! every connection by the web plugin's rules (`hearth_web::guard`) and
//! then connects to exactly the address it judged.
//!
//! A page decides what it loads (images, scripts, `fetch`, redirects, a
//! form's target), so checking only the URL the agent asked for would let
//! any page reach the owner's router or the canvas. Intercepting through
//! the protocol would check a name and let Chromium resolve it again,
//! which DNS rebinding turns into a different answer. Here the proxy
//! resolves, checks and connects itself; Chromium never connects anywhere
//! else (`launch` forces every request, loopback ones too, through it).
//!
//! HTTPS and WebSockets arrive as `CONNECT host:port` and are tunnelled
//! untouched (the proxy never sees inside TLS). Plain HTTP arrives as a
//! request with an absolute URL; it is sent on with `Connection: close`,
//! one request per connection, so a kept-alive connection cannot carry a
//! second request to another host past the check.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use hearth_web::guard::Policy;

/// The longest request head read from the browser.
const MAX_HEAD: usize = 32 << 10;
/// How long a connection to a site may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// A connection's thread stack: it only copies bytes.
const STACK: usize = 128 << 10;
/// Failures kept for the tool results.
const KEPT_FAILURES: usize = 20;

/// A running proxy.
pub struct Proxy {
    address: SocketAddr,
    stopped: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<Failure>>>,
}

/// A connection the proxy did not make.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    /// The host asked for.
    host: String,
    /// The sentence that says why.
    why: String,
    /// Refused by the rules (not a name that does not resolve, or a
    /// site that does not answer).
    refused: bool,
}

impl Proxy {
    /// Starts a proxy on a free loopback port, judging by `policy`.
    pub fn start(policy: Policy) -> io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let stopped = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let (stop, failed) = (stopped.clone(), failures.clone());
        let policy = Arc::new(policy);
        thread::Builder::new()
            .name("hearth-browser-proxy".into())
            .stack_size(STACK)
            .spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let (policy, failed) = (policy.clone(), failed.clone());
                    let _ = thread::Builder::new()
                        .name("hearth-browser-conn".into())
                        .stack_size(STACK)
                        .spawn(move || serve(client, &policy, &failed));
                }
            })?;
        Ok(Proxy {
            address,
            stopped,
            failures,
        })
    }

    /// `127.0.0.1:PORT`, for Chromium's `--proxy-server`.
    pub fn address(&self) -> String {
        self.address.to_string()
    }

    /// The requests the rules refused since the last call, oldest first,
    /// each a sentence. Failures that are not refusals (the browser's own
    /// attempts to reach hosts this machine cannot resolve) are dropped:
    /// they would be noise in every result.
    pub fn take_refusals(&self) -> Vec<String> {
        self.take()
            .into_iter()
            .filter(|f| f.refused)
            .map(|f| f.why)
            .collect()
    }

    /// Why the last connection to `host` failed, if one did since the
    /// last call (refused or not): the reason a navigation failed.
    pub fn failure_for(&self, host: &str) -> Option<String> {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures
            .iter()
            .rev()
            .find(|f| f.host == host)
            .map(|f| f.why.clone())
    }

    fn take(&self) -> Vec<Failure> {
        std::mem::take(&mut *self.failures.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
        // Wakes the accepting thread so it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// What the browser asked for.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// `CONNECT host:port`: a tunnel.
    Tunnel { host: String, port: u16 },
    /// `GET http://host:port/path`: one plain request, its head rewritten
    /// to the origin's form.
    Plain {
        host: String,
        port: u16,
        head: Vec<u8>,
    },
}

fn serve(client: TcpStream, policy: &Policy, failures: &Mutex<Vec<Failure>>) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(60)));
    let mut reader = BufReader::new(match client.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let head = match read_head(&mut reader) {
        Ok(head) => head,
        Err(_) => return,
    };
    let mut client = client;
    let target = match parse(&head) {
        Ok(target) => target,
        Err(why) => {
            let _ = respond(&mut client, "400 Bad Request", &why);
            return;
        }
    };
    let (host, port) = match &target {
        Target::Tunnel { host, port } | Target::Plain { host, port, .. } => (host.clone(), *port),
    };
    let upstream = match open(policy, &host, port) {
        Ok(stream) => stream,
        Err((why, refused)) => {
            tracing::info!(host = %host, port, reason = %why, "browser: request not passed");
            let failure = Failure {
                host: host.to_ascii_lowercase(),
                why: why.clone(),
                refused,
            };
            let mut kept = failures.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() < KEPT_FAILURES && !kept.contains(&failure) {
                kept.push(failure);
            }
            drop(kept);
            // A tunnel refused is an error the browser shows as one; a
            // plain request answered with a page would be taken for the
            // site's own, so it gets no answer at all.
            if matches!(target, Target::Tunnel { .. }) {
                let _ = respond(&mut client, "403 Forbidden", &why);
            }
            return;
        }
    };
    let mut upstream = upstream;
    match target {
        Target::Tunnel { .. } => {
            if client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .is_err()
            {
                return;
            }
        }
        Target::Plain { head, .. } => {
            if upstream.write_all(&head).is_err() {
                return;
            }
        }
    }
    // What the browser already sent past the head (a body's start).
    let buffered = reader.buffer().to_vec();
    if !buffered.is_empty() && upstream.write_all(&buffered).is_err() {
        return;
    }
    relay(client, upstream);
}

/// Resolves, judges and connects: the connection goes only to an address
/// the policy allowed. The error says why, and whether the rules refused.
fn open(policy: &Policy, host: &str, port: u16) -> Result<TcpStream, (String, bool)> {
    let shown = format!("http://{}/", bracketed(host, port));
    let url =
        url::Url::parse(&shown).map_err(|e| (format!("{host} is not a host name: {e}"), true))?;
    policy.check_url(&url).map_err(|why| (why, true))?;
    let addrs: Vec<SocketAddr> = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .map_err(|e| (format!("{host} does not resolve: {e}"), false))?
        .collect();
    policy
        .check_resolved(host, port, &addrs)
        .map_err(|why| (why, true))?;
    let mut last = None;
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err((
        format!(
            "cannot connect to {}: {}",
            bracketed(host, port),
            last.map_or_else(|| "no address".to_owned(), |e| e.to_string())
        ),
        false,
    ))
}

fn bracketed(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn read_head(reader: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = reader
            .by_ref()
            .take((MAX_HEAD - head.len()) as u64)
            .read_until(b'\n', &mut head)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            return Ok(head);
        }
        if head.len() >= MAX_HEAD {
            return Err(io::ErrorKind::InvalidData.into());
        }
    }
}

/// Reads the request line and, for plain HTTP, rewrites the head: origin
/// form, no proxy headers, `Connection: close`.
fn parse(head: &[u8]) -> Result<Target, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8".to_owned())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("not an HTTP request line: {first:?}"));
    };
    if method == "CONNECT" {
        let (host, port) = split_authority(target, None)?;
        return Ok(Target::Tunnel { host, port });
    }
    let rest = target.strip_prefix("http://").ok_or_else(|| {
        format!("only http:// requests and CONNECT pass the proxy, not {target:?}")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let (host, port) = split_authority(authority, Some(80))?;
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
        ) {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Target::Plain {
        host,
        port,
        head: out.into_bytes(),
    })
}

fn split_authority(authority: &str, default_port: Option<u16>) -> Result<(String, u16), String> {
    let bad = || format!("not a host and port: {authority:?}");
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or_else(bad)?;
        (v6.to_owned(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    let port = match (port, default_port) {
        (Some(p), _) => p.parse().map_err(|_| bad())?,
        (None, Some(d)) => d,
        (None, None) => return Err(bad()),
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host, port))
}

fn respond(client: &mut TcpStream, status: &str, why: &str) -> io::Result<()> {
    let body = format!("hearth refused this request: {why}\n");
    write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Copies both ways until either side closes.
fn relay(client: TcpStream, upstream: TcpStream) {
    let _ = client.set_read_timeout(None);
    let (Ok(mut client_read), Ok(mut upstream_write)) = (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    let up = thread::Builder::new()
        .name("hearth-browser-up".into())
        .stack_size(STACK)
        .spawn(move || {
            let _ = io::copy(&mut client_read, &mut upstream_write);
            let _ = upstream_write.shutdown(Shutdown::Write);
        });
    let (mut upstream_read, mut client_write) = (upstream, client);
    let _ = io::copy(&mut upstream_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Both);
    if let Ok(up) = up {
        let _ = up.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_as_tunnels_or_one_plain_request_to_the_origin() {
        assert_eq!(
            parse(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
            Ok(Target::Tunnel {
                host: "example.com".into(),
                port: 443
            })
        );
        assert_eq!(
            parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"),
            Ok(Target::Tunnel {
                host: "::1".into(),
                port: 8443
            })
        );
        let Ok(Target::Plain { host, port, head }) = parse(
            b"GET http://site.test:8080/a?b=1 HTTP/1.1\r\nHost: site.test:8080\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n",
        ) else {
            panic!("not plain");
        };
        assert_eq!((host.as_str(), port), ("site.test", 8080));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: site.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        for bad in [
            &b"GET ftp://x/ HTTP/1.1\r\n\r\n"[..],
            b"CONNECT nohost HTTP/1.1\r\n\r\n",
            b"GARBAGE\r\n\r\n",
            b"CONNECT :443 HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn loopback_is_refused_unless_allowed_and_the_refusal_is_kept() {
        let site = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = site.local_addr().unwrap().port();
        thread::spawn(move || {
            for mut s in site.incoming().flatten() {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
            }
        });
        let ask = |proxy: &Proxy| {
            let mut s = TcpStream::connect(proxy.address()).unwrap();
            write!(
                s,
                "GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            .unwrap();
            let mut answer = String::new();
            s.read_to_string(&mut answer).unwrap();
            answer
        };
        let browser = Policy {
            plugin: "browser",
            ..Policy::default()
        };
        let closed = Proxy::start(browser.clone()).unwrap();
        assert_eq!(ask(&closed), "", "a refused plain request gets no answer");
        let why = closed.failure_for("127.0.0.1").unwrap();
        assert!(why.contains("loopback"), "{why}");
        assert!(why.contains("[plugins.browser] allow_hosts"), "{why}");
        assert_eq!(closed.take_refusals(), [why]);
        assert!(closed.take_refusals().is_empty(), "taken once");
        let mut tunnel = TcpStream::connect(closed.address()).unwrap();
        write!(tunnel, "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").unwrap();
        let mut answer = String::new();
        tunnel.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 403") && answer.contains("loopback"),
            "{answer}"
        );
        let open = Proxy::start(Policy {
            allow_hosts: vec![
                hearth_web::guard::AllowEntry::parse(&format!("127.0.0.1:{port}")).unwrap(),
            ],
            ..browser
        })
        .unwrap();
        let answer = ask(&open);
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("hi"),
            "{answer}"
        );
        assert!(open.take_refusals().is_empty());
    }
}
