//! `web_search`: a query to the owner's search backends, answered as a
//! list of results (title, URL, snippet, and the date where known).
//!
//! The backends are configured in `[plugins.web.search]` (`config`):
//! SearXNG's JSON API (`searxng`), self-hosted and keyless, and the Brave
//! Search API (`brave`). With none configured, search goes to DuckDuckGo's
//! HTML page (`duckduckgo`): no key and no setup, so a fresh hearth can
//! search, at the price of rougher results, no dates and DuckDuckGo's rate
//! limit, which the answers say. Several backends are tried in order: one
//! that cannot be reached, fails or refuses hands over to the next, and
//! the answer says which ones failed. Search does not fetch the pages it
//! finds: the model reads a result with `web_fetch`, which applies its
//! address checks to every URL, so a result pointing into the owner's
//! network is refused there like any other URL.

pub mod backend;
pub mod brave;
pub mod config;
pub mod duckduckgo;
pub mod reply;
pub mod results;
pub mod searxng;

use hearth_sdk::PluginError;
use hearth_sdk::args::{Args, invalid};
use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

use crate::guard::Policy;
use backend::Backend;
use config::DuckDuckGo;
use results::Hit;

/// Results returned when the call does not say.
pub const DEFAULT_COUNT: u64 = 5;
/// The most results a call may ask for (Brave's own limit).
pub const MAX_COUNT: u64 = 20;
/// The longest query, in characters (Brave's limit, applied to all).
pub const MAX_QUERY_CHARS: usize = 400;
/// The most words in a query (Brave's limit, applied to all).
pub const MAX_QUERY_WORDS: usize = 50;

/// The tool's description: one line, sent with every request to the model.
pub const DESCRIPTION: &str = "Searches the web; read a result with web_fetch.";

/// The configured backends, in the order they are tried; never empty.
pub struct Search {
    backends: Vec<Backend>,
}

/// A checked query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The words, whitespace collapsed.
    pub text: String,
    /// How many results to return at most.
    pub count: usize,
    /// How recent the results must be.
    pub freshness: Option<Freshness>,
}

/// How recent results must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The past 24 hours.
    Day,
    /// The past week.
    Week,
    /// The past month.
    Month,
    /// The past year.
    Year,
}

/// What one backend found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// The results, at most the query's count.
    pub hits: Vec<Hit>,
    /// Engines behind the backend that did not answer (SearXNG's
    /// `unresponsive_engines`), as "engine (reason)".
    pub silent_engines: Vec<String>,
    /// What the results cannot be trusted for (DuckDuckGo's: no dates,
    /// rougher), said with them.
    pub caveat: Option<&'static str>,
}

impl Freshness {
    /// Every value, in the tool's terms.
    pub const ALL: [Freshness; 4] = [
        Freshness::Day,
        Freshness::Week,
        Freshness::Month,
        Freshness::Year,
    ];

    /// The tool's (and SearXNG's `time_range`) name for it.
    pub fn name(self) -> &'static str {
        match self {
            Freshness::Day => "day",
            Freshness::Week => "week",
            Freshness::Month => "month",
            Freshness::Year => "year",
        }
    }

    /// Brave's `freshness` value.
    pub fn brave(self) -> &'static str {
        match self {
            Freshness::Day => "pd",
            Freshness::Week => "pw",
            Freshness::Month => "pm",
            Freshness::Year => "py",
        }
    }

    fn parse(text: &str) -> Option<Freshness> {
        Freshness::ALL.into_iter().find(|f| f.name() == text)
    }
}

