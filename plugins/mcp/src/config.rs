//! `[plugins.mcp]`: the servers the owner configured, read from the JSON
//! the host passes to `init`, with errors that name the key at fault.
//!
//! The config is read by hand rather than through serde's derive so that
//! every mistake is reported with its full key path and the values the key
//! takes (`plugins.mcp.servers.fs.risk: expected "read", "write" or "exec",
//! got "rw"`): the owner edits TOML and sees the message in `hearth check`,
//! far from this code.

use std::collections::BTreeMap;
use std::time::Duration;

use hearth_sdk::protocol::Risk;
use serde_json::{Map, Value};

/// The per-call timeout when a server does not set `timeout_s`.
pub const DEFAULT_TIMEOUT_S: u64 = 60;
/// The longest `timeout_s` (an hour).
pub const MAX_TIMEOUT_S: u64 = 3600;
/// The start-up timeout when a server does not set `startup_timeout_s`.
pub const DEFAULT_STARTUP_TIMEOUT_S: u64 = 30;
/// The longest server name: with `mcp.` and a `.`, it leaves 27 characters
/// of the 64 a hearth tool name may have for the tool's own name.
pub const MAX_SERVER_NAME: usize = 32;

/// Why `[plugins.mcp]` was refused. Each message starts with the key path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A key the table does not take (a typo, usually).
    #[error("{path}: unknown key; expected one of {expected}")]
    UnknownKey {
        /// The full key path.
        path: String,
        /// The keys the table takes, comma-separated.
        expected: String,
    },
    /// A value of the wrong type.
    #[error("{path}: expected {expected}, got {got}")]
    WrongType {
        /// The full key path.
        path: String,
        /// What the key takes ("a string").
        expected: &'static str,
        /// What it got ("a number").
        got: &'static str,
    },
    /// A value of the right type that is not allowed.
    #[error("{path}: {message}")]
    Invalid {
        /// The full key path.
        path: String,
        /// What is wrong, and what is allowed.
        message: String,
    },
}

/// The whole `[plugins.mcp]` table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The servers, sorted by name.
    pub servers: Vec<ServerConfig>,
}

/// One `[plugins.mcp.servers.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name: the middle part of its tools' names (`mcp.NAME.tool`).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// The risk tier of its tools unless `tools.TOOL.risk` says otherwise.
    pub risk: Risk,
    /// Per-tool settings, by the server's own tool name.
    pub tools: BTreeMap<String, ToolConfig>,
    /// Whether it is used at all.
    pub enabled: bool,
    /// How long one call may take.
    pub timeout: Duration,
    /// When it is started.
    pub start: Start,
    /// How long starting it (and learning its tools) may take.
    pub startup_timeout: Duration,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A program started by the plugin, speaking MCP on its stdin/stdout.
    Stdio(StdioConfig),
    /// A Streamable HTTP endpoint.
    Http(HttpConfig),
}

/// A server started as a process.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioConfig {
    /// The program (a path, or a name looked up on `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set to these literal values.
    pub env: BTreeMap<String, String>,
    /// Variables copied from the daemon's environment, when set there.
    pub pass_env: Vec<String>,
    /// The directory it runs in (default `$HEARTH_HOME`).
    pub cwd: Option<String>,
}

/// A server reached over Streamable HTTP.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// The MCP endpoint (`http://127.0.0.1:3000/mcp`).
    pub url: String,
    /// Headers sent with every request (`Authorization`, ...).
    pub headers: BTreeMap<String, String>,
}

/// `[plugins.mcp.servers.NAME.tools.TOOL]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolConfig {
    /// Overrides the server's risk tier for this tool.
    pub risk: Option<Risk>,
    /// `false` leaves the tool out.
    pub enabled: bool,
}

/// When a server is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At the first call of one of its tools (its tool list is cached).
    Lazy,
    /// In the background when the plugin starts.
    Eager,
}

const ROOT: &str = "plugins.mcp";
const ROOT_KEYS: &[&str] = &["servers"];
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "pass_env",
    "cwd",
    "url",
    "headers",
    "risk",
    "tools",
    "enabled",
    "timeout_s",
    "start",
    "startup_timeout_s",
];
const STDIO_ONLY: &[&str] = &["args", "env", "pass_env", "cwd"];
const TOOL_KEYS: &[&str] = &["risk", "enabled"];

