//! The Brave Search API: `GET {base}/res/v1/web/search?q=&count=[&freshness=]`
//! with the key in `X-Subscription-Token`.
//!
//! The answer is `{"type": "search", "query": {...}, "web": {"type":
//! "search", "results": [{"title", "url", "description", "age",
//! "page_age", ...}]}, ...}`; `web` is absent when nothing was found.
//! `description` marks the query's words with `<strong>`. `count` is 1 to
//! 20; `freshness` is `pd`, `pw`, `pm` or `py` (past day, week, month,
//! year). Errors are `{"type": "ErrorResponse", "error": {"id", "status",
//! "code", "detail", "meta"}, "time"}`: `SUBSCRIPTION_TOKEN_INVALID` (401 or
//! 422), `VALIDATION` (422), `RATE_LIMITED` and `QUOTA_LIMITED` (429, with
//! `X-RateLimit-Reset: <per-second window>, <monthly window>`). Some of
//! Brave's own examples show the error object inside an `errors` list, so
//! both are read.

use reqwest::Url;
use serde_json::Value;

use super::reply::{BackendError, Reply, shorten};
use super::results::{Hit, first_distinct};
use super::{Answer, Query};

/// The header that carries the key.
pub const KEY_HEADER: &str = "X-Subscription-Token";

/// Adds the query's parameters to the endpoint.
pub fn add_params(url: &mut Url, query: &Query) {
    let mut params = url.query_pairs_mut();
    params.append_pair("q", &query.text);
    params.append_pair("count", &query.count.to_string());
    if let Some(freshness) = query.freshness {
        params.append_pair("freshness", freshness.brave());
    }
}

/// Reads Brave's answer.
pub fn read(reply: &Reply, query: &Query) -> Result<Answer, BackendError> {
    if reply.status >= 300 {
        let (code, detail) = error_of(reply);
        if code.as_deref() == Some("SUBSCRIPTION_TOKEN_INVALID") || reply.status == 403 {
            return Err(BackendError::KeyRefused {
                status: reply.status,
                detail,
            });
        }
        if let Some(error) = reply.common_error(detail) {
            return Err(error);
        }
    }
    let answer = reply.json()?;
    if !answer.is_object() {
        return Err(BackendError::UnexpectedShape("an object"));
    }
    let results = match answer.get("web") {
        // No web results at all: Brave leaves the section out.
        None | Some(Value::Null) => return Ok(Answer::default()),
        Some(web) => web
            .get("results")
            .and_then(Value::as_array)
            .ok_or(BackendError::UnexpectedShape("a web.results list"))?,
    };
    let hits = results.iter().filter_map(|r| {
        let text = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or_default();
        Some(
            Hit::new(text("title"), text("url"), text("description"))?
                .published(r.get("page_age"))
                .age(r.get("age")),
        )
    });
    Ok(Answer {
        hits: first_distinct(hits, query.count),
        silent_engines: Vec::new(),
        caveat: None,
    })
}

/// The `code` and `detail` of an error body, where it has them.
fn error_of(reply: &Reply) -> (Option<String>, Option<String>) {
    let Ok(body) = serde_json::from_slice::<Value>(&reply.body) else {
        return (None, None);
    };
    let error = body
        .get("error")
        .or_else(|| body.get("errors").and_then(|e| e.get(0)));
    let Some(error) = error else {
        return (None, None);
    };
    let field = |key: &str| {
        error
            .get(key)
            .and_then(Value::as_str)
            .map(shorten)
            .filter(|s| !s.is_empty())
    };
    (field("code"), field("detail"))
}
