//! What a running script may ask of the host: `hearth.kv.*`, `hearth.tool`,
//! `hearth.http.request`, `hearth.db.*` and `require`.
//!
//! Each request is checked here, on the host side, so a script cannot widen
//! its own rights: kv keys are confined to the script's namespace, tool calls
//! go through the registry (schema, and later policy) with a nesting limit,
//! and HTTP goes through the egress rules below.

use std::io::Read;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::OptionalExtension;
use serde::Deserialize;
use serde_json::{Value, json};

use super::ToolCalls;
use super::{Catalog, Library, LuaTool, Scripts};
use hearth_base::caller::Caller;
use hearth_base::config::HttpConfig;
use hearth_base::secrets::{Secrets, Snapshot, placeholder};
use hearth_data::workshop::EXECUTE_SQL;

/// How deep `hearth.tool` calls may nest.
pub const MAX_DEPTH: u32 = 4;
/// The longest kv key, in bytes.
const MAX_KEY: usize = 256;
/// The largest kv value, as JSON text.
const MAX_VALUE: usize = 1 << 20;

/// Serves one host request from a running script.
#[allow(clippy::too_many_arguments)] // each is one thing a request needs
pub(super) fn handle(
    scripts: &Scripts,
    catalog: &Catalog,
    tool: &LuaTool,
    depth: u32,
    caller: &Caller,
    registry: &dyn ToolCalls,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    match method {
        "kv.get" | "kv.set" | "kv.delete" => kv(scripts, &tool.namespace, method, &params),
        "tool" => {
            let name = params["name"]
                .as_str()
                .ok_or("the tool name must be a string")?;
            if depth + 1 > MAX_DEPTH {
                return Err(format!("tool calls nest deeper than {MAX_DEPTH}"));
            }
            let args = match params.get("args") {
                None | Some(Value::Null) => json!({}),
                Some(a) => a.clone(),
            };
            registry.call_as(caller, name, args, depth + 1)
        }
        "http.request" => scripts.http.request(&params["request"]),
        "db.query" | "db.exec" => db(caller, registry, depth, method, params),
        "require" => require(&|name| catalog.library(name).cloned(), &params),
        other => Err(format!("unknown host service {other:?}")),
    }
}

/// `require(name)`: library `name` from `libraries` (the running tool's
/// catalog snapshot, or the files loading with it), its source left out
/// when the worker already holds this version (`have`, its hash).
pub(super) fn require(
    libraries: &dyn Fn(&str) -> Option<Arc<Library>>,
    params: &Value,
) -> Result<Value, String> {
    let name = params["name"].as_str().ok_or("the name must be a string")?;
    let library = libraries(name).ok_or_else(|| {
        format!("no library named {name:?}: a library is lib/{name}.lua under $HEARTH_HOME (or the bundled scripts)")
    })?;
    let mut answer = json!({ "chunk": library.chunk, "hash": library.hash });
    if params["have"].as_str() != Some(library.hash.as_str()) {
        answer["source"] = Value::String(library.source.to_string());
    }
    Ok(answer)
}

/// `hearth.db.query` and `hearth.db.exec`: `execute_sql` through the
/// registry, so the script's calls are ruled, tiered and audited like the
/// model's. A query runs on the read-only connection and answers its rows
/// as objects keyed by column.
fn db(
    caller: &Caller,
    registry: &dyn ToolCalls,
    depth: u32,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let sql = params["sql"].as_str().ok_or("the SQL must be a string")?;
    let query = method == "db.query";
    let mut args = json!({ "sql": sql, "read_only": query });
    match params.get("params") {
        None | Some(Value::Null) => {}
        // An empty Lua table is an empty array or object alike.
        Some(Value::Object(o)) if o.is_empty() => {}
        Some(p) => args["params"] = p.clone(),
    }
    let answer = registry.call_as(caller, EXECUTE_SQL, args, depth + 1)?;
    if !query {
        return Ok(answer);
    }
    let columns: Vec<&str> = answer["columns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let rows: Vec<Value> = answer["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let values = row.as_array().into_iter().flatten().cloned();
            Value::Object(
                columns
                    .iter()
                    .map(|c| (*c).to_owned())
                    .zip(values)
                    .collect(),
            )
        })
        .collect();
    Ok(json!({ "rows": rows, "truncated": answer["truncated"] }))
}

