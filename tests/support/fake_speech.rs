//! A fake OpenAI-compatible audio API for the integration tests: the
//! transcription endpoint voice messages go to, and the speech endpoint
//! spoken replies come from.
//!
//! [`FakeSpeech`] is a real HTTP/1.1 server on 127.0.0.1 answering, under
//! `/v1`:
//! - `POST /v1/audio/transcriptions`: `multipart/form-data` with `file` and
//!   `model` (and optionally `response_format`, `language`), answered
//!   `{"text": ...}` with the next scripted transcript. As OpenAI does, it
//!   judges the file's format by its name's extension against the formats
//!   it takes (OpenAI's list by default; [`FakeSpeech::accepting`] narrows
//!   it, as a whisper.cpp server that reads only WAV), and refuses a file
//!   whose content is not that format or not audio at all (checked with
//!   `ffprobe`, so the audio must really decode);
//! - `POST /v1/audio/speech`: JSON `{model, input, voice,
//!   response_format}`, answered with real speech: `espeak-ng` says the
//!   input, and `opusenc` or `ffmpeg` encode it as asked (`opus` is
//!   Ogg/Opus).
//!
//! Errors have OpenAI's shape, `{"error": {"message", "type", "param",
//! "code"}}`, with the HTTP status. With [`FakeSpeech::with_key`], a
//! request without `Authorization: Bearer <key>` gets a 401. Tests script
//! failures with [`FakeSpeech::fail_next`] and read every request back.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use crate::audio::{self, Probe};
use crate::http_server::{self, HttpRequest, form_parts, read_request, write_bytes, write_json};

/// The formats OpenAI's transcription endpoint takes, by extension.
pub const OPENAI_FORMATS: [&str; 9] = [
    "flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "ogg", "wav", "webm",
];

/// A fake audio API on 127.0.0.1. Dropping it stops it.
pub struct FakeSpeech {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct SpeechRequest {
    /// The path, e.g. `/v1/audio/transcriptions`.
    pub path: String,
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
    /// The text fields of a form (`model`, `response_format`, ...), or the
    /// JSON body's fields.
    pub fields: BTreeMap<String, Value>,
    /// The uploaded file: its name, content type and bytes.
    pub file: Option<(String, Option<String>, Vec<u8>)>,
    /// What `ffprobe` made of the uploaded file.
    pub probe: Option<Result<Probe, String>>,
    /// The HTTP status it was answered with.
    pub status: u16,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stopping: AtomicBool,
}

struct State {
    accepted: Vec<String>,
    key: Option<String>,
    transcripts: VecDeque<String>,
    failures: VecDeque<(u16, String, String)>,
    requests: Vec<SpeechRequest>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

impl FakeSpeech {
    /// Starts a server that takes OpenAI's formats and any key.
    pub fn start() -> FakeSpeech {
        FakeSpeech::accepting(&OPENAI_FORMATS)
    }

    /// Starts a server that takes only `formats` (by extension).
    pub fn accepting(formats: &[&str]) -> FakeSpeech {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake speech: bind");
        let addr = listener.local_addr().expect("fake speech: address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                accepted: formats.iter().map(|f| (*f).to_owned()).collect(),
                key: None,
                transcripts: VecDeque::new(),
                failures: VecDeque::new(),
                requests: Vec::new(),
            }),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::Builder::new()
            .name("fake-speech-accept".into())
            .spawn(move || http_server::accept_each(&listener, &accepting, Shared::stopping, serve))
            .expect("fake speech: spawn");
        FakeSpeech {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// Requires `Authorization: Bearer <key>` from now on.
    pub fn with_key(self, key: &str) -> FakeSpeech {
        self.shared.lock().key = Some(key.to_owned());
        self
    }

    /// The API base a client appends `/audio/...` to:
    /// `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The next transcription answers `text`.
    pub fn push_transcript(&self, text: &str) {
        self.shared.lock().transcripts.push_back(text.to_owned());
    }

    /// The next request answers `status` with OpenAI's error shape.
    pub fn fail_next(&self, status: u16, message: &str, kind: &str) {
        self.shared
            .lock()
            .failures
            .push_back((status, message.to_owned(), kind.to_owned()));
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<SpeechRequest> {
        self.shared.lock().requests.clone()
    }

    /// The requests to one path's end (`transcriptions`, `speech`).
    pub fn requests_to(&self, endpoint: &str) -> Vec<SpeechRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with(endpoint))
            .collect()
    }

