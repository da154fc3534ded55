//! The driver's workers: the browser that stays on the canvas, the
//! browsers that come and go, the reader of Telegram's and Signal's
//! replies, and the control-socket client. Each reads on a thread of its
//! own, so a slow answer does not slow the sending loop.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::watch::{Problems, Tracker};
use crate::canvas::{Canvas, Frame, Ws};
use crate::fake_signal::FakeSignal;
use crate::fake_telegram::FakeTelegram;

/// A driver thread: `step` called until the soak stops.
pub(super) trait Worker: Send + 'static {
    fn step(&mut self);
}

pub(super) fn spawn(name: &str, mut worker: impl Worker, stop: &Arc<AtomicBool>) -> JoinHandle<()> {
    let stop = Arc::clone(stop);
    thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                worker.step();
            }
        })
        .expect("spawn a driver thread")
}

/// The browser that stays: sends the canvas's share of messages and reads
/// the answers.
pub(super) struct Browser {
    pub(super) canvas: Canvas,
    pub(super) socket: Option<Ws>,
    pub(super) outbox: Receiver<String>,
    pub(super) tracker: Arc<Tracker>,
    pub(super) problems: Arc<Problems>,
}

impl Worker for Browser {
    fn step(&mut self) {
        let ws = self.socket.get_or_insert_with(|| self.canvas.connect().0);
        while let Ok(frame) = self.outbox.try_recv() {
            ws.send(&frame);
        }
        match ws.try_next(Duration::from_millis(20)) {
            Some(Frame::Json(f)) if f["type"] == "message" && f["message"]["role"] == "agent" => {
                self.tracker
                    .answer_in(f["message"]["id"].as_str().unwrap_or_default());
            }
            Some(Frame::Json(f)) if f["type"] == "error" => {
                self.problems.note(format!("canvas error frame: {f}"));
            }
            Some(Frame::Closed(code, reason)) => {
                self.problems
                    .note(format!("the canvas closed the browser: {code} {reason}"));
                self.socket = None;
            }
            Some(Frame::Gone(why)) => {
                self.problems
                    .note(format!("the browser's socket broke: {why}"));
                self.socket = None;
            }
            _ => {}
        }
    }
}

/// Browsers that come and go: one arrives about every 1.5 s and stays for
/// three arrivals; every other one leaves with a close frame, the rest by
/// dropping the connection. They keep one of four cookies, as a browser
/// keeps its session, and log in afresh every tenth visit.
pub(super) struct Visitors {
    pub(super) canvas: Canvas,
    pub(super) problems: Arc<Problems>,
    pub(super) visits: Arc<AtomicUsize>,
    pub(super) open: VecDeque<Ws>,
    pub(super) cookies: Vec<String>,
    pub(super) next: Instant,
}

impl Worker for Visitors {
    fn step(&mut self) {
        if Instant::now() >= self.next {
            self.next = Instant::now() + Duration::from_millis(1500);
            self.visit();
        }
        let mut broken = Vec::new();
        for (i, ws) in self.open.iter_mut().enumerate() {
            while let Some(frame) = ws.try_next(Duration::from_millis(1)) {
                if let Frame::Closed(..) | Frame::Gone(_) = frame {
                    self.problems
                        .note(format!("a visiting browser was cut off: {frame:?}"));
                    broken.push(i);
                    break;
                }
            }
        }
        for i in broken.into_iter().rev() {
            self.open.remove(i);
        }
        thread::sleep(Duration::from_millis(50));
    }
}

impl Visitors {
    fn visit(&mut self) {
        let visit = self.visits.fetch_add(1, Ordering::SeqCst);
        let slot = visit % 4;
        if self.cookies.len() <= slot {
            self.cookies.push(self.canvas.login());
        } else if visit % 10 == 0 {
            self.cookies[slot] = self.canvas.login();
        }
        match self.canvas.ws_with(Some(&self.cookies[slot]), None) {
            Ok(ws) => self.open.push_back(ws),
            Err(status) => self
                .problems
                .note(format!("a visiting browser was refused: {status}")),
        }
        if self.open.len() > 3
            && let Some(leaving) = self.open.pop_front()
        {
            if visit % 2 == 0 {
                leaving.close();
            } else {
                drop(leaving);
            }
        }
    }
}

/// Reads Telegram's and Signal's sent messages as they come.
pub(super) struct Replies {
    pub(super) telegram: Arc<FakeTelegram>,
    pub(super) signal: Arc<FakeSignal>,
    pub(super) tracker: Arc<Tracker>,
    /// How many of each were read.
    pub(super) seen: (usize, usize),
}

impl Worker for Replies {
    fn step(&mut self) {
        let telegram = self.telegram.sent();
        for sent in &telegram[self.seen.0..] {
            self.tracker.answer_in(&sent.text);
        }
        let signal = self.signal.sent();
        for sent in &signal[self.seen.1..] {
            self.tracker.answer_in(&sent.message);
        }
        self.seen = (telegram.len(), signal.len());
        thread::sleep(Duration::from_millis(200));
    }
}

/// A control-socket client: sends the terminal's share of messages; a
/// thread reads the replies.
pub(super) struct Control {
    stream: UnixStream,
    subscribed: Vec<String>,
}

impl Control {
    pub(super) fn connect(
        home: &Path,
        tracker: &Arc<Tracker>,
        problems: &Arc<Problems>,
    ) -> Control {
        let mut stream =
            UnixStream::connect(home.join("hearth.sock")).expect("connect to the control socket");
        writeln!(stream, "{}", crate::control::hello(home)).expect("say hello");
        let reader = BufReader::new(stream.try_clone().expect("clone the socket"));
        let (tracker, problems) = (Arc::clone(tracker), Arc::clone(problems));
        thread::Builder::new()
            .name("soak-control".into())
            .spawn(move || {
                for line in reader.lines().map_while(Result::ok) {
                    let Ok(v) = serde_json::from_str::<Value>(&line) else {
                        problems.note(format!("control: not JSON: {line}"));
                        continue;
                    };
                    match v["op"].as_str() {
                        Some("reply") => tracker.answer_in(v["text"].as_str().unwrap_or_default()),
                        Some("error") => problems.note(format!("control: {line}")),
                        _ => {}
                    }
                }
            })
            .expect("spawn the control reader");
        Control {
            stream,
            subscribed: Vec::new(),
        }
    }

    pub(super) fn chat(&mut self, chat: &str, text: &str) {
        if !self.subscribed.iter().any(|c| c == chat) {
            self.send(&json!({"op": "subscribe", "chat": chat}));
            self.subscribed.push(chat.to_owned());
        }
        self.send(&json!({"op": "chat", "chat": chat, "text": text}));
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stream, "{message}").expect("write to the control socket");
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}