fn kv(scripts: &Scripts, namespace: &str, method: &str, params: &Value) -> Result<Value, String> {
    let key = params["key"].as_str().ok_or("the key must be a string")?;
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(format!("the key must be 1-{MAX_KEY} bytes"));
    }
    let conn = scripts.kv();
    let db = |e: rusqlite::Error| format!("the kv store failed: {e}");
    match method {
        "kv.get" => {
            let text: Option<String> = conn
                .query_row(
                    "SELECT value FROM kv WHERE namespace = ?1 AND key = ?2",
                    [namespace, key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db)?;
            match text {
                Some(t) => serde_json::from_str(&t).map_err(|e| e.to_string()),
                None => Ok(Value::Null),
            }
        }
        "kv.set" => {
            let value = params.get("value").cloned().unwrap_or(Value::Null);
            if value.is_null() {
                conn.execute(
                    "DELETE FROM kv WHERE namespace = ?1 AND key = ?2",
                    [namespace, key],
                )
                .map_err(db)?;
                return Ok(Value::Null);
            }
            let text = value.to_string();
            if text.len() > MAX_VALUE {
                return Err(format!("the value is over {MAX_VALUE} bytes as JSON"));
            }
            conn.execute(
                "INSERT INTO kv (namespace, key, value, updated_at_ms) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (namespace, key) DO UPDATE SET value = ?3, updated_at_ms = ?4",
                rusqlite::params![namespace, key, text, hearth_base::store::now_ms()],
            )
            .map_err(db)?;
            Ok(Value::Null)
        }
        _ => {
            let n = conn
                .execute(
                    "DELETE FROM kv WHERE namespace = ?1 AND key = ?2",
                    [namespace, key],
                )
                .map_err(db)?;
            Ok(Value::Bool(n > 0))
        }
    }
}

/// `hearth.http.request`: http/https only, timeouts, a size cap, and no
/// private, loopback, link-local or metadata addresses unless allowed: the
/// check runs on literal addresses, after DNS resolution, and on every
/// redirect.
///
/// `{{secret:NAME}}` in a header value or in the URL's path or query is
/// replaced by the secret's value here, after the URL passed the checks;
/// the answer the script gets back, and any error, has every known value
/// replaced by `[secret:NAME]`, so the script never holds one.
pub(super) struct Http {
    /// Built on first use: most daemons never make a request, and the
    /// client costs a thread and the TLS set-up.
    client: std::sync::OnceLock<Result<reqwest::blocking::Client, String>>,
    config: HttpConfig,
    secrets: Arc<Secrets>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    url: String,
    #[serde(default = "get")]
    method: String,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

fn get() -> String {
    "GET".into()
}

impl Http {
    pub(super) fn new(config: &HttpConfig, secrets: Arc<Secrets>) -> Http {
        Http {
            client: std::sync::OnceLock::new(),
            config: config.clone(),
            secrets,
        }
    }

    fn client(&self) -> Result<&reqwest::blocking::Client, String> {
        self.client
            .get_or_init(|| build_client(&self.config))
            .as_ref()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))
    }

    /// Makes the request; what comes back (answer or error) holds no
    /// secret's value.
    fn request(&self, params: &Value) -> Result<Value, String> {
        let outcome = self.send(params);
        let latest = self.secrets.latest();
        let redactor = latest.redactor();
        match outcome {
            Ok(answer) => Ok(redactor.redact_json(answer)),
            Err(e) => Err(redactor.redact_text(&e).into_owned()),
        }
    }

    fn send(&self, params: &Value) -> Result<Value, String> {
        let request: Request = serde_json::from_value(params.clone())
            .map_err(|e| format!("bad request table: {e}"))?;
        let uses_secrets = request.url.contains(placeholder::OPEN)
            || request
                .headers
                .iter()
                .any(|(k, v)| k.contains(placeholder::OPEN) || v.contains(placeholder::OPEN));
        // Read only when used: a damaged secrets file must not stop
        // requests that need none.
        let secrets = if uses_secrets {
            self.secrets.current().map_err(|e| e.to_string())?
        } else {
            Arc::default()
        };
        // The host's own credentials never go into a script's request.
        let mut named: Vec<String> = placeholder::find(&request.url)
            .map(|found| found.into_iter().map(|p| p.name).collect())
            .unwrap_or_default();
        for value in request.headers.values() {
            if let Ok(found) = placeholder::find(value) {
                named.extend(found.into_iter().map(|p| p.name));
            }
        }
        for name in &named {
            self.secrets.for_script(name).map_err(|e| e.to_string())?;
        }
        let url = secret_url(&request.url, &secrets, self.config.allow_private)?;
        let method = reqwest::Method::from_bytes(request.method.to_ascii_uppercase().as_bytes())
            .map_err(|_| format!("bad method {:?}", request.method))?;
        let mut builder = self.client()?.request(method, url);
        for (name, value) in &request.headers {
            if name.contains(placeholder::OPEN) {
                return Err(format!(
                    "header name {name:?}: a secret placeholder may stand only in a header's value"
                ));
            }
            let filled = placeholder::fill(value, |n| secrets.value(n).map(str::to_owned))
                .map_err(|e| format!("header {name}: {e}"))?;
            let mut header = reqwest::header::HeaderValue::from_str(&filled).map_err(|_| {
                format!("header {name}: the value is not a valid header value (no newlines or control characters)")
            })?;
            // A filled-in value is kept out of the client's debug output.
            header.set_sensitive(filled != *value);
            builder = builder.header(name, header);
        }
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        if let Some(ms) = request.timeout_ms {
            builder = builder.timeout(Duration::from_millis(ms.min(self.config.timeout_ms)));
        }
        let response = builder
            .send()
            .map_err(|e| hearth_model::llm::describe(&e))?;
        let status = response.status().as_u16();
        let headers: serde_json::Map<String, Value> = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    Value::from(String::from_utf8_lossy(v.as_bytes()).into_owned()),
                )
            })
            .collect();
        let mut body = Vec::new();
        response
            .take(self.config.max_bytes + 1)
            .read_to_end(&mut body)
            .map_err(|e| format!("reading the body failed: {e}"))?;
        if body.len() as u64 > self.config.max_bytes {
            return Err(format!(
                "the response is over {} bytes",
                self.config.max_bytes
            ));
        }
        Ok(json!({
            "status": status,
            "headers": headers,
            "body": String::from_utf8_lossy(&body),
        }))
    }
}

