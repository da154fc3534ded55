//! `process_logs` with `follow_s`: a background process's log followed as
//! it grows, like `tail -f`, shown live to the owner and ending at the time
//! limit, when the process ends, or when the host stops the call.
//!
//! The log is read from where it ended when the call began; a log that
//! shrank (truncated by hand) is read again from its start. Reads happen
//! at most every 200 ms; the stop flag's descriptor wakes the wait at once.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use hearth_sdk::calls::Stop;

use crate::live::Live;
use crate::output::Stream;

/// The longest `follow_s`.
pub const MAX_FOLLOW_S: u64 = 300;
/// How often the log is read while followed.
const READ_EVERY: Duration = Duration::from_millis(200);
/// How often the process is looked at.
const ALIVE_EVERY: Duration = Duration::from_millis(500);

/// How following ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// `follow_s` passed.
    Time,
    /// The process ended.
    Exited,
    /// The host stopped the call.
    Cancelled,
}

impl Ended {
    /// As the result says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Time => "time",
            Ended::Exited => "exited",
            Ended::Cancelled => "cancelled",
        }
    }
}

/// What following saw.
#[derive(Debug)]
pub struct Followed {
    /// Bytes the log grew by.
    pub bytes: u64,
    /// Why it ended.
    pub ended: Ended,
    /// How long it took.
    pub duration: Duration,
}

/// Follows `path` (the log of `stream`) until `until`, until `alive` says
/// the process has ended, or until `stop` is set; new bytes go to `live`.
pub fn follow(
    path: &Path,
    stream: Stream,
    until: Instant,
    stop: Option<&Stop>,
    live: &mut Option<Live<'_>>,
    mut alive: impl FnMut() -> bool,
) -> io::Result<Followed> {
    let started = Instant::now();
    let mut log = Log {
        offset: std::fs::metadata(path).map_or(0, |m| m.len()),
        file: None,
        buffer: vec![0u8; 64 * 1024],
    };
    let mut grown = 0u64;
    let mut next_look = started + ALIVE_EVERY;
    let mut ended = None;
    loop {
        grown += log.read_new(path, |bytes| {
            if let Some(live) = live.as_mut() {
                live.push(stream, bytes);
            }
        })?;
        if let Some(ended) = ended {
            // One last read after the end was seen: nothing written just
            // before it is missed.
            return Ok(Followed {
                bytes: grown,
                ended,
                duration: started.elapsed(),
            });
        }
        let now = Instant::now();
        if stop.is_some_and(Stop::is_set) {
            ended = Some(Ended::Cancelled);
            continue;
        }
        if now >= until {
            ended = Some(Ended::Time);
            continue;
        }
        if now >= next_look {
            if !alive() {
                ended = Some(Ended::Exited);
                continue;
            }
            next_look = now + ALIVE_EVERY;
        }
        let mut wake = (now + READ_EVERY).min(until);
        if let Some(due) = live.as_ref().and_then(Live::next_due) {
            wake = wake.min(due.max(now));
        }
        wait(stop, wake.saturating_duration_since(now));
        if let Some(live) = live.as_mut() {
            live.flush();
        }
    }
}

/// The followed file and where reading it stopped.
struct Log {
    offset: u64,
    file: Option<File>,
    buffer: Vec<u8>,
}

impl Log {
    /// Reads what was written since the last read, handing it to `take`;
    /// how many bytes. A missing file reads as empty.
    fn read_new(&mut self, path: &Path, mut take: impl FnMut(&[u8])) -> io::Result<u64> {
        if self.file.is_none() {
            match File::open(path) {
                Ok(file) => self.file = Some(file),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
                Err(e) => return Err(e),
            }
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(0);
        };
        if file.metadata()?.len() < self.offset {
            self.offset = 0;
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut read = 0u64;
        loop {
            match file.read(&mut self.buffer) {
                Ok(0) => break,
                Ok(n) => {
                    take(&self.buffer[..n]);
                    read += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        self.offset += read;
        Ok(read)
    }
}

/// Sleeps for `wait`, or until `stop` is set.
fn wait(stop: Option<&Stop>, wait: Duration) {
    match stop.and_then(Stop::fd) {
        Some(fd) => {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = wait.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd for the duration of the call.
            unsafe { libc::poll(&mut p, 1, ms) };
        }
        None => std::thread::sleep(wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn new_lines_are_read_until_the_process_ends_or_the_call_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        std::fs::write(&path, "before\n").unwrap();
        let writer_path = path.clone();
        let writer = std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&writer_path)
                .unwrap();
            std::thread::sleep(Duration::from_millis(300));
            file.write_all(b"one\n").unwrap();
            std::thread::sleep(Duration::from_millis(300));
            file.write_all(b"two\n").unwrap();
        });
        let until = Instant::now() + Duration::from_secs(10);
        let mut looks = 0;
        let followed = follow(&path, Stream::Stdout, until, None, &mut None, || {
            looks += 1;
            looks < 3
        })
        .unwrap();
        writer.join().unwrap();
        assert_eq!(followed.ended, Ended::Exited);
        assert_eq!(followed.bytes, 8, "{followed:?}");

        std::fs::write(&path, "x\n").unwrap();
        let stop = Stop::new();
        stop.set();
        let followed = follow(&path, Stream::Stdout, until, Some(&stop), &mut None, || {
            true
        })
        .unwrap();
        assert_eq!((followed.ended, followed.bytes), (Ended::Cancelled, 0));
    }
}
