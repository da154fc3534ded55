//! `web_search` against fake SearXNG and Brave servers on 127.0.0.1 that
//! speak the services' wire formats: results normalized, `count` and
//! `freshness` passed in each backend's terms, results pointing into the
//! owner's network refused by `web_fetch`, no results as an answer, every
//! backend failure a message naming the backend, fallback in order, bad
//! arguments and bad config refused by field, and the Brave key never in
//! an answer, an error or a log line.
//!
//! SearXNG is driven in-process through the registry. Brave needs its key
//! in the daemon's environment, so those calls run `hearth tool call` with
//! the variable set on the child alone.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use hearth_tests::fake_search::{Doc, FakeSearch, Fault};
use hearth_tests::{Hearth, Run, plugin};
use serde_json::{Value, json};

/// The Brave key the fake accepts, and the variable that holds it.
const KEY: &str = "BSA-test-key-0123456789";
const KEY_ENV: &str = "HEARTH_TEST_BRAVE_KEY";

fn corpus() -> Vec<Doc> {
    vec![
        Doc::new(
            "Async Rust: a tour",
            "https://rust.example/async-tour",
            "Futures, executors and async/await in Rust, step by step.",
            2,
        ),
        Doc::new(
            "Rust & async I/O",
            "https://blog.example/rust-io",
            "Why async Rust needs a runtime: it's about waking tasks.",
            20,
        ),
        Doc::new(
            "The Rust async book",
            "https://book.example/async",
            "The official guide to async programming in Rust.",
            300,
        ),
        Doc::new(
            "Gardening in spring",
            "https://garden.example/spring",
            "Plant peas early.",
            1,
        ),
        // Results pointing into the owner's network: a search engine (or
        // a page it indexed) can return them, and only web_fetch stands
        // between them and a request.
        Doc::new(
            "Router admin",
            "http://192.168.1.1/admin",
            "router admin console login",
            5,
        ),
        Doc::new(
            "Instance metadata",
            "http://169.254.169.254/latest/meta-data/",
            "router admin credentials",
            5,
        ),
        Doc::new(
            "Local service",
            "http://localhost:8080/admin",
            "router admin local",
            5,
        ),
    ]
}

/// A runtime with the web plugin whose search is `search` (TOML after
/// `[plugins.web]`).
fn hearth(search: &str) -> (Hearth, hearth::runtime::Runtime) {
    let h = Hearth::with_plugins(&[plugin("web")], &format!("[plugins.web]\n{search}"));
    let rt = h.runtime();
    (h, rt)
}

fn searxng_config(base_url: &str) -> String {
    format!("[plugins.web.search]\nbackend = \"searxng\"\nbase_url = \"{base_url}\"\n")
}

fn brave_config(base_url: &str) -> String {
    format!(
        "[plugins.web.search]\nbackend = \"brave\"\nbase_url = \"{base_url}\"\napi_key_env = \"{KEY_ENV}\"\n"
    )
}

fn search(rt: &hearth::runtime::Runtime, args: Value) -> Result<Value, String> {
    rt.tools.call("web_search", args).map_err(|e| e.to_string())
}

