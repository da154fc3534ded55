//! Fuzzing what a homeserver's `/sync` answers: answers mutated as bytes
//! and as JSON trees, fed to `sync::read`. Properties: no panic; what
//! comes out passes the gate (a message, reaction or invite only from an
//! allowed user, never the bot's own); a message has text or a file; a
//! file's server and media id are only what the spec allows, since they
//! become path segments of a request; `next_batch` is the answer's own.

use hearth_fuzz::{Rng, Target};
use hearth_matrix::sync::{self, Item};
use serde_json::Value;

const ME: &str = "@hearth:example.org";
const ANNA: &str = "@anna:example.org";

#[test]
fn any_sync_answer_keeps_the_reader_within_its_rules() {
    // The bot's own id allowed by mistake must still not let its own
    // events in.
    let allowed = vec![ANNA.to_owned(), ME.to_owned()];
    Target::new("matrix_sync")
        .seed(r#"{"next_batch":"s1","rooms":{"join":{"!r:example.org":{"timeline":{"events":[{"type":"m.room.message","event_id":"$1","sender":"@anna:example.org","content":{"msgtype":"m.text","body":"hello"}}]}}}}}"#)
        .seed(r#"{"next_batch":"s2","rooms":{"join":{"!r:example.org":{"timeline":{"events":[{"type":"m.room.message","event_id":"$2","sender":"@anna:example.org","content":{"msgtype":"m.image","body":"cat.jpg","url":"mxc://example.org/AbC","info":{"mimetype":"image/jpeg","size":1234}}}]}}}}}"#)
        .seed(r#"{"next_batch":"s3","rooms":{"join":{"!r:example.org":{"timeline":{"events":[{"type":"m.room.message","event_id":"$3","sender":"@anna:example.org","content":{"msgtype":"m.audio","body":"v.ogg","filename":"v.ogg","url":"mxc://example.org/v","org.matrix.msc3245.voice":{}}}]}}}}}"#)
        .seed(r#"{"next_batch":"s4","rooms":{"join":{"!r:example.org":{"timeline":{"events":[{"type":"m.reaction","sender":"@anna:example.org","content":{"m.relates_to":{"rel_type":"m.annotation","event_id":"$card","key":"✅"}}}]}}}}}"#)
        .seed(r#"{"next_batch":"s5","rooms":{"join":{"!r:example.org":{"timeline":{"events":[{"type":"m.room.message","event_id":"$5","sender":"@anna:example.org","content":{"body":"> <@hearth:example.org> Approve?\n\nyes","m.relates_to":{"m.in_reply_to":{"event_id":"$card"}}}},{"type":"m.room.encrypted","sender":"@anna:example.org","content":{}}]}}}}}"#)
        .seed(r#"{"next_batch":"s6","rooms":{"invite":{"!new:example.org":{"invite_state":{"events":[{"type":"m.room.member","state_key":"@hearth:example.org","sender":"@anna:example.org","content":{"membership":"invite"}}]}}}}}"#)
        .seed(r#"{"next_batch":"s7","rooms":{"join":{"!r:example.org":{"timeline":{"events":[{"type":"m.room.message","event_id":"$7","sender":"@hearth:example.org","content":{"msgtype":"m.text","body":"mine"}},{"type":"m.room.message","event_id":"$8","sender":"@eve:evil.example","content":{"msgtype":"m.file","body":"x","url":"mxc://evil.example/../../x"}}]}}}}}"#)
        .json()
        .tokens(&[
            "\"rooms\":", "\"join\":", "\"invite\":", "\"timeline\":", "\"events\":",
            "\"sender\":", "\"@anna:example.org\"", "\"@hearth:example.org\"",
            "\"content\":", "\"msgtype\":", "\"m.image\"", "\"m.file\"", "\"m.audio\"",
            "\"url\":", "\"mxc://example.org/x\"", "\"mxc://\"", "\"filename\":",
            "\"m.relates_to\":", "\"m.replace\"", "\"rel_type\":", "\"state_key\":",
            "\"membership\":", "\"next_batch\":", "\"org.matrix.msc3245.voice\":{}",
        ])
        .run(|input, _rng: &mut Rng| {
            let Ok(answer) = serde_json::from_slice::<Value>(input) else {
                return;
            };
            let batch = sync::read(&answer, ME, &allowed);
            assert_eq!(
                batch.next_batch.as_deref(),
                answer["next_batch"].as_str(),
                "{answer}"
            );
            for item in &batch.items {
                match item {
                    Item::Message(m) => {
                        assert_eq!(m.sender, ANNA, "{answer}");
                        assert!(
                            !m.body.trim().is_empty() || m.file.is_some(),
                            "an empty message got through: {answer}"
                        );
                        if let Some(file) = &m.file {
                            let safe = |s: &str, extra: &[u8]| {
                                !s.is_empty()
                                    && s.bytes()
                                        .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
                            };
                            assert!(safe(&file.server, b".-:[]"), "{file:?}");
                            assert!(safe(&file.media_id, b"_-"), "{file:?}");
                            assert!(!file.name.is_empty(), "{file:?}");
                        }
                    }
                    Item::Reaction { sender, .. } => assert_eq!(sender, ANNA, "{answer}"),
                    Item::Invite { by, .. } => assert_eq!(by, ANNA, "{answer}"),
                    Item::Encrypted { .. } => {}
                }
            }
        });
}