/// The URL to request: `raw` parsed and checked against the egress rules
/// with each `{{secret:NAME}}` still a stand-in, then with the values put in
/// (percent-encoded). A placeholder anywhere but the path and the query is
/// refused: the checks must judge the host the request really goes to.
fn secret_url(raw: &str, secrets: &Snapshot, allow_private: bool) -> Result<reqwest::Url, String> {
    let bad_url = |e: &dyn std::fmt::Display| format!("bad url {raw:?}: {e}");
    let found = placeholder::find(raw).map_err(|e| format!("url: {e}"))?;
    if found.is_empty() {
        let url = reqwest::Url::parse(raw).map_err(|e| bad_url(&e))?;
        check_url(&url, allow_private)?;
        return Ok(url);
    }
    for p in &found {
        secrets.value(&p.name).map_err(|e| format!("url: {e}"))?;
    }
    // Stand-ins that the text does not already hold, and that URL parsing
    // keeps as they are (lower-case letters and digits) wherever they stand.
    let mut salt = 0;
    while raw.contains(&format!("hearthsecret{salt}x")) {
        salt += 1;
    }
    let stand_in = |i: usize| format!("hearthsecret{salt}x{i}y");
    let mut marked = String::with_capacity(raw.len());
    let mut last = 0;
    for (i, p) in found.iter().enumerate() {
        marked.push_str(&raw[last..p.span.start]);
        marked.push_str(&stand_in(i));
        last = p.span.end;
    }
    marked.push_str(&raw[last..]);
    let url = reqwest::Url::parse(&marked).map_err(|e| bad_url(&e))?;
    let path_and_query = format!("{}?{}", url.path(), url.query().unwrap_or_default());
    for (i, p) in found.iter().enumerate() {
        let token = stand_in(i);
        if url.as_str().matches(&token).count() != path_and_query.matches(&token).count()
            || !path_and_query.contains(&token)
        {
            return Err(format!(
                "url {raw:?}: {{{{secret:{}}}}} may stand only in the url's path or query, not in \
                 its scheme, user, host, port or fragment",
                p.name
            ));
        }
    }
    check_url(&url, allow_private)?;
    // In one pass, so a value is never taken for a stand-in.
    let checked = url.as_str();
    let mut at: Vec<(usize, usize)> = (0..found.len())
        .filter_map(|i| checked.find(&stand_in(i)).map(|pos| (pos, i)))
        .collect();
    at.sort_unstable();
    let mut filled = String::with_capacity(checked.len());
    let mut last = 0;
    for (pos, i) in at {
        let value = secrets.value(&found[i].name).map_err(|e| e.to_string())?;
        filled.push_str(&checked[last..pos]);
        filled.push_str(&placeholder::percent_encode(value));
        last = pos + stand_in(i).len();
    }
    filled.push_str(&checked[last..]);
    // The parse error would quote the URL, value and all.
    let final_url = reqwest::Url::parse(&filled)
        .map_err(|_| format!("url {raw:?}: the url with its secrets put in does not parse"))?;
    if final_url.host_str() != url.host_str() || final_url.port() != url.port() {
        return Err(format!(
            "url {raw:?}: putting the secrets in changed the host; refused"
        ));
    }
    Ok(final_url)
}

