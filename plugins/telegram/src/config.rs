//! `[plugins.telegram]`, read strictly: every problem is named by its key.
//!
//! An empty table (or none) means the owner has not set Telegram up: the
//! plugin then stays inert instead of failing, so a bundled plugin never
//! makes `hearth check` fail on a machine that does not use it. Any key at
//! all means it is wanted, and then a missing token or a malformed id stops
//! the start with the key at fault.

use hearth_sdk::protocol::UnknownSender;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Map, Value};

/// The Bot API's own address.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";
/// The environment variable the token is read from when the table names
/// none.
pub const DEFAULT_TOKEN_ENV: &str = "TELEGRAM_BOT_TOKEN";
/// The largest file `getFile` serves from the public Bot API: 20 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 20 << 20;

/// The keys the table may hold.
const KEYS: &[&str] = &[
    "token",
    "token_env",
    "api_url",
    "allowed_chat_ids",
    "mode",
    "poll_timeout_s",
    "webhook_listen",
    "webhook_url",
    "webhook_secret_env",
    "max_file_bytes",
    "pace_chat_ms",
    "pace_global_per_s",
    "unknown_sender",
];

/// The settings of a configured Telegram channel.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The bot token. Never logged.
    pub token: String,
    /// The Bot API base, without a trailing slash.
    pub api_url: String,
    /// The chats that get through: private chats (the owner's user id) and
    /// the groups the bot answers in.
    pub allowed_chat_ids: Vec<i64>,
    /// Long polling or a webhook.
    pub transport: Transport,
    /// How long one `getUpdates` waits for updates; an answer that takes
    /// longer than this plus a margin means the connection is dead.
    pub poll_timeout: Duration,
    /// Files over this size are not downloaded.
    pub max_file_bytes: u64,
    /// The least time between two messages to one chat.
    pub pace_chat: Duration,
    /// The most messages sent per second, over all chats.
    pub pace_global_per_s: u32,
    /// What a sender in an allowed chat who is neither the owner nor a
    /// contact gets: silence, or a pairing code.
    pub unknown_sender: UnknownSender,
}

/// How updates arrive.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    /// `getUpdates` long polling: needs no public address.
    Poll,
    /// Telegram posts updates to `url`, which a proxy forwards to `listen`.
    Webhook {
        /// The local address the webhook server binds.
        listen: SocketAddr,
        /// The public HTTPS URL given to `setWebhook`.
        url: String,
        /// The secret Telegram sends back in
        /// `X-Telegram-Bot-Api-Secret-Token`.
        secret: String,
    },
}

impl Settings {
    /// The user ids among the allowed chats: a private chat's id is its
    /// user's. These are the owner.
    pub fn owner_ids(&self) -> Vec<i64> {
        self.allowed_chat_ids
            .iter()
            .copied()
            .filter(|id| *id > 0)
            .collect()
    }
}

