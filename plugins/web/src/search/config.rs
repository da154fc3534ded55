//! `[plugins.web.search]`: the backends `web_search` asks, read strictly so
//! every mistake is named by its key.
//!
//! One table is one backend; an array of tables (`[[plugins.web.search]]`)
//! is several, tried in order. No table means the key-less default,
//! DuckDuckGo's HTML page at `[plugins.web] duckduckgo_url`, so search
//! works with no setup; a configured SearXNG or Brave replaces it (and
//! `backend = "duckduckgo"` in the list keeps it as a fallback).
//!
//! The API key never appears in the config: `api_key_env` names the
//! environment variable that holds it, and it is read once, here. A value
//! that does not look like a variable name is not echoed in the error, in
//! case it is the key itself pasted into the wrong place.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::Url;
use serde_json::{Map, Value};

/// How long one backend may take when the config does not say.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// The longest timeout a backend may be given.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// The Brave Search API's own address.
pub const BRAVE_URL: &str = "https://api.search.brave.com";
/// The variable the Brave key is read from when `api_key_env` is not given.
pub const DEFAULT_BRAVE_KEY_ENV: &str = "BRAVE_API_KEY";
/// DuckDuckGo's HTML endpoint, the page its no-JavaScript search form
/// posts to: the default of `[plugins.web] duckduckgo_url`.
pub const DUCKDUCKGO_URL: &str = "https://html.duckduckgo.com/html/";

/// The keys a backend's table may hold.
const KEYS: &[&str] = &["backend", "base_url", "api_key_env", "timeout_ms"];

/// Which search service a backend is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A SearXNG instance's JSON API (`/search?format=json`); no key.
    Searxng,
    /// The Brave Search API (`/res/v1/web/search`), with a subscription key.
    Brave,
    /// DuckDuckGo's HTML results page; no key, no account.
    DuckDuckGo,
}

impl Kind {
    /// The name the config and the messages use.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Searxng => "searxng",
            Kind::Brave => "brave",
            Kind::DuckDuckGo => "duckduckgo",
        }
    }
}

/// One configured backend.
#[derive(Debug)]
pub struct BackendConfig {
    /// The service.
    pub kind: Kind,
    /// Where it is: SearXNG's root (it may sit under a path), Brave's, or
    /// DuckDuckGo's endpoint itself.
    pub base_url: Url,
    /// Brave's key, read from the environment.
    pub api_key: Option<ApiKey>,
    /// DuckDuckGo's region (`kl`), like "de-de"; `None` asks for none.
    pub region: Option<String>,
    /// For one whole search: connecting, the answer, its body.
    pub timeout: Duration,
}

/// `[plugins.web] duckduckgo_url` and `duckduckgo_region`, checked.
#[derive(Debug, Clone)]
pub struct DuckDuckGo {
    /// The endpoint the search form is posted to.
    pub url: Url,
    /// The region (`kl`), if the owner chose one.
    pub region: Option<String>,
}

impl DuckDuckGo {
    /// Checks the two keys as written (`None`: not given).
    pub fn parse(url: Option<&str>, region: Option<&str>) -> Result<DuckDuckGo, ConfigError> {
        let text = url.unwrap_or(DUCKDUCKGO_URL);
        let url = parse_url(text, Kind::DuckDuckGo)
            .map_err(|reason| ConfigError::BadDuckDuckGoUrl { reason })?;
        let region = match region.map(str::trim) {
            None | Some("") => None,
            Some(r) if is_region(r) => Some(r.to_owned()),
            Some(r) => {
                return Err(ConfigError::BadRegion {
                    value: r.to_owned(),
                });
            }
        };
        Ok(DuckDuckGo { url, region })
    }
}

