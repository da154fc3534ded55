//! Talking to a running canvas the way a browser does: HTTP with the
//! session cookie, and a WebSocket that can also send frames no browser
//! would (bad UTF-8, oversized, binary), for the hostile-input tests.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::{Message, WebSocket};

/// A canvas config section listening on a free port.
pub const CONFIG: &str = "[plugins.canvas]\nlisten = \"127.0.0.1:0\"\n";

/// A running canvas, found through the files it leaves in the home.
pub struct Canvas {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The login token.
    pub token: String,
}

/// One HTTP answer.
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// A browser-like WebSocket client.
pub struct Ws {
    socket: WebSocket<TcpStream>,
}

/// What a WebSocket read gave.
#[derive(Debug)]
pub enum Frame {
    /// A JSON text frame.
    Json(Value),
    /// The server closed, with this code and reason.
    Closed(u16, String),
    /// The connection ended without a close frame.
    Gone(String),
}

impl Canvas {
    /// The canvas of the daemon running in `home` (waits for it to listen).
    pub fn of(home: &Path) -> Canvas {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let addr = std::fs::read_to_string(home.join("canvas.addr")).ok();
            let token = std::fs::read_to_string(home.join("canvas.token")).ok();
            if let (Some(addr), Some(token)) = (addr, token)
                && let Ok(addr) = addr.trim().parse()
            {
                return Canvas {
                    addr,
                    token: token.trim().to_owned(),
                };
            }
            assert!(
                Instant::now() < deadline,
                "the canvas did not start in {}",
                home.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://<addr>`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The login link.
    pub fn login_url(&self) -> String {
        format!("{}/login?token={}", self.base(), self.token)
    }

    /// Logs in and returns the `Cookie` header value to send.
    pub fn login(&self) -> String {
        let answer = self.get(&format!("/login?token={}", self.token), None);
        assert_eq!(answer.status, 303, "login failed: {}", answer.text());
        let cookie = answer.header("set-cookie").expect("a session cookie");
        cookie.split(';').next().expect("name=value").to_owned()
    }

    /// `GET path`, with a cookie header when given.
    pub fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        self.request("GET", path, cookie, &[], b"")
    }

    /// One HTTP/1.1 request, raw, so tests see exactly what a browser gets.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let host = self.addr.to_string();
        self.request_to(Some(&host), method, path, cookie, headers, body)
    }

    /// As [`Canvas::request`], with this `Host` header (none when `None`):
    /// what a browser sends after DNS rebinding.
    pub fn request_to(
        &self,
        host: Option<&str>,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let stream = TcpStream::connect(self.addr).expect("connect to the canvas");
        exchange(stream, host, method, path, cookie, headers, body)
    }

    /// As [`Canvas::request`], sent from the local address `from` (any of
    /// 127.0.0.0/8): a client at another address, for the brakes that
    /// count per address.
    pub fn request_from(
        &self,
        from: Ipv4Addr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let stream = connect_from(from, self.addr);
        let host = self.addr.to_string();
        exchange(stream, Some(&host), method, path, None, headers, body)
    }

    /// `POST /login` with the form field `token`, from `from`.
    pub fn login_form_from(&self, from: Ipv4Addr, token: &str) -> Answer {
        self.request_from(
            from,
            "POST",
            "/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            format!("token={token}").as_bytes(),
        )
    }

    /// Opens the WebSocket with `cookie` and `origin` (the page's own when
    /// `None`); `Err` carries the refusal.
    pub fn ws_with(&self, cookie: Option<&str>, origin: Option<&str>) -> Result<Ws, u16> {
        let own = self.base();
        self.ws_to(&self.addr.to_string(), cookie, origin.unwrap_or(&own))
    }

    /// Opens the WebSocket sent with this `Host`, `cookie` and `origin`;
    /// `Err` carries the refusal.
    pub fn ws_to(&self, host: &str, cookie: Option<&str>, origin: &str) -> Result<Ws, u16> {
        let stream = TcpStream::connect(self.addr).expect("connect to the canvas");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        // The client writes `Host` from the URL; the stream goes to the
        // canvas whatever the URL names.
        let mut request = tungstenite::ClientRequestBuilder::new(
            format!("ws://{host}/ws").parse().expect("ws uri"),
        )
        .with_header("Origin", origin);
        if let Some(cookie) = cookie {
            request = request.with_header("Cookie", cookie);
        }
        match tungstenite::client(request, stream) {
            Ok((socket, _)) => Ok(Ws { socket }),
            Err(tungstenite::handshake::HandshakeError::Failure(tungstenite::Error::Http(
                response,
            ))) => Err(response.status().as_u16()),
            Err(e) => panic!("WebSocket handshake broke: {e}"),
        }
    }

    /// Logs in and opens the WebSocket; returns it after the `hello`.
    pub fn connect(&self) -> (Ws, Value) {
        let cookie = self.login();
        let mut ws = self.ws_with(Some(&cookie), None).expect("WebSocket opens");
        let hello = ws.next_json(Duration::from_secs(10));
        assert_eq!(hello["type"], "hello", "{hello}");
        (ws, hello)
    }
}