/// Reads the table. `Ok(None)` means not configured. `env` reads an
/// environment variable (a parameter so tests need not set real ones);
/// `secret` makes a webhook secret when none is configured.
pub fn parse(
    config: &Value,
    env: impl Fn(&str) -> Option<String>,
    secret: impl FnOnce() -> String,
) -> Result<Option<Settings>, String> {
    let table = match config {
        Value::Null => return Ok(None),
        Value::Object(t) if t.is_empty() => return Ok(None),
        Value::Object(t) => t,
        _ => return Err("[plugins.telegram] must be a table".into()),
    };
    if let Some(unknown) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "[plugins.telegram] unknown key `{unknown}`; known keys are {}",
            KEYS.join(", ")
        ));
    }
    let token = match (string(table, "token")?, string(table, "token_env")?) {
        (Some(_), Some(_)) => {
            return Err("[plugins.telegram] give `token` or `token_env`, not both".into());
        }
        (Some(token), None) => token,
        (None, name) => {
            let name = name.unwrap_or_else(|| DEFAULT_TOKEN_ENV.to_owned());
            env(&name).filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                format!(
                    "[plugins.telegram] token_env: the environment variable {name} is not set; \
                     put the bot token from @BotFather there"
                )
            })?
        }
    };
    let token = token.trim().to_owned();
    if !valid_token(&token) {
        return Err(
            "[plugins.telegram] token: not a bot token (expected `<bot id>:<secret>`)".into(),
        );
    }
    let api_url = string(table, "api_url")?
        .unwrap_or_else(|| DEFAULT_API_URL.to_owned())
        .trim_end_matches('/')
        .to_owned();
    if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
        return Err(format!(
            "[plugins.telegram] api_url: {api_url:?} is not an http or https URL"
        ));
    }
    let allowed_chat_ids = chat_ids(table)?;
    let transport = match string(table, "mode")?.as_deref().unwrap_or("poll") {
        "poll" => Transport::Poll,
        "webhook" => webhook(table, &env, secret)?,
        other => {
            return Err(format!(
                "[plugins.telegram] mode: {other:?} is not `poll` or `webhook`"
            ));
        }
    };
    Ok(Some(Settings {
        token,
        api_url,
        allowed_chat_ids,
        transport,
        poll_timeout: Duration::from_secs(number(table, "poll_timeout_s", 1, 50)?.unwrap_or(30)),
        max_file_bytes: number(table, "max_file_bytes", 1, 2 << 30)?
            .unwrap_or(DEFAULT_MAX_FILE_BYTES),
        pace_chat: Duration::from_millis(number(table, "pace_chat_ms", 0, 60_000)?.unwrap_or(1000)),
        pace_global_per_s: number(table, "pace_global_per_s", 1, 1000)?.unwrap_or(30) as u32,
        unknown_sender: match table.get("unknown_sender") {
            None => UnknownSender::Silent,
            Some(value) => {
                UnknownSender::parse(value).map_err(|e| format!("[plugins.telegram] {e}"))?
            }
        },
    }))
}

fn webhook(
    table: &Map<String, Value>,
    env: &impl Fn(&str) -> Option<String>,
    secret: impl FnOnce() -> String,
) -> Result<Transport, String> {
    let url = string(table, "webhook_url")?.ok_or(
        "[plugins.telegram] webhook_url: required with mode = \"webhook\" (the public HTTPS URL Telegram posts to)",
    )?;
    if !url.starts_with("https://") && !url.starts_with("http://") {
        return Err(format!(
            "[plugins.telegram] webhook_url: {url:?} is not an https URL"
        ));
    }
    let listen_text = string(table, "webhook_listen")?.unwrap_or_else(|| "127.0.0.1:8443".into());
    let listen = listen_text.parse().map_err(|_| {
        format!("[plugins.telegram] webhook_listen: {listen_text:?} is not an address like 127.0.0.1:8443")
    })?;
    let secret = match string(table, "webhook_secret_env")? {
        Some(name) => env(&name).filter(|s| !s.is_empty()).ok_or_else(|| {
            format!(
                "[plugins.telegram] webhook_secret_env: the environment variable {name} is not set"
            )
        })?,
        None => secret(),
    };
    // The Bot API allows 1-256 characters from A-Z, a-z, 0-9, `_` and `-`.
    if secret.is_empty()
        || secret.len() > 256
        || !secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(
            "[plugins.telegram] webhook_secret_env: the secret must be 1-256 characters from A-Z, a-z, 0-9, _ and -"
                .into(),
        );
    }
    Ok(Transport::Webhook {
        listen,
        url,
        secret,
    })
}

fn chat_ids(table: &Map<String, Value>) -> Result<Vec<i64>, String> {
    let Some(value) = table.get("allowed_chat_ids") else {
        return Ok(Vec::new());
    };
    let Some(items) = value.as_array() else {
        return Err(
            "[plugins.telegram] allowed_chat_ids: expected a list of chat ids, like [123456789]"
                .into(),
        );
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            // Ids written as strings are common (they come from JSON dumps).
            let id = match item {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            id.filter(|id| *id != 0).ok_or_else(|| {
                format!("[plugins.telegram] allowed_chat_ids[{i}]: {item} is not a chat id")
            })
        })
        .collect()
}