impl Config {
    /// Reads `[plugins.mcp]` as the host passes it (`{}` when absent).
    pub fn parse(value: &Value) -> Result<Config, ConfigError> {
        let root = table(value, ROOT)?;
        check_keys(root, ROOT, ROOT_KEYS)?;
        let mut servers = Vec::new();
        if let Some(list) = root.get("servers") {
            let path = format!("{ROOT}.servers");
            for (name, server) in table(list, &path)? {
                servers.push(ServerConfig::parse(name, server)?);
            }
        }
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Config { servers })
    }
}

impl ServerConfig {
    fn parse(name: &str, value: &Value) -> Result<ServerConfig, ConfigError> {
        if !valid_server_name(name) {
            return Err(ConfigError::Invalid {
                path: format!("{ROOT}.servers.{name:?}"),
                message: format!(
                    "a server name is 1-{MAX_SERVER_NAME} characters of a-z, 0-9, _ and -"
                ),
            });
        }
        let path = format!("{ROOT}.servers.{name}");
        let t = table(value, &path)?;
        check_keys(t, &path, SERVER_KEYS)?;
        let key = |k: &str| format!("{path}.{k}");
        let transport = match (t.get("command"), t.get("url")) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Invalid {
                    path,
                    message: "set command or url, not both".into(),
                });
            }
            (None, None) => {
                return Err(ConfigError::Invalid {
                    path,
                    message: "set command (a program speaking MCP on stdio) or url (a Streamable \
                              HTTP endpoint)"
                        .into(),
                });
            }
            (Some(command), None) => {
                if let Some(k) = t.keys().find(|k| *k == "headers") {
                    return Err(ConfigError::Invalid {
                        path: key(k),
                        message: "only for a server reached by url".into(),
                    });
                }
                let command = string(command, &key("command"))?;
                if command.trim().is_empty() {
                    return Err(ConfigError::Invalid {
                        path: key("command"),
                        message: "must not be empty".into(),
                    });
                }
                Transport::Stdio(StdioConfig {
                    command,
                    args: opt(t, "args", |v| strings(v, &key("args")))?.unwrap_or_default(),
                    env: opt(t, "env", |v| env_table(v, &key("env")))?.unwrap_or_default(),
                    pass_env: opt(t, "pass_env", |v| {
                        let names = strings(v, &key("pass_env"))?;
                        for (i, n) in names.iter().enumerate() {
                            if !valid_env_name(n) {
                                return Err(ConfigError::Invalid {
                                    path: format!("{}[{i}]", key("pass_env")),
                                    message: format!("{n:?} is not a valid variable name"),
                                });
                            }
                        }
                        Ok(names)
                    })?
                    .unwrap_or_default(),
                    cwd: opt(t, "cwd", |v| string(v, &key("cwd")))?,
                })
            }
            (None, Some(url)) => {
                if let Some(k) = STDIO_ONLY.iter().find(|k| t.contains_key(**k)) {
                    return Err(ConfigError::Invalid {
                        path: key(k),
                        message: "only for a server started with command".into(),
                    });
                }
                let url = string(url, &key("url"))?;
                check_url(&url, &key("url"))?;
                Transport::Http(HttpConfig {
                    url,
                    headers: opt(t, "headers", |v| headers(v, &key("headers")))?
                        .unwrap_or_default(),
                })
            }
        };
        Ok(ServerConfig {
            name: name.to_owned(),
            transport,
            risk: opt(t, "risk", |v| risk(v, &key("risk")))?.unwrap_or(Risk::Exec),
            tools: opt(t, "tools", |v| tools(v, &key("tools")))?.unwrap_or_default(),
            enabled: opt(t, "enabled", |v| boolean(v, &key("enabled")))?.unwrap_or(true),
            timeout: Duration::from_secs(
                opt(t, "timeout_s", |v| seconds(v, &key("timeout_s")))?
                    .unwrap_or(DEFAULT_TIMEOUT_S),
            ),
            start: opt(t, "start", |v| start(v, &key("start")))?.unwrap_or(Start::Lazy),
            startup_timeout: Duration::from_secs(
                opt(t, "startup_timeout_s", |v| {
                    seconds(v, &key("startup_timeout_s"))
                })?
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_S),
            ),
        })
    }

    /// The risk tier of the server's tool `tool` (its own name).
    pub fn risk_of(&self, tool: &str) -> Risk {
        self.tools
            .get(tool)
            .and_then(|t| t.risk)
            .unwrap_or(self.risk)
    }

    /// Whether the server's tool `tool` (its own name) is offered.
    pub fn tool_enabled(&self, tool: &str) -> bool {
        self.tools.get(tool).is_none_or(|t| t.enabled)
    }

    /// A digest of what decides which server this is (program, arguments,
    /// environment, directory; or URL and headers): a cached tool list is
    /// only trusted while it is unchanged. Risk and per-tool settings are
    /// left out, since they apply to the list rather than produce it.
    pub fn fingerprint(&self) -> String {
        let identity = match &self.transport {
            Transport::Stdio(s) => serde_json::json!({
                "command": s.command, "args": s.args, "env": s.env,
                "pass_env": s.pass_env, "cwd": s.cwd,
            }),
            Transport::Http(h) => serde_json::json!({ "url": h.url, "headers": h.headers }),
        };
        let digest = ring::digest::digest(&ring::digest::SHA256, identity.to_string().as_bytes());
        hex(&digest.as_ref()[..12])
    }

    /// `stdio` or `http`, for status lines.
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "http",
        }
    }
}

