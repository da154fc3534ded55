//! Which Discord messages reach the host at all, the channel's hard gate:
//! direct messages from the users the config allows, and, in the guild
//! channels it allows, messages that mention the bot. Everything else
//! (other users' direct messages, other channels, bots, the bot itself)
//! is dropped here without a word: strangers get silence. Who a message
//! that gets through is from (the owner, a contact, someone to pair) is
//! the host's gate's to decide, as for every channel.

use serde_json::Value;

/// The allow-lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    /// Users whose direct messages get through (Discord user ids).
    pub users: Vec<String>,
    /// Guild channels where a mention of the bot gets through.
    pub channels: Vec<String>,
}

/// A message that passed, as the host will be given it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The message's id: the idempotency key.
    pub id: String,
    /// The channel (a DM's or a guild's) to answer in.
    pub channel_id: String,
    /// Who sent it.
    pub author_id: String,
    /// Their display name, if they have one.
    pub author_name: Option<String>,
    /// The text, the mention of the bot taken out.
    pub text: String,
    /// The files it carries.
    pub files: Vec<FileRef>,
    /// Whether it is a direct message.
    pub direct: bool,
}

/// A file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    /// Where to download it.
    pub url: String,
    /// Its name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its media type, if Discord says.
    pub mime: Option<String>,
    /// A voice message the sender recorded (the message's
    /// `IS_VOICE_MESSAGE` flag), not an audio file they sent.
    pub voice: bool,
}

/// The message flag of a voice message.
const IS_VOICE_MESSAGE: u64 = 1 << 13;

impl Gate {
    /// A `MESSAGE_CREATE`'s data, if it gets through; `bot` is the bot's
    /// own user id (`None` before `READY`: then nothing does).
    pub fn classify(&self, message: &Value, bot: Option<&str>) -> Option<Incoming> {
        let bot = bot?;
        let author = &message["author"];
        let author_id = author["id"].as_str()?;
        if author_id == bot || author["bot"] == Value::Bool(true) {
            return None;
        }
        let id = message["id"].as_str()?;
        let channel_id = message["channel_id"].as_str()?;
        let direct = message["guild_id"].is_null();
        let allowed = if direct {
            self.users.iter().any(|u| u == author_id)
        } else {
            self.channels.iter().any(|c| c == channel_id) && mentions(message, bot)
        };
        if !allowed {
            return None;
        }
        let content = message["content"].as_str().unwrap_or_default();
        let text = strip_mention(content, bot);
        let voice = message["flags"].as_u64().unwrap_or(0) & IS_VOICE_MESSAGE != 0;
        let files: Vec<FileRef> = message["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| {
                Some(FileRef {
                    url: a["url"].as_str()?.to_owned(),
                    name: a["filename"].as_str().unwrap_or("file").to_owned(),
                    size: a["size"].as_u64().unwrap_or(0),
                    mime: a["content_type"].as_str().map(str::to_owned),
                    voice,
                })
            })
            .collect();
        if text.is_empty() && files.is_empty() {
            return None;
        }
        Some(Incoming {
            id: id.to_owned(),
            channel_id: channel_id.to_owned(),
            author_id: author_id.to_owned(),
            author_name: author["global_name"]
                .as_str()
                .or(author["username"].as_str())
                .map(str::to_owned),
            text,
            files,
            direct,
        })
    }
}

fn mentions(message: &Value, bot: &str) -> bool {
    message["mentions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["id"].as_str() == Some(bot))
}

/// `content` without the bot's mention (`<@ID>` or the older `<@!ID>`).
fn strip_mention(content: &str, bot: &str) -> String {
    content
        .replace(&format!("<@{bot}>"), "")
        .replace(&format!("<@!{bot}>"), "")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gate() -> Gate {
        Gate {
            users: vec!["100".into()],
            channels: vec!["555".into()],
        }
    }

    fn message(
        author: &str,
        guild: Option<&str>,
        channel: &str,
        content: &str,
        mentions: &[&str],
    ) -> Value {
        json!({
            "id": "m1", "channel_id": channel, "guild_id": guild, "content": content,
            "author": { "id": author, "username": "anna" },
            "mentions": mentions.iter().map(|id| json!({ "id": id })).collect::<Vec<_>>(),
        })
    }

    #[test]
    fn only_allowed_users_direct_messages_and_mentions_in_allowed_channels_pass() {
        let g = gate();
        let bot = Some("900");
        for (m, passes) in [
            (message("100", None, "d1", "hi", &[]), true),
            (message("101", None, "d2", "hi", &[]), false),
            (
                message("101", Some("g"), "555", "<@900> hi", &["900"]),
                true,
            ),
            (message("101", Some("g"), "555", "hi all", &[]), false),
            (
                message("100", Some("g"), "556", "<@900> hi", &["900"]),
                false,
            ),
            (message("900", None, "d1", "my own", &[]), false),
            (message("100", None, "d1", "   ", &[]), false),
        ] {
            assert_eq!(g.classify(&m, bot).is_some(), passes, "{m}");
        }
        let mut from_bot = message("100", None, "d1", "hi", &[]);
        from_bot["author"]["bot"] = json!(true);
        assert!(g.classify(&from_bot, bot).is_none(), "another bot");
        assert!(
            g.classify(&message("100", None, "d1", "hi", &[]), None)
                .is_none(),
            "before READY"
        );
    }

    #[test]
    fn the_mention_is_taken_out_and_files_come_along() {
        let mut m = message("101", Some("g"), "555", "<@!900>  what is this?", &["900"]);
        m["attachments"] = json!([{ "url": "https://cdn.example/a.png", "filename": "a.png",
            "size": 1234, "content_type": "image/png" }]);
        let incoming = gate().classify(&m, Some("900")).unwrap();
        assert_eq!(incoming.text, "what is this?");
        assert!(!incoming.direct);
        assert_eq!(incoming.author_name.as_deref(), Some("anna"));
        assert_eq!(
            incoming.files,
            [FileRef {
                url: "https://cdn.example/a.png".into(),
                name: "a.png".into(),
                size: 1234,
                mime: Some("image/png".into()),
                voice: false,
            }]
        );
        m["flags"] = json!(1 << 13);
        assert!(gate().classify(&m, Some("900")).unwrap().files[0].voice);
    }

    #[test]
    fn malformed_messages_are_dropped() {
        let g = gate();
        for m in [
            json!(null),
            json!({}),
            json!({ "author": { "id": "100" } }),
            json!([1]),
        ] {
            assert!(g.classify(&m, Some("900")).is_none(), "{m}");
        }
    }
}
