//! DuckDuckGo's HTML results page: the key-less default backend.
//!
//! `POST {duckduckgo_url}` (`https://html.duckduckgo.com/html/`) with the
//! form its no-JavaScript page sends: `q`, `b` (the button, empty), `kl`
//! (region, `wt-wt` for none) and `df` (`d`, `w`, `m` or `y`: the past
//! day, week, month or year). The answer is a page of about ten results,
//! each
//!
//! ```html
//! <div class="result results_links results_links_deep web-result ">
//!   <h2 class="result__title"><a rel="nofollow" class="result__a"
//!     href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2F&amp;rut=...">Title <b>word</b></a></h2>
//!   <a class="result__snippet" href="...">snippet with <b>bold</b></a>
//! </div>
//! ```
//!
//! with ads first (`result--ad`, their links through `duckduckgo.com/y.js`),
//! which are skipped. A link is DuckDuckGo's redirect, unwrapped here to its
//! `uddg` target. Nothing found is `<div class="no-results">No results.</div>`.
//!
//! Limits, said to the model and in docs/operations.md: the page is
//! scraped, so results are rougher than SearXNG's or Brave's and carry no
//! dates; `df` is DuckDuckGo's own coarse filter; and when DuckDuckGo takes
//! hearth for a bot it answers its anomaly page (a CAPTCHA, HTTP 202,
//! `anomaly-modal`, "Unfortunately, bots use DuckDuckGo too"). Then hearth
//! asks nothing for [`BACKOFF`]: asking at once would prolong the block.
//!
//! The page is read with `html::Tags`, the same linear scanner `web_fetch`
//! uses, never a tree: the page is untrusted input.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::Url;

use super::reply::{BackendError, Reply};
use super::results::{Hit, first_distinct};
use super::{Answer, Freshness, Query};
use crate::html::Tags;

/// How long no request is sent after the bot check.
pub const BACKOFF: Duration = Duration::from_secs(60);

/// The region asked for when the owner set none: DuckDuckGo's "no region".
pub const NO_REGION: &str = "wt-wt";

/// Said with results: what this backend cannot do.
pub const CAVEAT: &str = "Key-less DuckDuckGo: rougher results, no dates.";
/// Said with results of a search with `freshness`.
pub const CAVEAT_FRESHNESS: &str =
    "Key-less DuckDuckGo: rougher results, no dates, an approximate time filter.";

/// Words of DuckDuckGo's bot check page, either of which marks it.
const ANOMALY_MARKS: &[&str] = &["anomaly-modal", "Unfortunately, bots use DuckDuckGo too"];

/// The form body for `query`, url-encoded.
pub fn form(query: &Query, region: Option<&str>) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("q", &query.text);
    form.append_pair("b", "");
    form.append_pair("kl", region.unwrap_or(NO_REGION));
    if let Some(freshness) = query.freshness {
        form.append_pair("df", df(freshness));
    }
    form.finish()
}

/// DuckDuckGo's `df` for `freshness`.
pub fn df(freshness: Freshness) -> &'static str {
    match freshness {
        Freshness::Day => "d",
        Freshness::Week => "w",
        Freshness::Month => "m",
        Freshness::Year => "y",
    }
}