/// An API key. It is kept out of `Debug` output, so no log line or error
/// that formats a config can show it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// What is wrong with `[plugins.web.search]`. `at` names the table:
/// `[plugins.web.search]`, or `[[plugins.web.search]] #2` in a list.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// `search` is neither a table nor an array of tables.
    #[error(
        "[plugins.web] search must be a table (backend = \"searxng\", base_url = ...) or an array of such tables"
    )]
    NotATable,
    /// An array entry that is not a table.
    #[error("{at} must be a table (backend = \"searxng\", base_url = ...)")]
    EntryNotATable {
        /// The entry.
        at: String,
    },
    /// `search = []`.
    #[error(
        "[plugins.web] search lists no backend; remove it to search through DuckDuckGo, or add one"
    )]
    NoBackend,
    /// A key this table does not have.
    #[error("{at} unknown key `{key}`; known keys are {}", KEYS.join(", "))]
    UnknownKey {
        /// The table.
        at: String,
        /// The key as written.
        key: String,
    },
    /// A required key is missing.
    #[error("{at} {key}: is required{hint}")]
    Missing {
        /// The table.
        at: String,
        /// The key.
        key: &'static str,
        /// What to write there.
        hint: &'static str,
    },
    /// A key has the wrong type.
    #[error("{at} {key}: expected {expected}")]
    WrongType {
        /// The table.
        at: String,
        /// The key.
        key: &'static str,
        /// The type wanted.
        expected: &'static str,
    },
    /// `backend` names no service hearth knows.
    #[error(
        "{at} backend: {value:?} is not a search backend; use \"searxng\", \"brave\" or \"duckduckgo\""
    )]
    UnknownBackend {
        /// The table.
        at: String,
        /// The value as written.
        value: String,
    },
    /// `base_url` is not an http(s) URL hearth can use.
    #[error("{at} base_url: {reason}")]
    BadUrl {
        /// The table.
        at: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `api_key_env` on a backend that takes no key.
    #[error("{at} api_key_env: {backend} takes no API key")]
    KeyNotUsed {
        /// The table.
        at: String,
        /// The backend's name.
        backend: &'static str,
    },
    /// `api_key_env` is not a variable name (perhaps the key itself).
    #[error(
        "{at} api_key_env: must be the NAME of an environment variable (like {DEFAULT_BRAVE_KEY_ENV}), \
         not the key itself; put the key in that variable"
    )]
    BadEnvName {
        /// The table.
        at: String,
    },
    /// The key holds characters an HTTP header cannot carry (a pasted
    /// line break, say); the key itself is not shown.
    #[error(
        "{at} api_key_env: the key in {name} holds spaces or characters an HTTP header cannot carry"
    )]
    KeyNotPrintable {
        /// The table.
        at: String,
        /// The variable's name.
        name: String,
    },
    /// The variable holding the key is unset or empty.
    #[error(
        "{at} api_key_env: the environment variable {name} is not set; put the Brave Search API key there"
    )]
    KeyNotSet {
        /// The table.
        at: String,
        /// The variable's name.
        name: String,
    },
    /// `base_url` on DuckDuckGo, whose address has its own key.
    #[error("{at} base_url: duckduckgo's address is [plugins.web] duckduckgo_url; set it there")]
    DuckDuckGoBaseUrl {
        /// The table.
        at: String,
    },
    /// `[plugins.web] duckduckgo_url` is not an http(s) URL hearth can use.
    #[error("[plugins.web] duckduckgo_url: {reason}")]
    BadDuckDuckGoUrl {
        /// What is wrong with it.
        reason: String,
    },
    /// `[plugins.web] duckduckgo_region` is not a region code.
    #[error(
        "[plugins.web] duckduckgo_region: {value:?} is not a DuckDuckGo region; write it like \"us-en\" or \"de-de\""
    )]
    BadRegion {
        /// The value as written.
        value: String,
    },
    /// `timeout_ms` out of range.
    #[error("{at} timeout_ms: must be 1-{MAX_TIMEOUT_MS}, not {value}")]
    Timeout {
        /// The table.
        at: String,
        /// The value as written.
        value: String,
    },
}

/// Reads `search` (the value of `[plugins.web] search`, if any) into the
/// backends in the order they are tried, never none: no table is
/// DuckDuckGo at `ddg`. `env` reads an environment variable (a parameter
/// so tests need not set any).
pub fn parse(
    search: Option<&Value>,
    ddg: &DuckDuckGo,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<BackendConfig>, ConfigError> {
    match search {
        None | Some(Value::Null) => Ok(vec![BackendConfig {
            kind: Kind::DuckDuckGo,
            base_url: ddg.url.clone(),
            api_key: None,
            region: ddg.region.clone(),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
        }]),
        Some(Value::Object(table)) => Ok(vec![backend(
            table,
            "[plugins.web.search]".to_owned(),
            ddg,
            &env,
        )?]),
        Some(Value::Array(entries)) if entries.is_empty() => Err(ConfigError::NoBackend),
        Some(Value::Array(entries)) => entries
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                let at = format!("[[plugins.web.search]] #{}", i + 1);
                match entry {
                    Value::Object(table) => backend(table, at, ddg, &env),
                    _ => Err(ConfigError::EntryNotATable { at }),
                }
            })
            .collect(),
        Some(_) => Err(ConfigError::NotATable),
    }
}

