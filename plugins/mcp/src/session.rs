//! Agreeing on a protocol revision with a server, then speaking it.
//!
//! hearth prefers 2026-07-28 and falls back to the `initialize` handshake
//! of the 2025 revisions, as the 2026 spec lays out for a client that
//! speaks both: probe with `server/discover`; a discover result or a modern
//! error (`-32022` with the versions the server speaks) means a modern
//! server; any other error, or silence for a few seconds, means a legacy
//! one. A server that speaks none of hearth's revisions is refused with
//! both lists, so the owner can see which side to upgrade.
//!
//! Once agreed, [`Session::request`] adds what the revision asks of every
//! request (`_meta` in 2026-07-28), checks `resultType`, and renews an
//! expired HTTP session once.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::http::{self, Listen};
use crate::jsonrpc::{RpcError, UNSUPPORTED_PROTOCOL_VERSION};
use crate::link::{Link, Options, RequestError};
use crate::tools::ServerTool;
use crate::version::{self, LATEST_LEGACY, Version, client_info, modern_meta};

/// The longest wait for an answer to the `server/discover` probe: a legacy
/// server may ignore it rather than refuse it.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most `tools/list` pages read (a server whose cursor never ends).
const MAX_PAGES: usize = 100;

/// A connection with its revision agreed.
pub struct Session {
    /// The connection.
    pub link: Link,
    /// The revision spoken.
    pub version: Version,
    /// Whether the server announces changes to its tool list.
    pub list_changed: bool,
    /// Whether it offers tools at all.
    pub has_tools: bool,
    /// Its name and version, as it gave them.
    pub server_info: Option<String>,
}

/// Why a session could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The server did not complete the handshake in time.
    TimedOut,
    /// The server speaks no revision hearth speaks; the text names both
    /// lists (`speaks protocol 2024-11-05; hearth supports ...`).
    NoCommonVersion(String),
    /// Anything else: the connection failed, the server refused.
    Failed(String),
}

