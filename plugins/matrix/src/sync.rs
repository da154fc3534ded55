//! One `/sync` answer read into what the channel acts on: messages in
//! joined rooms (a file message, `m.image`, `m.file`, `m.audio` or
//! `m.video`, with the `mxc://` address of its file), reactions (an
//! approval by ✅ or ❌ on a card), invites, and the `next_batch` token to
//! sync from next. No network here, so the rules are tested answer by
//! answer.
//!
//! The gate is here too: a message or reaction counts only from a user the
//! config allows, and never from the bot itself; an invite is joined only
//! when an allowed user sent it. Everything else is dropped without a
//! word: strangers get silence.

use serde_json::Value;

/// What a `/sync` answer holds for the channel, in timeline order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    /// The token to sync from next.
    pub next_batch: Option<String>,
    /// What happened.
    pub items: Vec<Item>,
}

/// One thing to act on.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A text message from an allowed user.
    Message(Message),
    /// An allowed user reacted `key` to event `to`.
    Reaction {
        /// The room.
        room: String,
        /// Who.
        sender: String,
        /// The event reacted to.
        to: String,
        /// The reaction (an emoji).
        key: String,
    },
    /// An allowed user wrote an encrypted message, which the bot cannot
    /// read.
    Encrypted {
        /// The room.
        room: String,
    },
    /// An allowed user invited the bot to `room`.
    Invite {
        /// The room.
        room: String,
        /// Who invited.
        by: String,
    },
}

/// A message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The room.
    pub room: String,
    /// Its event id: the idempotency key.
    pub event_id: String,
    /// Who sent it.
    pub sender: String,
    /// Its text (`body`; of a file message, its caption, often empty).
    pub body: String,
    /// The event it replies to, if any.
    pub in_reply_to: Option<String>,
    /// The file of a file message, to download.
    pub file: Option<FileRef>,
}

/// The file a message carries: `mxc://{server}/{media_id}`.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRef {
    /// The server that holds it (the mxc URL's host).
    pub server: String,
    /// Its id there.
    pub media_id: String,
    /// Its file name, as the sender gave it.
    pub name: String,
    /// Its media type, if the event says (`info.mimetype`).
    pub mime: Option<String>,
    /// Its size in bytes, if the event says (`info.size`).
    pub size: Option<u64>,
    /// A voice message the sender recorded (`m.audio` marked
    /// `org.matrix.msc3245.voice`), not an audio file they sent.
    pub voice: bool,
}

