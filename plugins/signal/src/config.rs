//! `[plugins.signal]`: read strictly, so a typo or a malformed number stops
//! the daemon with a message naming the key instead of leaving the owner
//! with a channel that silently admits nobody (or the wrong person).
//!
//! An empty table means "not configured": the plugin is bundled with every
//! build, so it must load quietly on machines that do not use Signal.

use std::path::PathBuf;
use std::time::Duration;

use hearth_sdk::protocol::UnknownSender;
use serde_json::{Map, Value};

/// The settings of a configured Signal channel.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// signal-cli's HTTP base, without a trailing slash.
    pub url: String,
    /// The account signal-cli runs as (E.164).
    pub account: String,
    /// The only numbers whose messages are taken: the owner's.
    pub allowed_numbers: Vec<String>,
    /// Groups whose messages (from allowed numbers) are taken.
    pub groups: Vec<String>,
    /// A stream silent this long is dead.
    pub keepalive_timeout: Duration,
    /// The longest a JSON-RPC call or the stream's opening may take.
    pub request_timeout: Duration,
    /// Attachments larger than this are not saved.
    pub max_attachment_bytes: u64,
    /// Where attachments are saved; `None`: `$HEARTH_HOME/attachments/signal`.
    /// A relative path is taken relative to `$HEARTH_HOME`.
    pub attachment_dir: Option<PathBuf>,
    /// What an allowed number that is neither the owner nor a contact
    /// gets: silence, or a pairing code.
    pub unknown_sender: UnknownSender,
}

