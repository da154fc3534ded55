//! The audit trail: one row per tool call, whatever its source or outcome.
//!
//! A row says who asked (`Caller`), the tool, the arguments with secrets
//! redacted, what the policy decided and why, who approved it, how the call
//! ended and how long it took. `hearth audit` reads it back.
//!
//! Architecture invariant: no secret reaches the audit table. Arguments are
//! redacted before they are stored: values under secret-sounding keys,
//! `NAME=value` and `--password value` forms inside command lines, tokens
//! with well-known secret prefixes, every secret value the host knows
//! (API keys from the environment, the canvas and control tokens), and the
//! owner's secrets (`hearth_base::secrets`, re-read when their file changes, so a
//! secret set after start is covered), which become `[secret:NAME]`. Known
//! values are found in any letter case and in their common encodings
//! (`hearth_base::secrets::Redactor`).
//!
//! Rows are committed by a writer thread in batches (`writer`), so a call
//! pays for redaction and a queue push, not for a commit; `flush` and
//! `close` wait for everything queued.

mod writer;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use hearth_base::caller::Caller;
use hearth_base::secrets::{Redactor, Secrets, Snapshot};
use hearth_base::store::{Cold, now_ms};

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
    pub decision: &'static str,
    /// Why the policy asked or denied.
    pub reason: Option<&'a str>,
    /// `approved`, `granted`, `denied`, `expired`, `withdrawn` or
    /// `unavailable`, when it asked.
    pub approval: Option<&'static str>,
    /// Who answered.
    pub approver: Option<&'a str>,
    /// `ok`, `error` or `refused`.
    pub outcome: &'static str,
    /// The error, when there was one.
    pub detail: Option<&'a str>,
    /// From the call's arrival to its end, approval wait included.
    pub duration: Duration,
    /// The owner's secrets as the call's result was redacted with; `None`:
    /// the audit reads them itself.
    pub secrets: Option<&'a Snapshot>,
}

/// One row, as `hearth audit` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    writer: writer::Writer,
    /// The host's own secret values, replaced by [`REDACTED`].
    secrets: Redactor,
    owners: Arc<Secrets>,
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

impl Audit {
    /// An audit writing on `conn`, scrubbing from what it stores the
    /// values `secrets` (replaced by [`REDACTED`]) and the owner's secrets
    /// as they are at each call (replaced by `[secret:NAME]`).
    pub fn new(conn: Cold, secrets: Vec<String>, owners: Arc<Secrets>) -> Audit {
        Audit {
            writer: writer::Writer::start(conn),
            secrets: own_secrets(&secrets),
            owners,
        }
    }

    /// Records one call: the row is redacted here and committed by the
    /// writer thread moments later. A failure to write is logged, not
    /// returned: the call has already happened, and hiding its result
    /// would not undo it.
    pub fn record(&self, entry: &Entry) {
        let latest;
        let owners = match entry.secrets {
            Some(snapshot) => snapshot.redactor(),
            None => {
                latest = self.owners.latest();
                latest.redactor()
            }
        };
        let named = owners.redacted(entry.args);
        let args = named.as_ref().unwrap_or(entry.args);
        self.writer.push(writer::Row {
            at_ms: now_ms(),
            caller: entry.caller.as_str().to_owned(),
            tool: entry.tool.to_owned(),
            args: match redacted(args, &self.secrets) {
                Some(value) => value.to_string(),
                None => args.to_string(),
            },
            fingerprint: entry.fingerprint.to_owned(),
            decision: entry.decision,
            reason: entry.reason.map(str::to_owned),
            approval: entry.approval,
            approver: entry.approver.map(str::to_owned),
            outcome: entry.outcome,
            // Redacted before it is cut, so no value is cut in two.
            detail: entry.detail.map(|d| {
                truncate(
                    &scrub_text(&owners.redact_text(d), &self.secrets),
                    MAX_DETAIL,
                )
            }),
            duration_ms: entry.duration.as_secs_f64() * 1000.0,
        });
    }

    /// Waits until every row recorded so far is committed.
    pub fn flush(&self) {
        self.writer.flush();
    }

    /// Commits every queued row and stops the writer thread; rows recorded
    /// later are written in place. Dropping the audit does the same.
    pub fn close(&self) {
        self.writer.close();
    }

