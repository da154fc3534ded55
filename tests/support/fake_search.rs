//! Fake search backends for the integration tests: a SearXNG instance,
//! the Brave Search API and DuckDuckGo's HTML page, each a real HTTP/1.1
//! server on 127.0.0.1 that searches a small corpus of [`Doc`]s and
//! answers in the service's own wire format, errors included.
//!
//! SearXNG ([`FakeSearch::searxng`]), as its `webapp.py` answers:
//! - `GET|POST /search` with `q`, `format`, `time_range`, `pageno`: with
//!   `format=json`, `{"query", "number_of_results", "results": [{"url",
//!   "title", "content", "publishedDate", "engine", "engines", "positions",
//!   "parsed_url", "template", "score", "category", ...}], "answers",
//!   "corrections", "infoboxes", "suggestions", "unresponsive_engines"}`;
//! - a format not enabled in its settings: a bare 403 (Flask's HTML page);
//! - no `q`: 400 `{"error": "No query"}`; a bad `time_range` (not `day`,
//!   `week`, `month`, `year`) or `pageno`: 400 `{"error": "Invalid value
//!   \"x\" for parameter time_range"}`;
//! - its limiter: 429 with the text `Too Many Requests`;
//! - `GET /?q=...`: 308 to `/search?q=...`; other paths 404.
//!
//! Brave ([`FakeSearch::brave`]), as its API reference documents:
//! - `GET /res/v1/web/search` with `X-Subscription-Token`, `q`, `count`
//!   (1-20, default 20), `offset`, `freshness` (`pd`, `pw`, `pm`, `py`, or
//!   `YYYY-MM-DDtoYYYY-MM-DD`): `{"type": "search", "query": {...},
//!   "mixed": {...}, "web": {"type": "search", "results": [{"title", "url",
//!   "description" (query words in `<strong>`), "page_age", "age",
//!   "profile", "meta_url", ...}]}}`, with `web` left out when nothing
//!   matched, and `X-RateLimit-*` headers on every answer;
//! - errors as `{"type": "ErrorResponse", "error": {"id", "status",
//!   "code", "detail", "meta"}, "time"}`: a wrong key 422
//!   `SUBSCRIPTION_TOKEN_INVALID`, bad parameters 422 `VALIDATION` (an
//!   empty query, more than 400 characters or 50 words, `count` out of
//!   range, an unknown `freshness`), the plan's rate exceeded 429
//!   `RATE_LIMITED` with `X-RateLimit-Reset`.
//!
//! DuckDuckGo ([`FakeSearch::duckduckgo`]), as `html.duckduckgo.com`
//! answers its no-JavaScript form:
//! - `POST /html/` with the form `q`, `b`, `kl` (region), `df` (`d`, `w`,
//!   `m`, `y`; anything else is ignored, as there), or `GET /html/?q=`:
//!   the results page, an ad first (`<div class="result results_links
//!   results_links_deep result--ad ...">`, its links through
//!   `duckduckgo.com/y.js`), then up to ten `<div class="result
//!   results_links results_links_deep web-result ">` blocks, each an
//!   `<h2 class="result__title"><a rel="nofollow" class="result__a"
//!   href="//duckduckgo.com/l/?uddg=<percent-encoded URL>&amp;rut=...">`
//!   (the query's words in `<b>`), a `result__url` and an `<a
//!   class="result__snippet">`; nothing found is `<div
//!   class="no-results">No results.</div>`;
//! - no `q`: its search form alone; `/html` 301 to `/html/`; other paths
//!   404;
//! - a suspected bot (past [`FakeSearch::limit_per_window`], or
//!   `Fault::Status(202)`): HTTP 202 with its anomaly page, the CAPTCHA
//!   in an `anomaly-modal` under "Unfortunately, bots use DuckDuckGo
//!   too."; [`FakeSearch::anomaly_with_200`] sends the same page with 200.
//!
//! A document matches when every word of the query is in its title or
//! text (case-insensitive), and a time range keeps documents no older
//! than it. The test side reads every request ([`FakeSearch::requests`]),
//! turns on a rate limit ([`FakeSearch::limit_per_window`]) and injects
//! the faults a client must survive ([`FakeSearch::fault`]): any status,
//! a body that is not JSON, an oversized body, a redirect, an answer that
//! never comes.

