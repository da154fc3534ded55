//! The web plugin: `web_fetch` reads a web page and returns it as text;
//! `web_search` asks the owner's search backends (SearXNG, Brave), or
//! DuckDuckGo's HTML page when none is configured.
//!
//! The agent picks the URL, and the pages it reads can suggest URLs, so the
//! fetch is confined to http and https on public addresses: private,
//! loopback, link-local, metadata and similar addresses are refused unless
//! the owner allow-lists them in `[plugins.web]`. The check covers literal
//! addresses, every address a name resolves to (and the connection goes to
//! exactly those), and every redirect.
//!
//! - `guard`: which URLs and addresses are allowed, and the messages;
//! - `fetch`: one fetch, hop by hop, with the size cap and the deadline;
//! - `html`: HTML to plain text;
//! - `search`: `web_search`, its config and its three backends.
//!
//! Config:
//!
//! ```toml
//! [plugins.web]
//! allow_hosts = ["127.0.0.1:8123", "router.lan"]  # host or host:port
//! allow_private = false
//! # duckduckgo_url = "https://html.duckduckgo.com/html/"  (the default backend)
//! # duckduckgo_region = "de-de"
//!
//! [plugins.web.search]          # or [[plugins.web.search]], tried in order
//! backend = "searxng"           # or "brave", or "duckduckgo" (in a list)
//! base_url = "http://127.0.0.1:8888"
//! # api_key_env = "BRAVE_API_KEY"  (brave: the variable holding the key)
//! # timeout_ms = 10000
//! ```

pub mod fetch;
pub mod guard;
pub mod html;
pub mod search;

use std::time::Duration;

use hearth_sdk::protocol::{Description, Risk, ToolSpec};
use hearth_sdk::{Host, Plugin, PluginError, parse_args};
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use guard::{AllowEntry, Policy};
use search::Search;
use search::config::DuckDuckGo;

/// The body size read when the call does not say: 1 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 20;
/// The largest body size a call may ask for: 5 MiB.
pub const MAX_MAX_BYTES: u64 = 5 << 20;
/// The timeout when the call does not say.
pub const DEFAULT_TIMEOUT_MS: u64 = 15_000;
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 60_000;

/// The running plugin: the owner's egress policy and search backends.
pub struct Web {
    policy: Policy,
    search: Search,
}

/// Runs `web_fetch` on raw JSON arguments under `policy`.
pub fn web_fetch(policy: &Policy, args: Value) -> Result<Value, PluginError> {
    let args: FetchArgs = parse_args(args)?;
    let max_bytes = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if !(1..=MAX_MAX_BYTES).contains(&max_bytes) {
        return Err(PluginError::InvalidArguments(format!(
            "max_bytes must be 1-{MAX_MAX_BYTES}, not {max_bytes}"
        )));
    }
    let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return Err(PluginError::InvalidArguments(format!(
            "timeout_ms must be 1-{MAX_TIMEOUT_MS}, not {timeout_ms}"
        )));
    }
    let url = Url::parse(args.url.trim()).map_err(|e| {
        PluginError::InvalidArguments(format!("{:?} is not a valid URL: {e}", args.url))
    })?;
    let request = fetch::Request {
        url,
        // At most 5 MiB, checked above, so this fits any usize.
        max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        timeout: Duration::from_millis(timeout_ms),
        raw: args.raw.unwrap_or(false),
    };
    fetch::fetch(policy, &request).map_err(PluginError::Failed)
}

/// Config table `[plugins.web]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    allow_hosts: Vec<String>,
    #[serde(default)]
    allow_private: bool,
    /// DuckDuckGo's HTML endpoint (the default backend); a test's fake.
    #[serde(default)]
    duckduckgo_url: Option<String>,
    /// DuckDuckGo's region (`kl`), like "de-de".
    #[serde(default)]
    duckduckgo_region: Option<String>,
    /// `[plugins.web.search]`: read by `search::config`, which names its
    /// own keys in its errors.
    #[serde(default)]
    search: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    url: String,
    #[serde(default)]
    max_bytes: Option<u64>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    raw: Option<bool>,
}

impl Plugin for Web {
    const NAME: &'static str = "web";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(_host: Host, config: Value) -> Result<Self, PluginError> {
        let config: Config =
            parse_args(config).map_err(|e| PluginError::failed(format!("[plugins.web]: {e}")))?;
        let allow_hosts = config
            .allow_hosts
            .iter()
            .map(|entry| AllowEntry::parse(entry))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PluginError::failed(format!("[plugins.web] {e}")))?;
        // rustls needs one process-wide provider; ring, as in the host. If
        // one is already installed this fails, which is fine: it is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let policy = Policy {
            plugin: "web",
            allow_hosts,
            allow_private: config.allow_private,
        };
        let ddg = DuckDuckGo::parse(
            config.duckduckgo_url.as_deref(),
            config.duckduckgo_region.as_deref(),
        )
        .map_err(|e| PluginError::failed(e.to_string()))?;
        let search = Search::from_config(config.search.as_ref(), &ddg, &policy, |name| {
            std::env::var(name).ok()
        })
        .map_err(PluginError::failed)?;
        tracing::info!(
            allowed = policy.allow_hosts.len(),
            allow_private = policy.allow_private,
            search = search.describe_backends(),
            "web plugin started"
        );
        Ok(Web { policy, search })
    }

    fn describe(&self) -> Description {
        Description {
            tools: vec![
                ToolSpec {
                    name: "web_fetch".into(),
                    description:
                        "Fetches an http(s) URL as text (HTML converted, links kept, unless raw)."
                            .into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {
                            "url": { "type": "string" },
                            "max_bytes": { "type": "integer", "minimum": 1, "maximum": MAX_MAX_BYTES },
                            "timeout_ms": { "type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS },
                            "raw": { "type": "boolean" }
                        },
                        "required": ["url"],
                        "additionalProperties": false
                    }),
                    risk: Risk::Read,
                    targets: Default::default(),
                },
                self.search.spec(),
            ],
            channel: None,
        }
    }

    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError> {
        match tool {
            "web_fetch" => web_fetch(&self.policy, args),
            "web_search" => search::web_search(&self.search, args),
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }
}
