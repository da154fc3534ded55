//! `[plugins.discord]`, read strictly:
//!
//! ```toml
//! [plugins.discord]
//! token_secret = "DISCORD_BOT_TOKEN"     # the bot token, from the secret store
//! allowed_user_ids = ["123456789012345678"]   # whose direct messages get in
//! allowed_channel_ids = []               # guild channels where a mention gets in
//! unknown_sender = "silent"              # or "pairing", as for Telegram
//! # max_file_bytes = 26214400            # attachments over this are not downloaded
//! # max_upload_bytes = 10485760          # files the agent sends over this are named instead
//! # api_url = "https://discord.com/api/v10"
//! # gateway_url = "wss://gateway.discord.gg"   # default: asked of the API
//! ```
//!
//! An empty table (or none) means Discord is not set up: the plugin stays
//! inert. Any key means it is wanted, and then a missing token or a
//! malformed id stops the start with the key at fault.

use hearth_sdk::protocol::UnknownSender;
use serde::Deserialize;
use serde_json::Value;

use crate::gate::Gate;

/// The REST API's base.
pub const DEFAULT_API_URL: &str = "https://discord.com/api/v10";
/// The largest attachment downloaded by default: Discord's own limit for
/// a bot's uploads, 25 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 25 << 20;
/// The largest file sent by default: what Discord takes from a bot in a
/// server without boosts, 10 MiB. A boosted server takes more, and says
/// so only by refusing; set higher, a refused file is named all the same.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 10 << 20;

/// The settings of a configured Discord channel.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The bot token. Never logged.
    pub token: String,
    /// The REST API's base, without a trailing slash.
    pub api_url: String,
    /// The Gateway's address, if set; else `GET /gateway/bot` says.
    pub gateway_url: Option<String>,
    /// Who and where gets through.
    pub gate: Gate,
    /// What a sender who passed the gate but is neither the owner nor a
    /// contact gets.
    pub unknown_sender: UnknownSender,
    /// Attachments over this size are not downloaded.
    pub max_file_bytes: u64,
    /// Files the agent sends over this size are not uploaded: the text
    /// names them instead.
    pub max_upload_bytes: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    token: Option<String>,
    api_url: Option<String>,
    gateway_url: Option<String>,
    #[serde(default)]
    allowed_user_ids: Vec<String>,
    #[serde(default)]
    allowed_channel_ids: Vec<String>,
    unknown_sender: Option<Value>,
    max_file_bytes: Option<u64>,
    max_upload_bytes: Option<u64>,
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
    let token = raw
        .token
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            bad(
                "token",
                "not set: put the bot token in the secret store (`hearth secret set \
                 DISCORD_BOT_TOKEN`) and name it with token_secret = \"DISCORD_BOT_TOKEN\""
                    .into(),
            )
        })?;
    for (key, ids) in [
        ("allowed_user_ids", &raw.allowed_user_ids),
        ("allowed_channel_ids", &raw.allowed_channel_ids),
    ] {
        if let Some(id) = ids.iter().find(|id| !is_snowflake(id)) {
            return Err(bad(
                key,
                format!("{id:?} is not a Discord id (digits only; copy it with Developer Mode on)"),
            ));
        }
    }
    let api_url = raw
        .api_url
        .unwrap_or_else(|| DEFAULT_API_URL.to_owned())
        .trim_end_matches('/')
        .to_owned();
    if !(api_url.starts_with("https://") || loopback_http(&api_url)) {
        return Err(bad(
            "api_url",
            format!("{api_url:?} is not https (plain http only to a loopback address)"),
        ));
    }
    if let Some(url) = &raw.gateway_url
        && !(url.starts_with("wss://") || url.starts_with("ws://127.0.0.1"))
    {
        return Err(bad(
            "gateway_url",
            format!("{url:?} is not wss (plain ws only to 127.0.0.1)"),
        ));
    }
    let unknown_sender = match raw.unknown_sender {
        None => UnknownSender::Silent,
        Some(value) => {
            UnknownSender::parse(&value).map_err(|e| format!("invalid arguments: {e}"))?
        }
    };
    Ok(Some(Settings {
        token,
        api_url,
        gateway_url: raw.gateway_url,
        gate: Gate {
            users: raw.allowed_user_ids,
            channels: raw.allowed_channel_ids,
        },
        unknown_sender,
        max_file_bytes: match raw.max_file_bytes {
            None => DEFAULT_MAX_FILE_BYTES,
            Some(n @ 1..=4_294_967_296) => n,
            Some(n) => return Err(bad("max_file_bytes", format!("{n} is not 1 to 4294967296"))),
        },
        max_upload_bytes: match raw.max_upload_bytes {
            None => DEFAULT_MAX_UPLOAD_BYTES,
            Some(n @ 1..=4_294_967_296) => n,
            Some(n) => {
                return Err(bad(
                    "max_upload_bytes",
                    format!("{n} is not 1 to 4294967296"),
                ));
            }
        },
    }))
}

fn is_snowflake(id: &str) -> bool {
    !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit())
}

fn loopback_http(url: &str) -> bool {
    url.starts_with("http://127.0.0.1") || url.starts_with("http://localhost")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn no_table_is_no_channel_and_a_full_one_is_read() {
        assert_eq!(parse(Value::Null), Ok(None));
        assert_eq!(parse(json!({})), Ok(None));
        let settings = parse(json!({
            "token": " tok ", "allowed_user_ids": ["123"], "allowed_channel_ids": ["456"],
            "unknown_sender": "pairing"
        }))
        .unwrap()
        .unwrap();
        assert_eq!(settings.token, "tok");
        assert_eq!(settings.api_url, DEFAULT_API_URL);
        assert_eq!(settings.gate.users, ["123"]);
        assert_eq!(settings.gate.channels, ["456"]);
        assert_eq!(settings.unknown_sender, UnknownSender::Pairing);
        assert_eq!(settings.max_upload_bytes, DEFAULT_MAX_UPLOAD_BYTES);
    }

    #[test]
    fn mistakes_name_their_key() {
        for (table, key) in [
            (json!({ "allowed_user_ids": ["1"] }), "token"),
            (
                json!({ "token": "t", "allowed_user_ids": ["anna"] }),
                "allowed_user_ids",
            ),
            (
                json!({ "token": "t", "allowed_channel_ids": [""] }),
                "allowed_channel_ids",
            ),
            (
                json!({ "token": "t", "api_url": "http://discord.com" }),
                "api_url",
            ),
            (
                json!({ "token": "t", "gateway_url": "ws://gateway.example" }),
                "gateway_url",
            ),
            (
                json!({ "token": "t", "unknown_sender": "shout" }),
                "unknown_sender",
            ),
            (json!({ "token": "t", "colour": 1 }), "colour"),
            (
                json!({ "token": "t", "max_file_bytes": 0 }),
                "max_file_bytes",
            ),
            (
                json!({ "token": "t", "max_upload_bytes": 0 }),
                "max_upload_bytes",
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