/// Reads DuckDuckGo's answer.
pub fn read(reply: &Reply, query: &Query) -> Result<Answer, BackendError> {
    let page = String::from_utf8_lossy(&reply.body);
    // 202 is what it answers a suspected bot; 403 and 429 are the same
    // block said another way.
    if matches!(reply.status, 202 | 403 | 429) {
        return Err(BackendError::BotCheck {
            status: reply.status,
        });
    }
    if let Some(error) = reply.common_error(None) {
        return Err(error);
    }
    let parsed = parse(&page);
    let results_page = parsed.blocks > 0 || parsed.no_results;
    // The check has come with 200 too. Only a page that is not a results
    // page counts: results about the check quote its words.
    if !results_page && is_anomaly(&page) {
        return Err(BackendError::BotCheck {
            status: reply.status,
        });
    }
    if !results_page {
        let title = crate::html::title(&page).map_or_else(
            || "no title".to_owned(),
            |t| format!("titled {:?}", super::reply::shorten(&t)),
        );
        return Err(BackendError::UnexpectedPage(title));
    }
    let hits = first_distinct(parsed.hits, query.count);
    let caveat = if hits.is_empty() {
        None
    } else if query.freshness.is_some() {
        Some(CAVEAT_FRESHNESS)
    } else {
        Some(CAVEAT)
    };
    Ok(Answer {
        hits,
        silent_engines: Vec::new(),
        caveat,
    })
}

/// Whether `page` is the bot check.
fn is_anomaly(page: &str) -> bool {
    ANOMALY_MARKS.iter().any(|m| page.contains(m))
}

/// What a results page holds.
#[derive(Debug, Default)]
struct Parsed {
    /// The organic results, in page order.
    hits: Vec<Hit>,
    /// Result blocks seen, ads included: a page with some is a results page.
    blocks: usize,
    /// The "No results." notice was there.
    no_results: bool,
}

/// One `div.result` being read.
#[derive(Default)]
struct Block {
    ad: bool,
    href: Option<String>,
    title: Option<String>,
    snippet: Option<String>,
}

impl Block {
    /// The result, unless it is an ad or lacks a usable link.
    fn finish(self) -> Option<Hit> {
        if self.ad {
            return None;
        }
        let url = target(self.href.as_deref()?)?;
        Hit::new(
            self.title.as_deref().unwrap_or_default(),
            &url,
            self.snippet.as_deref().unwrap_or_default(),
        )
    }
}

/// Picks the results out of `page` in one pass over its tags.
fn parse(page: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut block: Option<Block> = None;
    let mut tags = Tags::new(page);
    while let Some(tag) = tags.next() {
        if tag.closing {
            continue;
        }
        if tag.has_class("no-results") {
            parsed.no_results = true;
        }
        if tag.name == "div" && tag.has_class("result") {
            // Results are siblings, never nested: a new one ends the last.
            parsed.hits.extend(block.take().and_then(Block::finish));
            parsed.blocks += 1;
            block = Some(Block {
                ad: tag.classes().any(|c| c.starts_with("result--ad")),
                ..Block::default()
            });
            continue;
        }
        if tag.name == "a" && tag.has_class("result__a") {
            let current = block.get_or_insert_with(Block::default);
            if current.href.is_none() {
                current.href = tag.attr("href");
                current.title = Some(tags.content(&tag).to_owned());
            }
            continue;
        }
        if tag.has_class("result__snippet") {
            if let Some(current) = block.as_mut().filter(|b| b.snippet.is_none()) {
                current.snippet = Some(tags.content(&tag).to_owned());
            }
        }
    }
    parsed.hits.extend(block.and_then(Block::finish));
    parsed
}

/// Where a result link leads: DuckDuckGo's `/l/?uddg=<target>` unwrapped,
/// an ordinary link as it is; `None` for DuckDuckGo's own pages (an ad's
/// `y.js` click, say), which are no result.
fn target(href: &str) -> Option<String> {
    // Links are protocol-relative ("//duckduckgo.com/l/?..."): read them
    // as DuckDuckGo's, wherever the page came from (a test's fake).
    let base = Url::parse("https://duckduckgo.com/").ok()?;
    let url = base.join(href.trim()).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    if host == "duckduckgo.com" || host.ends_with(".duckduckgo.com") {
        if url.path() == "/l/" || url.path() == "/l" {
            return url
                .query_pairs()
                .find(|(k, _)| k == "uddg")
                .map(|(_, v)| v.into_owned());
        }
        return None;
    }
    Some(url.to_string())
}

