//! The fake SMTP submission server (RFC 5321, AUTH from RFC 4954): EHLO,
//! AUTH PLAIN and LOGIN, one mail transaction after another, each stored
//! as a [`Sent`] unless the test asked for it to fail.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine;

use super::lock;
use crate::http_server::{accept_each, wait_until};

/// The name the server gives itself.
const HOST: &str = "smtp.fake.example";
/// The largest message it takes, as EHLO's SIZE says.
const MAX_SIZE: usize = 10_485_760;

/// A message the client submitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// The reverse path, `MAIL FROM:<...>` without its brackets.
    pub from: String,
    /// The forward paths, one per `RCPT TO:<...>`, without brackets.
    pub to: Vec<String>,
    /// The message as sent, dot-stuffing undone, ending with its last CRLF
    /// (not the `.` line).
    pub data: Vec<u8>,
}

/// The running fake SMTP server, on 127.0.0.1 in plain text; it stops
/// listening when dropped.
pub struct FakeSmtp {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    user: String,
    password: String,
    state: Mutex<State>,
    changed: Condvar,
    stopping: AtomicBool,
}

#[derive(Default)]
struct State {
    received: Vec<Sent>,
    /// Every command line, credentials hidden.
    commands: Vec<String>,
    /// The next this many DATA transactions fail with `fail_code`.
    failing: usize,
    fail_code: u16,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

impl FakeSmtp {
    /// Starts a server taking `user` and `password`.
    pub fn start(user: &str, password: &str) -> FakeSmtp {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake SMTP: bind");
        let addr = listener.local_addr().expect("fake SMTP: address");
        let shared = Arc::new(Shared {
            user: user.to_owned(),
            password: password.to_owned(),
            state: Mutex::default(),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::Builder::new()
            .name("fake-smtp-accept".into())
            .spawn(move || accept_each(&listener, &accepting, Shared::stopping, serve))
            .expect("fake SMTP: spawn");
        FakeSmtp {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Its address, 127.0.0.1 and the port.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every message accepted so far.
    pub fn received(&self) -> Vec<Sent> {
        self.shared.lock().received.clone()
    }

    /// Waits until at least `n` messages were accepted (or `timeout`
    /// passed); returns all of them.
    pub fn wait_received(&self, n: usize, timeout: Duration) -> Vec<Sent> {
        let state = self.shared.lock();
        let (state, _) = wait_until(&self.shared.changed, state, timeout, |s| {
            s.received.len() >= n
        });
        state.received.clone()
    }

    /// The next `n` transactions end, after their data, with `code`
    /// instead of 250: 451 for a transient failure, 550 for a permanent
    /// one (or any other code; 421 also closes the connection). They are
    /// not in [`FakeSmtp::received`].
    pub fn fail_next(&self, n: usize, code: u16) {
        let mut state = self.shared.lock();
        state.failing = n;
        state.fail_code = code;
    }

    /// Every command line received, in order; AUTH's credentials are
    /// `***`, and message data is not in it.
    pub fn commands(&self) -> Vec<String> {
        self.shared.lock().commands.clone()
    }
}

impl Drop for FakeSmtp {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let woken = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let (Ok(_), Some(acceptor)) = (woken, self.acceptor.take()) {
            // The accept loop never panics; a failed join has nothing to report.
            let _ = acceptor.join();
        }
    }
}

/// One connection: who it is and the mail transaction under way.
struct Session<'a> {
    shared: &'a Shared,
    reader: BufReader<TcpStream>,
    out: TcpStream,
    greeted: bool,
    authenticated: bool,
    from: Option<String>,
    to: Vec<String>,
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut session = Session {
        shared,
        reader: BufReader::new(stream.try_clone()?),
        out: stream,
        greeted: false,
        authenticated: false,
        from: None,
        to: Vec::new(),
    };
    session.reply(&format!("220 {HOST} ESMTP hearth's fake server ready"))?;
    while let Some(line) = session.line()? {
        if !session.command(&line)? {
            break;
        }
    }
    Ok(())
}

impl Session<'_> {
    /// Reads a line without its CRLF; `None` at the end of the connection.
    fn line(&mut self) -> io::Result<Option<String>> {
        let mut line = Vec::new();
        if self.reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        Ok(Some(String::from_utf8_lossy(&line).into_owned()))
    }

    fn reply(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(format!("{text}\r\n").as_bytes())
    }

    /// Runs one command; false when the session is over.
    fn command(&mut self, line: &str) -> io::Result<bool> {
        let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
        let verb = verb.to_ascii_uppercase();
        let logged = if verb == "AUTH" {
            let mechanism = rest.split(' ').next().unwrap_or_default();
            let secret = if rest.contains(' ') { " ***" } else { "" };
            format!("AUTH {mechanism}{secret}")
        } else {
            line.to_owned()
        };
        self.shared.lock().commands.push(logged);
        match verb.as_str() {
            "EHLO" | "HELO" if rest.trim().is_empty() => {
                self.reply("501 5.5.4 Syntax: EHLO hostname")?;
            }
            "EHLO" => {
                self.greeted = true;
                self.reset();
                self.reply(&format!(
                    "250-{HOST} Hello {rest}\r\n250-PIPELINING\r\n250-8BITMIME\r\n\
                     250-SMTPUTF8\r\n250-AUTH PLAIN LOGIN\r\n250 SIZE {MAX_SIZE}"
                ))?;
            }
            "HELO" => {
                self.greeted = true;
                self.reset();
                self.reply(&format!("250 {HOST}"))?;
            }
            "AUTH" => self.auth(rest)?,
            "MAIL" => self.mail(rest)?,
            "RCPT" => self.rcpt(rest)?,
            "DATA" => self.data()?,
            "RSET" => {
                self.reset();
                self.reply("250 2.0.0 Ok")?;
            }
            "NOOP" => self.reply("250 2.0.0 Ok")?,
            "QUIT" => {
                self.reply("221 2.0.0 Bye")?;
                return Ok(false);
            }
            _ => self.reply("500 5.5.2 Error: command not recognized")?,
        }
        Ok(true)
    }

    /// Ends the mail transaction under way.
    fn reset(&mut self) {
        self.from = None;
        self.to.clear();
    }

    /// AUTH PLAIN [initial] or AUTH LOGIN [user], with `334` challenges
    /// for what the command did not carry.
    fn auth(&mut self, rest: &str) -> io::Result<()> {
        if !self.greeted {
            return self.reply("503 5.5.1 Error: send HELO/EHLO first");
        }
        if self.authenticated {
            return self.reply("503 5.5.1 Error: already authenticated");
        }
        let mut words = rest.split_whitespace();
        let mechanism = words.next().unwrap_or_default().to_ascii_uppercase();
        let initial = words.next().map(str::to_owned);
        let credentials = match mechanism.as_str() {
            "PLAIN" => {
                let Some(response) = self.response(initial, "")? else {
                    return Ok(());
                };
                let parts: Vec<&[u8]> = response.split(|&b| b == 0).collect();
                match parts.as_slice() {
                    [authz, user, password] if authz.is_empty() || authz == user => {
                        Some((user.to_vec(), password.to_vec()))
                    }
                    _ => None,
                }
            }
            "LOGIN" => {
                // "Username:" and "Password:", base64.
                let Some(user) = self.response(initial, "VXNlcm5hbWU6")? else {
                    return Ok(());
                };
                let Some(password) = self.response(None, "UGFzc3dvcmQ6")? else {
                    return Ok(());
                };
                Some((user, password))
            }
            _ => return self.reply("504 5.5.4 Unrecognized authentication type"),
        };
        let expected = (
            self.shared.user.as_bytes().to_vec(),
            self.shared.password.as_bytes().to_vec(),
        );
        if credentials == Some(expected) {
            self.authenticated = true;
            self.reply("235 2.7.0 Authentication successful")
        } else {
            self.reply("535 5.7.8 Authentication credentials invalid")
        }
    }

    /// A SASL response, decoded: `initial` if the command held one, else
    /// the line after a `334 challenge`. `None` once the exchange ended
    /// (the client cancelled, or sent bad base64) and was answered.
    fn response(
        &mut self,
        initial: Option<String>,
        challenge: &str,
    ) -> io::Result<Option<Vec<u8>>> {
        let encoded = match initial {
            Some(initial) => initial,
            None => {
                self.reply(&format!("334 {challenge}"))?;
                let Some(line) = self.line()? else {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                };
                line
            }
        };
        match encoded.trim() {
            "*" => {
                self.reply("501 5.0.0 Authentication aborted")?;
                Ok(None)
            }
            "=" => Ok(Some(Vec::new())),
            text => match super::base64().decode(text) {
                Ok(decoded) => Ok(Some(decoded)),
                Err(_) => {
                    self.reply("501 5.5.2 Cannot decode response")?;
                    Ok(None)
                }
            },
        }
    }

    /// Whether a transaction may start: greeted and authenticated, else
    /// answered with why not.
    fn may_transact(&mut self) -> io::Result<bool> {
        if !self.greeted {
            self.reply("503 5.5.1 Error: send HELO/EHLO first")?;
            return Ok(false);
        }
        if !self.authenticated {
            self.reply("530 5.7.0 Authentication required")?;
            return Ok(false);
        }
        Ok(true)
    }

    /// MAIL FROM:<path> [SIZE=n] [BODY=8BITMIME|7BIT] [SMTPUTF8].
    fn mail(&mut self, rest: &str) -> io::Result<()> {
        if !self.may_transact()? {
            return Ok(());
        }
        if self.from.is_some() {
            return self.reply("503 5.5.1 Error: nested MAIL command");
        }
        let Some((path, params)) = path_after(rest, "FROM:") else {
            return self.reply("501 5.5.4 Syntax: MAIL FROM:<address>");
        };
        for param in params.split_whitespace() {
            let (key, value) = param.split_once('=').unwrap_or((param, ""));
            match key.to_ascii_uppercase().as_str() {
                "SIZE" => {
                    if value.parse::<usize>().is_ok_and(|size| size > MAX_SIZE) {
                        return self.reply("552 5.3.4 Message size exceeds fixed limit");
                    }
                }
                "BODY"
                    if value.eq_ignore_ascii_case("8BITMIME")
                        || value.eq_ignore_ascii_case("7BIT") => {}
                "SMTPUTF8" => {}
                _ => return self.reply("555 5.5.4 Unsupported option"),
            }
        }
        self.from = Some(path);
        self.reply("250 2.1.0 Ok")
    }

    /// RCPT TO:<path>.
    fn rcpt(&mut self, rest: &str) -> io::Result<()> {
        if !self.may_transact()? {
            return Ok(());
        }
        if self.from.is_none() {
            return self.reply("503 5.5.1 Error: need MAIL command");
        }
        match path_after(rest, "TO:") {
            Some((path, _)) if !path.is_empty() => {
                self.to.push(path);
                self.reply("250 2.1.5 Ok")
            }
            _ => self.reply("501 5.5.4 Syntax: RCPT TO:<address>"),
        }
    }

    /// DATA: `354`, then the message up to the line that is a lone `.`.
    fn data(&mut self) -> io::Result<()> {
        if !self.may_transact()? {
            return Ok(());
        }
        if self.from.is_none() {
            return self.reply("503 5.5.1 Error: need MAIL command");
        }
        if self.to.is_empty() {
            return self.reply("554 5.5.1 Error: no valid recipients");
        }
        self.reply("354 End data with <CR><LF>.<CR><LF>")?;
        let mut data = Vec::new();
        loop {
            let mut line = Vec::new();
            if self.reader.read_until(b'\n', &mut line)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            if line == b".\r\n" || line == b".\n" {
                break;
            }
            // Dot-stuffing (RFC 5321 section 4.5.2): a leading "." was doubled.
            let line = line.strip_prefix(b".").unwrap_or(&line);
            data.extend_from_slice(line);
        }
        let sent = Sent {
            from: self.from.take().unwrap_or_default(),
            to: std::mem::take(&mut self.to),
            data,
        };
        let mut state = self.shared.lock();
        if state.failing > 0 {
            state.failing -= 1;
            let code = state.fail_code;
            drop(state);
            self.reply(&failure(code))?;
            if code == 421 {
                // 421 closes the channel (RFC 5321 section 3.8).
                return Err(io::ErrorKind::ConnectionAborted.into());
            }
            return Ok(());
        }
        if sent.data.len() > MAX_SIZE {
            drop(state);
            return self.reply("552 5.3.4 Message size exceeds fixed limit");
        }
        state.received.push(sent);
        let count = state.received.len();
        self.shared.changed.notify_all();
        drop(state);
        self.reply(&format!("250 2.0.0 Ok: queued as FAKE{count:05}"))
    }
}

/// The reply a failing transaction gets.
fn failure(code: u16) -> String {
    match code {
        421 => "421 4.3.2 Service not available, closing channel".into(),
        450 | 451 => format!("{code} 4.3.0 Temporary failure, try again later"),
        452 => "452 4.3.1 Insufficient system storage".into(),
        550 => "550 5.7.1 Message rejected".into(),
        552 => "552 5.3.4 Message size exceeds fixed limit".into(),
        554 => "554 5.6.0 Transaction failed".into(),
        400..=499 => format!("{code} 4.0.0 Temporary failure"),
        _ => format!("{code} 5.0.0 Failed"),
    }
}

/// The path in `FROM:<path> params` (or `TO:`): the address without its
/// brackets, and what follows it.
fn path_after(rest: &str, prefix: &str) -> Option<(String, String)> {
    let head = rest.get(..prefix.len())?;
    if !head.eq_ignore_ascii_case(prefix) {
        return None;
    }
    let after = rest[prefix.len()..].trim_start();
    let inner = after.strip_prefix('<')?;
    let close = inner.find('>')?;
    Some((
        inner[..close].to_owned(),
        inner[close + 1..].trim().to_owned(),
    ))
}