/// Whether `name` may name a server: 1-32 characters of `a-z 0-9 _ -`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=') && !name.contains('\0')
}

/// The name of a JSON value's type, as a TOML author would say it.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    }
}

fn wrong(path: &str, expected: &'static str, got: &Value) -> ConfigError {
    ConfigError::WrongType {
        path: path.to_owned(),
        expected,
        got: type_name(got),
    }
}

fn table<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ConfigError> {
    value
        .as_object()
        .ok_or_else(|| wrong(path, "a table", value))
}

fn check_keys(t: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), ConfigError> {
    match t.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(ConfigError::UnknownKey {
            path: format!("{path}.{k}"),
            expected: allowed.join(", "),
        }),
        None => Ok(()),
    }
}

fn opt<T>(
    t: &Map<String, Value>,
    key: &str,
    read: impl FnOnce(&Value) -> Result<T, ConfigError>,
) -> Result<Option<T>, ConfigError> {
    t.get(key).map(read).transpose()
}

fn string(value: &Value, path: &str) -> Result<String, ConfigError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| wrong(path, "a string", value))
}

fn boolean(value: &Value, path: &str) -> Result<bool, ConfigError> {
    value
        .as_bool()
        .ok_or_else(|| wrong(path, "a boolean", value))
}

fn strings(value: &Value, path: &str) -> Result<Vec<String>, ConfigError> {
    let list = value
        .as_array()
        .ok_or_else(|| wrong(path, "an array of strings", value))?;
    list.iter()
        .enumerate()
        .map(|(i, v)| string(v, &format!("{path}[{i}]")))
        .collect()
}

/// `env`: strings, and numbers and booleans as TOML writes them (`PORT =
/// 8080`), since a program reads every variable as text anyway.
fn env_table(value: &Value, path: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    for (name, v) in table(value, path)? {
        let at = format!("{path}.{name}");
        if !valid_env_name(name) {
            return Err(ConfigError::Invalid {
                path: format!("{path}.{name:?}"),
                message: "not a valid variable name".into(),
            });
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => return Err(wrong(&at, "a string", other)),
        };
        if text.contains('\0') {
            return Err(ConfigError::Invalid {
                path: at,
                message: "must not contain a NUL character".into(),
            });
        }
        out.insert(name.clone(), text);
    }
    Ok(out)
}

fn headers(value: &Value, path: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    for (name, v) in table(value, path)? {
        let at = format!("{path}.{name}");
        let text = string(v, &at)?;
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(ConfigError::Invalid {
                path: at,
                message: "not a valid HTTP header name".into(),
            });
        }
        if reqwest::header::HeaderValue::from_str(&text).is_err() {
            return Err(ConfigError::Invalid {
                path: at,
                message: "not a valid HTTP header value (visible ASCII only)".into(),
            });
        }
        out.insert(name.clone(), text);
    }
    Ok(out)
}

fn check_url(url: &str, path: &str) -> Result<(), ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(ConfigError::Invalid {
            path: path.to_owned(),
            message: format!("{url:?} is not an http or https URL"),
        }),
    }
}

fn risk(value: &Value, path: &str) -> Result<Risk, ConfigError> {
    match value.as_str() {
        Some("read") => Ok(Risk::Read),
        Some("write") => Ok(Risk::Write),
        Some("exec") => Ok(Risk::Exec),
        _ => Err(ConfigError::Invalid {
            path: path.to_owned(),
            message: format!("expected \"read\", \"write\" or \"exec\", got {value}"),
        }),
    }
}

fn start(value: &Value, path: &str) -> Result<Start, ConfigError> {
    match value.as_str() {
        Some("lazy") => Ok(Start::Lazy),
        Some("eager") => Ok(Start::Eager),
        _ => Err(ConfigError::Invalid {
            path: path.to_owned(),
            message: format!("expected \"lazy\" or \"eager\", got {value}"),
        }),
    }
}