/// When the last bot check came: no request is sent for [`BACKOFF`] after.
pub struct Backoff {
    since: Mutex<Option<Instant>>,
    length: Duration,
}

impl Backoff {
    /// A backoff of `length` after each bot check.
    pub fn new(length: Duration) -> Backoff {
        Backoff {
            since: Mutex::new(None),
            length,
        }
    }

    /// `Err(BackingOff)` while a recent bot check holds requests back.
    pub fn check(&self, now: Instant) -> Result<(), BackendError> {
        let since = *self.since.lock().unwrap_or_else(PoisonError::into_inner);
        match since {
            Some(at) if now.saturating_duration_since(at) < self.length => {
                Err(BackendError::BackingOff {
                    ago_s: now.saturating_duration_since(at).as_secs(),
                })
            }
            _ => Ok(()),
        }
    }

    /// A bot check came at `now`.
    pub fn start(&self, now: Instant) {
        *self.since.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;
    use serde_json::json;

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: HeaderMap::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    fn query(text: &str) -> Query {
        Query::parse(&json!({"query": text})).unwrap()
    }

    const PAGE: &str = r#"<!DOCTYPE html><html><head><title>rust at DuckDuckGo</title></head><body>
        <div id="links" class="results">
        <div class="result results_links results_links_deep result--ad result--ad--small">
          <h2 class="result__title"><a rel="nofollow" class="result__a"
             href="https://duckduckgo.com/y.js?ad_domain=shop.example&amp;u3=x">Buy <b>rust</b></a></h2>
          <a class="result__snippet" href="https://duckduckgo.com/y.js?x=1">An ad.</a>
        </div>
        <div class="result results_links results_links_deep web-result ">
          <div class="links_main links_deep result__body">
          <h2 class="result__title"><a rel="nofollow" class="result__a"
             href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa%3Fx%3D1%26y%3D%C3%BC&amp;rut=abc">The <b>Rust</b> &amp; you</a></h2>
          <div class="result__extras"><a class="result__url" href="//duckduckgo.com/l/?uddg=x">example.org/a</a></div>
          <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">All about <b>rust</b>.</a>
          </div>
        </div>
        <div class="result results_links results_links_deep web-result ">
          <h2 class="result__title"><a class="result__a" href="https://direct.example/b">Direct</a></h2>
          <div class="result__snippet">No link <b>here</b></div>
        </div>
        <div class="result results_links web-result"><h2><a class="result__a" href="javascript:x">Bad</a></h2></div>
        </div></body></html>"#;

    #[test]
    fn results_are_unwrapped_and_ads_skipped() {
        let answer = read(&reply(200, PAGE), &query("rust")).unwrap();
        let got: Vec<_> = answer.hits.iter().map(Hit::to_json).collect();
        assert_eq!(
            got,
            [
                json!({"title": "The Rust & you", "url": "https://example.org/a?x=1&y=%C3%BC", "snippet": "All about rust."}),
                json!({"title": "Direct", "url": "https://direct.example/b", "snippet": "No link here"}),
            ]
        );
        assert_eq!(answer.caveat, Some(CAVEAT));
        let fresh =
            Query::parse(&json!({"query": "rust", "freshness": "day", "count": 1})).unwrap();
        let answer = read(&reply(200, PAGE), &fresh).unwrap();
        assert_eq!(answer.hits.len(), 1);
        assert_eq!(answer.caveat, Some(CAVEAT_FRESHNESS));
    }

    #[test]
    fn no_results_is_an_empty_answer() {
        let page = "<html><body><div class=\"serp__results\"><div id=\"links\" class=\"results\">\
                    <div class=\"no-results\">No results.</div></div></div></body></html>";
        let answer = read(&reply(200, page), &query("quantum knitting")).unwrap();
        assert!(answer.hits.is_empty());
        assert_eq!(answer.caveat, None);
    }

    #[test]
    fn the_bot_check_is_rate_limiting_whatever_its_status() {
        let anomaly = "<html><body><div class=\"anomaly-modal__modal\" data-testid=\"anomaly-modal\">\
                       <div class=\"anomaly-modal__title\">Unfortunately, bots use DuckDuckGo too.</div>\
                       </div></body></html>";
        for (status, body) in [
            (202, anomaly),
            (200, anomaly),
            (202, ""),
            (429, ""),
            (403, "x"),
        ] {
            let err = read(&reply(status, body), &query("x")).unwrap_err();
            assert_eq!(err, BackendError::BotCheck { status });
            assert!(
                err.to_string().ends_with(
                    "DuckDuckGo is rate limiting; try again in a minute or configure SearXNG/Brave"
                ),
                "{err}"
            );
        }
        // Results about the check quote its words, and are results.
        let quoting = PAGE.replace("All about", "Unfortunately, bots use DuckDuckGo too:");
        assert_eq!(
            read(&reply(200, &quoting), &query("x")).unwrap().hits.len(),
            2
        );
        assert_eq!(
            read(&reply(500, "oops"), &query("x")).unwrap_err(),
            BackendError::ServerError {
                status: 500,
                detail: None
            }
        );
    }

    #[test]
    fn a_page_that_is_not_a_results_page_is_said_to_be_one() {
        let portal =
            "<html><head><title>Sign in to the network</title></head><body>Welcome</body></html>";
        let err = read(&reply(200, portal), &query("x"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no \"No results\" notice (titled \"Sign in to the network\")"),
            "{err}"
        );
    }

    #[test]
    fn the_form_says_region_and_time_in_duckduckgos_terms() {
        let q = Query::parse(&json!({"query": "c++ & rust", "freshness": "month"})).unwrap();
        assert_eq!(
            form(&q, Some("de-de")),
            "q=c%2B%2B+%26+rust&b=&kl=de-de&df=m"
        );
        assert_eq!(form(&query("x"), None), "q=x&b=&kl=wt-wt");
        let all: Vec<_> = Freshness::ALL.into_iter().map(df).collect();
        assert_eq!(all, ["d", "w", "m", "y"]);
    }

    #[test]
    fn links_are_unwrapped_and_duckduckgos_own_dropped() {
        let cases = [
            (
                "//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fpage&rut=abc",
                Some("https://example.org/page"),
            ),
            (
                "https://duckduckgo.com/l/?kh=-1&uddg=http%3A%2F%2Fa.example%2F",
                Some("http://a.example/"),
            ),
            (
                "/l/?uddg=https%3A%2F%2Fb.example%2F",
                Some("https://b.example/"),
            ),
            ("https://c.example/x", Some("https://c.example/x")),
            ("https://duckduckgo.com/y.js?ad_domain=x", None),
            ("//duckduckgo.com/l/?rut=abc", None),
        ];
        for (href, wanted) in cases {
            assert_eq!(target(href).as_deref(), wanted, "{href}");
        }
    }

    #[test]
    fn the_backoff_holds_requests_for_its_length() {
        let backoff = Backoff::new(Duration::from_secs(60));
        let t0 = Instant::now();
        assert!(backoff.check(t0).is_ok());
        backoff.start(t0);
        assert_eq!(
            backoff.check(t0 + Duration::from_secs(15)),
            Err(BackendError::BackingOff { ago_s: 15 })
        );
        assert!(backoff.check(t0 + Duration::from_secs(60)).is_ok());
    }

    #[test]
    fn a_huge_flat_page_is_read_in_linear_time() {
        let block = "<div class=\"result web-result\"><a class=\"result__a\" \
                     href=\"//duckduckgo.com/l/?uddg=https%3A%2F%2Fe.example%2F\">t</a></div>";
        let page = block.repeat(20_000);
        let started = Instant::now();
        let parsed = parse(&page);
        assert_eq!(parsed.blocks, 20_000);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