/// `hearth tool call web_search ARGS` with the key variable set to `key`,
/// debug logging on (so a leaked key would show in stderr).
fn brave_call(h: &Hearth, key: &str, args: &Value) -> Run {
    let output = h
        .command(&[
            "--log-level",
            "debug",
            "tool",
            "call",
            "web_search",
            &args.to_string(),
        ])
        .env(KEY_ENV, key)
        .output()
        .expect("run hearth tool call");
    Run::from(output)
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn searxng_results_come_back_normalized() {
    let fake = FakeSearch::searxng(corpus());
    let (_h, rt) = hearth(&searxng_config(&fake.base_url()));
    let got = search(&rt, json!({"query": "async  rust", "count": 2})).unwrap();
    let published = got["results"][0]["published"].as_str().unwrap().to_owned();
    assert_eq!(
        got,
        json!({
            "query": "async rust",
            "backend": "searxng",
            "results": [
                {
                    "title": "Async Rust: a tour",
                    "url": "https://rust.example/async-tour",
                    "snippet": "Futures, executors and async/await in Rust, step by step.",
                    "published": published,
                },
                {
                    "title": "Rust & async I/O",
                    "url": "https://blog.example/rust-io",
                    "snippet": "Why async Rust needs a runtime: it's about waking tasks.",
                    "published": got["results"][1]["published"],
                },
            ],
        })
    );
    // publishedDate as SearXNG writes it (ISO 8601, no zone).
    assert_eq!(published.len(), "2024-05-01T00:00:00".len(), "{published}");
    // Without count, the default of 5 is kept, and a result SearXNG gives
    // no date keeps none.
    let all = search(&rt, json!({"query": "async rust"})).unwrap();
    let results = all["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert!(results[2].get("published").is_none(), "{all}");
    // What went over the wire: SearXNG's JSON format, and no count (it
    // has none).
    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].path, "/search");
    assert_eq!(sent[0].param("q"), Some("async rust"));
    assert_eq!(sent[0].param("format"), Some("json"));
    assert_eq!(sent[0].param("time_range"), None);
    assert_eq!(sent[0].param("count"), None);
}

#[test]
fn brave_results_come_back_normalized_and_the_key_stays_hidden() {
    let fake = FakeSearch::brave(KEY, corpus());
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!("[plugins.web]\n{}", brave_config(&fake.base_url())),
    );
    let run = brave_call(&h, KEY, &json!({"query": "async rust", "count": 2}));
    let got = run.json();
    let first = &got["results"][0];
    assert_eq!(got["backend"], "brave");
    assert_eq!(got["results"].as_array().unwrap().len(), 2);
    assert_eq!(first["title"], "Async Rust: a tour");
    assert_eq!(first["url"], "https://rust.example/async-tour");
    // Brave's <strong> marks are gone.
    assert_eq!(
        first["snippet"],
        "Futures, executors and async/await in Rust, step by step."
    );
    assert_eq!(first["age"], "2 days ago");
    assert!(first["published"].as_str().unwrap().contains('T'), "{got}");
    // Entities in Brave's descriptions are decoded.
    assert_eq!(
        got["results"][1]["snippet"],
        "Why async Rust needs a runtime: it's about waking tasks."
    );
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/res/v1/web/search");
    assert_eq!(sent[0].param("q"), Some("async rust"));
    assert_eq!(sent[0].param("count"), Some("2"));
    assert_eq!(sent[0].param("freshness"), None);
    assert_eq!(sent[0].header("x-subscription-token"), Some(KEY));
    assert_eq!(sent[0].header("accept"), Some("application/json"));
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
}

#[test]
fn freshness_and_count_are_passed_in_each_backends_terms() {
    let searxng = FakeSearch::searxng(corpus());
    let brave = FakeSearch::brave(KEY, corpus());
    let (_h, rt) = hearth(&searxng_config(&searxng.base_url()));
    let hb = Hearth::with_plugins(
        &[plugin("web")],
        &format!("[plugins.web]\n{}", brave_config(&brave.base_url())),
    );
    // (freshness, SearXNG's time_range, Brave's freshness, titles found:
    // the corpus has async-Rust pages 2, 20 and 300 days old)
    let cases = [
        ("day", "day", "pd", 0),
        ("week", "week", "pw", 1),
        ("month", "month", "pm", 2),
        ("year", "year", "py", 3),
    ];
    for (i, (freshness, time_range, brave_freshness, found)) in cases.into_iter().enumerate() {
        let args = json!({"query": "async rust", "freshness": freshness, "count": 20});
        let got = search(&rt, args.clone()).unwrap();
        assert_eq!(got["results"].as_array().unwrap().len(), found, "{got}");
        assert_eq!(searxng.requests()[i].param("time_range"), Some(time_range));

        let got = brave_call(&hb, KEY, &args).json();
        assert_eq!(got["results"].as_array().unwrap().len(), found, "{got}");
        let sent = &brave.requests()[i];
        assert_eq!(sent.param("freshness"), Some(brave_freshness));
        assert_eq!(sent.param("count"), Some("20"));
    }
    // count cuts SearXNG's page, which has no count of its own.
    let one = search(&rt, json!({"query": "async rust", "count": 1})).unwrap();
    assert_eq!(one["results"].as_array().unwrap().len(), 1);
}