    /// Blocks until `n` requests have been answered or `timeout` passes;
    /// returns whether they were.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let state = self.shared.lock();
        http_server::wait_until(&self.shared.changed, state, timeout, |s| {
            s.requests.len() >= n
        })
        .1
    }
}

impl Drop for FakeSpeech {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let woken = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let (Ok(_), Some(acceptor)) = (woken, self.acceptor.take()) {
            // The accept loop never panics; a failed join has nothing to report.
            let _ = acceptor.join();
        }
    }
}

/// An answer: status, content type, body.
type Answer = (u16, String, Vec<u8>);

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(http) = read_request(&mut reader)? {
        let mut record = SpeechRequest {
            path: http.target.clone(),
            authorization: http.header("authorization").map(str::to_owned),
            fields: BTreeMap::new(),
            file: None,
            probe: None,
            status: 0,
        };
        let (status, kind, body) = answer(shared, &http, &mut record);
        record.status = status;
        {
            let mut state = shared.lock();
            state.requests.push(record);
            shared.changed.notify_all();
        }
        if kind == "application/json" {
            write_json(&mut out, status, &[], &String::from_utf8_lossy(&body))?;
        } else {
            write_bytes(&mut out, status, &kind, &body)?;
        }
        if !http.keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

fn answer(shared: &Shared, http: &HttpRequest, record: &mut SpeechRequest) -> Answer {
    let path = http.target.split('?').next().unwrap_or_default();
    let endpoint = match (http.method.as_str(), path) {
        ("POST", "/v1/audio/transcriptions") => "transcriptions",
        ("POST", "/v1/audio/speech") => "speech",
        _ => {
            return error(
                404,
                &format!("Invalid URL ({} {})", http.method, http.target),
                "invalid_request_error",
            );
        }
    };
    let (key, failure) = {
        let mut state = shared.lock();
        (state.key.clone(), state.failures.pop_front())
    };
    if let Some(key) = key
        && record.authorization.as_deref() != Some(&format!("Bearer {key}"))
    {
        return error_with(
            401,
            json!({
                "message": "Incorrect API key provided: sk-wr***ng. You can find your API key at the dashboard.",
                "type": "invalid_request_error",
                "param": null,
                "code": "invalid_api_key",
            }),
        );
    }
    let parsed = match endpoint {
        "transcriptions" => read_form(http, record),
        _ => read_json(http, record),
    };
    if let Err(answer) = parsed {
        return answer;
    }
    if let Some((status, message, kind)) = failure {
        return error(status, &message, &kind);
    }
    match endpoint {
        "transcriptions" => transcribe(shared, record),
        _ => speak(record),
    }
}

fn read_form(http: &HttpRequest, record: &mut SpeechRequest) -> Result<(), Answer> {
    let kind = http.header("content-type").unwrap_or_default();
    let parts = form_parts(kind, &http.body).ok_or_else(|| {
        error(
            400,
            "Invalid Content-Type header; expected multipart/form-data",
            "invalid_request_error",
        )
    })?;
    for part in parts {
        match part.filename {
            Some(name) if part.name == "file" => {
                record.file = Some((name, part.content_type, part.data));
            }
            _ => {
                record.fields.insert(
                    part.name,
                    Value::String(String::from_utf8_lossy(&part.data).into_owned()),
                );
            }
        }
    }
    Ok(())
}

fn read_json(http: &HttpRequest, record: &mut SpeechRequest) -> Result<(), Answer> {
    match serde_json::from_slice::<Value>(&http.body) {
        Ok(Value::Object(fields)) => {
            record.fields = fields.into_iter().collect();
            Ok(())
        }
        _ => Err(error(
            400,
            "We could not parse the JSON body of your request.",
            "invalid_request_error",
        )),
    }
}

/// The ffprobe container names of each extension's format.
fn container_of(extension: &str) -> &'static [&'static str] {
    match extension {
        "ogg" | "oga" | "opus" => &["ogg"],
        "webm" | "weba" => &["matroska,webm"],
        "wav" => &["wav"],
        "flac" => &["flac"],
        "mp3" | "mpeg" | "mpga" => &["mp3"],
        "m4a" | "mp4" => &["mov,mp4,m4a,3gp,3g2,mj2"],
        "aac" => &["aac"],
        _ => &[],
    }
}

