//! `Host`: the safe handle a Rust plugin uses to call back into the host.

use std::ffi::c_void;

use serde_json::Value;

use crate::abi::{self, HearthStr, HostApi};
use crate::protocol::{
    HostInfo, Submission, SummaryAnswer, SummaryRequest, ToolOutput, ToolSpec, ViewFrame,
    ViewShown, service,
};

/// A handle on the host's callbacks; cheap to copy, usable from any thread.
#[derive(Clone, Copy, Debug)]
pub struct Host {
    api: HostApi,
}

// SAFETY: the ABI promises that the host API and its context stay valid until
// `shutdown` returns and that every callback may be called from any thread.
unsafe impl Send for Host {}
// SAFETY: as above.
unsafe impl Sync for Host {}

/// Log levels, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// An error.
    Error,
    /// A warning.
    Warn,
    /// Information.
    Info,
    /// Debugging detail.
    Debug,
    /// Very verbose detail.
    Trace,
}

/// Why `submit` did not take a submission.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The host's queue stayed full for its whole wait bound, or storing
    /// the message failed (a full disk). Keep the message (do not
    /// acknowledge it upstream) and submit it again later.
    #[error("the host is busy; submit again later")]
    Busy,
    /// The host is shutting down.
    #[error("the host is shutting down")]
    Closed,
    /// The host could not parse the submission; its log says why.
    #[error("the host refused the submission as malformed")]
    Invalid,
    /// The host does not offer `submit` (or answered an unknown status).
    #[error("the host cannot take submissions (status {0})")]
    Unavailable(i32),
}

/// Why a host service call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostCallError {
    /// The host does not know the service.
    #[error("unknown host service: {0}")]
    Unsupported(String),
    /// The service failed; the message says why.
    #[error("host service failed: {0}")]
    Failed(String),
    /// The answer was not the JSON expected.
    #[error("host service answered malformed JSON: {0}")]
    Malformed(String),
}

impl Host {
    /// Wraps the host's API table. Used by the export glue.
    pub(crate) fn new(api: HostApi) -> Self {
        Host { api }
    }

    /// Forwards one log record to the host's log.
    pub fn log(&self, level: Level, target: &str, message: &str) {
        let Some(log) = self.api.log else { return };
        let level = match level {
            Level::Error => abi::level::ERROR,
            Level::Warn => abi::level::WARN,
            Level::Info => abi::level::INFO,
            Level::Debug => abi::level::DEBUG,
            Level::Trace => abi::level::TRACE,
        };
        // SAFETY: the host API is valid (see the Send impl); the strings are
        // borrowed for the duration of the call only.
        unsafe {
            log(
                self.api.ctx,
                level,
                HearthStr::from_str(target),
                HearthStr::from_str(message),
            )
        }
    }

    /// Submits an inbound message or event. For a message, `Ok` means the
    /// host has stored it, so the channel may acknowledge it upstream.
    pub fn submit(&self, submission: &Submission) -> Result<(), SubmitError> {
        // Serializing a derive-generated type with string keys cannot fail.
        let json = serde_json::to_string(submission).unwrap_or_default();
        self.submit_json(&json)
    }

    /// Submits until the host has stored it, for a channel's thread that may
    /// wait: `BUSY` and any host fault are waited out (20 ms, doubling to
    /// 5 s); only a submission the host calls malformed is let go unstored
    /// (it would never be taken), and logged. `false` when the host is
    /// closing or `stopping` says the plugin is: then keep the message
    /// unacknowledged upstream.
    pub fn submit_until_stored(
        &self,
        submission: &Submission,
        stopping: impl Fn() -> bool,
    ) -> bool {
        let mut wait = std::time::Duration::from_millis(20);
        loop {
            match self.submit(submission) {
                Ok(()) => return true,
                Err(SubmitError::Invalid) => {
                    tracing::error!("the host refused a submission as malformed");
                    return true;
                }
                Err(SubmitError::Closed) => return false,
                Err(e @ (SubmitError::Busy | SubmitError::Unavailable(_))) => {
                    if stopping() {
                        return false;
                    }
                    if !matches!(e, SubmitError::Busy) {
                        tracing::warn!("the host failed to take a submission ({e}); trying again");
                    }
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(std::time::Duration::from_secs(5));
                }
            }
        }
    }