#[test]
fn a_result_pointing_at_a_private_address_cannot_be_fetched() {
    let fake = FakeSearch::searxng(corpus());
    let (_h, rt) = hearth(&searxng_config(&fake.base_url()));
    // The backend itself is on loopback and not allow-listed: the owner
    // configured it, so search reaches it.
    let got = search(&rt, json!({"query": "router admin"})).unwrap();
    let urls: Vec<&str> = got["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "http://192.168.1.1/admin",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost:8080/admin",
        ]
    );
    let wanted = [
        "192.168.1.1 is a private address",
        "169.254.169.254 is the cloud metadata address",
        "localhost resolves to",
    ];
    for (url, wanted) in urls.iter().zip(wanted) {
        let err = rt
            .tools
            .call("web_fetch", json!({"url": url}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("refused") && err.contains(wanted),
            "{url}: {err}"
        );
    }
    // Nor can the model use web_fetch to reach the backend it searches
    // through.
    let err = rt
        .tools
        .call(
            "web_fetch",
            json!({"url": format!("{}/search?q=x&format=json", fake.base_url())}),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("127.0.0.1 is a loopback address"), "{err}");
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn no_results_is_an_answer_that_says_so() {
    let searxng = FakeSearch::searxng(corpus());
    let brave = FakeSearch::brave(KEY, corpus());
    let (_h, rt) = hearth(&searxng_config(&searxng.base_url()));
    let got = search(&rt, json!({"query": "quantum knitting"})).unwrap();
    assert_eq!(got["results"], json!([]));
    assert_eq!(
        got["note"],
        "No results for \"quantum knitting\". Try other or fewer words."
    );
    let got = search(&rt, json!({"query": "gardening", "freshness": "day"})).unwrap();
    assert_eq!(got["results"].as_array().unwrap().len(), 1);
    let got = search(&rt, json!({"query": "rust book", "freshness": "week"})).unwrap();
    assert_eq!(
        got["note"],
        "No results for \"rust book\" from the past week. Try other or fewer words, or a longer freshness."
    );
    // SearXNG's engines failing is said, not hidden.
    searxng.unresponsive(&[("google", "CAPTCHA"), ("duckduckgo", "timeout")]);
    let got = search(&rt, json!({"query": "quantum knitting"})).unwrap();
    let note = got["note"].as_str().unwrap();
    assert!(
        note.ends_with(
            "These search engines did not answer: google (CAPTCHA), duckduckgo (timeout)."
        ),
        "{note}"
    );

    // Brave leaves `web` out when nothing matched.
    let hb = Hearth::with_plugins(
        &[plugin("web")],
        &format!("[plugins.web]\n{}", brave_config(&brave.base_url())),
    );
    let got = brave_call(&hb, KEY, &json!({"query": "quantum knitting"})).json();
    assert_eq!(got["results"], json!([]));
    assert!(
        got["note"]
            .as_str()
            .unwrap()
            .starts_with("No results for \"quantum knitting\"")
    );
}

#[test]
fn a_failing_searxng_gives_one_clear_error_and_the_next_search_works() {
    let fake = FakeSearch::searxng(corpus());
    // Long enough for a 3 MiB answer on a loaded machine; the hang waits
    // it out.
    let (_h, rt) = hearth(&format!(
        "{}timeout_ms = 3000\n",
        searxng_config(&fake.base_url())
    ));
    let label = format!("searxng (127.0.0.1:{})", fake.port());
    let cases: Vec<(Fault, &[&str])> = vec![
        (
            Fault::Status(500),
            &["had a server error (HTTP 500: search error)"],
        ),
        (Fault::Status(502), &["had a server error (HTTP 502)"]),
        (Fault::Status(429), &["is rate-limiting hearth (HTTP 429)"]),
        (
            Fault::Status(403),
            &["refused the JSON format (HTTP 403)", "search.formats"],
        ),
        (
            Fault::NotJson,
            &["not JSON (text/html; charset=utf-8, expected value at line 1"],
        ),
        (
            Fault::Huge(3 << 20),
            &["answered more than 2097152 bytes; the answer was not read"],
        ),
        (
            Fault::Redirect("http://10.0.0.1/search".into()),
            &[
                "answered with a redirect to http://10.0.0.1/search",
                "set base_url",
            ],
        ),
        (Fault::Hang, &["did not answer within 3000 ms"]),
    ];
    for (fault, wanted) in cases {
        fake.fault(Some(fault.clone()));
        let started = Instant::now();
        let err = search(&rt, json!({"query": "async rust"})).unwrap_err();
        assert!(
            err.starts_with(&format!("web_search failed: {label} ")),
            "{fault:?}: {err}"
        );
        for w in wanted {
            assert!(err.contains(w), "{fault:?}: {err:?} lacks {w:?}");
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{fault:?}");
    }
    // JSON turned off in the instance's settings: the same 403.
    fake.fault(None);
    fake.formats(&["html"]);
    let err = search(&rt, json!({"query": "async rust"})).unwrap_err();
    assert!(err.contains("add json to search.formats"), "{err}");
    fake.formats(&["html", "json"]);
    // Its limiter: the second search in the window is refused.
    fake.limit_per_window(1, Duration::from_secs(60));
    search(&rt, json!({"query": "async rust"})).unwrap();
    let err = search(&rt, json!({"query": "async rust"})).unwrap_err();
    assert!(err.contains("is rate-limiting hearth (HTTP 429)"), "{err}");
    fake.limit_per_window(100, Duration::from_secs(60));
    // And after all that, search still works.
    let got = search(&rt, json!({"query": "async rust"})).unwrap();
    assert_eq!(got["results"].as_array().unwrap().len(), 3);
}

#[test]
fn a_searxng_that_is_down_is_named() {
    let port = closed_port();
    let (_h, rt) = hearth(&searxng_config(&format!("http://127.0.0.1:{port}")));
    let err = search(&rt, json!({"query": "x"})).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "web_search failed: searxng (127.0.0.1:{port}) cannot be reached: "
        )),
        "{err}"
    );
    assert!(err.to_lowercase().contains("connection refused"), "{err}");
}