/// Reads one backend's table.
fn backend(
    table: &Map<String, Value>,
    at: String,
    ddg: &DuckDuckGo,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<BackendConfig, ConfigError> {
    if let Some(key) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(ConfigError::UnknownKey {
            at,
            key: key.clone(),
        });
    }
    let kind = match string(table, &at, "backend")? {
        None => {
            return Err(ConfigError::Missing {
                at,
                key: "backend",
                hint: " (\"searxng\", \"brave\" or \"duckduckgo\")",
            });
        }
        Some("searxng") => Kind::Searxng,
        Some("brave") => Kind::Brave,
        Some("duckduckgo") => Kind::DuckDuckGo,
        Some(other) => {
            return Err(ConfigError::UnknownBackend {
                value: other.to_owned(),
                at,
            });
        }
    };
    let base_url = match (kind, string(table, &at, "base_url")?) {
        (Kind::DuckDuckGo, Some(_)) => return Err(ConfigError::DuckDuckGoBaseUrl { at }),
        (Kind::DuckDuckGo, None) => ddg.url.as_str(),
        (_, Some(url)) => url,
        (Kind::Brave, None) => BRAVE_URL,
        (Kind::Searxng, None) => {
            return Err(ConfigError::Missing {
                at,
                key: "base_url",
                hint: ": where your SearXNG answers, like \"http://127.0.0.1:8888\"",
            });
        }
    };
    let base_url = parse_url(base_url, kind).map_err(|reason| ConfigError::BadUrl {
        at: at.clone(),
        reason,
    })?;
    let key_env = string(table, &at, "api_key_env")?;
    let api_key = match kind {
        Kind::Searxng | Kind::DuckDuckGo => {
            if key_env.is_some() {
                return Err(ConfigError::KeyNotUsed {
                    at,
                    backend: kind.name(),
                });
            }
            None
        }
        Kind::Brave => {
            let name = key_env.unwrap_or(DEFAULT_BRAVE_KEY_ENV);
            if !is_env_name(name) {
                return Err(ConfigError::BadEnvName { at });
            }
            let key = env(name)
                .map(|k| k.trim().to_owned())
                .filter(|k| !k.is_empty())
                .ok_or_else(|| ConfigError::KeyNotSet {
                    at: at.clone(),
                    name: name.to_owned(),
                })?;
            // Visible ASCII only: anything else cannot go in the header,
            // and failing here names the variable instead of failing every
            // search.
            if !key.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ConfigError::KeyNotPrintable {
                    at,
                    name: name.to_owned(),
                });
            }
            Some(ApiKey(key))
        }
    };
    let timeout_ms = match table.get("timeout_ms") {
        None => DEFAULT_TIMEOUT_MS,
        Some(v) => v
            .as_u64()
            .filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms))
            .ok_or_else(|| ConfigError::Timeout {
                at: at.clone(),
                value: v.to_string(),
            })?,
    };
    Ok(BackendConfig {
        kind,
        base_url,
        api_key,
        region: (kind == Kind::DuckDuckGo)
            .then(|| ddg.region.clone())
            .flatten(),
        timeout: Duration::from_millis(timeout_ms),
    })
}

/// A string key, if present.
fn string<'a>(
    table: &'a Map<String, Value>,
    at: &str,
    key: &'static str,
) -> Result<Option<&'a str>, ConfigError> {
    match table.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(ConfigError::WrongType {
            at: at.to_owned(),
            key,
            expected: "a string",
        }),
    }
}