fn transcribe(shared: &Shared, record: &mut SpeechRequest) -> Answer {
    if record.fields.get("model").and_then(Value::as_str).is_none() {
        return error(
            400,
            "you must provide a model parameter",
            "invalid_request_error",
        );
    }
    let Some((name, _, bytes)) = &record.file else {
        return error(
            400,
            "Missing required parameter: 'file'.",
            "invalid_request_error",
        );
    };
    let accepted = shared.lock().accepted.clone();
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    if !accepted.contains(&extension) {
        let list: Vec<String> = accepted.iter().map(|f| format!("'{f}'")).collect();
        return error(
            400,
            &format!(
                "Invalid file format. Supported formats: [{}]",
                list.join(", ")
            ),
            "invalid_request_error",
        );
    }
    let probed = audio::probe(bytes);
    let readable = probed
        .as_ref()
        .is_ok_and(|p| container_of(&extension).contains(&p.format.as_str()) && p.seconds > 0.0);
    record.probe = Some(probed);
    if !readable {
        return error(
            400,
            "Audio file might be corrupted or unsupported",
            "invalid_request_error",
        );
    }
    let text = shared.lock().transcripts.pop_front().unwrap_or_default();
    (
        200,
        "application/json".into(),
        json!({ "text": text }).to_string().into_bytes(),
    )
}

fn speak(record: &SpeechRequest) -> Answer {
    let field = |key: &str| record.fields.get(key).and_then(Value::as_str);
    let (Some(input), Some(_), Some(_)) = (field("input"), field("model"), field("voice")) else {
        return error(
            400,
            "input, model and voice are required",
            "invalid_request_error",
        );
    };
    if input.chars().count() > 4096 {
        return error(
            400,
            "[{'type': 'string_too_long', 'loc': ('body', 'input'), 'msg': 'String should have at most 4096 characters'}]",
            "invalid_request_error",
        );
    }
    let format = field("response_format").unwrap_or("mp3");
    let (bytes, kind) = match format {
        "opus" => (audio::ogg_opus(input), "audio/ogg"),
        "mp3" => (
            audio::encoded(input, &["-c:a", "libmp3lame", "-f", "mp3"]),
            "audio/mpeg",
        ),
        "aac" => (audio::aac_adts(input), "audio/aac"),
        "flac" => (
            audio::encoded(input, &["-c:a", "flac", "-f", "flac"]),
            "audio/flac",
        ),
        "wav" => (audio::speech_wav(input), "audio/wav"),
        other => {
            return error(
                400,
                &format!("Invalid response_format {other:?}"),
                "invalid_request_error",
            );
        }
    };
    (200, kind.into(), bytes)
}

fn error(status: u16, message: &str, kind: &str) -> Answer {
    error_with(
        status,
        json!({ "message": message, "type": kind, "param": null, "code": null }),
    )
}

fn error_with(status: u16, error: Value) -> Answer {
    (
        status,
        "application/json".into(),
        json!({ "error": error }).to_string().into_bytes(),
    )
}