    /// Redacts `args` as the audit would store them.
    pub fn redacted(&self, args: &Value) -> Value {
        let named = self.owners.redact_json(args.clone());
        redact(&named, &self.secrets)
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

/// The redactor of the host's own secret `values`: each one, in each of
/// its forms, becomes [`REDACTED`].
pub fn own_secrets(values: &[String]) -> Redactor {
    Redactor::with_markers(
        values
            .iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .map(|s| (s.as_str(), REDACTED.to_owned())),
    )
}

/// `value` with every secret replaced by [`REDACTED`].
pub fn redact(value: &Value, secrets: &Redactor) -> Value {
    redacted(value, secrets).unwrap_or_else(|| value.clone())
}

/// `value` with its secrets replaced, or `None` when it holds none: the
/// common case, which then costs no copy (every tool call is audited).
fn redacted(value: &Value, secrets: &Redactor) -> Option<Value> {
    match value {
        Value::Object(map) => {
            let changed: Vec<(usize, Value)> = map
                .iter()
                .enumerate()
                .filter_map(|(i, (k, v))| {
                    if is_secret_key(k) && !v.is_null() {
                        Some((i, Value::String(REDACTED.into())))
                    } else {
                        redacted(v, secrets).map(|v| (i, v))
                    }
                })
                .collect();
            if changed.is_empty() {
                return None;
            }
            let mut changed = changed.into_iter().peekable();
            Some(Value::Object(
                map.iter()
                    .enumerate()
                    .map(|(i, (k, v))| match changed.next_if(|(at, _)| *at == i) {
                        Some((_, new)) => (k.clone(), new),
                        None => (k.clone(), v.clone()),
                    })
                    .collect(),
            ))
        }
        Value::Array(items) => {
            let changed: Vec<Option<Value>> = items.iter().map(|v| redacted(v, secrets)).collect();
            if changed.iter().all(Option::is_none) {
                return None;
            }
            Some(Value::Array(
                items
                    .iter()
                    .zip(changed)
                    .map(|(old, new)| new.unwrap_or_else(|| old.clone()))
                    .collect(),
            ))
        }
        Value::String(s) => match scrub_text(s, secrets) {
            Cow::Owned(scrubbed) => Some(Value::String(scrubbed)),
            Cow::Borrowed(_) => None,
        },
        _ => None,
    }
}

fn is_secret_key(key: &str) -> bool {
    // Compared byte by byte instead of through a lowered copy: this runs
    // on every key of every audited call.
    let matches_at = |secret: &str, at: usize| {
        key.as_bytes()[at..]
            .iter()
            .zip(secret.as_bytes())
            .all(|(k, s)| {
                let k = k.to_ascii_lowercase();
                k == *s || (k == b'-' && *s == b'_')
            })
    };
    SECRET_KEYS.iter().any(|secret| {
        key.len() >= secret.len() && (0..=key.len() - secret.len()).any(|at| matches_at(secret, at))
    })
}

/// `text` with known secret values, `NAME=value` and `--name value` pairs
/// under secret-sounding names, bearer tokens and prefixed credentials
/// replaced; borrowed as it was when there is nothing to replace.
fn scrub_text<'a>(text: &'a str, secrets: &Redactor) -> Cow<'a, str> {
    let text = secrets.redact_text(text);
    match scrub_words(&text) {
        Some(scrubbed) => Cow::Owned(scrubbed),
        None => text,
    }
}

/// The word-level part of [`scrub_text`]; `None` when no word changes.
fn scrub_words(text: &str) -> Option<String> {
    // Built lazily: `out` starts at the first word that changes.
    let mut out: Option<String> = None;
    let mut hide_next = false;
    let mut at = 0;
    for (i, token) in text.split_inclusive(char::is_whitespace).enumerate() {
        let word = token.trim_end();
        let space = &token[word.len()..];
        let start = at;
        at += token.len();
        let replacement: Option<String> = if i > 0 && hide_next && !word.is_empty() {
            hide_next = false;
            Some(REDACTED.to_owned())
        } else {
            hide_next = false;
            let bare = word.trim_matches(|c| c == '"' || c == '\'');
            if let Some((name, value)) = bare.split_once('=')
                && !value.is_empty()
                && is_secret_key(name.trim_start_matches('-'))
            {
                Some(format!("{name}={REDACTED}"))
            } else if SECRET_PREFIXES
                .iter()
                .any(|p| bare.starts_with(p) && bare.len() >= p.len() + 12)
            {
                Some(REDACTED.to_owned())
            } else {
                hide_next = bare.eq_ignore_ascii_case("bearer")
                    || (bare.starts_with("--") && is_secret_key(&bare[2..]));
                None
            }
        };
        match (replacement, out.as_mut()) {
            (Some(new), Some(out)) => {
                out.push_str(&new);
                out.push_str(space);
            }
            (Some(new), None) => {
                let mut built = String::with_capacity(text.len());
                built.push_str(&text[..start]);
                built.push_str(&new);
                built.push_str(space);
                out = Some(built);
            }
            (None, Some(out)) => out.push_str(token),
            (None, None) => {}
        }
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
        let secrets = own_secrets(&["hunter2-very-secret".to_owned()]);
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
            // The host's own values in another case and encoded, too.
            (
                json!({"command": "echo HUNTER2-Very-Secret | base64"}),
                json!({"command": format!("echo {REDACTED} | base64")}),
            ),
            (
                json!({"out": "aHVudGVyMi12ZXJ5LXNlY3JldA== and 68756e746572322d766572792d736563726574"}),
                json!({"out": format!("{REDACTED} and {REDACTED}")}),
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
    fn clean_arguments_are_not_copied() {
        let secrets = own_secrets(&["hunter2-very-secret".to_owned()]);
        for clean in [
            json!({"command": "ls -la /tmp", "cwd": "/tmp", "env": {"A": "1"}}),
            json!(["--verbose", "plain words", 5, null, true]),
            json!("echo done"),
        ] {
            assert_eq!(redacted(&clean, &secrets), None, "{clean}");
        }
        assert!(matches!(
            scrub_text("a b  c", &secrets),
            Cow::Borrowed("a b  c")
        ));
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