impl Query {
    /// Reads and checks `web_search`'s arguments.
    pub fn parse(args: &Value) -> Result<Query, PluginError> {
        let args = Args::new(args, &["query", "count", "freshness"])?;
        let raw = args.text("query")?;
        if let Some(c) = raw.chars().find(|c| c.is_control() && !c.is_whitespace()) {
            return Err(invalid(
                "query",
                &format!(
                    "must not contain control characters (found U+{:04X})",
                    c as u32
                ),
            ));
        }
        let words: Vec<&str> = raw.split_whitespace().collect();
        let text = words.join(" ");
        let chars = text.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(invalid(
                "query",
                &format!("is {chars} characters long; at most {MAX_QUERY_CHARS}"),
            ));
        }
        if words.len() > MAX_QUERY_WORDS {
            return Err(invalid(
                "query",
                &format!("has {} words; at most {MAX_QUERY_WORDS}", words.len()),
            ));
        }
        let count = args.u64_in("count", 1, MAX_COUNT, DEFAULT_COUNT)?;
        let freshness = match args.opt_string("freshness")? {
            None => None,
            Some(f) => Some(Freshness::parse(f).ok_or_else(|| {
                invalid(
                    "freshness",
                    &format!("{f:?} is not one of {}", freshness_names().join(", ")),
                )
            })?),
        };
        Ok(Query {
            text,
            // At most MAX_COUNT, checked above.
            count: usize::try_from(count).unwrap_or(usize::MAX),
            freshness,
        })
    }
}

impl Search {
    /// Sets up the backends of `[plugins.web] search` (`None`: DuckDuckGo
    /// at `ddg`); `policy` is the egress guard DuckDuckGo's requests go
    /// through; `env` reads the variables that hold API keys.
    pub fn from_config(
        search: Option<&Value>,
        ddg: &DuckDuckGo,
        policy: &Policy,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Search, String> {
        let configs = config::parse(search, ddg, env).map_err(|e| e.to_string())?;
        let backends = configs
            .into_iter()
            .map(|c| Backend::new(c, policy))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Search { backends })
    }

    /// How the log names the backends: "searxng (127.0.0.1:8888), brave (...)".
    pub fn describe_backends(&self) -> String {
        let labels: Vec<&str> = self.backends.iter().map(Backend::label).collect();
        labels.join(", ")
    }

    /// The tool's description and schema.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_search".into(),
            description: DESCRIPTION.into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS },
                    "count": { "type": "integer", "minimum": 1, "maximum": MAX_COUNT },
                    "freshness": { "enum": freshness_names() }
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            risk: Risk::Read,
            targets: Default::default(),
        }
    }
}

/// Runs `web_search` on raw JSON arguments.
pub fn web_search(search: &Search, args: Value) -> Result<Value, PluginError> {
    let query = Query::parse(&args)?;
    let mut failed: Vec<String> = Vec::new();
    let last = search.backends.len().saturating_sub(1);
    for (i, backend) in search.backends.iter().enumerate() {
        match backend.search(&query) {
            // Nothing found while the instance's engines failed: likely an
            // outage rather than an answer, so a next backend gets a turn.
            Ok(answer)
                if answer.hits.is_empty() && !answer.silent_engines.is_empty() && i < last =>
            {
                failed.push(format!(
                    "{} found nothing, and these engines did not answer: {}",
                    backend.label(),
                    answer.silent_engines.join(", ")
                ));
            }
            Ok(answer) => return Ok(shape(&query, backend, answer, failed)),
            Err(e) => {
                tracing::warn!(backend = backend.label(), error = %e, "web search backend failed");
                failed.push(format!("{} {e}", backend.label()));
            }
        }
    }
    // The host puts "web_search failed: " in front.
    Err(PluginError::failed(match failed.as_slice() {
        [one] => one.clone(),
        all => format!("every search backend failed, in order: {}", all.join("; ")),
    }))
}

/// The tool's answer from one backend's results.
fn shape(query: &Query, backend: &Backend, answer: Answer, failed: Vec<String>) -> Value {
    let mut out = json!({
        "query": query.text,
        "backend": backend.kind().name(),
        "results": answer.hits.iter().map(Hit::to_json).collect::<Vec<_>>(),
    });
    if answer.hits.is_empty() {
        let when = query
            .freshness
            .map_or_else(String::new, |f| format!(" from the past {}", f.name()));
        let mut note = format!(
            "No results for {:?}{when}. Try other or fewer words{}.",
            query.text,
            if query.freshness.is_some() {
                ", or a longer freshness"
            } else {
                ""
            }
        );
        if !answer.silent_engines.is_empty() {
            note.push_str(&format!(
                " These search engines did not answer: {}.",
                answer.silent_engines.join(", ")
            ));
        }
        out["note"] = json!(note);
    } else if let Some(caveat) = answer.caveat {
        out["note"] = json!(caveat);
    }
    if !failed.is_empty() {
        out["failed_backends"] = json!(failed);
    }
    out
}