fn string(table: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match table.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "[plugins.telegram] {key}: expected a string, found {other}"
        )),
    }
}

fn number(
    table: &Map<String, Value>,
    key: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, String> {
    match table.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|n| (min..=max).contains(n))
            .map(Some)
            .ok_or_else(|| {
                format!("[plugins.telegram] {key}: expected a whole number from {min} to {max}, found {value}")
            }),
    }
}

/// `<digits>:<35ish url-safe characters>`, as @BotFather issues them.
fn valid_token(token: &str) -> bool {
    token.split_once(':').is_some_and(|(id, secret)| {
        !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_digit())
            && !secret.is_empty()
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_with(config: Value) -> Result<Option<Settings>, String> {
        parse(
            &config,
            |name| (name == "TG").then(|| "42:abc-DEF_1".to_owned()),
            || "generated".into(),
        )
    }

    #[test]
    fn an_empty_table_is_not_configured() {
        assert_eq!(parse_with(json!({})), Ok(None));
        assert_eq!(parse_with(Value::Null), Ok(None));
    }

    #[test]
    fn a_full_table_parses() {
        let s = parse_with(json!({
            "token_env": "TG", "allowed_chat_ids": [7, "-100123"], "poll_timeout_s": 2,
            "api_url": "http://127.0.0.1:9/", "pace_chat_ms": 0
        }))
        .unwrap()
        .unwrap();
        assert_eq!(s.token, "42:abc-DEF_1");
        assert_eq!(s.api_url, "http://127.0.0.1:9");
        assert_eq!(s.allowed_chat_ids, vec![7, -100123]);
        assert_eq!(s.owner_ids(), vec![7]);
        assert_eq!(s.poll_timeout, Duration::from_secs(2));
        assert_eq!(s.transport, Transport::Poll);
    }

    #[test]
    fn every_problem_names_its_key() {
        let cases = [
            (json!({"tokn": "1:a"}), "unknown key `tokn`"),
            (
                json!({"token_env": "NOPE"}),
                "token_env: the environment variable NOPE",
            ),
            (json!({"token": "nocolon"}), "token: not a bot token"),
            (json!({"token": "1:a", "token_env": "TG"}), "not both"),
            (
                json!({"token": "1:a", "allowed_chat_ids": [1, "x"]}),
                "allowed_chat_ids[1]",
            ),
            (
                json!({"token": "1:a", "allowed_chat_ids": 5}),
                "allowed_chat_ids: expected a list",
            ),
            (
                json!({"token": "1:a", "poll_timeout_s": 0}),
                "poll_timeout_s: expected a whole number from 1 to 50",
            ),
            (json!({"token": "1:a", "mode": "push"}), "mode: \"push\""),
            (
                json!({"token": "1:a", "mode": "webhook"}),
                "webhook_url: required",
            ),
            (json!({"token": "1:a", "api_url": "ftp://x"}), "api_url"),
            (
                json!({"token": "1:a", "mode": "webhook", "webhook_url": "https://x/y", "webhook_listen": "nowhere"}),
                "webhook_listen",
            ),
        ];
        for (config, wanted) in cases {
            let err = parse_with(config.clone()).expect_err(&config.to_string());
            assert!(err.contains(wanted), "{config}: {err}");
            assert!(err.starts_with("[plugins.telegram]"), "{err}");
        }
    }

    #[test]
    fn the_token_never_appears_in_an_error() {
        let err =
            parse_with(json!({"token": "99:secretvalue", "allowed_chat_ids": ["zz"]})).unwrap_err();
        assert!(!err.contains("secretvalue"), "{err}");
    }

    #[test]
    fn a_webhook_gets_a_generated_secret() {
        let s =
            parse_with(json!({"token": "1:a", "mode": "webhook", "webhook_url": "https://h/tg"}))
                .unwrap()
                .unwrap();
        match s.transport {
            Transport::Webhook { secret, listen, .. } => {
                assert_eq!(secret, "generated");
                assert_eq!(listen.to_string(), "127.0.0.1:8443");
            }
            Transport::Poll => panic!("expected a webhook"),
        }
    }
}