/// Sends one request on `stream` and reads the whole answer.
fn exchange(
    mut stream: TcpStream,
    host: Option<&str>,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(host) = host {
        head.push_str(&format!("Host: {host}\r\n"));
    }
    if let Some(cookie) = cookie {
        head.push_str(&format!("Cookie: {cookie}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("send the request");
    // The server may answer (413, 401) before taking the whole body.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    Answer::parse(&raw)
}

/// A TCP connection to `to` from the local address `from`: std binds the
/// source only through the kernel's choice, so this goes through libc.
fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let SocketAddr::V4(to) = to else {
        panic!("the canvas listens on IPv4 in these tests, not {to}");
    };
    let sockaddr = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, and sockaddr_in values that live across
    // the calls that read them; the descriptor is owned by the TcpStream
    // made from it, or closed here on failure.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let local = sockaddr(from, 0);
        let remote = sockaddr(*to.ip(), to.port());
        let bound = libc::bind(fd, (&raw const local).cast(), len);
        let connected = bound == 0 && libc::connect(fd, (&raw const remote).cast(), len) == 0;
        if !connected {
            let error = std::io::Error::last_os_error();
            libc::close(fd);
            panic!("connect from {from} to {to}: {error}");
        }
        <TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd)
    }
}

impl Answer {
    fn parse(raw: &[u8]) -> Answer {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("an HTTP head");
        let head = String::from_utf8_lossy(&raw[..split]);
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        if headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
        {
            body = dechunk(&body);
        }
        Answer {
            status,
            headers,
            body,
        }
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Ws {
    /// Sends a text frame.
    pub fn send(&mut self, text: &str) {
        self.socket
            .send(Message::text(text))
            .expect("send a text frame");
    }

    /// Sends one raw, masked frame: any opcode, any payload, valid or not.
    pub fn send_raw(&mut self, opcode: u8, payload: &[u8]) {
        let mut frame = vec![0x80 | opcode];
        let len = payload.len();
        if len < 126 {
            frame.push(0x80 | len as u8);
        } else if len <= u16::MAX as usize {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(len as u64).to_be_bytes());
        }
        let mask = [0x37, 0xfa, 0x21, 0x3d];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        let stream = self.socket.get_mut();
        let _ = stream.write_all(&frame);
        let _ = stream.flush();
    }

    /// The next frame the server sends.
    pub fn next(&mut self, timeout: Duration) -> Frame {
        let _ = self.socket.get_mut().set_read_timeout(Some(timeout));
        loop {
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    return Frame::Json(
                        serde_json::from_str(&text).expect("server frames are JSON"),
                    );
                }
                Ok(Message::Close(frame)) => {
                    return match frame {
                        Some(f) => Frame::Closed(u16::from(f.code), f.reason.to_string()),
                        None => Frame::Closed(u16::from(CloseCode::Status), String::new()),
                    };
                }
                Ok(_) => continue,
                Err(e) => return Frame::Gone(e.to_string()),
            }
        }
    }

    /// The next frame if one comes within `timeout`; `None` when none
    /// did, the socket still usable (for clients that poll several
    /// sockets, or send between reads).
    pub fn try_next(&mut self, timeout: Duration) -> Option<Frame> {
        let _ = self.socket.get_mut().set_read_timeout(Some(timeout));
        loop {
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    return Some(Frame::Json(
                        serde_json::from_str(&text).expect("server frames are JSON"),
                    ));
                }
                Ok(Message::Close(frame)) => {
                    let (code, reason) = frame
                        .map_or((u16::from(CloseCode::Status), String::new()), |f| {
                            (u16::from(f.code), f.reason.to_string())
                        });
                    return Some(Frame::Closed(code, reason));
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None;
                }
                Err(e) => return Some(Frame::Gone(e.to_string())),
            }
        }
    }

    /// Closes the WebSocket as a browser leaving the page does.
    pub fn close(mut self) {
        let _ = self.socket.close(None);
        let _ = self.socket.flush();
    }

    /// The next JSON frame; panics on anything else.
    pub fn next_json(&mut self, timeout: Duration) -> Value {
        match self.next(timeout) {
            Frame::Json(v) => v,
            other => panic!("expected a JSON frame, got {other:?}"),
        }
    }

    /// The TCP stream under the WebSocket, for benchmarks that read many
    /// sockets from one thread.
    pub fn into_stream(self) -> TcpStream {
        self.socket.into_inner()
    }

    /// Reads frames until one satisfies `pred`; returns it.
    pub fn wait_for(&mut self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for a frame");
            let frame = self.next_json(left);
            if pred(&frame) {
                return frame;
            }
        }
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&body[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        out.extend_from_slice(&body[start..(start + size).min(body.len())]);
        body = &body[(start + size + 2).min(body.len())..];
    }
    out
}