#[test]
fn a_failing_brave_gives_one_clear_error_without_the_key() {
    let fake = FakeSearch::brave(KEY, corpus());
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!("[plugins.web]\n{}", brave_config(&fake.base_url())),
    );
    let label = format!("brave (127.0.0.1:{})", fake.port());
    let args = json!({"query": "async rust"});
    // A wrong key: Brave's 422 SUBSCRIPTION_TOKEN_INVALID.
    let out = brave_call(&h, "BSA-wrong-key", &args).fails();
    assert!(
        out.contains(&format!(
            "web_search failed: {label} refused the API key (HTTP 422: The provided subscription token is invalid.)"
        )) && out.contains("api_key_env"),
        "{out}"
    );
    assert!(!out.contains("BSA-wrong-key"), "{out}");
    let cases: Vec<(Fault, &str)> = vec![
        (
            Fault::Status(401),
            "refused the API key (HTTP 401: The provided subscription token is invalid.)",
        ),
        (
            Fault::Status(429),
            "is rate-limiting hearth (HTTP 429: Request rate limit exceeded for plan.); it says to try again in 1 s",
        ),
        (
            Fault::Status(503),
            "had a server error (HTTP 503: An internal error occurred.)",
        ),
        (Fault::NotJson, "answered with something that is not JSON"),
    ];
    for (fault, wanted) in cases {
        fake.fault(Some(fault.clone()));
        let out = brave_call(&h, KEY, &args).fails();
        assert!(
            out.contains(&format!("web_search failed: {label} {wanted}")),
            "{fault:?}: {out}"
        );
        assert!(!out.contains(KEY), "{fault:?}: {out}");
    }
    // The plan's rate, for real: one search a second, the second refused.
    fake.fault(None);
    fake.limit_per_window(1, Duration::from_secs(60));
    brave_call(&h, KEY, &args).ok();
    let out = brave_call(&h, KEY, &args).fails();
    assert!(
        out.contains("rate-limiting hearth (HTTP 429: Request rate limit exceeded for plan.)"),
        "{out}"
    );
}

