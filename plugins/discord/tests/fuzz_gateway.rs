//! Fuzzing what the Gateway sends the bot: payloads mutated as bytes and
//! as JSON trees, fed to the session and, as a `MESSAGE_CREATE`, to the
//! gate. Properties: no panic; the session's steps stay within their
//! bounds (a heartbeat interval as sent, a reconnect wait of at most five
//! seconds); a message that passes the gate is from an allowed user in a
//! direct message, or mentions the bot in an allowed channel, and is never
//! the bot's own.

use hearth_discord::gate::Gate;
use hearth_discord::gateway::{Session, Step};
use hearth_fuzz::{Rng, Target};
use serde_json::Value;

const BOT: &str = "900";

#[test]
fn any_payload_keeps_the_session_and_the_gate_within_their_rules() {
    let gate = Gate {
        users: vec!["100".into()],
        channels: vec!["555".into()],
    };
    Target::new("discord_gateway")
        .seed(r#"{"op":10,"d":{"heartbeat_interval":41250}}"#)
        .seed(r#"{"op":0,"s":1,"t":"READY","d":{"session_id":"s","resume_gateway_url":"wss://r","user":{"id":"900"}}}"#)
        .seed(r#"{"op":0,"s":2,"t":"MESSAGE_CREATE","d":{"id":"1","channel_id":"d1","content":"hi","author":{"id":"100"},"mentions":[]}}"#)
        .seed(r#"{"op":0,"s":3,"t":"MESSAGE_CREATE","d":{"id":"2","channel_id":"555","guild_id":"g","content":"<@900> hi","author":{"id":"101"},"mentions":[{"id":"900"}]}}"#)
        .seed(r#"{"op":9,"d":false}"#)
        .seed(r#"{"op":7,"d":null}"#)
        .json()
        .tokens(&["\"op\":", "\"d\":", "\"s\":", "\"t\":", "\"author\":", "\"guild_id\":", "\"mentions\":", "\"bot\":true", "\"900\""])
        .run(|input, rng: &mut Rng| {
            let Ok(payload) = serde_json::from_slice::<Value>(input) else {
                return;
            };
            let mut session = Session::new("tok");
            let jitter = (rng.below(1001) as f64) / 1000.0;
            for step in session.on_payload(&payload, jitter) {
                match step {
                    Step::Reconnect { after, .. } => {
                        assert!(after.as_millis() <= 5000, "{after:?}")
                    }
                    Step::Heartbeat { first, every } => assert!(first <= every),
                    Step::Event(name, data, seq) => {
                        session.handled(seq);
                        if name == "MESSAGE_CREATE"
                            && let Some(m) = gate.classify(&data, Some(BOT))
                        {
                            assert_ne!(m.author_id, BOT);
                            assert!(
                                (m.direct && m.author_id == "100")
                                    || (!m.direct && m.channel_id == "555"),
                                "{data}"
                            );
                            assert!(!m.text.is_empty() || !m.files.is_empty());
                        }
                    }
                    Step::Send(_) | Step::Stop(_) => {}
                }
            }
            let _ = session.on_heartbeat_due();
            let _ = session.on_close(Some((rng.below(5000) as u16) + 1000));
        });
}
