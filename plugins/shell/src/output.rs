//! Capping what a command prints, in bounded memory.
//!
//! While both streams stay within the caps (lines and bytes, per stream),
//! the result carries them whole. Once either goes over, the whole output
//! of both streams goes to `$HEARTH_HOME/logs/exec-<id>.log` (lines in the
//! order they arrived, as a terminal would show them), and the result
//! carries, for each stream over its cap, its first and last lines with a
//! marker saying how many lines were left out; a stream still within the
//! caps is carried whole. The model can then `read_file` the log.
//!
//! Nothing here grows with the output: a stream's full text is kept only
//! while it is within the cap, the head and tail are bounded in lines and
//! bytes (a very long line keeps its start and a count of the bytes cut),
//! and after the spill complete lines go straight to the file.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// `max_output_lines` when the config does not set it.
pub const DEFAULT_MAX_LINES: u64 = 200;
/// `max_output_bytes` when the config does not set it.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024;

/// The caps on one stream, from which the head and tail sizes follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// More lines than this, and the stream is capped.
    pub max_lines: u64,
    /// More bytes than this, and the stream is capped.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// Lines kept from the start of a capped stream (50 by default).
    pub fn head_lines(&self) -> usize {
        (self.max_lines / 4).max(1) as usize
    }

    /// Lines kept from the end of a capped stream (100 by default).
    pub fn tail_lines(&self) -> usize {
        (self.max_lines / 2).max(1) as usize
    }

    fn head_bytes(&self) -> usize {
        (self.max_bytes / 4) as usize
    }

    fn tail_bytes(&self) -> usize {
        (self.max_bytes / 2) as usize
    }

    /// The longest line kept in a head or tail; the rest is counted.
    fn line_cap(&self) -> usize {
        self.head_bytes().clamp(1, MAX_LINE_BYTES)
    }
}

/// Which of a command's output streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout = 0,
    /// Standard error.
    Stderr = 1,
}

/// A command's output as it arrives.
pub struct Capture {
    limits: Limits,
    log_dir: PathBuf,
    streams: [StreamCapture; 2],
    log: Log,
}

/// What the result says about the output.
#[derive(Debug)]
pub struct Captured {
    /// Standard output, whole or head + marker + tail.
    pub stdout: String,
    /// Standard error, whole or head + marker + tail.
    pub stderr: String,
    /// Whether the output went over a cap (and to the log).
    pub truncated: bool,
    /// The log holding everything, when truncated.
    pub log: Option<PathBuf>,
    /// Why the log could not be written, if it could not.
    pub log_error: Option<String>,
    /// Lines and bytes of each stream, in full.
    pub totals: [(u64, u64); 2],
}

impl Captured {
    /// The fields a result carries for the output.
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        let mut fields = vec![
            ("stdout", Value::from(self.stdout.as_str())),
            ("stderr", Value::from(self.stderr.as_str())),
            ("truncated", Value::from(self.truncated)),
        ];
        if self.truncated {
            let total = |(lines, bytes): (u64, u64)| json!({ "lines": lines, "bytes": bytes });
            fields.push((
                "total",
                json!({ "stdout": total(self.totals[0]), "stderr": total(self.totals[1]) }),
            ));
        }
        if let Some(log) = &self.log {
            fields.push(("log", Value::from(log.display().to_string())));
        }
        if let Some(error) = &self.log_error {
            fields.push(("log_error", Value::from(error.as_str())));
        }
        fields
    }
}

impl Capture {
    /// An empty capture; a log, if needed, goes in `log_dir`.
    pub fn new(limits: Limits, log_dir: &Path) -> Capture {
        Capture {
            limits,
            log_dir: log_dir.to_owned(),
            streams: [StreamCapture::new(), StreamCapture::new()],
            log: Log::Pending(Vec::new()),
        }
    }