fn freshness_names() -> Vec<&'static str> {
    Freshness::ALL.iter().map(|f| f.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_field_by_field() {
        let ok =
            Query::parse(&json!({"query": "  rust\n async  ", "count": 20, "freshness": "week"}))
                .unwrap();
        assert_eq!(ok.text, "rust async");
        assert_eq!(ok.count, 20);
        assert_eq!(ok.freshness, Some(Freshness::Week));
        assert_eq!(
            Query::parse(&json!({"query": "x"})).unwrap().count,
            DEFAULT_COUNT as usize
        );
        let cases: Vec<(Value, &str)> = vec![
            (json!({}), "field `query`: is required"),
            (json!({"query": " \n "}), "field `query`: must not be empty"),
            (json!({"query": 5}), "field `query`: expected a string"),
            (json!({"query": "a\u{0}b"}), "NUL"),
            (
                json!({"query": "a\u{1b}b"}),
                "control characters (found U+001B)",
            ),
            (
                json!({"query": "x".repeat(401)}),
                "field `query`: is 401 characters long; at most 400",
            ),
            (
                json!({"query": "a ".repeat(51)}),
                "field `query`: has 51 words; at most 50",
            ),
            (
                json!({"query": "x", "count": 0}),
                "field `count`: expected an integer from 1 to 20",
            ),
            (json!({"query": "x", "count": 21}), "from 1 to 20, got 21"),
            (json!({"query": "x", "count": -1}), "field `count`"),
            (
                json!({"query": "x", "count": "5"}),
                "field `count`: expected an integer",
            ),
            (
                json!({"query": "x", "freshness": "hour"}),
                "field `freshness`: \"hour\" is not one of day, week, month, year",
            ),
            (
                json!({"query": "x", "page": 2}),
                "field `page`: unknown field",
            ),
            (json!("x"), "arguments must be a JSON object"),
        ];
        for (args, wanted) in cases {
            let err = Query::parse(&args).unwrap_err().to_string();
            assert!(err.contains(wanted), "{args}: {err:?} lacks {wanted:?}");
        }
    }

    #[test]
    fn freshness_is_said_in_each_backends_terms() {
        let brave: Vec<_> = Freshness::ALL.iter().map(|f| f.brave()).collect();
        assert_eq!(brave, ["pd", "pw", "pm", "py"]);
        assert_eq!(freshness_names(), ["day", "week", "month", "year"]);
    }

    #[test]
    fn without_a_backend_duckduckgo_searches_and_the_description_is_plain() {
        let ddg = DuckDuckGo::parse(None, None).unwrap();
        let search = Search::from_config(None, &ddg, &Policy::default(), |_| None).unwrap();
        assert_eq!(
            search.describe_backends(),
            "duckduckgo (html.duckduckgo.com)"
        );
        assert_eq!(search.spec().description, DESCRIPTION);
        // A configured backend replaces it. Its client needs the process's
        // TLS provider, which the plugin installs in `init`.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let searxng = json!({"backend": "searxng", "base_url": "http://127.0.0.1:8888"});
        let search =
            Search::from_config(Some(&searxng), &ddg, &Policy::default(), |_| None).unwrap();
        assert_eq!(search.describe_backends(), "searxng (127.0.0.1:8888)");
    }

    #[test]
    fn duckduckgo_on_a_private_address_is_refused_by_the_guard_and_nothing_is_sent() {
        // Nothing listens on port 9 of loopback; the guard refuses first.
        let ddg = DuckDuckGo::parse(Some("http://127.0.0.1:9/html/"), None).unwrap();
        let search = Search::from_config(None, &ddg, &Policy::default(), |_| None).unwrap();
        let err = web_search(&search, json!({"query": "x"}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "duckduckgo (127.0.0.1:9) was not asked: 127.0.0.1 is a loopback address; \
                 allow it with [plugins.web] allow_hosts = [\"127.0.0.1:9\"]"
            ),
            "{err}"
        );
    }
}
