//! The audit trail: one row per tool call, whatever its source or outcome.
//!
//! A row says who asked (`Caller`), the tool, the arguments with secrets
//! redacted, what the policy decided and why, who approved it, how the call
//! ended and how long it took. `hearth audit` reads it back.
//!
//! Architecture invariant: no secret reaches the audit table. Arguments are
//! redacted before they are stored: values under secret-sounding keys,
//! `NAME=value` and `--password value` forms inside command lines, tokens
//! with well-known secret prefixes, and every secret value the host knows
//! (API keys from the environment, the canvas token).

use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, params};
use serde::Serialize;
use serde_json::Value;

use crate::store::now_ms;

/// Who asked for a tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller(String);

/// What the audit records about one call.
pub struct Entry<'a> {
    /// Who asked.
    pub caller: &'a Caller,
    /// The tool.
    pub tool: &'a str,
    /// The arguments, before redaction.
    pub args: &'a Value,
    /// The fingerprint of the exact call.
    pub fingerprint: &'a str,
    /// `allow`, `ask`, `deny` or `invalid`.
    pub decision: &'a str,
    /// Why the policy asked or denied.
    pub reason: Option<&'a str>,
    /// `approved`, `granted`, `denied` or `expired`, when it asked.
    pub approval: Option<&'a str>,
    /// Who answered.
    pub approver: Option<&'a str>,
    /// `ok`, `error` or `refused`.
    pub outcome: &'a str,
    /// The error, when there was one.
    pub detail: Option<&'a str>,
    /// From the call's arrival to its end, approval wait included.
    pub duration: Duration,
}

/// One row, as `hearth audit` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    /// Its number.
    pub id: i64,
    /// When (Unix ms).
    pub at_ms: i64,
    /// Who asked.
    pub caller: String,
    /// The tool.
    pub tool: String,
    /// The redacted arguments.
    pub args: Value,
    /// What the policy decided.
    pub decision: String,
    /// Why it asked or denied.
    pub reason: Option<String>,
    /// How the owner answered.
    pub approval: Option<String>,
    /// Who answered.
    pub approver: Option<String>,
    /// How the call ended.
    pub outcome: String,
    /// The error, if any.
    pub detail: Option<String>,
    /// How long it took.
    pub duration_ms: f64,
}

/// Writes audit rows.
pub struct Audit {
    conn: Mutex<Connection>,
    secrets: Vec<String>,
}

/// The longest error text stored per row.
const MAX_DETAIL: usize = 2000;
/// Secret values shorter than this are not scrubbed from text: a short
/// value would also match ordinary words.
const MIN_SECRET_LEN: usize = 8;
/// Keys whose values are secrets, matched case-insensitively as parts of
/// the key (`api_key`, `X-Auth-Token`, `db_password`).
const SECRET_KEYS: [&str; 10] = [
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "credential",
    "private_key",
];
/// Prefixes of well-known credential formats.
const SECRET_PREFIXES: [&str; 10] = [
    "sk-",
    "sk_live_",
    "ghp_",
    "gho_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
];
/// What a redacted value becomes.
pub const REDACTED: &str = "[redacted]";

impl Caller {
    /// The agent with this id.
    pub fn agent(id: i64) -> Caller {
        Caller(format!("agent {id}"))
    }

    /// The owner, typing `/tool` on a channel.
    pub fn owner(channel: &str) -> Caller {
        Caller(format!("owner via {channel}"))
    }

    /// Someone at this machine: `hearth tool call`, or a program that
    /// embeds the runtime.
    pub fn local() -> Caller {
        Caller("local".into())
    }

    /// A Lua tool called on behalf of `self`.
    pub fn through(&self, lua_tool: &str) -> Caller {
        Caller(format!("{} > lua {lua_tool}", self.0))
    }

    /// As text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Audit {
    /// An audit writing on `conn`, scrubbing `secrets` from what it stores.
    pub fn new(conn: Connection, secrets: Vec<String>) -> Audit {
        Audit {
            conn: Mutex::new(conn),
            secrets: secrets
                .into_iter()
                .filter(|s| s.len() >= MIN_SECRET_LEN)
                .collect(),
        }
    }

    /// Records one call. A failure to write is logged, not returned: the
    /// call has already happened, and hiding its result would not undo it.
    pub fn record(&self, entry: &Entry) {
        let args = redact(entry.args, &self.secrets).to_string();
        let detail = entry
            .detail
            .map(|d| scrub_text(&truncate(d, MAX_DETAIL), &self.secrets));
        let result = super::lock(&self.conn).execute(
            "INSERT INTO audit (at_ms, caller, tool, args, fingerprint, decision, reason, approval, \
             approver, outcome, detail, duration_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                now_ms(),
                entry.caller.as_str(),
                entry.tool,
                args,
                entry.fingerprint,
                entry.decision,
                entry.reason,
                entry.approval,
                entry.approver,
                entry.outcome,
                detail,
                entry.duration.as_secs_f64() * 1000.0,
            ],
        );
        if let Err(e) = result {
            tracing::error!(tool = entry.tool, "cannot write the audit record: {e}");
        }
    }

    /// Redacts `args` as the audit would store them.
    pub fn redacted(&self, args: &Value) -> Value {
        redact(args, &self.secrets)
    }
}

