//! What an update is: a message for the agent, the owner's answer to a
//! confirmation, a stranger to drop, or nothing to act on.
//!
//! This is the hard gate. Only chats in `allowed_chat_ids` get through; in a
//! group, only the owner's messages that mention the bot or reply to it.
//! Everything else is dropped here, before the host's inbox, so a stranger
//! never reaches the model and never gets an answer.

use serde_json::Value;

/// The prefix of a confirmation button's callback data:
/// `hc:<confirmation id>:y|n`.
pub const CALLBACK_PREFIX: &str = "hc:";

/// Who may talk to the bot, and how the bot is named in groups.
#[derive(Clone, Debug, Default)]
pub struct Gate {
    /// Allowed chats (private chat ids are user ids; group ids are negative).
    pub allowed: Vec<i64>,
    /// The bot's `@username`, without the `@`, once known.
    pub username: Option<String>,
    /// The bot's user id (the token's number).
    pub bot_id: i64,
}

/// What to do with one update.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Hand a message to the agent.
    Message(Incoming),
    /// The owner pressed Approve or Deny.
    Answer {
        /// The callback query to acknowledge.
        query_id: String,
        /// The confirmation.
        id: String,
        /// Approve or deny.
        approve: bool,
        /// Who pressed it.
        from: i64,
    },
    /// Someone not allowed: drop, and log (rate-limited).
    Stranger {
        /// Their user id (or the chat's, when there is no sender).
        sender: i64,
        /// The chat.
        chat: i64,
    },
    /// Nothing to act on (an edit, a sticker, a message to someone else in
    /// a group).
    Ignore,
}

/// An admitted message, before its files are fetched.
#[derive(Clone, Debug, PartialEq)]
pub struct Incoming {
    /// `update_id`: the idempotency key.
    pub update_id: i64,
    /// The chat.
    pub chat: i64,
    /// The sender's user id.
    pub from: i64,
    /// The sender's first name, as Telegram shows it.
    pub from_name: Option<String>,
    /// The text or caption, with a quote of the message it replies to.
    pub text: String,
    /// Files to download.
    pub files: Vec<FileRef>,
}

/// A file a message carries.
#[derive(Clone, Debug, PartialEq)]
pub struct FileRef {
    /// Its `file_id`, for `getFile`.
    pub file_id: String,
    /// A name for it.
    pub name: String,
    /// Its media type.
    pub mime: String,
    /// Its size, when Telegram says.
    pub size: Option<u64>,
    /// A voice note recorded in Telegram (`voice`), not an audio file.
    pub voice: bool,
}

impl Gate {
    /// Classifies `update`.
    pub fn classify(&self, update: &Value) -> Action {
        if let Some(query) = update.get("callback_query") {
            return self.callback(query);
        }
        let Some(message) = update.get("message") else {
            return Action::Ignore;
        };
        let chat = message["chat"]["id"].as_i64().unwrap_or(0);
        let from = message["from"]["id"].as_i64().unwrap_or(chat);
        let private = message["chat"]["type"].as_str() == Some("private");
        if !self.allowed.contains(&chat) {
            return Action::Stranger { sender: from, chat };
        }
        // In an allowed group, only messages to the bot count; the host's
        // gates decide whether their sender (the owner, a contact, or a
        // stranger) gets in.
        if !private && !self.addressed(message) {
            return Action::Ignore;
        }
        let mut text = message["text"]
            .as_str()
            .or_else(|| message["caption"].as_str())
            .unwrap_or_default()
            .to_owned();
        if let Some(name) = &self.username {
            text = text.replace(&format!("@{name}"), "").trim().to_owned();
        }
        let files = files(message);
        if text.is_empty() && files.is_empty() {
            return Action::Ignore;
        }
        if let Some(quoted) = message["reply_to_message"]
            .get("text")
            .or_else(|| message["reply_to_message"].get("caption"))
            .and_then(Value::as_str)
        {
            text = format!("{}\n{text}", quote(quoted));
        }
        Action::Message(Incoming {
            update_id: update["update_id"].as_i64().unwrap_or(0),
            chat,
            from,
            from_name: message["from"]["first_name"]
                .as_str()
                .map(|n| n.chars().take(80).collect()),
            text,
            files,
        })
    }

    fn callback(&self, query: &Value) -> Action {
        let from = query["from"]["id"].as_i64().unwrap_or(0);
        let chat = query["message"]["chat"]["id"].as_i64().unwrap_or(from);
        if !self.is_owner(from) {
            return Action::Stranger { sender: from, chat };
        }
        let data = query["data"].as_str().unwrap_or_default();
        let Some((id, choice)) = data
            .strip_prefix(CALLBACK_PREFIX)
            .and_then(|rest| rest.rsplit_once(':'))
        else {
            return Action::Ignore;
        };
        let approve = match choice {
            "y" => true,
            "n" => false,
            _ => return Action::Ignore,
        };
        Action::Answer {
            query_id: query["id"].as_str().unwrap_or_default().to_owned(),
            id: id.to_owned(),
            approve,
            from,
        }
    }

    fn is_owner(&self, user: i64) -> bool {
        user > 0 && self.allowed.contains(&user)
    }

    /// Whether a group message is for the bot: it mentions the bot or
    /// replies to one of the bot's messages.
    fn addressed(&self, message: &Value) -> bool {
        if message["reply_to_message"]["from"]["id"].as_i64() == Some(self.bot_id) {
            return true;
        }
        let Some(name) = &self.username else {
            return false;
        };
        let text = message["text"]
            .as_str()
            .or_else(|| message["caption"].as_str())
            .unwrap_or_default();
        let mention = format!("@{name}").to_lowercase();
        text.to_lowercase()
            .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
            .any(|word| word == mention)
    }
}

