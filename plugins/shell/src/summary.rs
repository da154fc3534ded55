//! Summaries of long output by the owner's cheap model, through the host
//! (`model.summarize`), when the host offers them.
//!
//! `shell_exec` output over the cap keeps its head, tail and log; with a
//! summary the model also learns what the whole said (the errors in the
//! middle of a ten-thousand-line build log). A background process that
//! fails gets a summary of its last stderr lines in its notice. A summary
//! is a help, never a wait beyond the host's deadline: without one, the
//! result is what it was.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::{Map, Value};

/// Asks for a summary of `text`, which the first argument says what it
/// is; the error says why there is none.
pub type Summarize = dyn Fn(&str, &str) -> Result<String, String> + Send + Sync;

/// How much of a log is sent: its first 64 KiB and last 192 KiB (the host
/// cuts again to what its model reads).
const HEAD_BYTES: u64 = 64 * 1024;
const TAIL_BYTES: u64 = 192 * 1024;

/// Adds `summary` (or `summary_error`) to a `shell_exec` result whose
/// output went over the cap and into its log.
pub fn add_to_result(summarize: &Summarize, command: &str, result: &mut Map<String, Value>) {
    if result.get("truncated") != Some(&Value::Bool(true)) || result.contains_key("cancelled") {
        return;
    }
    let Some(log) = result.get("log").and_then(Value::as_str).map(str::to_owned) else {
        return;
    };
    let text = match excerpt(Path::new(&log)) {
        Ok(text) => text,
        Err(e) => {
            result.insert(
                "summary_error".into(),
                format!("the log could not be read for a summary: {e}").into(),
            );
            return;
        }
    };
    let ended = match (&result["exit_code"], &result["signal"]) {
        (Value::Number(code), _) => format!("exited with code {code}"),
        (_, Value::String(signal)) => format!("was killed by {signal}"),
        _ => "ended".to_owned(),
    };
    let timed_out = if result.get("timed_out") == Some(&Value::Bool(true)) {
        " after running out of time"
    } else {
        ""
    };
    let about = format!(
        "the output (stdout and stderr, interleaved) of the shell command `{command}`, which \
         {ended}{timed_out}"
    );
    match summarize(&about, &text) {
        Ok(summary) => {
            result.insert("summary".into(), summary.into());
        }
        Err(why) => {
            result.insert("summary_error".into(), why.into());
        }
    }
}

/// The head and tail of the file at `path`, whole when it is small.
pub fn excerpt(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    if size <= HEAD_BYTES + TAIL_BYTES {
        let mut all = Vec::new();
        file.read_to_end(&mut all)?;
        return Ok(String::from_utf8_lossy(&all).into_owned());
    }
    let mut head = vec![0; HEAD_BYTES as usize];
    file.read_exact(&mut head)?;
    file.seek(SeekFrom::Start(size - TAIL_BYTES))?;
    let mut tail = Vec::with_capacity(TAIL_BYTES as usize);
    file.read_to_end(&mut tail)?;
    Ok(format!(
        "{}\n[... {} bytes of the log left out ...]\n{}",
        String::from_utf8_lossy(&head),
        size - HEAD_BYTES - TAIL_BYTES,
        String::from_utf8_lossy(&tail)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_log_is_sent_as_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let text: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, &text).unwrap();
        let sent = excerpt(&path).unwrap();
        assert!(sent.starts_with("line 0\n"));
        assert!(sent.ends_with("line 99999\n"));
        assert!(sent.contains("bytes of the log left out"));
        assert!(sent.len() < 260 * 1024);
        std::fs::write(&path, "short\n").unwrap();
        assert_eq!(excerpt(&path).unwrap(), "short\n");
    }
}