#[test]
fn backends_are_tried_in_order_and_the_answer_names_those_that_failed() {
    let down = closed_port();
    let broken = FakeSearch::searxng(corpus());
    broken.fault(Some(Fault::Status(500)));
    let good = FakeSearch::searxng(corpus());
    let (_h, rt) = hearth(&format!(
        "[[plugins.web.search]]\nbackend = \"searxng\"\nbase_url = \"http://127.0.0.1:{down}\"\n\
         [[plugins.web.search]]\nbackend = \"searxng\"\nbase_url = \"{}\"\n\
         [[plugins.web.search]]\nbackend = \"searxng\"\nbase_url = \"{}\"\n",
        broken.base_url(),
        good.base_url()
    ));
    let got = search(&rt, json!({"query": "async rust"})).unwrap();
    assert_eq!(got["results"].as_array().unwrap().len(), 3);
    let failed = got["failed_backends"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{got}");
    assert!(
        failed[0]
            .as_str()
            .unwrap()
            .starts_with(&format!("searxng (127.0.0.1:{down}) cannot be reached")),
        "{got}"
    );
    assert_eq!(
        failed[1],
        format!(
            "searxng (127.0.0.1:{}) had a server error (HTTP 500: search error)",
            broken.port()
        )
    );
    // An instance whose engines all failed found nothing: the next one
    // is asked.
    broken.fault(None);
    broken.unresponsive(&[("google", "CAPTCHA")]);
    let got = search(&rt, json!({"query": "quantum knitting"})).unwrap();
    assert_eq!(good.requests().len(), 2);
    assert!(
        got["failed_backends"][1]
            .as_str()
            .unwrap()
            .contains("found nothing, and these engines did not answer: google (CAPTCHA)"),
        "{got}"
    );
    // Every backend failing: one error, each named, in order.
    good.fault(Some(Fault::Status(429)));
    broken.fault(Some(Fault::NotJson));
    let err = search(&rt, json!({"query": "async rust"})).unwrap_err();
    let first = err.find(&format!("127.0.0.1:{down}")).unwrap();
    let second = err.find(&format!("127.0.0.1:{}", broken.port())).unwrap();
    let third = err.find(&format!("127.0.0.1:{}", good.port())).unwrap();
    assert!(
        err.starts_with("web_search failed: every search backend failed, in order: ")
            && first < second
            && second < third,
        "{err}"
    );
}

#[test]
fn bad_arguments_are_refused_by_field_and_nothing_is_sent() {
    let fake = FakeSearch::searxng(corpus());
    let (_h, rt) = hearth(&searxng_config(&fake.base_url()));
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "query"),
        (json!({"query": ""}), "query"),
        (
            json!({"query": "  \n\t "}),
            "field `query`: must not be empty",
        ),
        (json!({"query": "x".repeat(401)}), "query"),
        (
            json!({"query": "w ".repeat(51)}),
            "field `query`: has 51 words; at most 50",
        ),
        (json!({"query": "a\u{7}b"}), "control characters"),
        (json!({"query": "a\u{0}b"}), "NUL"),
        (json!({"query": 42}), "query"),
        (json!({"query": "x", "count": 0}), "count"),
        (json!({"query": "x", "count": 21}), "count"),
        (json!({"query": "x", "count": 2.5}), "count"),
        (json!({"query": "x", "count": "5"}), "count"),
        (json!({"query": "x", "freshness": "hour"}), "freshness"),
        (json!({"query": "x", "freshness": "pw"}), "freshness"),
        (json!({"query": "x", "page": 2}), "page"),
    ];
    for (args, wanted) in cases {
        let err = search(&rt, args.clone()).unwrap_err();
        assert!(
            err.contains("invalid arguments") && err.contains(wanted),
            "{args}: {err}"
        );
    }
    assert!(fake.requests().is_empty());
    // Hostile but valid text goes over the wire exactly, encoded.
    let q = "c++ & \"rust\" ?x=1#frag 100% ü";
    search(&rt, json!({"query": q})).unwrap();
    assert_eq!(fake.requests()[0].param("q"), Some(q));
    assert_eq!(fake.requests()[0].params.len(), 2);
}

