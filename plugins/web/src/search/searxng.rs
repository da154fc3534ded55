//! SearXNG's JSON API: `GET {base}/search?q=...&format=json[&time_range=]`.
//!
//! The answer is `{"query", "number_of_results", "results": [{"url",
//! "title", "content", "publishedDate", "engine", ...}], "answers",
//! "corrections", "infoboxes", "suggestions", "unresponsive_engines":
//! [[engine, reason], ...]}`. Errors are `{"error": "..."}` with 400 (no
//! query, a bad parameter) or 500; a format the instance has not enabled
//! is a bare 403, and its rate limiter answers 429 in plain text.
//!
//! SearXNG has no parameter for the number of results: a page holds what
//! its engines returned (often 10 to 30), and hearth keeps the first
//! `count`. `time_range` takes `day`, `week`, `month` and `year`.

use reqwest::Url;
use serde_json::Value;

use super::reply::{BackendError, Reply, shorten};
use super::results::{Hit, first_distinct};
use super::{Answer, Query};

/// Adds the query's parameters to the endpoint.
pub fn add_params(url: &mut Url, query: &Query) {
    let mut params = url.query_pairs_mut();
    params.append_pair("q", &query.text);
    params.append_pair("format", "json");
    if let Some(freshness) = query.freshness {
        params.append_pair("time_range", freshness.name());
    }
}

/// Reads SearXNG's answer.
pub fn read(reply: &Reply, query: &Query) -> Result<Answer, BackendError> {
    if reply.status == 403 {
        return Err(BackendError::JsonDisabled);
    }
    if let Some(error) = reply.common_error(error_text(reply)) {
        return Err(error);
    }
    let answer = reply.json()?;
    let results = answer
        .get("results")
        .and_then(Value::as_array)
        .ok_or(BackendError::UnexpectedShape("a results list"))?;
    let hits = results.iter().filter_map(|r| {
        let text = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or_default();
        Some(
            Hit::new(text("title"), text("url"), text("content"))?
                .published(r.get("publishedDate")),
        )
    });
    Ok(Answer {
        hits: first_distinct(hits, query.count),
        silent_engines: silent_engines(&answer),
        caveat: None,
    })
}

/// The `error` text of an error body, if it has one.
fn error_text(reply: &Reply) -> Option<String> {
    if reply.status < 300 {
        return None;
    }
    let body: Value = serde_json::from_slice(&reply.body).ok()?;
    body.get("error")
        .and_then(Value::as_str)
        .map(shorten)
        .filter(|e| !e.is_empty())
}

/// `unresponsive_engines` as "engine (reason)": the engines whose failure
/// may be why there are no results.
fn silent_engines(answer: &Value) -> Vec<String> {
    let Some(list) = answer.get("unresponsive_engines").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|entry| {
            let pair = entry.as_array()?;
            let engine = shorten(pair.first()?.as_str()?);
            Some(match pair.get(1).and_then(Value::as_str) {
                Some(reason) => format!("{engine} ({})", shorten(reason)),
                None => engine,
            })
        })
        .take(10)
        .collect()
}