fn seconds(value: &Value, path: &str) -> Result<u64, ConfigError> {
    match value.as_u64() {
        Some(n) if (1..=MAX_TIMEOUT_S).contains(&n) => Ok(n),
        _ => Err(ConfigError::Invalid {
            path: path.to_owned(),
            message: format!(
                "expected a whole number of seconds from 1 to {MAX_TIMEOUT_S}, got {value}"
            ),
        }),
    }
}

fn tools(value: &Value, path: &str) -> Result<BTreeMap<String, ToolConfig>, ConfigError> {
    let mut out = BTreeMap::new();
    for (tool, v) in table(value, path)? {
        // A tool's own name may hold dots or spaces: quote it when it does,
        // so the path stays readable.
        let at = if tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            format!("{path}.{tool}")
        } else {
            format!("{path}.{tool:?}")
        };
        let t = table(v, &at)?;
        check_keys(t, &at, TOOL_KEYS)?;
        out.insert(
            tool.clone(),
            ToolConfig {
                risk: opt(t, "risk", |v| risk(v, &format!("{at}.risk")))?,
                enabled: opt(t, "enabled", |v| boolean(v, &format!("{at}.enabled")))?
                    .unwrap_or(true),
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server(extra: Value) -> Value {
        let mut base = json!({"command": "mcp-fs"});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        json!({"servers": {"fs": base}})
    }

    #[test]
    fn a_full_config_is_read() {
        let config = Config::parse(&json!({"servers": {
            "fs": {
                "command": "npx", "args": ["-y", "server-filesystem", "/srv"],
                "env": {"DEBUG": "1", "PORT": 8080}, "pass_env": ["GITHUB_TOKEN"],
                "cwd": "/tmp", "risk": "write", "timeout_s": 30, "start": "eager",
                "startup_timeout_s": 10,
                "tools": {"read_file": {"risk": "read"}, "delete": {"enabled": false}}
            },
            "web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}
        }}))
        .unwrap();
        assert_eq!(config.servers.len(), 2);
        let fs = &config.servers[0];
        assert_eq!(fs.name, "fs");
        let Transport::Stdio(s) = &fs.transport else {
            panic!("stdio expected")
        };
        assert_eq!(s.args, ["-y", "server-filesystem", "/srv"]);
        assert_eq!(s.env["PORT"], "8080");
        assert_eq!(fs.risk_of("read_file"), Risk::Read);
        assert_eq!(fs.risk_of("write_file"), Risk::Write);
        assert!(!fs.tool_enabled("delete") && fs.tool_enabled("read_file"));
        assert_eq!(fs.timeout, Duration::from_secs(30));
        assert_eq!(fs.start, Start::Eager);
        let web = &config.servers[1];
        assert_eq!(web.risk, Risk::Exec, "exec by default");
        assert_eq!(web.timeout, Duration::from_secs(DEFAULT_TIMEOUT_S));
        assert_eq!(web.start, Start::Lazy);
        assert!(
            matches!(&web.transport, Transport::Http(h) if h.headers["Authorization"] == "Bearer x")
        );
    }

    #[test]
    fn no_table_means_no_servers() {
        assert_eq!(Config::parse(&json!({})).unwrap(), Config::default());
        assert_eq!(
            Config::parse(&json!({"servers": {}})).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn each_mistake_has_its_message() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"server": {}}),
                "plugins.mcp.server: unknown key; expected one of servers",
            ),
            (
                json!({"servers": []}),
                "plugins.mcp.servers: expected a table, got an array",
            ),
            (
                json!({"servers": {"Big Name": {"command": "x"}}}),
                "plugins.mcp.servers.\"Big Name\": a server name is 1-32 characters of a-z, 0-9, _ and -",
            ),
            (
                json!({"servers": {"a.b": {"command": "x"}}}),
                "plugins.mcp.servers.\"a.b\": a server name is 1-32 characters of a-z, 0-9, _ and -",
            ),
            (
                json!({"servers": {"fs": "npx"}}),
                "plugins.mcp.servers.fs: expected a table, got a string",
            ),
            (
                server(json!({"risk": "rw"})),
                "plugins.mcp.servers.fs.risk: expected \"read\", \"write\" or \"exec\", got \"rw\"",
            ),
            (
                server(json!({"risk": 3})),
                "plugins.mcp.servers.fs.risk: expected \"read\", \"write\" or \"exec\", got 3",
            ),
            (
                server(json!({"comand": "x"})),
                "plugins.mcp.servers.fs.comand: unknown key; expected one of command, args, env, \
                 pass_env, cwd, url, headers, risk, tools, enabled, timeout_s, start, startup_timeout_s",
            ),
            (
                server(json!({"args": "-y"})),
                "plugins.mcp.servers.fs.args: expected an array of strings, got a string",
            ),
            (
                server(json!({"args": ["-y", 2]})),
                "plugins.mcp.servers.fs.args[1]: expected a string, got a number",
            ),
            (
                server(json!({"env": {"A": [1]}})),
                "plugins.mcp.servers.fs.env.A: expected a string, got an array",
            ),
            (
                server(json!({"env": {"A=B": "1"}})),
                "plugins.mcp.servers.fs.env.\"A=B\": not a valid variable name",
            ),
            (
                server(json!({"pass_env": ["OK", ""]})),
                "plugins.mcp.servers.fs.pass_env[1]: \"\" is not a valid variable name",
            ),
            (
                server(json!({"url": "http://x/mcp"})),
                "plugins.mcp.servers.fs: set command or url, not both",
            ),
            (
                json!({"servers": {"fs": {"risk": "read"}}}),
                "plugins.mcp.servers.fs: set command (a program speaking MCP on stdio) or url \
                 (a Streamable HTTP endpoint)",
            ),
            (
                server(json!({"command": " "})),
                "plugins.mcp.servers.fs.command: must not be empty",
            ),
            (
                server(json!({"command": 5})),
                "plugins.mcp.servers.fs.command: expected a string, got a number",
            ),
            (
                server(json!({"headers": {"A": "b"}})),
                "plugins.mcp.servers.fs.headers: only for a server reached by url",
            ),
            (
                json!({"servers": {"w": {"url": "http://x/mcp", "args": []}}}),
                "plugins.mcp.servers.w.args: only for a server started with command",
            ),
            (
                json!({"servers": {"w": {"url": "ftp://x/mcp"}}}),
                "plugins.mcp.servers.w.url: \"ftp://x/mcp\" is not an http or https URL",
            ),
            (
                json!({"servers": {"w": {"url": "http://x/mcp", "headers": {"A": "b\nc"}}}}),
                "plugins.mcp.servers.w.headers.A: not a valid HTTP header value (visible ASCII only)",
            ),
            (
                server(json!({"timeout_s": 0})),
                "plugins.mcp.servers.fs.timeout_s: expected a whole number of seconds from 1 to 3600, got 0",
            ),
            (
                server(json!({"timeout_s": 1.5})),
                "plugins.mcp.servers.fs.timeout_s: expected a whole number of seconds from 1 to 3600, got 1.5",
            ),
            (
                server(json!({"startup_timeout_s": 4000})),
                "plugins.mcp.servers.fs.startup_timeout_s: expected a whole number of seconds from 1 \
                 to 3600, got 4000",
            ),
            (
                server(json!({"start": "later"})),
                "plugins.mcp.servers.fs.start: expected \"lazy\" or \"eager\", got \"later\"",
            ),
            (
                server(json!({"enabled": "yes"})),
                "plugins.mcp.servers.fs.enabled: expected a boolean, got a string",
            ),
            (
                server(json!({"tools": {"read_file": {"risk": "none"}}})),
                "plugins.mcp.servers.fs.tools.read_file.risk: expected \"read\", \"write\" or \
                 \"exec\", got \"none\"",
            ),
            (
                server(json!({"tools": {"a.b": {"enable": false}}})),
                "plugins.mcp.servers.fs.tools.\"a.b\".enable: unknown key; expected one of risk, enabled",
            ),
        ];
        for (config, expected) in cases {
            let got = Config::parse(&config)
                .expect_err(&format!("{config} should be refused"))
                .to_string();
            assert_eq!(got, expected, "for {config}");
        }
    }

    #[test]
    fn the_fingerprint_follows_what_starts_the_server() {
        let parse = |v: Value| Config::parse(&v).unwrap().servers.remove(0);
        let a = parse(server(json!({"args": ["/srv"]})));
        let same = parse(server(
            json!({"args": ["/srv"], "risk": "read", "timeout_s": 5}),
        ));
        let other = parse(server(json!({"args": ["/home"]})));
        assert_eq!(a.fingerprint(), same.fingerprint());
        assert_ne!(a.fingerprint(), other.fingerprint());
        assert_eq!(a.fingerprint().len(), 24);
    }
}