#[test]
fn without_a_backend_the_tool_searches_key_less_through_the_egress_guard() {
    // The key-less default, pointed at an address the guard refuses, so
    // the test never leaves the machine.
    let (_h, rt) = hearth("duckduckgo_url = \"http://127.0.0.1:9/html/\"\n");
    let listed = rt.tools.list();
    let spec = &listed
        .iter()
        .find(|t| t.spec.name == "web_search")
        .expect("web_search is offered")
        .spec;
    assert!(
        !spec.description.contains("NOT SET UP"),
        "{}",
        spec.description
    );
    let err = search(&rt, json!({"query": "x"})).unwrap_err();
    assert!(!err.contains("not set up"), "{err}");
    assert!(
        err.contains("127.0.0.1") || err.contains("loopback"),
        "{err}"
    );
    // The rest of the plugin is unaffected.
    let err = rt
        .tools
        .call("web_fetch", json!({"url": "http://10.0.0.1/"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("private address"), "{err}");
}

#[test]
fn bad_search_config_stops_check_with_the_key_named() {
    let cases = [
        (
            "[plugins.web.search]\nbackend = \"bing\"\n".to_owned(),
            "[plugins.web.search] backend: \"bing\" is not a search backend",
        ),
        (
            "[plugins.web.search]\nbackend = \"searxng\"\n".to_owned(),
            "[plugins.web.search] base_url: is required",
        ),
        (
            format!("[plugins.web.search]\nbackend = \"brave\"\napi_key_env = \"{KEY_ENV}_UNSET\"\n"),
            "api_key_env: the environment variable HEARTH_TEST_BRAVE_KEY_UNSET is not set",
        ),
        (
            "[plugins.web.search]\nbackend = \"brave\"\nbase_url = \"http://search.example\"\n\
             api_key_env = \"HOME\"\n"
                .to_owned(),
            "would send the API key unencrypted",
        ),
        (
            "[[plugins.web.search]]\nbackend = \"searxng\"\nbase_url = \"http://127.0.0.1:1\"\n\
             [[plugins.web.search]]\nbackend = \"searxng\"\nbase_url = \"http://127.0.0.1:2\"\nkey = 1\n"
                .to_owned(),
            "[[plugins.web.search]] #2 unknown key `key`",
        ),
    ];
    for (config, wanted) in cases {
        let h = Hearth::with_plugins(&[plugin("web")], &format!("[plugins.web]\n{config}"));
        let out = h.cmd(&["check"]).fails();
        assert!(out.contains(wanted), "{config}: {out}");
    }
    // A key pasted where the variable's name goes is not repeated back.
    let h = Hearth::with_plugins(
        &[plugin("web")],
        &format!(
            "[plugins.web]\n[plugins.web.search]\nbackend = \"brave\"\napi_key_env = \"{KEY}\"\n"
        ),
    );
    let out = h.cmd(&["check"]).fails();
    assert!(out.contains("NAME of an environment variable"), "{out}");
    assert!(!out.contains(KEY), "{out}");
}