/// Checks `base_url`: http or https, a host, no credentials, no query.
/// The key is sent in a header, so Brave must be reached over https unless
/// the address is this machine's own (a local proxy, or a test's fake).
fn parse_url(text: &str, kind: Kind) -> Result<Url, String> {
    let url = Url::parse(text.trim()).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{text:?} must start with http:// or https://"));
    }
    if url.host().is_none() {
        return Err(format!("{text:?} has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "must not carry a user name or password; hearth does not send credentials in URLs"
                .to_owned(),
        );
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "{text:?} must not have a query or fragment; hearth adds the search's own"
        ));
    }
    if kind == Kind::Brave && url.scheme() == "http" && !is_loopback(&url) {
        return Err(format!(
            "{text:?} would send the API key unencrypted; use https (http only to this machine)"
        ));
    }
    Ok(url)
}

/// Whether `url` points at this machine.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4).is_loopback(),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6).is_loopback(),
        None => false,
    }
}

/// `xx-yy`, two lowercase letters each side: how DuckDuckGo writes its
/// regions (`us-en`, `de-de`, `wt-wt` for none).
fn is_region(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 5 && b[2] == b'-' && [0, 1, 3, 4].iter().all(|&i| b[i].is_ascii_lowercase())
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what a shell accepts as a variable name.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_with(
        search: Option<&Value>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<BackendConfig>, ConfigError> {
        parse(search, &DuckDuckGo::parse(None, None).unwrap(), env)
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "BRAVE_API_KEY" => Some("default-key".into()),
            "MY_KEY" => Some(" my-key \n".into()),
            "EMPTY" => Some("  ".into()),
            "TWO_LINES" => Some("abc\ndef".into()),
            _ => None,
        }
    }

    #[test]
    fn no_table_means_duckduckgo() {
        for search in [None, Some(&Value::Null)] {
            let got = parse_with(search, env).unwrap();
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].kind, Kind::DuckDuckGo);
            assert_eq!(got[0].base_url.as_str(), DUCKDUCKGO_URL);
            assert!(got[0].api_key.is_none() && got[0].region.is_none());
        }
        // Its address and region come from [plugins.web].
        let ddg = DuckDuckGo::parse(Some("http://127.0.0.1:9/html/"), Some("de-de")).unwrap();
        let got = parse(None, &ddg, env).unwrap();
        assert_eq!(got[0].base_url.as_str(), "http://127.0.0.1:9/html/");
        assert_eq!(got[0].region.as_deref(), Some("de-de"));
        // Listed after SearXNG, it is the fallback, at the same address.
        let got = parse(
            Some(&json!([
                {"backend": "searxng", "base_url": "http://127.0.0.1:8888"},
                {"backend": "duckduckgo", "timeout_ms": 500},
            ])),
            &ddg,
            env,
        )
        .unwrap();
        assert_eq!(got[1].kind, Kind::DuckDuckGo);
        assert_eq!(got[1].base_url.as_str(), "http://127.0.0.1:9/html/");
        assert_eq!(got[1].timeout, Duration::from_millis(500));
        assert!(got[0].region.is_none());
    }

    #[test]
    fn duckduckgo_keys_are_checked() {
        let cases = [
            (
                Some("ftp://h/"),
                None,
                "[plugins.web] duckduckgo_url: \"ftp://h/\" must start with http",
            ),
            (
                Some("https://h/html/?q=x"),
                None,
                "duckduckgo_url: \"https://h/html/?q=x\" must not have a query",
            ),
            (
                Some("https://u:p@h/"),
                None,
                "duckduckgo_url: must not carry a user name",
            ),
            (
                None,
                Some("German"),
                "duckduckgo_region: \"German\" is not a DuckDuckGo region",
            ),
            (None, Some("DE-de"), "is not a DuckDuckGo region"),
        ];
        for (url, region, wanted) in cases {
            let err = DuckDuckGo::parse(url, region).unwrap_err().to_string();
            assert!(
                err.contains(wanted),
                "{url:?} {region:?}: {err:?} lacks {wanted:?}"
            );
        }
        assert_eq!(
            DuckDuckGo::parse(None, Some(" ")).unwrap().region,
            None,
            "an empty region is none"
        );
    }

    #[test]
    fn a_table_and_an_array_of_tables_are_read_in_order() {
        let one = parse_with(
            Some(&json!({"backend": "searxng", "base_url": "http://127.0.0.1:8888/searx/"})),
            env,
        )
        .unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].kind, Kind::Searxng);
        assert_eq!(one[0].base_url.as_str(), "http://127.0.0.1:8888/searx/");
        assert!(one[0].api_key.is_none());
        assert_eq!(one[0].timeout, Duration::from_millis(DEFAULT_TIMEOUT_MS));

        let two = parse_with(
            Some(&json!([
                {"backend": "searxng", "base_url": "http://127.0.0.1:8888", "timeout_ms": 500},
                {"backend": "brave", "api_key_env": "MY_KEY"},
            ])),
            env,
        )
        .unwrap();
        assert_eq!(two[0].timeout, Duration::from_millis(500));
        assert_eq!(two[1].kind, Kind::Brave);
        assert_eq!(two[1].base_url.as_str(), "https://api.search.brave.com/");
        assert_eq!(two[1].api_key.as_ref().unwrap().expose(), "my-key");
        // The key never shows in debug output.
        assert!(!format!("{two:?}").contains("my-key"));

        let default_env = parse_with(Some(&json!({"backend": "brave"})), env).unwrap();
        assert_eq!(
            default_env[0].api_key.as_ref().unwrap().expose(),
            "default-key"
        );
    }

    #[test]
    fn every_mistake_is_named_by_its_key() {
        let cases: Vec<(Value, &str)> = vec![
            (json!("searxng"), "search must be a table"),
            (json!([]), "lists no backend"),
            (json!([1]), "[[plugins.web.search]] #1 must be a table"),
            (json!({"base_url": "http://x"}), "backend: is required"),
            (json!({"backend": 1}), "backend: expected a string"),
            (
                json!({"backend": "google"}),
                "\"google\" is not a search backend",
            ),
            (
                json!({"backend": "searxng"}),
                "[plugins.web.search] base_url: is required",
            ),
            (
                json!({"backend": "searxng", "base_url": "x", "colour": 1}),
                "unknown key `colour`",
            ),
            (
                json!({"backend": "searxng", "base_url": "not a url"}),
                "base_url: \"not a url\" is not a URL",
            ),
            (
                json!({"backend": "searxng", "base_url": "ftp://h/"}),
                "must start with http",
            ),
            (
                json!({"backend": "searxng", "base_url": "http://u:p@h/"}),
                "user name or password",
            ),
            (
                json!({"backend": "searxng", "base_url": "http://h/?x=1"}),
                "query or fragment",
            ),
            (
                json!({"backend": "brave", "base_url": "http://brave.example/"}),
                "unencrypted",
            ),
            (
                json!({"backend": "searxng", "base_url": "http://h", "api_key_env": "K"}),
                "api_key_env: searxng takes no API key",
            ),
            (
                json!({"backend": "brave", "api_key_env": "NOPE"}),
                "the environment variable NOPE is not set",
            ),
            (
                json!({"backend": "brave", "api_key_env": "EMPTY"}),
                "EMPTY is not set",
            ),
            (
                json!({"backend": "brave", "api_key_env": "TWO_LINES"}),
                "the key in TWO_LINES holds spaces or characters",
            ),
            (
                json!({"backend": "duckduckgo", "base_url": "https://h/"}),
                "base_url: duckduckgo's address is [plugins.web] duckduckgo_url",
            ),
            (
                json!({"backend": "duckduckgo", "api_key_env": "K"}),
                "api_key_env: duckduckgo takes no API key",
            ),
            (
                json!({"backend": "searxng", "base_url": "http://h", "timeout_ms": 0}),
                "timeout_ms: must be 1-60000, not 0",
            ),
            (
                json!([{"backend": "searxng", "base_url": "http://h"}, {"backend": "bing"}]),
                "[[plugins.web.search]] #2 backend",
            ),
        ];
        for (config, wanted) in cases {
            let err = parse_with(Some(&config), env).unwrap_err().to_string();
            assert!(err.contains(wanted), "{config}: {err:?} lacks {wanted:?}");
        }
    }

    #[test]
    fn a_key_pasted_as_the_variable_name_is_not_echoed() {
        let err = parse_with(
            Some(&json!({"backend": "brave", "api_key_env": "BSA-secret-key-value"})),
            env,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("NAME of an environment variable"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn brave_may_use_plain_http_only_to_this_machine() {
        for url in [
            "http://127.0.0.1:9000",
            "http://[::1]:9000",
            "http://localhost:9000",
        ] {
            parse_with(Some(&json!({"backend": "brave", "base_url": url})), env)
                .unwrap_or_else(|e| panic!("{url}: {e}"));
        }
    }
}
