//! A session on a running daemon's control socket: hello once, then one
//! JSON request and its answer per call, for tests that ask many times.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use serde_json::{Value, json};

/// One connection, past its hello.
pub struct Control {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Control {
    /// Connects to the daemon of `home` and says hello.
    pub fn open(home: &Path) -> Control {
        let stream = UnixStream::connect(home.join("hearth.sock")).expect("connect to the daemon");
        let writer = stream.try_clone().expect("clone the socket");
        let mut control = Control {
            reader: BufReader::new(stream),
            writer,
        };
        let hello = control.ask(&json!({ "op": "hello", "version": 2 }));
        assert_eq!(hello["op"], "hello", "{hello}");
        control
    }

    /// Sends `request` and returns the next answer.
    pub fn ask(&mut self, request: &Value) -> Value {
        writeln!(self.writer, "{request}").expect("send a request");
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read an answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}