/// The client, with the egress checks wired into DNS and redirects.
fn build_client(config: &HttpConfig) -> Result<reqwest::blocking::Client, String> {
    // The ring provider: aws-lc would double the build time for nothing
    // hearth needs. Installing twice is harmless (the first one stays).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let allow_private = config.allow_private;
    reqwest::blocking::Client::builder()
        .tls_backend_rustls()
        .timeout(Duration::from_millis(config.timeout_ms))
        .connect_timeout(Duration::from_millis(config.timeout_ms.min(5_000)))
        .dns_resolver(Arc::new(GuardedResolver { allow_private }))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                return attempt.error("more than 5 redirects");
            }
            match check_url(attempt.url(), allow_private) {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(e),
            }
        }))
        .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| e.to_string())
}

fn check_url(url: &reqwest::Url, allow_private: bool) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https are allowed, not {}",
            url.scheme()
        ));
    }
    let host = url.host_str().ok_or("the url has no host")?;
    // Names are checked after resolution (GuardedResolver); literals here.
    match host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        Ok(ip) if !allow_private && is_forbidden(ip) => Err(forbidden(ip)),
        _ => Ok(()),
    }
}

fn forbidden(ip: IpAddr) -> String {
    format!(
        "{ip} is a private, loopback, link-local or metadata address; scripts may not reach it (see [scripts.http] allow_private)"
    )
}

/// Resolves names, then refuses the whole answer if any address is
/// forbidden: a name must not be a way around the address check.
struct GuardedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::task::spawn_blocking(move || {
                (host.as_str(), 0)
                    .to_socket_addrs()
                    .map(Iterator::collect::<Vec<_>>)
            })
            .await
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)??;
            if let Some(bad) = addrs
                .iter()
                .find(|a| !allow_private && is_forbidden(a.ip()))
            {
                return Err(forbidden(bad.ip()).into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Loopback, private, shared (CGNAT), link-local (metadata lives there),
/// unspecified, broadcast, multicast and documentation ranges; IPv4 mapped
/// or translated into IPv6 is judged as the IPv4 address.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_forbidden(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            // 64:ff9b::/96 embeds an IPv4 address (NAT64).
            if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = seg[6].to_be_bytes();
                let [c, d] = seg[7].to_be_bytes();
                return is_forbidden(IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d)));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00
                || (seg[0] & 0xffc0) == 0xfe80
                || (seg[0] == 0x2001 && seg[1] == 0x0db8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_forbidden, secret_url};
    use hearth_base::secrets::Snapshot;

    #[test]
    fn secret_urls_are_checked_with_stand_ins_then_filled() {
        let secrets = Snapshot::new(
            [
                ("TOKEN".to_owned(), "a/b c".to_owned()),
                ("ODD".to_owned(), "hearthsecret0x1y".to_owned()),
            ]
            .into(),
        );
        let cases: [(&str, bool, Result<&str, &str>); 9] = [
            ("https://example.com/x", false, Ok("https://example.com/x")),
            (
                "https://example.com/{{secret:TOKEN}}?k={{secret:TOKEN}}&o={{secret:ODD}}",
                false,
                Ok("https://example.com/a%2Fb%20c?k=a%2Fb%20c&o=hearthsecret0x1y"),
            ),
            (
                "https://example.com/{{secret:ODD}}/{{secret:TOKEN}}",
                false,
                Ok("https://example.com/hearthsecret0x1y/a%2Fb%20c"),
            ),
            (
                "https://{{secret:TOKEN}}.example.com/",
                false,
                Err("path or query"),
            ),
            (
                "https://example.com:{{secret:TOKEN}}/",
                false,
                Err("bad url"),
            ),
            (
                "https://example.com/#{{secret:TOKEN}}",
                false,
                Err("path or query"),
            ),
            (
                "https://example.com/?{{secret:NOPE}}",
                false,
                Err("no secret named NOPE"),
            ),
            (
                "http://127.0.0.1/?k={{secret:TOKEN}}",
                false,
                Err("may not reach it"),
            ),
            (
                "http://127.0.0.1/?k={{secret:TOKEN}}",
                true,
                Ok("http://127.0.0.1/?k=a%2Fb%20c"),
            ),
        ];
        for (raw, allow_private, expected) in cases {
            match (secret_url(raw, &secrets, allow_private), expected) {
                (Ok(url), Ok(want)) => assert_eq!(url.as_str(), want, "{raw}"),
                (Err(e), Err(want)) => {
                    assert!(e.contains(want), "{raw}: {e}");
                    assert!(!e.contains("a/b c") && !e.contains("a%2Fb"), "{raw}: {e}");
                }
                (got, want) => panic!("{raw}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn forbidden_addresses_are_refused_and_public_ones_allowed() {
        let forbidden = [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "ff02::1",
        ];
        for ip in forbidden {
            assert!(
                is_forbidden(ip.parse().unwrap()),
                "{ip} should be forbidden"
            );
        }
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(!is_forbidden(ip.parse().unwrap()), "{ip} should be allowed");
        }
    }
}