    /// Takes the next bytes of `stream`.
    pub fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let limits = self.limits;
        let over = self.streams[stream as usize].take(bytes, &limits);
        self.log_bytes(stream, bytes);
        if over {
            self.spill();
        }
    }

    /// The output once both streams have ended.
    pub fn finish(mut self) -> Captured {
        let limits = self.limits;
        for index in 0..2 {
            let rest = std::mem::take(&mut self.streams[index].partial);
            self.log.write(&rest);
            self.streams[index].end(&limits);
        }
        let (truncated, log, log_error) = match self.log {
            Log::Pending(_) => (false, None, None),
            Log::Open { mut file, path } => match file.flush() {
                Ok(()) => (true, Some(path), None),
                Err(e) => (
                    true,
                    Some(path),
                    Some(format!("the log is incomplete: {e}")),
                ),
            },
            Log::Failed { path, error } => (true, path, Some(error)),
        };
        let [out, err] = &self.streams;
        let hint = if log.is_some() {
            "the whole output is in the log"
        } else {
            "the log could not be written"
        };
        Captured {
            stdout: out.render(hint),
            stderr: err.render(hint),
            truncated,
            log,
            log_error,
            totals: [out.totals(), err.totals()],
        }
    }

    /// Appends `bytes` of `stream` to the log, whole lines at a time so the
    /// two streams interleave by line.
    fn log_bytes(&mut self, stream: Stream, bytes: &[u8]) {
        let capture = &mut self.streams[stream as usize];
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(end) => {
                let partial = std::mem::take(&mut capture.partial);
                self.log.write(&partial);
                self.log.write(&bytes[..=end]);
                self.streams[stream as usize]
                    .partial
                    .extend_from_slice(&bytes[end + 1..]);
            }
            None => {
                capture.partial.extend_from_slice(bytes);
                // A line without end: write it out rather than hold it.
                if capture.partial.len() > MAX_PARTIAL {
                    let partial = std::mem::take(&mut capture.partial);
                    self.log.write(&partial);
                }
            }
        }
    }

    /// Moves what the log holds in memory to a new file.
    fn spill(&mut self) {
        let Log::Pending(held) = &mut self.log else {
            return;
        };
        let held = std::mem::take(held);
        self.log = match new_log_file(&self.log_dir) {
            Ok((file, path)) => Log::Open {
                file: BufWriter::with_capacity(64 * 1024, file),
                path,
            },
            Err(error) => Log::Failed { path: None, error },
        };
        self.log.write(&held);
    }
}

/// The longest line a head or tail keeps whole.
const MAX_LINE_BYTES: usize = 2048;
/// The longest unfinished line held for the log before it is written.
const MAX_PARTIAL: usize = 64 * 1024;

/// Where the whole output goes.
enum Log {
    /// Nothing over the caps yet: both streams' complete lines, in order.
    Pending(Vec<u8>),
    /// Spilled to this file.
    Open {
        file: BufWriter<File>,
        path: PathBuf,
    },
    /// The file could not be created or written.
    Failed {
        path: Option<PathBuf>,
        error: String,
    },
}

impl Log {
    fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match self {
            Log::Pending(held) => held.extend_from_slice(bytes),
            Log::Open { file, path } => {
                if let Err(e) = file.write_all(bytes) {
                    *self = Log::Failed {
                        path: Some(path.clone()),
                        error: format!("the log is incomplete: {e}"),
                    };
                }
            }
            Log::Failed { .. } => {}
        }
    }
}

/// One line of a head or tail, cut to the line cap.
struct Line {
    text: Vec<u8>,
    cut: u64,
    index: u64,
    ended: bool,
}

/// One stream's counts, whole text (while within the caps), head and tail.
struct StreamCapture {
    bytes: u64,
    newlines: u64,
    whole: Option<Vec<u8>>,
    partial: Vec<u8>,
    head: Vec<Line>,
    head_bytes: usize,
    head_closed: bool,
    tail: VecDeque<Line>,
    tail_bytes: usize,
    current: Line,
}

impl StreamCapture {
    fn new() -> StreamCapture {
        StreamCapture {
            bytes: 0,
            newlines: 0,
            whole: Some(Vec::new()),
            partial: Vec::new(),
            head: Vec::new(),
            head_bytes: 0,
            head_closed: false,
            tail: VecDeque::new(),
            tail_bytes: 0,
            current: Line::new(0),
        }
    }

