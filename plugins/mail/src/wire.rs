//! The IMAP connection's bytes: TCP, protected by TLS from the first byte or
//! after STARTTLS, or plain text to a loopback address only (the config
//! refuses it anywhere else). Certificates are checked by the platform's
//! verifier, as for every other HTTPS call hearth makes.
//!
//! A clone of the socket is kept so another thread can shut it down: that
//! is how a plugin stopping wakes a session blocked in IDLE.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::config::{Security, Server};

/// How long connecting and each read may take outside IDLE.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// One connection to the server.
pub enum Wire {
    /// Plain text (loopback only).
    Plain(TcpStream),
    /// TLS.
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

/// Why a connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The server could not be reached.
    #[error("cannot reach {0}: {1}")]
    Connect(String, io::Error),
    /// TLS could not be set up.
    #[error("TLS with {0} failed: {1}")]
    Tls(String, String),
    /// The server refused STARTTLS, so nothing is said in clear text.
    #[error("{0} refused STARTTLS ({1}), and hearth does not send mail passwords in clear text")]
    NoStartTls(String, String),
}

/// Connects to `server`; the second value is a handle that can shut the
/// socket down from another thread. With `Security::StartTls` the greeting
/// has been read and TLS is up; otherwise the greeting is still to read.
pub fn connect(server: &Server) -> Result<(Wire, TcpStream, bool), WireError> {
    let name = format!("{}:{}", server.host, server.port);
    let tcp = TcpStream::connect((server.host.as_str(), server.port))
        .map_err(|e| WireError::Connect(name.clone(), e))?;
    let _ = tcp.set_read_timeout(Some(IO_TIMEOUT));
    let _ = tcp.set_write_timeout(Some(IO_TIMEOUT));
    let handle = tcp
        .try_clone()
        .map_err(|e| WireError::Connect(name.clone(), e))?;
    match server.security {
        Security::Plain => Ok((Wire::Plain(tcp), handle, false)),
        Security::Tls => Ok((tls(&server.host, tcp)?, handle, false)),
        Security::StartTls => {
            let tcp = start_tls(&name, tcp)?;
            Ok((tls(&server.host, tcp)?, handle, true))
        }
    }
}

/// Shuts `handle`'s socket down, waking whatever reads from it.
pub fn hang_up(handle: &TcpStream) {
    let _ = handle.shutdown(Shutdown::Both);
}

fn tls(host: &str, tcp: TcpStream) -> Result<Wire, WireError> {
    use rustls_platform_verifier::ConfigVerifierExt;
    let config = ClientConfig::with_platform_verifier()
        .map_err(|e| WireError::Tls(host.into(), e.to_string()))?;
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| WireError::Tls(host.into(), e.to_string()))?;
    let connection = ClientConnection::new(Arc::new(config), name)
        .map_err(|e| WireError::Tls(host.into(), e.to_string()))?;
    Ok(Wire::Tls(Box::new(StreamOwned::new(connection, tcp))))
}

/// Reads the greeting and asks for STARTTLS; the socket once the server
/// said yes.
fn start_tls(name: &str, tcp: TcpStream) -> Result<TcpStream, WireError> {
    let io = |e: io::Error| WireError::Connect(name.into(), e);
    let mut reader = BufReader::new(tcp.try_clone().map_err(io)?);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(io)?;
    if !line.starts_with("* OK") {
        return Err(WireError::NoStartTls(name.into(), line.trim().to_owned()));
    }
    (&tcp).write_all(b"s0 STARTTLS\r\n").map_err(io)?;
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(io)? == 0 {
            return Err(WireError::NoStartTls(name.into(), "closed".into()));
        }
        if let Some(answer) = line.strip_prefix("s0 ") {
            if answer.starts_with("OK") {
                // Nothing may follow the OK before the handshake: a server
                // that pipelines more is refused rather than read.
                if !reader.buffer().is_empty() {
                    return Err(WireError::NoStartTls(
                        name.into(),
                        "bytes sent before the TLS handshake".into(),
                    ));
                }
                return Ok(tcp);
            }
            return Err(WireError::NoStartTls(name.into(), answer.trim().to_owned()));
        }
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(s) => s.read(buf),
            Wire::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(s) => s.write(buf),
            Wire::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Wire::Plain(s) => s.flush(),
            Wire::Tls(s) => s.flush(),
        }
    }
}

impl imap::extensions::idle::SetReadTimeout for Wire {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> imap::Result<()> {
        let socket = match self {
            Wire::Plain(s) => &*s,
            Wire::Tls(s) => s.get_ref(),
        };
        // Back to the usual timeout rather than none: a dead server must
        // not hang the watcher.
        socket
            .set_read_timeout(timeout.or(Some(IO_TIMEOUT)))
            .map_err(imap::Error::Io)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    use super::*;

    /// A server that greets, reads one line and answers `answer`.
    fn server(answer: &'static str) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            socket.write_all(b"* OK ready\r\n").unwrap();
            let mut line = String::new();
            BufReader::new(socket.try_clone().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line, "s0 STARTTLS\r\n");
            socket.write_all(answer.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(200));
        });
        Server {
            host: "127.0.0.1".into(),
            port,
            security: Security::StartTls,
        }
    }

    #[test]
    fn a_server_that_will_not_start_tls_gets_no_password() {
        for answer in [
            "s0 NO STARTTLS not here\r\n",
            "s0 BAD what\r\n",
            // An injected answer before the handshake (the STARTTLS
            // command-injection attack) is refused, not read after TLS.
            "s0 OK begin\r\n* OK injected\r\n",
        ] {
            match connect(&server(answer)) {
                Err(WireError::NoStartTls(..)) => {}
                Err(other) => panic!("{answer:?}: {other}"),
                Ok(_) => panic!("{answer:?}: connected"),
            }
        }
    }
}