impl Session {
    /// Agrees on a revision over `link` by `deadline`.
    pub fn open(link: Link, deadline: Instant) -> Result<Session, OpenError> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let probe_until = Instant::now() + PROBE_TIMEOUT.min(remaining / 2);
        let probe = link.request(
            "server/discover",
            json!({"_meta": modern_meta(Version::V2026_07_28)}),
            &Options::until(probe_until),
        );
        let theirs: Vec<String> = match probe {
            Ok(result) => {
                let versions = string_list(result.get("supportedVersions"));
                if versions.iter().any(|v| v == Version::V2026_07_28.as_str()) {
                    return Ok(Session::modern(link, &result));
                }
                versions
            }
            Err(RequestError::Rpc(error)) | Err(RequestError::Refused { error, .. })
                if error.code == UNSUPPORTED_PROTOCOL_VERSION =>
            {
                supported_in(&error)
            }
            // A modern server that refused the request itself (a header it
            // wants, a capability we lack): falling back would not help.
            Err(RequestError::Rpc(error)) | Err(RequestError::Refused { error, .. })
                if error.is_modern() =>
            {
                return Err(OpenError::Failed(format!(
                    "it refused server/discover: {error}"
                )));
            }
            // The process died or the URL cannot be reached: no point in
            // trying `initialize`.
            Err(RequestError::Closed(why))
            | Err(RequestError::NotSent(why))
            | Err(RequestError::Unreachable(why)) => {
                return Err(OpenError::Failed(why));
            }
            // Anything else (method not found, "server not initialized",
            // an HTTP 400, silence): a legacy server.
            Err(_) => Vec::new(),
        };
        if !theirs.is_empty() && !theirs.iter().any(|v| Version::parse(v).is_some()) {
            return Err(OpenError::NoCommonVersion(no_common(&theirs)));
        }
        Session::initialize(link, deadline)
    }

    fn modern(link: Link, result: &Value) -> Session {
        if let Link::Http(h) = &link {
            h.set_version(Version::V2026_07_28);
        }
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        let info = result.get("serverInfo").or_else(|| {
            result
                .get("_meta")
                .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
        });
        Session {
            link,
            version: Version::V2026_07_28,
            list_changed: list_changed(&capabilities),
            has_tools: capabilities.get("tools").is_some(),
            server_info: info.and_then(describe_info),
        }
    }

    /// The 2025 handshake: `initialize` asking for the newest legacy
    /// revision, then `notifications/initialized`.
    fn initialize(link: Link, deadline: Instant) -> Result<Session, OpenError> {
        let result = handshake(&link, deadline)?;
        let theirs = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        let version = match Version::parse(theirs) {
            Some(v) if !v.is_modern() => v,
            _ => return Err(OpenError::NoCommonVersion(no_common(&[theirs.to_owned()]))),
        };
        if let Link::Http(h) = &link {
            h.set_version(version);
        }
        link.notify("notifications/initialized", Value::Null, deadline)
            .map_err(OpenError::Failed)?;
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        Ok(Session {
            version,
            list_changed: list_changed(&capabilities),
            has_tools: capabilities.get("tools").is_some(),
            server_info: result.get("serverInfo").and_then(describe_info),
            link,
        })
    }

    /// Sends a request in the agreed revision and returns its result.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        options: &Options<'_>,
    ) -> Result<Value, RequestError> {
        let params = if self.version.is_modern() {
            let mut map = match params {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            // Keep what the caller put in `_meta` (a progress token).
            let mut meta = modern_meta(self.version);
            if let (Some(Value::Object(theirs)), Value::Object(ours)) =
                (map.remove("_meta"), &mut meta)
            {
                ours.extend(theirs);
            }
            map.insert("_meta".into(), meta);
            Value::Object(map)
        } else {
            params
        };
        let result = match self.link.request(method, params.clone(), options) {
            Err(RequestError::SessionExpired) => {
                // The server forgot us (restarted, or timed the session
                // out): greet it again, once, and retry.
                tracing::info!("an MCP server forgot our session; initializing again");
                handshake(&self.link, options.deadline).map_err(|e| match e {
                    OpenError::TimedOut => RequestError::TimedOut,
                    OpenError::NoCommonVersion(why) | OpenError::Failed(why) => {
                        RequestError::Closed(format!("could not renew its session ({why})"))
                    }
                })?;
                let _ =
                    self.link
                        .notify("notifications/initialized", Value::Null, options.deadline);
                self.link.request(method, params, options)?
            }
            other => other?,
        };
        match result.get("resultType").and_then(Value::as_str) {
            None | Some("complete") => Ok(result),
            Some("input_required") => Err(RequestError::Protocol(
                "it asked for more input (a multi round-trip request), which hearth does not \
                 support"
                    .into(),
            )),
            Some(other) => Err(RequestError::Protocol(format!(
                "it answered with resultType {other:?}, which hearth does not know"
            ))),
        }
    }

    /// Every tool the server lists, page after page.
    pub fn list_tools(&self, deadline: Instant) -> Result<Vec<ServerTool>, RequestError> {
        if !self.has_tools {
            return Ok(Vec::new());
        }
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None if self.version.is_modern() => json!({}),
                None => Value::Null,
            };
            let page = self.request("tools/list", params, &Options::until(deadline))?;
            for listed in page
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match ServerTool::from_listing(listed) {
                    Some(tool) => {
                        if let (Link::Http(_), true) = (&self.link, self.version.is_modern()) {
                            if let Err(why) = http::check_param_annotations(&tool.input_schema) {
                                tracing::warn!("leaving out the tool {:?}: {why}", tool.name);
                                continue;
                            }
                        }
                        tools.push(tool);
                    }
                    None => tracing::warn!("a listed tool without a name: {listed}"),
                }
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        tracing::warn!("tools/list had more than {MAX_PAGES} pages; the rest is left out");
        Ok(tools)
    }

    /// Calls `tool` (its name on the server); with `progress`, asks for
    /// progress notifications under that token.
    pub fn call_tool(
        &self,
        tool: &str,
        schema: &Value,
        args: Value,
        progress: Option<&str>,
        deadline: Instant,
        stop: Option<&hearth_sdk::calls::Stop>,
    ) -> Result<Value, RequestError> {
        let headers = match (&self.link, self.version.is_modern()) {
            (Link::Http(_), true) => http::param_headers(schema, &args),
            _ => Vec::new(),
        };
        let args = if args.is_null() { json!({}) } else { args };
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(token) = progress {
            params["_meta"] = json!({ "progressToken": token });
        }
        self.request(
            "tools/call",
            params,
            &Options {
                deadline,
                stop,
                headers,
            },
        )
    }

    /// Opens what brings `notifications/tools/list_changed`, when the
    /// server sends them: nothing on a 2025 stdio server (they come
    /// unasked), a `subscriptions/listen` on a 2026-07-28 one, the GET
    /// stream or a listening request over HTTP.
    pub fn listen(&self) {
        if !self.list_changed {
            return;
        }
        match (&self.link, self.version.is_modern()) {
            (Link::Stdio(_), false) => {}
            (Link::Stdio(_), true) => {
                let params = json!({
                    "_meta": modern_meta(self.version),
                    "notifications": {"toolsListChanged": true},
                });
                if let Err(why) = self.link.send_unanswered("subscriptions/listen", params) {
                    tracing::warn!("could not subscribe to tool list changes: {why}");
                }
            }
            (Link::Http(h), false) => h.listen(Listen::Get),
            (Link::Http(h), true) => h.listen(Listen::Subscribe),
        }
    }

    /// `stdio, protocol 2025-11-25, pid 1234` or `http URL, protocol ...`.
    pub fn describe(&self) -> String {
        match &self.link {
            Link::Stdio(l) => format!("stdio, protocol {}, pid {}", self.version, l.pid()),
            Link::Http(h) => format!("http {}, protocol {}", h.url(), self.version),
        }
    }
}