    /// Takes `bytes`; true when this push took the stream over a cap.
    fn take(&mut self, bytes: &[u8], limits: &Limits) -> bool {
        self.bytes += bytes.len() as u64;
        if let Some(whole) = &mut self.whole {
            whole.extend_from_slice(bytes);
        }
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            self.current.append(&rest[..at], limits.line_cap());
            self.current.ended = true;
            self.newlines += 1;
            self.end_line(limits);
            rest = &rest[at + 1..];
        }
        self.current.append(rest, limits.line_cap());
        let (lines, bytes) = self.totals();
        if self.whole.is_some() && (lines > limits.max_lines || bytes > limits.max_bytes) {
            self.whole = None;
            return true;
        }
        false
    }

    /// Ends the stream: an unfinished last line still counts.
    fn end(&mut self, limits: &Limits) {
        if !self.current.is_empty() {
            self.end_line(limits);
        }
    }

    /// Lines (an unfinished last one included) and bytes so far.
    fn totals(&self) -> (u64, u64) {
        let unfinished = u64::from(!self.current.is_empty());
        (self.newlines + unfinished, self.bytes)
    }

    fn end_line(&mut self, limits: &Limits) {
        let next = Line::new(self.current.index + 1);
        let line = std::mem::replace(&mut self.current, next);
        if !self.head_closed {
            if self.head.len() < limits.head_lines()
                && self.head_bytes + line.text.len() <= limits.head_bytes()
            {
                self.head_bytes += line.text.len();
                self.head.push(line.clone_line());
            } else {
                self.head_closed = true;
            }
        }
        self.tail_bytes += line.text.len();
        self.tail.push_back(line);
        while self.tail.len() > limits.tail_lines() || self.tail_bytes > limits.tail_bytes() {
            match self.tail.pop_front() {
                Some(old) => self.tail_bytes -= old.text.len(),
                None => break,
            }
        }
    }

    fn render(&self, hint: &str) -> String {
        if let Some(whole) = &self.whole {
            return String::from_utf8_lossy(whole).into_owned();
        }
        let kept_head = self.head.len() as u64;
        let tail: Vec<&Line> = self.tail.iter().filter(|l| l.index >= kept_head).collect();
        let (lines, _) = self.totals();
        let omitted = lines.saturating_sub(kept_head + tail.len() as u64);
        let mut out = String::new();
        for line in &self.head {
            line.render_into(&mut out);
        }
        if omitted > 0 {
            out.push_str(&format!("… {omitted} lines omitted; {hint} …\n"));
        }
        for line in tail {
            line.render_into(&mut out);
        }
        out
    }
}

impl Line {
    fn new(index: u64) -> Line {
        Line {
            text: Vec::new(),
            cut: 0,
            index,
            ended: false,
        }
    }

    fn is_empty(&self) -> bool {
        self.text.is_empty() && self.cut == 0
    }

    fn append(&mut self, bytes: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.text.len()).min(bytes.len());
        self.text.extend_from_slice(&bytes[..room]);
        self.cut += (bytes.len() - room) as u64;
    }

    fn clone_line(&self) -> Line {
        Line {
            text: self.text.clone(),
            cut: self.cut,
            index: self.index,
            ended: self.ended,
        }
    }

    fn render_into(&self, out: &mut String) {
        out.push_str(&String::from_utf8_lossy(&self.text));
        if self.cut > 0 {
            out.push_str(&format!(" …[{} more bytes]", self.cut));
        }
        if self.ended {
            out.push('\n');
        }
    }
}