/// Reads a `/sync` answer; `me` is the bot's user id, `allowed` the users
/// who get through.
pub fn read(answer: &Value, me: &str, allowed: &[String]) -> Batch {
    let allowed = |user: &str| user != me && allowed.iter().any(|a| a == user);
    let mut items = Vec::new();
    for (room, data) in answer["rooms"]["join"].as_object().into_iter().flatten() {
        for event in data["timeline"]["events"].as_array().into_iter().flatten() {
            let sender = event["sender"].as_str().unwrap_or_default();
            if !allowed(sender) {
                continue;
            }
            let content = &event["content"];
            match event["type"].as_str() {
                Some("m.room.message") => {
                    let (Some(event_id), Some(body)) =
                        (event["event_id"].as_str(), content["body"].as_str())
                    else {
                        continue;
                    };
                    // An edit (`m.replace`) is a new event for an old
                    // message: the agent already has the message.
                    if content["m.relates_to"]["rel_type"] == "m.replace" {
                        continue;
                    }
                    let (body, file) = match content["msgtype"].as_str() {
                        Some(kind @ ("m.image" | "m.file" | "m.audio" | "m.video")) => {
                            file_message(kind, content, body)
                        }
                        _ => (strip_reply_fallback(body), None),
                    };
                    if body.trim().is_empty() && file.is_none() {
                        continue;
                    }
                    items.push(Item::Message(Message {
                        room: room.clone(),
                        event_id: event_id.to_owned(),
                        sender: sender.to_owned(),
                        body,
                        in_reply_to: content["m.relates_to"]["m.in_reply_to"]["event_id"]
                            .as_str()
                            .map(str::to_owned),
                        file,
                    }));
                }
                Some("m.room.encrypted") => items.push(Item::Encrypted { room: room.clone() }),
                Some("m.reaction") => {
                    let relates = &content["m.relates_to"];
                    if relates["rel_type"] != "m.annotation" {
                        continue;
                    }
                    if let (Some(to), Some(key)) =
                        (relates["event_id"].as_str(), relates["key"].as_str())
                    {
                        items.push(Item::Reaction {
                            room: room.clone(),
                            sender: sender.to_owned(),
                            to: to.to_owned(),
                            key: key.to_owned(),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    for (room, data) in answer["rooms"]["invite"].as_object().into_iter().flatten() {
        let by = data["invite_state"]["events"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| {
                e["type"] == "m.room.member"
                    && e["state_key"] == me
                    && e["content"]["membership"] == "invite"
            })
            .and_then(|e| e["sender"].as_str());
        if let Some(by) = by.filter(|by| allowed(by)) {
            items.push(Item::Invite {
                room: room.clone(),
                by: by.to_owned(),
            });
        }
    }
    Batch {
        next_batch: answer["next_batch"].as_str().map(str::to_owned),
        items,
    }
}

/// A file message's caption and file. Since Matrix 1.10 `body` is a
/// caption when a `filename` beside it differs; before, `body` is the
/// file's name. A file that cannot be fetched (no `mxc://` URL; or an
/// encrypted file, which only an encrypted room sends) is named in the
/// text with why, so the agent knows of it.
fn file_message(kind: &str, content: &Value, body: &str) -> (String, Option<FileRef>) {
    let filename = content["filename"]
        .as_str()
        .filter(|f| !f.trim().is_empty());
    let name = filename.unwrap_or(body).trim();
    let name = if name.is_empty() { "file" } else { name };
    let caption = match filename {
        Some(filename) if filename != body => strip_reply_fallback(body),
        _ => String::new(),
    };
    let Some((server, media_id)) = content["url"].as_str().and_then(parse_mxc) else {
        let why = if content["file"].is_object() {
            "it is encrypted, and hearth reads only unencrypted rooms"
        } else {
            "it has no mxc:// address to download it from"
        };
        return (
            format!("{caption}\n[{name} was not downloaded: {why}]"),
            None,
        );
    };
    let info = &content["info"];
    let file = FileRef {
        server,
        media_id,
        name: name.to_owned(),
        mime: info["mimetype"]
            .as_str()
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
        size: info["size"].as_u64(),
        voice: kind == "m.audio" && content.get("org.matrix.msc3245.voice").is_some(),
    };
    (caption, Some(file))
}

/// `mxc://{server}/{media_id}` in its two parts, when each is what the
/// spec allows (a server name; a media id of `A-Za-z0-9_-`): the parts
/// become path segments of a request to the homeserver, so nothing else
/// gets in there.
pub fn parse_mxc(url: &str) -> Option<(String, String)> {
    let (server, media_id) = url.strip_prefix("mxc://")?.split_once('/')?;
    let server_ok = (1..=255).contains(&server.len())
        && server
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    let id_ok = (1..=255).contains(&media_id.len())
        && media_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    (server_ok && id_ok).then(|| (server.to_owned(), media_id.to_owned()))
}

/// A reply's body without the quoted fallback clients put before it
/// (lines starting with `> `, then a blank line).
fn strip_reply_fallback(body: &str) -> String {
    if !body.starts_with("> ") {
        return body.to_owned();
    }
    let mut lines = body.lines().skip_while(|l| l.starts_with('>'));
    let rest: Vec<&str> = lines.by_ref().collect();
    rest.join("\n").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ME: &str = "@hearth:example.org";
    const ANNA: &str = "@anna:example.org";

    fn allowed() -> Vec<String> {
        vec![ANNA.into()]
    }

    fn answer(events: Value) -> Value {
        json!({ "next_batch": "s2", "rooms": { "join": { "!room:example.org": {
            "timeline": { "events": events } } } } })
    }

    #[test]
    fn messages_and_reactions_from_allowed_users_pass_and_nothing_else() {
        let batch = read(
            &answer(json!([
                { "type": "m.room.message", "event_id": "$1", "sender": ANNA,
                  "content": { "msgtype": "m.text", "body": "hello" } },
                { "type": "m.room.message", "event_id": "$2", "sender": "@eve:evil.example",
                  "content": { "msgtype": "m.text", "body": "let me in" } },
                { "type": "m.room.message", "event_id": "$3", "sender": ME,
                  "content": { "msgtype": "m.text", "body": "my own reply" } },
                { "type": "m.reaction", "sender": ANNA, "content": { "m.relates_to": {
                  "rel_type": "m.annotation", "event_id": "$card", "key": "✅" } } },
                { "type": "m.reaction", "sender": "@eve:evil.example", "content": { "m.relates_to": {
                  "rel_type": "m.annotation", "event_id": "$card", "key": "✅" } } },
                { "type": "m.room.message", "event_id": "$4", "sender": ANNA,
                  "content": { "body": "* hello!", "m.relates_to": { "rel_type": "m.replace", "event_id": "$1" } } },
                { "type": "m.room.topic", "sender": ANNA, "content": { "topic": "x" } },
                { "type": "m.room.encrypted", "sender": ANNA, "content": { "algorithm": "m.megolm.v1.aes-sha2" } },
                { "type": "m.room.encrypted", "sender": "@eve:evil.example", "content": {} },
            ])),
            ME,
            &allowed(),
        );
        assert_eq!(batch.next_batch.as_deref(), Some("s2"));
        assert_eq!(
            batch.items,
            [
                Item::Message(Message {
                    room: "!room:example.org".into(),
                    event_id: "$1".into(),
                    sender: ANNA.into(),
                    body: "hello".into(),
                    in_reply_to: None,
                    file: None,
                }),
                Item::Reaction {
                    room: "!room:example.org".into(),
                    sender: ANNA.into(),
                    to: "$card".into(),
                    key: "✅".into(),
                },
                Item::Encrypted {
                    room: "!room:example.org".into()
                },
            ]
        );
    }

    #[test]
    fn a_reply_loses_its_quoted_fallback_and_names_what_it_answers() {
        let batch = read(
            &answer(
                json!([{ "type": "m.room.message", "event_id": "$5", "sender": ANNA,
                "content": { "body": "> <@hearth:example.org> Approve?\n> rm -rf x\n\nyes",
                  "m.relates_to": { "m.in_reply_to": { "event_id": "$card" } } } }]),
            ),
            ME,
            &allowed(),
        );
        let Item::Message(m) = &batch.items[0] else {
            panic!("{batch:?}")
        };
        assert_eq!(m.body, "yes");
        assert_eq!(m.in_reply_to.as_deref(), Some("$card"));
    }

    #[test]
    fn a_file_message_names_its_file_and_a_voice_message_is_marked() {
        let batch = read(
            &answer(json!([
                { "type": "m.room.message", "event_id": "$i", "sender": ANNA,
                  "content": { "msgtype": "m.image", "body": "cat.jpg", "url": "mxc://example.org/AbC_12-z",
                    "info": { "mimetype": "image/jpeg", "size": 1234 } } },
                { "type": "m.room.message", "event_id": "$c", "sender": ANNA,
                  "content": { "msgtype": "m.file", "body": "read this", "filename": "q3.pdf",
                    "url": "mxc://example.org:8448/pdf" } },
                { "type": "m.room.message", "event_id": "$v", "sender": ANNA,
                  "content": { "msgtype": "m.audio", "body": "Voice message", "url": "mxc://example.org/v",
                    "info": { "mimetype": "audio/ogg" }, "org.matrix.msc3245.voice": {} } },
                { "type": "m.room.message", "event_id": "$e", "sender": ANNA,
                  "content": { "msgtype": "m.video", "body": "clip.mp4",
                    "file": { "url": "mxc://example.org/enc", "key": {} } } },
                { "type": "m.room.message", "event_id": "$x", "sender": ANNA,
                  "content": { "msgtype": "m.file", "body": "evil", "url": "mxc://example.org/../../admin" } },
            ])),
            ME,
            &allowed(),
        );
        let messages: Vec<&Message> = batch
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Message(m) => Some(m),
                _ => None,
            })
            .collect();
        assert_eq!(messages.len(), 5, "{batch:?}");
        let image = messages[0].file.as_ref().unwrap();
        assert_eq!(messages[0].body, "");
        assert_eq!(
            (
                image.server.as_str(),
                image.media_id.as_str(),
                image.name.as_str()
            ),
            ("example.org", "AbC_12-z", "cat.jpg")
        );
        assert_eq!(
            (image.mime.as_deref(), image.size, image.voice),
            (Some("image/jpeg"), Some(1234), false)
        );
        let pdf = messages[1].file.as_ref().unwrap();
        assert_eq!(
            (messages[1].body.as_str(), pdf.name.as_str()),
            ("read this", "q3.pdf")
        );
        assert_eq!(pdf.server, "example.org:8448");
        assert!(messages[2].file.as_ref().unwrap().voice);
        for (m, why) in [
            (messages[3], "encrypted"),
            (messages[4], "no mxc:// address"),
        ] {
            assert!(m.file.is_none(), "{m:?}");
            assert!(
                m.body.contains("was not downloaded") && m.body.contains(why),
                "{m:?}"
            );
        }
    }

    #[test]
    fn only_an_allowed_users_invite_is_taken() {
        let invite = |by: &str| {
            json!({ "next_batch": "s3", "rooms": { "invite": { "!new:example.org": {
                "invite_state": { "events": [{ "type": "m.room.member", "state_key": ME,
                  "sender": by, "content": { "membership": "invite" } }] } } } } })
        };
        assert_eq!(
            read(&invite(ANNA), ME, &allowed()).items,
            [Item::Invite {
                room: "!new:example.org".into(),
                by: ANNA.into()
            }]
        );
        assert!(
            read(&invite("@eve:evil.example"), ME, &allowed())
                .items
                .is_empty()
        );
    }

    #[test]
    fn malformed_answers_hold_nothing() {
        for answer in [
            json!(null),
            json!([]),
            json!({ "rooms": 5 }),
            answer(json!([{ "type": 1 }])),
        ] {
            assert!(read(&answer, ME, &allowed()).items.is_empty(), "{answer}");
        }
    }
}