use std::io::{self, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_server::{self, HttpRequest, read_request, reason};

/// Brave's limits on `q`.
pub const BRAVE_MAX_QUERY_CHARS: usize = 400;
/// Brave's limit on the words of `q`.
pub const BRAVE_MAX_QUERY_WORDS: usize = 50;
/// Brave's largest `count`.
pub const BRAVE_MAX_COUNT: u64 = 20;

/// One page in the fake's index.
#[derive(Clone, Debug)]
pub struct Doc {
    /// The page's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// Its text, which snippets quote.
    pub text: String,
    /// How many days ago it was published.
    pub days_old: i64,
}

impl Doc {
    /// A document published `days_old` days ago.
    pub fn new(title: &str, url: &str, text: &str, days_old: i64) -> Doc {
        Doc {
            title: title.into(),
            url: url.into(),
            text: text.into(),
            days_old,
        }
    }
}

/// A fault the fake answers every search with, until cleared.
#[derive(Clone, Debug)]
pub enum Fault {
    /// This status, with the body the service sends with it.
    Status(u16),
    /// 200 with an HTML page instead of JSON (a captive portal, a proxy).
    NotJson,
    /// 200 with a JSON body of about this many bytes.
    Huge(usize),
    /// 302 to this location.
    Redirect(String),
    /// Headers never come; the connection stays open until the fake is
    /// dropped.
    Hang,
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Request {
    /// The method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// Query-string (and form) parameters, decoded, in order.
    pub params: Vec<(String, String)>,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// A parameter's first value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Which service the fake is.
#[derive(Clone, Debug)]
enum Service {
    Searxng,
    Brave { key: String },
    DuckDuckGo,
}

/// A fake search service on 127.0.0.1. Dropping it stops it, and ends
/// answers held by [`Fault::Hang`].
pub struct FakeSearch {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    service: Service,
    docs: Vec<Doc>,
    state: Mutex<State>,
    changed: Condvar,
    stopping: AtomicBool,
}

struct State {
    requests: Vec<Request>,
    fault: Option<Fault>,
    /// SearXNG: the formats its settings enable.
    formats: Vec<&'static str>,
    /// SearXNG: engines reported as not answering.
    unresponsive: Vec<(String, String)>,
    /// At most this many searches per window, then 429.
    limit: Option<(usize, Duration)>,
    /// When searches were answered, for the limit.
    answered: Vec<Instant>,
    /// DuckDuckGo: its bot check comes with 200, not 202.
    anomaly_200: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

impl FakeSearch {
    /// A SearXNG instance with `docs`, its JSON format enabled.
    pub fn searxng(docs: Vec<Doc>) -> FakeSearch {
        FakeSearch::start(Service::Searxng, docs)
    }

    /// The Brave Search API with `docs`, accepting the key `key`.
    pub fn brave(key: &str, docs: Vec<Doc>) -> FakeSearch {
        FakeSearch::start(Service::Brave { key: key.into() }, docs)
    }

    /// DuckDuckGo's HTML endpoint with `docs`; [`FakeSearch::duckduckgo_url`]
    /// is the `duckduckgo_url` to configure.
    pub fn duckduckgo(docs: Vec<Doc>) -> FakeSearch {
        FakeSearch::start(Service::DuckDuckGo, docs)
    }

    fn start(service: Service, docs: Vec<Doc>) -> FakeSearch {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake search: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake search: local address");
        let shared = Arc::new(Shared {
            service,
            docs,
            state: Mutex::new(State {
                requests: Vec::new(),
                fault: None,
                formats: vec!["html", "json"],
                unresponsive: Vec::new(),
                limit: None,
                answered: Vec::new(),
                anomaly_200: false,
            }),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("fake-search-accept".into())
            .spawn(move || http_server::accept_each(&listener, &accepting, Shared::stopping, serve))
            .expect("fake search: spawn the accept thread");
        FakeSearch {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT`: the `base_url` to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// DuckDuckGo: `http://127.0.0.1:PORT/html/`, its endpoint.
    pub fn duckduckgo_url(&self) -> String {
        format!("{}/html/", self.base_url())
    }

    /// DuckDuckGo: its bot check comes with status 200 instead of 202.
    pub fn anomaly_with_200(&self, on: bool) {
        self.shared.lock().anomaly_200 = on;
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// Answers every search with `fault` from now on; `None` clears it.
    pub fn fault(&self, fault: Option<Fault>) {
        self.shared.lock().fault = fault;
    }

    /// SearXNG: only these output formats are enabled (`search.formats` in
    /// its settings.yml).
    pub fn formats(&self, formats: &[&'static str]) {
        self.shared.lock().formats = formats.to_vec();
    }

    /// SearXNG: report these engines, with reasons, as not answering.
    pub fn unresponsive(&self, engines: &[(&str, &str)]) {
        self.shared.lock().unresponsive = engines
            .iter()
            .map(|(e, r)| ((*e).to_owned(), (*r).to_owned()))
            .collect();
    }

    /// Answers at most `n` searches per `window`, and 429 past that:
    /// Brave's plan rate (1 per second on the free plan), SearXNG's
    /// limiter; DuckDuckGo answers its bot check instead.
    pub fn limit_per_window(&self, n: usize, window: Duration) {
        self.shared.lock().limit = Some((n, window));
    }
}

impl Drop for FakeSearch {
    fn drop(&mut self) {
        {
            let _state = self.shared.lock();
            self.shared.stopping.store(true, Ordering::SeqCst);
            self.shared.changed.notify_all();
        }
        // Wake the blocked `accept` so the listener closes before we return.
        let woken = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let (Ok(_), Some(acceptor)) = (woken, self.acceptor.take()) {
            // The accept loop never panics; a failed join has nothing to report.
            let _ = acceptor.join();
        }
    }
}

/// An answer to write.
struct Answer {
    status: u16,
    content_type: &'static str,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn json(status: u16, body: &Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    fn html(status: u16, body: &str) -> Answer {
        Answer {
            status,
            content_type: "text/html; charset=utf-8",
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }

    fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    while let Some(http) = read_request(&mut reader)? {
        let request = record(shared, &http);
        let answer = match &shared.service {
            Service::Searxng => searxng(shared, &request),
            Service::Brave { key } => brave(shared, key, &request),
            Service::DuckDuckGo => duckduckgo(shared, &request),
        };
        let Some(answer) = answer else {
            // Hang: hold the connection, answering nothing, until dropped.
            let mut state = shared.lock();
            while !shared.stopping() {
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            return Ok(());
        };
        write(&mut out, &answer)?;
        if !http.keep_alive {
            return Ok(());
        }
    }
    Ok(())
}

/// Parses and stores the request.
fn record(shared: &Shared, http: &HttpRequest) -> Request {
    let (path, query) = http
        .target
        .split_once('?')
        .unwrap_or((http.target.as_str(), ""));
    let mut params = form_decode(query);
    if http.method == "POST" {
        params.extend(form_decode(&String::from_utf8_lossy(&http.body)));
    }
    let request = Request {
        method: http.method.clone(),
        path: path.to_owned(),
        params,
        headers: http.headers.clone(),
    };
    shared.lock().requests.push(request.clone());
    shared.changed.notify_all();
    request
}

fn write(out: &mut TcpStream, answer: &Answer) -> io::Result<()> {
    let extra: String = answer
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n{extra}\r\n",
        answer.status,
        match answer.status {
            202 => "Accepted",
            301 => "Moved Permanently",
            other => reason(other),
        },
        answer.content_type,
        answer.body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(answer.body.as_bytes())?;
    out.flush()
}

/// The fault set, if any, as the service would answer it; `Some(None)`
/// for a hang.
fn faulted(shared: &Shared) -> Option<Option<Answer>> {
    let fault = shared.lock().fault.clone()?;
    let brave = matches!(shared.service, Service::Brave { .. });
    let ddg = matches!(shared.service, Service::DuckDuckGo);
    Some(match fault {
        Fault::Hang => None,
        Fault::NotJson => Some(Answer::html(
            200,
            "<!doctype html><html><head><title>Sign in to the network</title></head>\
             <body><h1>Welcome</h1><p>Accept the terms to continue.</p></body></html>",
        )),
        Fault::Huge(bytes) => {
            let padding = "x".repeat(bytes);
            Some(Answer::json(
                200,
                &json!({"query": "big", "results": [{"url": "https://example.org/", "title": "big", "content": padding}]}),
            ))
        }
        Fault::Redirect(to) => Some(Answer::html(302, "").header("location", &to)),
        Fault::Status(status) if brave => Some(brave_status(status)),
        Fault::Status(202) if ddg => Some(Answer::html(202, &ddg_anomaly(""))),
        Fault::Status(status) if ddg => Some(Answer::html(
            status,
            &format!(
                "<!DOCTYPE html><html><head><title>{status} {}</title></head><body><h1>{}</h1></body></html>",
                reason(status),
                reason(status)
            ),
        )),
        Fault::Status(status) => Some(searxng_status(status)),
    })
}

/// Whether the rate limit, if any, is exceeded; counts this search if not.
fn over_limit(shared: &Shared) -> bool {
    let mut state = shared.lock();
    let Some((n, window)) = state.limit else {
        return false;
    };
    let now = Instant::now();
    state.answered.retain(|at| now.duration_since(*at) < window);
    if state.answered.len() >= n {
        return true;
    }
    state.answered.push(now);
    false
}

/// The documents matching `q`, newest window `max_days` if given.
fn matching<'a>(shared: &'a Shared, q: &str, max_days: Option<i64>) -> Vec<&'a Doc> {
    let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
    shared
        .docs
        .iter()
        .filter(|d| {
            let hay = format!("{} {}", d.title, d.text).to_lowercase();
            words.iter().all(|w| hay.contains(w.as_str()))
        })
        .filter(|d| max_days.is_none_or(|max| d.days_old <= max))
        .collect()
}

/// The date `days` ago, in UTC.
fn days_ago(days: i64) -> jiff::civil::DateTime {
    let then = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24 * days);
    then.to_zoned(jiff::tz::TimeZone::UTC).datetime()
}

// ---- SearXNG ----------------------------------------------------------

fn searxng(shared: &Shared, request: &Request) -> Option<Answer> {
    match (request.method.as_str(), request.path.as_str()) {
        ("GET" | "POST", "/") => {
            if request.param("q").is_some_and(|q| !q.is_empty()) {
                let query = form_encode(&request.params);
                return Some(Answer::html(308, "").header("location", &format!("/search?{query}")));
            }
            Some(Answer::html(200, "<!doctype html><title>SearXNG</title>"))
        }
        ("GET" | "POST", "/search") => searxng_search(shared, request),
        _ => Some(Answer::html(404, WERKZEUG_404)),
    }
}

fn searxng_search(shared: &Shared, request: &Request) -> Option<Answer> {
    // The limiter runs before the search view.
    if over_limit(shared) {
        return Some(Answer::html(429, "Too Many Requests"));
    }
    // An unknown format is taken as html, as SearXNG does.
    let format = request
        .param("format")
        .filter(|f| ["json", "csv", "rss", "html"].contains(f))
        .unwrap_or("html");
    if !shared.lock().formats.contains(&format) {
        return Some(Answer::html(403, WERKZEUG_403));
    }
    if format != "json" {
        return Some(Answer::html(
            200,
            "<!doctype html><title>SearXNG</title><p>results as HTML</p>",
        ));
    }
    if let Some(answer) = faulted(shared) {
        return answer;
    }
    let q = request.param("q").unwrap_or_default();
    if q.is_empty() {
        return Some(Answer::json(400, &json!({"error": "No query"})));
    }
    let time_range = match request.param("time_range") {
        None | Some("" | "None") => None,
        Some(t @ ("day" | "week" | "month" | "year")) => Some(t),
        Some(other) => return Some(invalid_param("time_range", other)),
    };
    let pageno = request.param("pageno").unwrap_or("1");
    if pageno.parse::<u32>().map_or(true, |p| p < 1) {
        return Some(invalid_param("pageno", pageno));
    }
    let max_days = time_range.map(|t| match t {
        "day" => 1,
        "week" => 7,
        "month" => 31,
        _ => 365,
    });
    let results: Vec<Value> = matching(shared, q, max_days)
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let (scheme, rest) = d.url.split_once("://").unwrap_or(("https", &d.url));
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            // Engines give dates for news-like pages only.
            let published = (d.days_old < 30).then(|| {
                days_ago(d.days_old)
                    .strftime("%Y-%m-%dT%H:%M:%S")
                    .to_string()
            });
            json!({
                "url": d.url,
                "title": d.title,
                "content": d.text,
                "publishedDate": published,
                "thumbnail": "",
                "engine": "duckduckgo",
                "template": "default.html",
                "parsed_url": [scheme, host, format!("/{path}"), "", "", ""],
                "img_src": "",
                "priority": "",
                "engines": ["duckduckgo", "brave"],
                "positions": [i + 1, i + 1],
                "score": 4.0 / (i as f64 + 1.0),
                "category": "general",
            })
        })
        .collect();
    let unresponsive: Vec<Value> = shared
        .lock()
        .unresponsive
        .iter()
        .map(|(e, r)| json!([e, r]))
        .collect();
    Some(Answer::json(
        200,
        &json!({
            "query": q,
            "number_of_results": 0,
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": unresponsive,
        }),
    ))
}

/// SearXNG's answer to a `SearxParameterException`.
fn invalid_param(name: &str, value: &str) -> Answer {
    Answer::json(
        400,
        &json!({"error": format!("Invalid value \"{value}\" for parameter {name}")}),
    )
}

/// What SearXNG sends with `status`: its JSON error for the ones its view
/// answers, the limiter's text for 429, Werkzeug's pages for the rest.
fn searxng_status(status: u16) -> Answer {
    match status {
        429 => Answer::html(429, "Too Many Requests"),
        403 => Answer::html(403, WERKZEUG_403),
        500 => Answer::json(500, &json!({"error": "search error"})),
        400 => Answer::json(400, &json!({"error": "No query"})),
        other => Answer::html(
            other,
            &format!(
                "<!doctype html>\n<html lang=en>\n<title>{other} {}</title>\n<h1>{}</h1>\n",
                reason(other),
                reason(other)
            ),
        ),
    }
}

const WERKZEUG_403: &str = "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n\
    <h1>Forbidden</h1>\n<p>You don&#39;t have the permission to access the requested resource. \
    It is either read-protected or not readable by the server.</p>\n";

const WERKZEUG_404: &str = "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n\
    <h1>Not Found</h1>\n<p>The requested URL was not found on the server. If you entered the URL \
    manually please check your spelling and try again.</p>\n";

// ---- Brave ------------------------------------------------------------

/// The plan's limits, as `X-RateLimit-*` headers show them.
const BRAVE_LIMIT: &str = "1, 2000";
const BRAVE_POLICY: &str = "1;w=1, 2000;w=2592000";

fn brave(shared: &Shared, key: &str, request: &Request) -> Option<Answer> {
    if request.path != "/res/v1/web/search" {
        return Some(brave_error(
            404,
            "RESOURCE_NOT_FOUND",
            "Resource not found.",
            json!({}),
        ));
    }
    if request.method != "GET" {
        return Some(brave_error(
            405,
            "METHOD_NOT_ALLOWED",
            "Method not allowed.",
            json!({}),
        ));
    }
    if request.header("x-subscription-token") != Some(key) {
        return Some(brave_status(422));
    }
    if over_limit(shared) {
        return Some(brave_status(429));
    }
    if let Some(answer) = faulted(shared) {
        return answer;
    }
    let q = request.param("q").unwrap_or_default();
    let mut errors = Vec::new();
    if q.trim().is_empty() {
        errors.push(validation(
            "q",
            "string_too_short",
            "Query can not be empty",
            q,
        ));
    } else if q.chars().count() > BRAVE_MAX_QUERY_CHARS {
        errors.push(validation(
            "q",
            "string_too_long",
            "String should have at most 400 characters",
            q,
        ));
    } else if q.split_whitespace().count() > BRAVE_MAX_QUERY_WORDS {
        errors.push(validation(
            "q",
            "value_error",
            "Query has more than 50 words",
            q,
        ));
    }
    let count = request.param("count").unwrap_or("20");
    let count = match count.parse::<u64>() {
        Ok(c) if (1..=BRAVE_MAX_COUNT).contains(&c) => c,
        _ => {
            errors.push(validation(
                "count",
                "less_than_equal",
                "Input should be a valid integer from 1 to 20",
                count,
            ));
            0
        }
    };
    let max_days = match request.param("freshness") {
        None | Some("") => None,
        Some("pd") => Some(1),
        Some("pw") => Some(7),
        Some("pm") => Some(31),
        Some("py") => Some(365),
        Some(range) if is_date_range(range) => None,
        Some(other) => {
            errors.push(validation(
                "freshness",
                "value_error",
                "Input should be 'pd', 'pw', 'pm', 'py' or a range YYYY-MM-DDtoYYYY-MM-DD",
                other,
            ));
            None
        }
    };
    if !errors.is_empty() {
        return Some(brave_error(
            422,
            "VALIDATION",
            "Unable to validate request parameter(s)",
            json!({"errors": errors}),
        ));
    }
    let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
    let results: Vec<Value> = matching(shared, q, max_days)
        .into_iter()
        .take(usize::try_from(count).unwrap_or(usize::MAX))
        .map(|d| brave_result(d, &words))
        .collect();
    let mut body = json!({
        "type": "search",
        "query": {
            "original": q,
            "show_strict_warning": false,
            "is_navigational": false,
            "is_news_breaking": false,
            "spellcheck_off": true,
            "country": "us",
            "bad_results": false,
            "should_fallback": false,
            "postal_code": "",
            "city": "",
            "header_country": "",
            "more_results_available": false,
            "state": "",
        },
        "mixed": {"type": "mixed", "main": [], "top": [], "side": []},
    });
    if !results.is_empty() {
        body["mixed"]["main"] = json!([{"type": "web", "index": 0, "all": true}]);
        body["web"] = json!({"type": "search", "results": results, "family_friendly": true});
    }
    Some(
        Answer::json(200, &body)
            .header("X-RateLimit-Limit", BRAVE_LIMIT)
            .header("X-RateLimit-Policy", BRAVE_POLICY)
            .header("X-RateLimit-Remaining", "0, 1999")
            .header("X-RateLimit-Reset", "1, 2591999"),
    )
}

/// One web result, the query's words in `<strong>` in its description.
fn brave_result(doc: &Doc, words: &[String]) -> Value {
    let description: Vec<String> = doc
        .text
        .split(' ')
        .map(|w| {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            if words.contains(&bare) {
                format!("<strong>{w}</strong>")
            } else {
                w.replace('&', "&amp;").replace('\'', "&#x27;")
            }
        })
        .collect();
    let published = days_ago(doc.days_old);
    let age = match doc.days_old {
        0 => "10 hours ago".to_owned(),
        1 => "1 day ago".to_owned(),
        d if d < 7 => format!("{d} days ago"),
        _ => published.strftime("%B %-d, %Y").to_string(),
    };
    let (_, rest) = doc.url.split_once("://").unwrap_or(("https", &doc.url));
    let host = rest.split('/').next().unwrap_or(rest);
    json!({
        "title": doc.title,
        "url": doc.url,
        "is_source_local": false,
        "is_source_both": false,
        "description": description.join(" "),
        "page_age": published.strftime("%Y-%m-%dT%H:%M:%S").to_string(),
        "profile": {"name": host, "url": doc.url, "long_name": host, "img": ""},
        "language": "en",
        "family_friendly": true,
        "type": "search_result",
        "subtype": "generic",
        "is_live": false,
        "meta_url": {"scheme": "https", "netloc": host, "hostname": host, "favicon": "", "path": ""},
        "age": age,
    })
}

/// What Brave sends with `status`.
fn brave_status(status: u16) -> Answer {
    match status {
        401 | 422 => brave_error(
            status,
            "SUBSCRIPTION_TOKEN_INVALID",
            "The provided subscription token is invalid.",
            json!({"component": "authentication"}),
        ),
        429 => brave_error(
            429,
            "RATE_LIMITED",
            "Request rate limit exceeded for plan.",
            json!({"plan": "Free", "rate_limit": 1, "rate_current": 1,
                   "quota_limit": 2000, "quota_current": 1, "component": "rate_limiter"}),
        )
        .header("X-RateLimit-Limit", BRAVE_LIMIT)
        .header("X-RateLimit-Policy", BRAVE_POLICY)
        .header("X-RateLimit-Remaining", "0, 1999")
        .header("X-RateLimit-Reset", "1, 2591999"),
        other => brave_error(
            other,
            "INTERNAL_ERROR",
            "An internal error occurred.",
            json!({"component": "api"}),
        ),
    }
}

fn brave_error(status: u16, code: &str, detail: &str, meta: Value) -> Answer {
    Answer::json(
        status,
        &json!({
            "type": "ErrorResponse",
            "error": {
                "id": "5d832250-9396-4f6e-b84a-2a1fe524cd7d",
                "status": status,
                "code": code,
                "detail": detail,
                "meta": meta,
            },
            "time": jiff::Timestamp::now().as_second(),
        }),
    )
}

fn validation(field: &str, kind: &str, msg: &str, input: &str) -> Value {
    json!({"type": kind, "loc": ["query", field], "msg": msg, "input": input})
}

/// `YYYY-MM-DDtoYYYY-MM-DD`.
fn is_date_range(text: &str) -> bool {
    text.split_once("to").is_some_and(|(from, to)| {
        from.parse::<jiff::civil::Date>().is_ok() && to.parse::<jiff::civil::Date>().is_ok()
    })
}

// ---- DuckDuckGo -------------------------------------------------------

/// Results on one page, as DuckDuckGo's HTML page shows.
const DDG_PAGE: usize = 10;

fn duckduckgo(shared: &Shared, request: &Request) -> Option<Answer> {
    match (request.method.as_str(), request.path.as_str()) {
        ("GET" | "POST", "/html") => {
            return Some(Answer::html(301, DDG_MOVED).header("location", "/html/"));
        }
        ("GET" | "POST", "/html/") => {}
        _ => return Some(Answer::html(404, DDG_404)),
    }
    let q = request.param("q").unwrap_or_default().trim().to_owned();
    if q.is_empty() {
        return Some(Answer::html(200, &ddg_page("", "", "")));
    }
    if over_limit(shared) {
        let status = if shared.lock().anomaly_200 { 200 } else { 202 };
        return Some(Answer::html(status, &ddg_anomaly(&q)));
    }
    if let Some(answer) = faulted(shared) {
        return answer;
    }
    // DuckDuckGo ignores a df it does not know.
    let df = request.param("df").unwrap_or_default();
    let max_days = match df {
        "d" => Some(1),
        "w" => Some(7),
        "m" => Some(31),
        "y" => Some(365),
        _ => None,
    };
    let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
    let found = matching(shared, &q, max_days);
    let links = if found.is_empty() {
        "<div class=\"no-results\">No results.</div>\n".to_owned()
    } else {
        let mut blocks = ddg_ad(&q);
        for doc in found.iter().take(DDG_PAGE) {
            blocks.push_str(&ddg_result(doc, &words));
        }
        blocks
    };
    Some(Answer::html(200, &ddg_page(&q, df, &links)))
}

/// The page around the results: the header's form (the query echoed,
/// the region and time selects), the results, the next-page form.
fn ddg_page(q: &str, df: &str, links: &str) -> String {
    let title = if q.is_empty() {
        "DuckDuckGo".to_owned()
    } else {
        format!("{} at DuckDuckGo", escape(q))
    };
    let selected = |v: &str| if v == df { " selected" } else { "" };
    format!(
        r#"<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<!--[if IE 6]><html class="ie6" xmlns="http://www.w3.org/1999/xhtml"><![endif]-->
<!--[if !IE]><!--><html xmlns="http://www.w3.org/1999/xhtml"><!--<![endif]-->
<head>
  <meta http-equiv="content-type" content="text/html; charset=UTF-8">
  <meta name="viewport" content="width=device-width, initial-scale=1.0, maximum-scale=3.0, user-scalable=1" />
  <meta name="referrer" content="origin" />
  <meta name="robots" content="noindex, nofollow" />
  <title>{title}</title>
  <link title="DuckDuckGo (HTML)" type="application/opensearchdescription+xml" rel="search" href="//duckduckgo.com/opensearch_html_v2.xml" />
  <link rel="stylesheet" href="//duckduckgo.com/dist/h.css" type="text/css"/>
</head>
<body class="body--html">
  <a name="top" id="top"></a>
  <form action="/html/" method="post">
    <input type="text" name="state_hidden" id="state_hidden" />
  </form>
  <div>
    <div class="site-wrapper-border"></div>
    <div id="header" class="header cw header--html">
      <a title="DuckDuckGo" href="/html/" class="header__logo-wrap" tabindex="-1"><span class="header__logo">DuckDuckGo</span></a>
      <form name="x" class="header__form" action="/html/" method="post">
        <div class="search search--header">
          <input name="q" autocomplete="off" class="search__input" id="search_form_input_homepage" type="text" value="{q}" />
          <input name="b" id="search_button_homepage" class="search__button search__button--html" value="" title="Search" alt="Search" type="submit" />
        </div>
        <div class="frm__select">
          <select name="kl">
            <option value="" >All Regions</option>
            <option value="de-de" >Germany</option>
            <option value="us-en" >US (English)</option>
            <option value="wt-wt" >No region</option>
          </select>
        </div>
        <div class="frm__select frm__select--last">
          <select class="" name="df">
            <option value=""{any}>Any Time</option>
            <option value="d"{d}>Past Day</option>
            <option value="w"{w}>Past Week</option>
            <option value="m"{m}>Past Month</option>
            <option value="y"{y}>Past Year</option>
          </select>
        </div>
      </form>
    </div>
    <!-- Web results are present -->
    <div>
      <div class="serp__results">
        <div id="links" class="results">
{links}
          <div class="nav-link">
            <form action="/html/" method="post">
              <input type="submit" class='btn btn--alt' value="Next" />
              <input type="hidden" name="q" value="{q}" />
              <input type="hidden" name="s" value="10" />
              <input type="hidden" name="dc" value="11" />
              <input type="hidden" name="v" value="l" />
              <input type="hidden" name="o" value="json" />
              <input type="hidden" name="api" value="d.js" />
              <input type="hidden" name="vqd" value="4-123456789012345678901234567890" />
              <input name="kl" value="wt-wt" type="hidden" />
            </form>
          </div>
        </div>
      </div>
    </div>
  </div>
  <div id="bottom_spacing2"></div>
  <img src="//duckduckgo.com/t/sl_h"/>
</body>
</html>
"#,
        q = escape(q),
        any = selected(""),
        d = selected("d"),
        w = selected("w"),
        m = selected("m"),
        y = selected("y"),
    )
}

/// The ad DuckDuckGo puts above the results, its links through `y.js`.
fn ddg_ad(q: &str) -> String {
    let click = format!(
        "https://duckduckgo.com/y.js?ad_domain=shop.example&amp;ad_provider=bingv7aa&amp;ad_type=txad&amp;rut=f00&amp;u3={}",
        uddg(&format!("https://shop.example/?q={q}"))
    );
    format!(
        r#"          <div class="result results_links results_links_deep result--ad result--ad--small">
            <div class="links_main links_deep result__body">
              <h2 class="result__title">
                <a rel="nofollow" class="result__a" href="{click}">Buy {q} today - Great Deals</a>
              </h2>
              <div class="result__extras">
                <div class="result__extras__url">
                  <a class="result__url" href="{click}">shop.example</a>
                  <button class="badge--ad__tooltip-wrap"><span class="badge--ad">Ad</span></button>
                </div>
              </div>
              <a class="result__snippet" href="{click}">Shop {q} deals. Free shipping on orders over $50.</a>
              <div class="clear"></div>
            </div>
          </div>
"#,
        q = escape(q),
    )
}

/// One organic result: the link wrapped in DuckDuckGo's `/l/?uddg=`, the
/// query's words in `<b>` in the title and the snippet.
fn ddg_result(doc: &Doc, words: &[String]) -> String {
    let href = format!(
        "//duckduckgo.com/l/?uddg={}&amp;rut={:016x}",
        uddg(&doc.url),
        rut(&doc.url)
    );
    let (_, rest) = doc.url.split_once("://").unwrap_or(("https", &doc.url));
    let shown = rest.trim_end_matches('/');
    let host = shown.split('/').next().unwrap_or(shown);
    format!(
        r#"          <div class="result results_links results_links_deep web-result ">
            <div class="links_main links_deep result__body"> <!-- This is the visible part -->
              <h2 class="result__title">
                <a rel="nofollow" class="result__a" href="{href}">{title}</a>
              </h2>
              <div class="result__extras">
                <div class="result__extras__url">
                  <span class="result__icon">
                    <a rel="nofollow" href="{href}">
                      <img class="result__icon__img" width="16" height="16" alt="" src="//external-content.duckduckgo.com/ip3/{host}.ico" name="i15" />
                    </a>
                  </span>
                  <a class="result__url" href="{href}">
                    {shown}
                  </a>
                </div>
              </div>
              <a class="result__snippet" href="{href}">{snippet}</a>
              <div class="clear"></div>
            </div>
          </div>
"#,
        title = bolded(&doc.title, words),
        snippet = bolded(&doc.text, words),
        shown = escape(shown),
        host = escape(host),
    )
}

/// The bot check: 202 (or 200), a CAPTCHA of ducks in an `anomaly-modal`.
fn ddg_anomaly(q: &str) -> String {
    format!(
        r#"<!DOCTYPE html><html lang="en-US"><head><meta charset="utf-8"><title>DuckDuckGo</title>
<link rel="stylesheet" href="/dist/a.css"></head>
<body><div class="anomaly-modal__mask"><div class="anomaly-modal__modal" data-testid="anomaly-modal">
<div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div>
<div class="anomaly-modal__description">Please complete the following challenge to confirm this search was made by a human.</div>
<div class="anomaly-modal__instructions">Select all squares containing a duck:</div>
<form id="challenge-form" action="//duckduckgo.com/anomaly.js?sv=html&amp;cc=sre&amp;q={q}" method="POST">
<div class="anomaly-modal__puzzle">{images}</div>
<button class="btn btn--primary anomaly-modal__submit" type="submit">Submit</button>
</form>
<p class="anomaly-modal__footer">Images not loading? <a href="mailto:error-lite@duckduckgo.com">Please email us</a>.</p>
</div></div></body></html>
"#,
        q = uddg(q),
        images = (0..9)
            .map(|i| format!("<div class=\"anomaly-modal__image\"><img src=\"/assets/anomaly/images/challenge/{i}.jpg\" alt=\"\"></div>"))
            .collect::<String>(),
    )
}

const DDG_MOVED: &str = "<html>\r\n<head><title>301 Moved Permanently</title></head>\r\n\
    <body>\r\n<center><h1>301 Moved Permanently</h1></center>\r\n<hr><center>nginx</center>\r\n\
    </body>\r\n</html>\r\n";

const DDG_404: &str = "<html>\r\n<head><title>404 Not Found</title></head>\r\n\
    <body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n\
    </body>\r\n</html>\r\n";

/// `text` escaped, with the words of `words` in `<b>`.
fn bolded(text: &str, words: &[String]) -> String {
    text.split(' ')
        .map(|w| {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            if !bare.is_empty() && words.contains(&bare) {
                format!("<b>{}</b>", escape(w))
            } else {
                escape(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// HTML-escaped, as its templates escape text and attributes.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

/// Percent-encoded as `uddg` carries a URL: everything but letters,
/// digits and `._~` (DuckDuckGo's pages encode even `-`, as `%2D`).
fn uddg(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// A stand-in for `rut`, DuckDuckGo's hash of the click.
fn rut(url: &str) -> u64 {
    url.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

// ---- form encoding ----------------------------------------------------

/// `a=1&b=x+y%21` as pairs, `+` as space and `%XX` decoded.
fn form_decode(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 3 <= bytes.len() => {
                match u8::from_str_radix(text.get(i + 1..i + 3).unwrap_or("zz"), 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn form_encode(params: &[(String, String)]) -> String {
    let encode = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    char::from(b).to_string()
                }
                b' ' => "+".to_owned(),
                b => format!("%{b:02X}"),
            })
            .collect()
    };
    params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}