/// Creates `exec-<ms>-<pid>-<n>.log` in `dir` (and `dir` itself); the name
/// is unique across this process's calls and other hearth processes.
fn new_log_file(dir: &Path) -> Result<(File, PathBuf), String> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the log folder {}: {e}", dir.display()))?;
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("exec-{ms}-{}-{n}.log", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create the log {}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(limits: Limits, dir: &Path, out: &[&[u8]], err: &[&[u8]]) -> Captured {
        let mut c = Capture::new(limits, dir);
        for i in 0..out.len().max(err.len()) {
            if let Some(o) = out.get(i) {
                c.push(Stream::Stdout, o);
            }
            if let Some(e) = err.get(i) {
                c.push(Stream::Stderr, e);
            }
        }
        c.finish()
    }

    #[test]
    fn output_within_the_caps_is_carried_whole_and_no_log_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let lines: String = (1..=200).map(|i| format!("{i}\n")).collect();
        let got = capture(
            Limits::default(),
            dir.path(),
            &[lines.as_bytes()],
            &[b"warn", b"ing\n"],
        );
        assert_eq!(got.stdout, lines);
        assert_eq!(got.stderr, "warning\n");
        assert!(!got.truncated);
        assert!(got.log.is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn over_the_line_cap_gives_head_marker_tail_and_a_log_with_everything() {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<String> = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let chunks: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        let got = capture(Limits::default(), dir.path(), &chunks, &[b"oops\n"]);
        assert!(got.truncated);
        let expected_head: String = lines[..50].concat();
        let expected_tail: String = lines[900..].concat();
        assert_eq!(
            got.stdout,
            format!(
                "{expected_head}… 850 lines omitted; the whole output is in the log …\n{expected_tail}"
            )
        );
        // The small stream is carried whole.
        assert_eq!(got.stderr, "oops\n");
        assert_eq!(got.totals, [(1000, lines.concat().len() as u64), (1, 5)]);
        let log = std::fs::read_to_string(got.log.unwrap()).unwrap();
        // Interleaved by line, in arrival order.
        assert!(log.starts_with("line 1\noops\nline 2\n"), "{}", &log[..40]);
        assert_eq!(log.replace("oops\n", ""), lines.concat());
    }

    #[test]
    fn over_the_byte_cap_with_long_lines_keeps_the_start_of_each_line() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_lines: 200,
            max_bytes: 64 * 1024,
        };
        let long = "x".repeat(100_000);
        let text = format!("first\n{long}\nlast");
        let got = capture(limits, dir.path(), &[text.as_bytes()], &[]);
        assert!(got.truncated);
        let cut = format!("{} …[{} more bytes]\n", "x".repeat(2048), 100_000 - 2048);
        // Three lines: all kept (cut), none omitted, no trailing newline.
        assert_eq!(got.stdout, format!("first\n{cut}last"));
        let log = std::fs::read_to_string(got.log.unwrap()).unwrap();
        assert_eq!(log, text);
    }

    #[test]
    fn one_endless_line_is_bounded_in_memory_and_logged_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Capture::new(Limits::default(), dir.path());
        let chunk = vec![b'y'; 65536];
        for _ in 0..160 {
            c.push(Stream::Stdout, &chunk);
        }
        // 10 MiB went in; what is held stays near the caps.
        let held: usize = c.streams.iter().map(|s| s.partial.len()).sum();
        assert!(held <= MAX_PARTIAL + chunk.len(), "{held}");
        assert!(c.streams[0].whole.is_none());
        let got = c.finish();
        assert!(got.stdout.len() < 4096, "{}", got.stdout.len());
        assert!(
            got.stdout
                .ends_with(&format!("…[{} more bytes]", 160 * 65536 - 2048))
        );
        let size = std::fs::metadata(got.log.unwrap()).unwrap().len();
        assert_eq!(size, 160 * 65536);
    }

    #[test]
    fn head_and_tail_never_overlap() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_lines: 200,
            max_bytes: 4096,
        };
        // 20 lines of 300 bytes: over the byte cap, within the line caps.
        let lines: Vec<String> = (0..20).map(|i| format!("{i:0>299}\n")).collect();
        let chunks: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        let got = capture(limits, dir.path(), &chunks, &[]);
        assert!(got.truncated);
        // Head: 3 lines fit in 1024 bytes; tail: the last 6 fit in 2048.
        let expected = format!(
            "{}… 11 lines omitted; the whole output is in the log …\n{}",
            lines[..3].concat(),
            lines[14..].concat()
        );
        assert_eq!(got.stdout, expected);
        // Two long lines: the head keeps the first, the tail both; the
        // first is shown once.
        let two = format!("{}\n{}\n", "a".repeat(3000), "b".repeat(3000));
        let got = capture(limits, dir.path(), &[two.as_bytes()], &[]);
        assert_eq!(
            got.stdout,
            format!(
                "{} …[1976 more bytes]\n{} …[1976 more bytes]\n",
                "a".repeat(1024),
                "b".repeat(1024)
            )
        );
    }

    #[test]
    fn a_log_that_cannot_be_created_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let lines = "a\n".repeat(300);
        let got = capture(
            Limits::default(),
            &blocker.join("logs"),
            &[lines.as_bytes()],
            &[],
        );
        assert!(got.truncated);
        assert!(got.log.is_none());
        assert!(
            got.log_error
                .unwrap()
                .contains("cannot create the log folder")
        );
        assert!(
            got.stdout
                .contains("150 lines omitted; the log could not be written")
        );
    }
}
