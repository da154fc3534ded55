//! `model.summarize`: a plugin asks the cheap model for a summary of long
//! output (the shell plugin, of a command's log or a failed background
//! process's stderr).
//!
//! Unlike the other host services this one waits on a model, at most
//! `[llm.cheap] timeout_ms` (plus a moment): the plugin asked for the
//! answer and is going to wait for it anyway, on its own thread or a tool
//! call's. It never runs on the daemon's async thread.

use std::sync::Arc;

use hearth_sdk::abi::status;
use hearth_sdk::protocol::{SummaryAnswer, SummaryRequest};

use super::{Summaries, SummaryError};

/// The largest request: the plugin sends an excerpt, the host cuts it
/// again to `[llm.cheap] input_chars`.
pub const MAX_REQUEST_BYTES: usize = 4 << 20;

/// Answers one `model.summarize` request: the status and the JSON answer
/// (or the error text).
pub fn answer(summaries: &Arc<Summaries>, request: &[u8]) -> (i32, String) {
    if request.len() > MAX_REQUEST_BYTES {
        return (
            status::INVALID,
            format!(
                "model.summarize: the request is {} bytes, over the {MAX_REQUEST_BYTES}-byte limit",
                request.len()
            ),
        );
    }
    let request: SummaryRequest = match serde_json::from_slice(request) {
        Ok(request) => request,
        Err(e) => return (status::INVALID, format!("model.summarize: {e}")),
    };
    match summaries.summarize_blocking(&request.about, &request.text) {
        Ok(summary) => (
            status::OK,
            serde_json::to_string(&SummaryAnswer { summary }).unwrap_or_else(|_| "{}".into()),
        ),
        Err(e @ SummaryError::Off) => (status::UNSUPPORTED, e.to_string()),
        Err(e) => {
            tracing::info!("no summary for a plugin: {e}");
            (status::ERROR, e.to_string())
        }
    }
}