/// The newest `limit` rows, optionally of one tool, oldest first.
pub fn recent(conn: &Connection, tool: Option<&str>, limit: u32) -> rusqlite::Result<Vec<Record>> {
    let mut stmt = conn.prepare(
        "SELECT id, at_ms, caller, tool, args, decision, reason, approval, approver, outcome, \
         detail, duration_ms FROM audit WHERE ?1 IS NULL OR tool = ?1 ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![tool, limit], |r| {
        let args: String = r.get(4)?;
        Ok(Record {
            id: r.get(0)?,
            at_ms: r.get(1)?,
            caller: r.get(2)?,
            tool: r.get(3)?,
            args: serde_json::from_str(&args).unwrap_or(Value::String(args)),
            decision: r.get(5)?,
            reason: r.get(6)?,
            approval: r.get(7)?,
            approver: r.get(8)?,
            outcome: r.get(9)?,
            detail: r.get(10)?,
            duration_ms: r.get(11)?,
        })
    })?;
    let mut records = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    records.reverse();
    Ok(records)
}

/// `value` with every secret replaced by [`REDACTED`].
pub fn redact(value: &Value, secrets: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redact(v, secrets)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact(v, secrets)).collect()),
        Value::String(s) => Value::String(scrub_text(s, secrets)),
        other => other.clone(),
    }
}

fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.iter().any(|s| key.contains(s))
}

/// `text` with known secret values, `NAME=value` and `--name value` pairs
/// under secret-sounding names, bearer tokens and prefixed credentials
/// replaced.
fn scrub_text(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut hide_next = false;
    for (i, token) in text.split_inclusive(char::is_whitespace).enumerate() {
        let word = token.trim_end();
        let space = &token[word.len()..];
        if i > 0 && hide_next && !word.is_empty() {
            out.push_str(REDACTED);
            out.push_str(space);
            hide_next = false;
            continue;
        }
        hide_next = false;
        let bare = word.trim_matches(|c| c == '"' || c == '\'');
        if let Some((name, value)) = bare.split_once('=')
            && !value.is_empty()
            && is_secret_key(name.trim_start_matches('-'))
        {
            out.push_str(name);
            out.push('=');
            out.push_str(REDACTED);
        } else if SECRET_PREFIXES
            .iter()
            .any(|p| bare.starts_with(p) && bare.len() >= p.len() + 12)
        {
            out.push_str(REDACTED);
        } else {
            out.push_str(word);
            hide_next = bare.eq_ignore_ascii_case("bearer")
                || (bare.starts_with("--") && is_secret_key(&bare[2..]));
        }
        out.push_str(space);
    }
    out
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redaction_hides_every_form_of_secret() {
        let secrets = vec!["hunter2-very-secret".to_owned()];
        let cases = [
            (json!({"password": "x"}), json!({"password": REDACTED})),
            (
                json!({"X-Auth-Token": "x"}),
                json!({"X-Auth-Token": REDACTED}),
            ),
            (
                json!({"nested": [{"api_key": 5}]}),
                json!({"nested": [{"api_key": REDACTED}]}),
            ),
            (json!({"token": null}), json!({"token": null})),
            (
                json!({"command": "API_TOKEN=abc123 curl -H 'Authorization: Bearer zzz' x"}),
                json!({"command": format!("API_TOKEN={REDACTED} curl -H 'Authorization: Bearer {REDACTED} x")}),
            ),
            (
                json!({"command": "mysql --password hunter3 db"}),
                json!({"command": format!("mysql --password {REDACTED} db")}),
            ),
            (
                json!({"command": "echo sk-abcdefghijklmnopqrstuvwx"}),
                json!({"command": format!("echo {REDACTED}")}),
            ),
            (
                json!({"command": "echo hunter2-very-secret done"}),
                json!({"command": format!("echo {REDACTED} done")}),
            ),
            (
                json!({"command": "ls -la /tmp"}),
                json!({"command": "ls -la /tmp"}),
            ),
            (
                json!({"path": "notes/tokens.md"}),
                json!({"path": "notes/tokens.md"}),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redact(&input, &secrets), expected, "{input}");
        }
    }

    #[test]
    fn callers_name_their_chain() {
        assert_eq!(
            Caller::agent(1).through("notes").as_str(),
            "agent 1 > lua notes"
        );
        assert_eq!(Caller::owner("canvas").as_str(), "owner via canvas");
    }
}