/// The files of a message: the largest photo size, a document, a voice
/// note, audio or video.
fn files(message: &Value) -> Vec<FileRef> {
    let mut out = Vec::new();
    if let Some(sizes) = message["photo"].as_array() {
        // Sizes come smallest first; the last is the original.
        if let Some(photo) = sizes.last() {
            out.push(file_ref(photo, "photo.jpg", "image/jpeg"));
        }
    }
    for (key, name, mime) in [
        ("document", "document", "application/octet-stream"),
        ("voice", "voice.ogg", "audio/ogg"),
        ("audio", "audio", "audio/mpeg"),
        ("video", "video.mp4", "video/mp4"),
    ] {
        if message[key].is_object() {
            let mut file = file_ref(&message[key], name, mime);
            file.voice = key == "voice";
            out.push(file);
        }
    }
    out.retain(|f| !f.file_id.is_empty());
    out
}

fn file_ref(file: &Value, name: &str, mime: &str) -> FileRef {
    FileRef {
        file_id: file["file_id"].as_str().unwrap_or_default().to_owned(),
        name: file["file_name"].as_str().unwrap_or(name).to_owned(),
        mime: file["mime_type"].as_str().unwrap_or(mime).to_owned(),
        size: file["file_size"].as_u64(),
        voice: false,
    }
}

/// The first lines of a replied-to message, as a markdown quote.
fn quote(text: &str) -> String {
    let mut short: String = text.chars().take(280).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
        .lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OWNER: i64 = 7;
    const GROUP: i64 = -100;
    const BOT: i64 = 42;

    fn gate() -> Gate {
        Gate {
            allowed: vec![OWNER, GROUP],
            username: Some("hearthbot".into()),
            bot_id: BOT,
        }
    }

    fn message(chat: i64, chat_type: &str, from: i64, extra: Value) -> Value {
        let mut m = json!({
            "message_id": 1, "date": 0,
            "chat": { "id": chat, "type": chat_type },
            "from": { "id": from, "is_bot": false, "first_name": "x" },
        });
        for (k, v) in extra.as_object().unwrap() {
            m[k] = v.clone();
        }
        json!({ "update_id": 9, "message": m })
    }

    fn text_of(action: Action) -> Option<String> {
        match action {
            Action::Message(m) => Some(m.text),
            _ => None,
        }
    }

    #[test]
    fn the_gate_lets_only_allowed_chats_through() {
        let g = gate();
        let cases = [
            (
                message(OWNER, "private", OWNER, json!({"text": "hi"})),
                Some("hi"),
            ),
            (message(8, "private", 8, json!({"text": "hi"})), None),
            (
                message(
                    GROUP,
                    "supergroup",
                    OWNER,
                    json!({"text": "@hearthbot do it"}),
                ),
                Some("do it"),
            ),
            (
                message(GROUP, "supergroup", OWNER, json!({"text": "chatting"})),
                None,
            ),
            // Someone else in an allowed group, to the bot: passed on, for
            // the host's gates to admit (a contact) or drop (a stranger).
            (
                message(GROUP, "supergroup", 8, json!({"text": "@hearthbot rm"})),
                Some("rm"),
            ),
            (
                message(-5, "group", OWNER, json!({"text": "@hearthbot hi"})),
                None,
            ),
            (
                message(
                    GROUP,
                    "group",
                    OWNER,
                    json!({"text": "yes", "reply_to_message": {"from": {"id": BOT}, "text": "Shall I?"}}),
                ),
                Some("> Shall I?\nyes"),
            ),
            (
                message(
                    OWNER,
                    "private",
                    OWNER,
                    json!({"sticker": {"file_id": "s"}}),
                ),
                None,
            ),
        ];
        for (update, wanted) in cases {
            assert_eq!(text_of(g.classify(&update)).as_deref(), wanted, "{update}");
        }
    }

    #[test]
    fn strangers_are_named_for_the_log() {
        let action = gate().classify(&message(8, "private", 8, json!({"text": "hi"})));
        assert_eq!(action, Action::Stranger { sender: 8, chat: 8 });
    }

    #[test]
    fn files_and_captions_come_through() {
        let update = message(
            OWNER,
            "private",
            OWNER,
            json!({
                "caption": "look",
                "photo": [{"file_id": "small", "file_size": 10}, {"file_id": "big", "file_size": 99}],
                "document": {"file_id": "d", "file_name": "a.pdf", "mime_type": "application/pdf", "file_size": 5}
            }),
        );
        let Action::Message(m) = gate().classify(&update) else {
            panic!("expected a message")
        };
        assert_eq!(m.text, "look");
        let ids: Vec<_> = m.files.iter().map(|f| f.file_id.as_str()).collect();
        assert_eq!(ids, ["big", "d"]);
        assert_eq!(m.files[1].name, "a.pdf");
    }

    #[test]
    fn callbacks_count_only_from_the_owner() {
        let press = |from: i64, data: &str| {
            json!({"update_id": 3, "callback_query": {
                "id": "q", "from": {"id": from}, "data": data,
                "message": {"message_id": 5, "chat": {"id": OWNER, "type": "private"}}
            }})
        };
        assert_eq!(
            gate().classify(&press(OWNER, "hc:abc:y")),
            Action::Answer {
                query_id: "q".into(),
                id: "abc".into(),
                approve: true,
                from: OWNER
            }
        );
        assert!(matches!(
            gate().classify(&press(8, "hc:abc:y")),
            Action::Stranger { .. }
        ));
        assert_eq!(gate().classify(&press(OWNER, "other")), Action::Ignore);
        assert_eq!(
            gate().classify(&press(OWNER, "hc:abc:maybe")),
            Action::Ignore
        );
    }
}