/// Why the config table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The value given for the table is not a table.
    #[error("[plugins.signal] must be a table")]
    NotATable,
    /// A key this plugin does not know (a typo, most likely).
    #[error("[plugins.signal]: unknown key `{0}` (known keys: {known})", known = KNOWN_KEYS.join(", "))]
    UnknownKey(String),
    /// A key that must be set once the table has any key.
    #[error("[plugins.signal]: `{0}` is required")]
    Missing(&'static str),
    /// A value of the wrong type, out of range or malformed; `key` names
    /// it (with the index for list items), `problem` says what is wrong.
    #[error("[plugins.signal] {key}: {problem}")]
    Invalid {
        /// The key, e.g. `allowed_numbers[1]`.
        key: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// The default signal-cli address: `signal-cli daemon --http`'s own default port.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";
/// signal-cli writes a keep-alive comment every 15 s; a minute of silence
/// is four missed ones.
pub const DEFAULT_KEEPALIVE_TIMEOUT_S: u64 = 60;
/// The default bound on one JSON-RPC call.
pub const DEFAULT_REQUEST_TIMEOUT_S: u64 = 30;
/// The default attachment cap: 25 MiB.
pub const DEFAULT_MAX_ATTACHMENT_BYTES: u64 = 25 << 20;

/// Reads the table; `Ok(None)` when it is empty (not configured).
pub fn parse(config: &Value) -> Result<Option<Settings>, ConfigError> {
    let table = match config {
        Value::Null => return Ok(None),
        Value::Object(table) => table,
        _ => return Err(ConfigError::NotATable),
    };
    if table.is_empty() {
        return Ok(None);
    }
    if let Some(key) = table.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
        return Err(ConfigError::UnknownKey(key.clone()));
    }
    let url = match table.get("url") {
        None => DEFAULT_URL.to_owned(),
        Some(v) => parse_url(string(v, "url")?)?,
    };
    let account = string(
        table
            .get("account")
            .ok_or(ConfigError::Missing("account"))?,
        "account",
    )?;
    check_number(account, "account")?;
    let allowed_numbers = strings(table, "allowed_numbers")?;
    for (i, number) in allowed_numbers.iter().enumerate() {
        check_number(number, &format!("allowed_numbers[{i}]"))?;
    }
    let groups = strings(table, "groups")?;
    for (i, group) in groups.iter().enumerate() {
        check_group(group, &format!("groups[{i}]"))?;
    }
    let keepalive = integer(
        table,
        "keepalive_timeout_s",
        DEFAULT_KEEPALIVE_TIMEOUT_S,
        1,
        3600,
    )?;
    let request = integer(
        table,
        "request_timeout_s",
        DEFAULT_REQUEST_TIMEOUT_S,
        1,
        600,
    )?;
    let max_attachment_bytes = integer(
        table,
        "max_attachment_bytes",
        DEFAULT_MAX_ATTACHMENT_BYTES,
        0,
        1 << 30,
    )?;
    let attachment_dir = match table.get("attachment_dir") {
        None => None,
        Some(v) => {
            let dir = string(v, "attachment_dir")?;
            if dir.trim().is_empty() {
                return Err(invalid("attachment_dir", "must not be empty"));
            }
            Some(PathBuf::from(dir))
        }
    };
    Ok(Some(Settings {
        url,
        account: account.to_owned(),
        allowed_numbers,
        groups,
        keepalive_timeout: Duration::from_secs(keepalive),
        request_timeout: Duration::from_secs(request),
        max_attachment_bytes,
        attachment_dir,
        unknown_sender: match table.get("unknown_sender") {
            None => UnknownSender::Silent,
            Some(value) => UnknownSender::parse(value)
                .map_err(|e| invalid("unknown_sender", e.trim_start_matches("unknown_sender: ")))?,
        },
    }))
}

/// Whether `number` is an E.164 phone number: `+`, then 7 to 15 digits,
/// the first not 0. Signal accounts are phone numbers in this form.
pub fn is_e164(number: &str) -> bool {
    number.strip_prefix('+').is_some_and(|digits| {
        (7..=15).contains(&digits.len())
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0')
    })
}

/// Every key the table may hold.
const KNOWN_KEYS: &[&str] = &[
    "url",
    "account",
    "allowed_numbers",
    "groups",
    "unknown_sender",
    "keepalive_timeout_s",
    "request_timeout_s",
    "max_attachment_bytes",
    "attachment_dir",
];

fn check_number(number: &str, key: &str) -> Result<(), ConfigError> {
    if is_e164(number) {
        Ok(())
    } else {
        Err(invalid(
            key,
            &format!(
                "{number:?} is not an E.164 number (+ and 7 to 15 digits, e.g. \"+15551234567\")"
            ),
        ))
    }
}

/// Group ids are base64 (signal-cli's `listGroups` shows them).
fn check_group(group: &str, key: &str) -> Result<(), ConfigError> {
    let base64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_');
    if !group.is_empty() && group.len() <= 128 && group.bytes().all(base64) {
        Ok(())
    } else {
        Err(invalid(
            key,
            &format!("{group:?} is not a group id (the base64 id `signal-cli listGroups` shows)"),
        ))
    }
}

fn parse_url(raw: &str) -> Result<String, ConfigError> {
    let url = reqwest::Url::parse(raw)
        .map_err(|e| invalid("url", &format!("{raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(
            "url",
            &format!("{raw:?} must start with http:// or https://"),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() || url.host_str().is_none() {
        return Err(invalid(
            "url",
            &format!("{raw:?} must be a base like http://127.0.0.1:8080 (no query or fragment)"),
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

fn string<'a>(value: &'a Value, key: &str) -> Result<&'a str, ConfigError> {
    value
        .as_str()
        .ok_or_else(|| invalid(key, &format!("expected a string, got {value}")))
}

fn strings(table: &Map<String, Value>, key: &str) -> Result<Vec<String>, ConfigError> {
    let Some(value) = table.get(key) else {
        return Ok(Vec::new());
    };
    let items = value
        .as_array()
        .ok_or_else(|| invalid(key, &format!("expected a list of strings, got {value}")))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| string(item, &format!("{key}[{i}]")).map(str::to_owned))
        .collect()
}

fn integer(
    table: &Map<String, Value>,
    key: &str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    let Some(value) = table.get(key) else {
        return Ok(default);
    };
    match value.as_u64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(
            key,
            &format!("expected an integer from {min} to {max}, got {value}"),
        )),
    }
}

fn invalid(key: &str, problem: &str) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        problem: problem.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(config: Value) -> String {
        parse(&config).expect_err("should be refused").to_string()
    }

    #[test]
    fn an_empty_table_means_not_configured() {
        assert_eq!(parse(&json!({})), Ok(None));
        assert_eq!(parse(&Value::Null), Ok(None));
    }

    #[test]
    fn defaults_fill_what_is_not_given() {
        let settings = parse(&json!({"account": "+15550000001"})).unwrap().unwrap();
        assert_eq!(settings.url, DEFAULT_URL);
        assert!(settings.allowed_numbers.is_empty(), "fail closed");
        assert!(settings.groups.is_empty());
        assert_eq!(settings.keepalive_timeout, Duration::from_secs(60));
        assert_eq!(settings.max_attachment_bytes, DEFAULT_MAX_ATTACHMENT_BYTES);
        assert_eq!(settings.attachment_dir, None);
    }

    #[test]
    fn a_full_table_is_read() {
        let settings = parse(&json!({
            "url": "http://localhost:9000/",
            "account": "+15550000001",
            "allowed_numbers": ["+15550000002", "+447700900123"],
            "groups": ["Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI="],
            "keepalive_timeout_s": 2,
            "request_timeout_s": 5,
            "max_attachment_bytes": 0,
            "attachment_dir": "files/signal",
        }))
        .unwrap()
        .unwrap();
        assert_eq!(settings.url, "http://localhost:9000");
        assert_eq!(settings.allowed_numbers.len(), 2);
        assert_eq!(settings.keepalive_timeout, Duration::from_secs(2));
        assert_eq!(settings.request_timeout, Duration::from_secs(5));
        assert_eq!(settings.attachment_dir, Some(PathBuf::from("files/signal")));
    }

    #[test]
    fn errors_name_the_key_and_the_problem() {
        let account = |extra: Value| {
            let mut config = json!({"account": "+15550000001"});
            config
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            error(config)
        };
        let cases = [
            (
                account(json!({"alowed_numbers": []})),
                "unknown key `alowed_numbers`",
            ),
            (error(json!({"url": DEFAULT_URL})), "`account` is required"),
            (
                error(json!({"account": "15550000001"})),
                "account: \"15550000001\" is not an E.164",
            ),
            (
                account(json!({"allowed_numbers": ["+15550000002", "+12"]})),
                "allowed_numbers[1]: \"+12\" is not an E.164 number",
            ),
            (
                account(json!({"allowed_numbers": "+15550000002"})),
                "allowed_numbers: expected a list",
            ),
            (
                account(json!({"allowed_numbers": [5]})),
                "allowed_numbers[0]: expected a string",
            ),
            (
                account(json!({"groups": ["not a group!"]})),
                "groups[0]: \"not a group!\" is not a group id",
            ),
            (
                account(json!({"keepalive_timeout_s": 0})),
                "keepalive_timeout_s: expected an integer from 1",
            ),
            (
                account(json!({"request_timeout_s": "5"})),
                "request_timeout_s: expected an integer",
            ),
            (
                account(json!({"max_attachment_bytes": -1})),
                "max_attachment_bytes: expected an integer",
            ),
            (
                account(json!({"url": "ftp://x"})),
                "url: \"ftp://x\" must start with http://",
            ),
            (
                account(json!({"url": "nonsense"})),
                "url: \"nonsense\" is not a URL",
            ),
            (
                account(json!({"attachment_dir": " "})),
                "attachment_dir: must not be empty",
            ),
            (error(json!(["x"])), "must be a table"),
        ];
        for (got, want) in cases {
            assert!(got.contains(want), "{got:?} should contain {want:?}");
        }
    }

    #[test]
    fn e164_numbers() {
        for good in ["+15551234567", "+4915123456789", "+6831234"] {
            assert!(is_e164(good), "{good}");
        }
        for bad in [
            "",
            "+",
            "+12",
            "15551234567",
            "+0155512345",
            "+1555123456789012",
            "+1 555 123",
        ] {
            assert!(!is_e164(bad), "{bad}");
        }
    }
}
