//! `[plugins.matrix]`, read strictly:
//!
//! ```toml
//! [plugins.matrix]
//! homeserver = "https://matrix.example.org"
//! token_secret = "MATRIX_TOKEN"          # the bot account's access token, from the secret store
//! allowed_user_ids = ["@anna:example.org"]   # who gets in, and whose invites are joined
//! unknown_sender = "silent"              # or "pairing", as for Telegram
//! # max_file_bytes = 52428800            # attachments over this are not downloaded
//! ```
//!
//! An empty table (or none) means Matrix is not set up: the plugin stays
//! inert. Any key means it is wanted, and then a mistake stops the start
//! with the key at fault.

use hearth_sdk::protocol::UnknownSender;
use serde::Deserialize;
use serde_json::Value;

/// The largest attachment downloaded by default: Synapse's default
/// `max_upload_size`, 50 MiB, so what the homeserver took the bot takes,
/// and the size `attach_file` allows the other way.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 50 << 20;

/// The settings of a configured Matrix channel.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The homeserver's base URL, without a trailing slash.
    pub homeserver: String,
    /// The access token. Never logged.
    pub token: String,
    /// Who gets in (Matrix user ids).
    pub allowed: Vec<String>,
    /// What a sender let in who is neither the owner nor a contact gets.
    pub unknown_sender: UnknownSender,
    /// Attachments over this size are not downloaded.
    pub max_file_bytes: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    homeserver: Option<String>,
    token: Option<String>,
    #[serde(default)]
    allowed_user_ids: Vec<String>,
    unknown_sender: Option<Value>,
    max_file_bytes: Option<u64>,
}

/// Reads the table; `Ok(None)` means not configured.
pub fn parse(config: Value) -> Result<Option<Settings>, String> {
    match &config {
        Value::Null => return Ok(None),
        Value::Object(table) if table.is_empty() => return Ok(None),
        _ => {}
    }
    let raw: Raw = hearth_sdk::parse_args(config).map_err(|e| e.to_string())?;
    let bad = |key: &str, why: String| format!("invalid arguments: {key}: {why}");
    let homeserver = raw
        .homeserver
        .ok_or_else(|| {
            bad(
                "homeserver",
                "not set: the account's server, like \"https://matrix.org\"".into(),
            )
        })?
        .trim_end_matches('/')
        .to_owned();
    let loopback =
        homeserver.starts_with("http://127.0.0.1") || homeserver.starts_with("http://localhost");
    if !homeserver.starts_with("https://") && !loopback {
        return Err(bad(
            "homeserver",
            format!("{homeserver:?} is not https (plain http only to a loopback address)"),
        ));
    }
    let token = raw
        .token
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            bad(
                "token",
                "not set: keep the access token with `hearth secret set MATRIX_TOKEN` and name \
                 it with token_secret = \"MATRIX_TOKEN\""
                    .into(),
            )
        })?;
    if let Some(user) = raw.allowed_user_ids.iter().find(|u| !is_user_id(u)) {
        return Err(bad(
            "allowed_user_ids",
            format!("{user:?} is not a Matrix user id (like \"@anna:example.org\")"),
        ));
    }
    let unknown_sender = match raw.unknown_sender {
        None => UnknownSender::Silent,
        Some(value) => {
            UnknownSender::parse(&value).map_err(|e| format!("invalid arguments: {e}"))?
        }
    };
    Ok(Some(Settings {
        homeserver,
        token,
        allowed: raw.allowed_user_ids,
        unknown_sender,
        max_file_bytes: match raw.max_file_bytes {
            None => DEFAULT_MAX_FILE_BYTES,
            Some(n @ 1..=4_294_967_296) => n,
            Some(n) => return Err(bad("max_file_bytes", format!("{n} is not 1 to 4294967296"))),
        },
    }))
}

fn is_user_id(id: &str) -> bool {
    id.strip_prefix('@')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| {
            !local.is_empty() && !server.is_empty() && !id.contains(char::is_whitespace)
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn no_table_is_no_channel_and_mistakes_name_their_key() {
        assert_eq!(parse(Value::Null), Ok(None));
        assert_eq!(parse(json!({})), Ok(None));
        let ok = parse(json!({ "homeserver": "https://m.example/", "token": "t",
            "allowed_user_ids": ["@anna:m.example"] }))
        .unwrap()
        .unwrap();
        assert_eq!(ok.homeserver, "https://m.example");
        assert_eq!(ok.max_file_bytes, DEFAULT_MAX_FILE_BYTES);
        for (table, key) in [
            (json!({ "token": "t" }), "homeserver"),
            (
                json!({ "homeserver": "http://m.example", "token": "t" }),
                "homeserver",
            ),
            (json!({ "homeserver": "https://m.example" }), "token"),
            (
                json!({ "homeserver": "https://m.example", "token": "t", "allowed_user_ids": ["anna"] }),
                "allowed_user_ids",
            ),
            (
                json!({ "homeserver": "https://m.example", "token": "t", "room": 1 }),
                "room",
            ),
            (
                json!({ "homeserver": "https://m.example", "token": "t", "max_file_bytes": 0 }),
                "max_file_bytes",
            ),
        ] {
            let why = parse(table.clone()).unwrap_err();
            assert!(
                why.starts_with("invalid arguments: ") && why.contains(key),
                "{table}: {why}"
            );
        }
    }
}