/// `initialize`, answered with the server's result.
fn handshake(link: &Link, deadline: Instant) -> Result<Value, OpenError> {
    if let Link::Http(h) = link {
        h.forget_session();
    }
    let params = json!({
        "protocolVersion": LATEST_LEGACY.as_str(),
        "capabilities": {},
        "clientInfo": client_info(),
    });
    match link.request("initialize", params, &Options::until(deadline)) {
        Ok(result) => Ok(result),
        Err(RequestError::TimedOut) => Err(OpenError::TimedOut),
        Err(RequestError::Rpc(error)) | Err(RequestError::Refused { error, .. }) => {
            // A modern-only server may name the versions it speaks.
            let theirs = supported_in(&error);
            if theirs.is_empty() {
                Err(OpenError::Failed(format!(
                    "it refused the handshake: {error}"
                )))
            } else {
                Err(OpenError::NoCommonVersion(no_common(&theirs)))
            }
        }
        Err(e) => Err(OpenError::Failed(http::describe(&e))),
    }
}

fn supported_in(error: &RpcError) -> Vec<String> {
    string_list(error.data.as_ref().and_then(|d| d.get("supported")))
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// `speaks protocol 2024-11-05; hearth supports 2025-03-26, ...`.
fn no_common(theirs: &[String]) -> String {
    let noun = if theirs.len() == 1 {
        "protocol"
    } else {
        "protocols"
    };
    format!(
        "speaks {noun} {}; hearth supports {}",
        theirs.join(", "),
        version::supported_list()
    )
}

fn list_changed(capabilities: &Value) -> bool {
    capabilities
        .get("tools")
        .and_then(|t| t.get("listChanged"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn describe_info(info: &Value) -> Option<String> {
    let name = info.get("name")?.as_str()?;
    Some(match info.get("version").and_then(Value::as_str) {
        Some(v) => format!("{name} {v}"),
        None => name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_both_lists() {
        assert_eq!(
            no_common(&["2024-11-05".into()]),
            "speaks protocol 2024-11-05; hearth supports 2025-03-26, 2025-06-18, 2025-11-25, \
             2026-07-28"
        );
        assert_eq!(
            no_common(&["2027-01-01".into(), "2028-01-01".into()]),
            "speaks protocols 2027-01-01, 2028-01-01; hearth supports 2025-03-26, 2025-06-18, \
             2025-11-25, 2026-07-28"
        );
    }

    #[test]
    fn the_modern_error_carries_the_servers_versions() {
        let error = RpcError {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: "Unsupported protocol version".into(),
            data: Some(json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "x"})),
        };
        assert_eq!(supported_in(&error), ["2026-07-28", "2025-11-25"]);
        assert!(error.is_modern());
    }
}