    /// Submits a raw JSON submission; see [`Host::submit`].
    pub fn submit_json(&self, json: &str) -> Result<(), SubmitError> {
        let Some(submit) = self.api.submit else {
            return Err(SubmitError::Unavailable(abi::status::UNSUPPORTED));
        };
        // SAFETY: as in `log`.
        match unsafe { submit(self.api.ctx, HearthStr::from_str(json)) } {
            abi::status::OK => Ok(()),
            abi::status::BUSY => Err(SubmitError::Busy),
            abi::status::CLOSED => Err(SubmitError::Closed),
            abi::status::INVALID => Err(SubmitError::Invalid),
            other => Err(SubmitError::Unavailable(other)),
        }
    }

    /// Calls a host service with a JSON request and returns its JSON answer.
    pub fn call(&self, service: &str, request: &Value) -> Result<Value, HostCallError> {
        let Some(call) = self.api.call else {
            return Err(HostCallError::Unsupported(service.to_owned()));
        };
        let request = request.to_string();
        let mut answer: Vec<u8> = Vec::new();
        // SAFETY: as in `log`; `receive` only runs during this call, while
        // `answer` is alive and borrowed by nobody else.
        let status = unsafe {
            call(
                self.api.ctx,
                HearthStr::from_str(service),
                HearthStr::from_str(&request),
                (&mut answer as *mut Vec<u8>).cast::<c_void>(),
                Some(receive_into_vec),
            )
        };
        let text = String::from_utf8_lossy(&answer).into_owned();
        match status {
            abi::status::OK => {
                serde_json::from_str(&text).map_err(|e| HostCallError::Malformed(e.to_string()))
            }
            abi::status::UNSUPPORTED => Err(HostCallError::Unsupported(service.to_owned())),
            _ => Err(HostCallError::Failed(text)),
        }
    }

    /// Hands the host a piece of a running call's live output
    /// ([`service::TOOL_OUTPUT`]). [`crate::live::Throttle`] paces them.
    pub fn tool_output(&self, output: &ToolOutput) -> Result<(), HostCallError> {
        let request =
            serde_json::to_value(output).map_err(|e| HostCallError::Malformed(e.to_string()))?;
        self.call(service::TOOL_OUTPUT, &request).map(|_| ())
    }

    /// Shows the owner a frame of a live view ([`service::VIEW_SHOW`]);
    /// `Ok(false)` when no channel shows views (stop making frames).
    pub fn view_show(&self, frame: &ViewFrame) -> Result<bool, HostCallError> {
        let request =
            serde_json::to_value(frame).map_err(|e| HostCallError::Malformed(e.to_string()))?;
        let answer = self.call(service::VIEW_SHOW, &request)?;
        serde_json::from_value::<ViewShown>(answer)
            .map(|a| a.shown)
            .map_err(|e| HostCallError::Malformed(e.to_string()))
    }

    /// Replaces the plugin's tool list in the host's registry
    /// ([`service::TOOLS_SET`]); returns the names the host left out, with
    /// why.
    pub fn set_tools(&self, tools: &[ToolSpec]) -> Result<Vec<String>, HostCallError> {
        let request = serde_json::json!({ "tools": tools });
        let answer = self.call(service::TOOLS_SET, &request)?;
        Ok(answer
            .get("skipped")
            .and_then(Value::as_array)
            .map(|skipped| {
                skipped
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// A summary of `text` (which `about` says what it is) by the owner's
    /// cheap model ([`service::MODEL_SUMMARIZE`]). Waits for the model, at
    /// most the host's summary timeout.
    pub fn summarize(&self, about: &str, text: &str) -> Result<String, HostCallError> {
        let request = serde_json::to_value(SummaryRequest {
            about: about.to_owned(),
            text: text.to_owned(),
        })
        .map_err(|e| HostCallError::Malformed(e.to_string()))?;
        let answer = self.call(service::MODEL_SUMMARIZE, &request)?;
        serde_json::from_value::<SummaryAnswer>(answer)
            .map(|a| a.summary)
            .map_err(|e| HostCallError::Malformed(e.to_string()))
    }

    /// Asks the host who it is (version, ABI, home directory).
    pub fn info(&self) -> Result<HostInfo, HostCallError> {
        let value = self.call(service::HOST_INFO, &Value::Object(Default::default()))?;
        serde_json::from_value(value).map_err(|e| HostCallError::Malformed(e.to_string()))
    }
}

/// Copies a host answer into the `Vec<u8>` that `user` points to.
unsafe extern "C" fn receive_into_vec(user: *mut c_void, bytes: HearthStr) {
    // SAFETY: `user` is the `&mut Vec<u8>` passed by `Host::call`, and the
    // bytes are valid for this callback.
    unsafe { (*user.cast::<Vec<u8>>()).extend_from_slice(bytes.as_bytes()) };
}
