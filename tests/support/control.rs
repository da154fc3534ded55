//! A session on a running daemon's control socket: hello once (with the
//! control token, as the owner's CLI sends it), then one JSON request and
//! its answer per call, for tests that ask many times. [`hello`] is the
//! hello line for tests that talk to the socket their own way.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use hearth::daemon::control::protocol::VERSION;
use hearth::daemon::control::{SOCKET, TOKEN_FILE};
use serde_json::{Value, json};

/// The hello the owner's client sends to the daemon of `home`: this
/// version, and the token the daemon wrote at its start.
pub fn hello(home: &Path) -> Value {
    json!({ "op": "hello", "version": VERSION, "token": token(home) })
}

/// The control token of the daemon running in `home`.
pub fn token(home: &Path) -> String {
    std::fs::read_to_string(home.join(TOKEN_FILE))
        .expect("read the control token")
        .trim()
        .to_owned()
}

/// One connection, past its hello.
pub struct Control {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Control {
    /// Connects to the daemon of `home` and says hello.
    pub fn open(home: &Path) -> Control {
        let mut control = Control::connect(home);
        let hello = control.ask(&hello(home));
        assert_eq!(hello["op"], "hello", "{hello}");
        control
    }

    /// Connects to the daemon of `home` without a hello.
    pub fn connect(home: &Path) -> Control {
        let stream = UnixStream::connect(home.join(SOCKET)).expect("connect to the daemon");
        let writer = stream.try_clone().expect("clone the socket");
        Control {
            reader: BufReader::new(stream),
            writer,
        }
    }

    /// Sends `request` and returns the next answer.
    pub fn ask(&mut self, request: &Value) -> Value {
        writeln!(self.writer, "{request}").expect("send a request");
        self.answer()
            .unwrap_or_else(|| panic!("the daemon closed the connection after {request}"))
    }

    /// The next answer, or `None` once the daemon closed the connection.
    pub fn answer(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))),
        }
    }
}
