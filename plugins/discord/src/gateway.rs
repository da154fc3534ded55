//! The Gateway session as a state machine: every payload and every close
//! goes in, and what the connection must do comes out ([`Step`]). No
//! sockets here, so reconnecting, resuming and the stop conditions are
//! tested payload by payload.
//!
//! The rules, from Discord's Gateway documentation:
//! - `Hello` (op 10) gives the heartbeat interval; the first heartbeat
//!   waits a random share of it (jitter), the next ones the whole interval.
//!   A heartbeat (op 1) carries the last sequence number seen; a heartbeat
//!   not acknowledged (op 11) by the time the next is due means the
//!   connection is a zombie: close it and resume.
//! - After `Hello`, a session that has an id and a sequence resumes (op 6);
//!   any other identifies (op 2). `READY` gives the session id and the URL
//!   to resume on.
//! - A dispatch's sequence number counts as seen only once the event is
//!   handled ([`Session::handled`]: a message stored by the host): a
//!   resume then replays what was not, and Discord's resume is the only
//!   way to ask for an event again.
//! - `Reconnect` (op 7): close and resume. `Invalid Session` (op 9): resume
//!   if it says so, else wait one to five seconds and identify afresh.
//! - Close codes 4004 (bad token) and 4010-4014 (shards, version, intents)
//!   do not get better by reconnecting: the channel stops and says why.
//!   4007 and 4009 end the session (identify afresh); any other resumes.

use std::time::Duration;

use serde_json::{Value, json};

/// Gateway opcodes.
pub mod op {
    /// An event.
    pub const DISPATCH: u64 = 0;
    /// A heartbeat, either way.
    pub const HEARTBEAT: u64 = 1;
    /// Start a new session.
    pub const IDENTIFY: u64 = 2;
    /// Go on with a session.
    pub const RESUME: u64 = 6;
    /// The gateway asks for a reconnect.
    pub const RECONNECT: u64 = 7;
    /// The session is no more (`d`: whether it can be resumed).
    pub const INVALID_SESSION: u64 = 9;
    /// The first payload: the heartbeat interval.
    pub const HELLO: u64 = 10;
    /// A heartbeat was received.
    pub const HEARTBEAT_ACK: u64 = 11;
}

/// The intents the channel asks for: guild messages, direct messages and
/// their content.
pub const INTENTS: u64 = (1 << 9) | (1 << 12) | (1 << 15);

/// What the connection does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Send this payload.
    Send(Value),
    /// Heartbeat every `every`, the first after `first`.
    Heartbeat {
        /// The wait before the first.
        first: Duration,
        /// The interval.
        every: Duration,
    },
    /// An event to handle: its name, data and sequence number; call
    /// [`Session::handled`] with the number once it is.
    Event(String, Value, Option<u64>),
    /// Close the connection and connect again after `after`, resuming if
    /// `resume` (to [`Session::url`]).
    Reconnect {
        /// Whether to resume the session.
        resume: bool,
        /// How long to wait first.
        after: Duration,
    },
    /// Stop for good: reconnecting cannot help. The text says why, for
    /// the owner.
    Stop(String),
}

/// One bot's session across connections.
#[derive(Debug, Clone)]
pub struct Session {
    token: String,
    /// The last sequence number seen.
    seq: Option<u64>,
    session_id: Option<String>,
    resume_url: Option<String>,
    /// Whether the last heartbeat was acknowledged.
    acked: bool,
    /// The bot's own user id, from `READY`.
    pub bot_id: Option<String>,
}

impl Session {
    /// A session for the bot with `token`, not connected yet.
    pub fn new(token: &str) -> Session {
        Session {
            token: token.to_owned(),
            seq: None,
            session_id: None,
            resume_url: None,
            acked: true,
            bot_id: None,
        }
    }

    /// Where to connect: the resume URL `READY` gave while the session can
    /// be resumed, else `gateway` (from `GET /gateway/bot`).
    pub fn url(&self, gateway: &str) -> String {
        let base = match (&self.resume_url, self.can_resume()) {
            (Some(url), true) => url.as_str(),
            _ => gateway,
        };
        format!("{}/?v=10&encoding=json", base.trim_end_matches('/'))
    }

    /// Whether there is a session to resume.
    pub fn can_resume(&self) -> bool {
        self.session_id.is_some() && self.seq.is_some()
    }

    /// A payload from the gateway; `jitter` (0 to 1) is the share of the
    /// interval the first heartbeat waits.
    pub fn on_payload(&mut self, payload: &Value, jitter: f64) -> Vec<Step> {
        match payload["op"].as_u64() {
            Some(op::HELLO) => {
                let ms = payload["d"]["heartbeat_interval"]
                    .as_u64()
                    .unwrap_or(41_250);
                let every = Duration::from_millis(ms.max(1));
                self.acked = true;
                vec![
                    Step::Heartbeat {
                        first: every.mul_f64(jitter.clamp(0.0, 1.0)),
                        every,
                    },
                    Step::Send(self.hello_answer()),
                ]
            }
            Some(op::HEARTBEAT) => vec![Step::Send(self.heartbeat())],
            Some(op::HEARTBEAT_ACK) => {
                self.acked = true;
                Vec::new()
            }
            Some(op::RECONNECT) => vec![Step::Reconnect {
                resume: self.can_resume(),
                after: Duration::ZERO,
            }],
            Some(op::INVALID_SESSION) => {
                if payload["d"] == Value::Bool(true) && self.can_resume() {
                    vec![Step::Reconnect {
                        resume: true,
                        after: Duration::ZERO,
                    }]
                } else {
                    self.forget();
                    // Discord asks for a wait of one to five seconds.
                    vec![Step::Reconnect {
                        resume: false,
                        after: Duration::from_millis(
                            1000 + (jitter.clamp(0.0, 1.0) * 4000.0) as u64,
                        ),
                    }]
                }
            }
            Some(op::DISPATCH) => {
                let name = payload["t"].as_str().unwrap_or_default().to_owned();
                let data = payload["d"].clone();
                if name == "READY" {
                    self.session_id = data["session_id"].as_str().map(str::to_owned);
                    self.resume_url = data["resume_gateway_url"].as_str().map(str::to_owned);
                    self.bot_id = data["user"]["id"].as_str().map(str::to_owned);
                }
                vec![Step::Event(name, data, payload["s"].as_u64())]
            }
            _ => Vec::new(),
        }
    }

    /// The event numbered `seq` was handled: a resume starts after it.
    pub fn handled(&mut self, seq: Option<u64>) {
        if let Some(seq) = seq
            && self.seq.is_none_or(|seen| seq > seen)
        {
            self.seq = Some(seq);
        }
    }

    /// A heartbeat is due: send it, or, if the last one was never
    /// acknowledged, the connection is a zombie.
    pub fn on_heartbeat_due(&mut self) -> Step {
        if !self.acked {
            return Step::Reconnect {
                resume: self.can_resume(),
                after: Duration::ZERO,
            };
        }
        self.acked = false;
        Step::Send(self.heartbeat())
    }

    /// The gateway closed with `code` (`None`: the connection dropped).
    pub fn on_close(&mut self, code: Option<u16>) -> Step {
        match code {
            Some(4004) => Step::Stop(
                "Discord refused the bot token (close code 4004): set the right one".into(),
            ),
            Some(code @ 4010..=4014) => Step::Stop(format!(
                "Discord closed the gateway with {code} ({}); reconnecting cannot help",
                match code {
                    4010 | 4011 => "a sharding mistake",
                    4012 => "an invalid API version",
                    4013 => "invalid intents",
                    _ =>
                        "intents the bot may not have: turn on Message Content in the \
                          developer portal",
                }
            )),
            Some(4007 | 4009) => {
                self.forget();
                Step::Reconnect {
                    resume: false,
                    after: Duration::from_secs(1),
                }
            }
            _ => Step::Reconnect {
                resume: self.can_resume(),
                after: Duration::from_secs(1),
            },
        }
    }

    fn hello_answer(&self) -> Value {
        match (&self.session_id, self.seq) {
            (Some(session_id), Some(seq)) => json!({
                "op": op::RESUME,
                "d": { "token": self.token, "session_id": session_id, "seq": seq }
            }),
            _ => json!({
                "op": op::IDENTIFY,
                "d": {
                    "token": self.token,
                    "intents": INTENTS,
                    "properties": { "os": "linux", "browser": "hearth", "device": "hearth" }
                }
            }),
        }
    }

    fn heartbeat(&self) -> Value {
        json!({ "op": op::HEARTBEAT, "d": self.seq })
    }

    fn forget(&mut self) {
        self.session_id = None;
        self.resume_url = None;
        self.seq = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands `payload` to `s` and marks its event handled, as the
    /// connection does once the host has it.
    fn feed(s: &mut Session, payload: &Value) -> Vec<Step> {
        let steps = s.on_payload(payload, 0.0);
        for step in &steps {
            if let Step::Event(_, _, seq) = step {
                s.handled(*seq);
            }
        }
        steps
    }

    fn hello() -> Value {
        json!({ "op": 10, "d": { "heartbeat_interval": 40_000 } })
    }

    fn ready(s: u64) -> Value {
        json!({ "op": 0, "s": s, "t": "READY", "d": {
            "session_id": "sess-1", "resume_gateway_url": "wss://resume.example",
            "user": { "id": "900" }
        }})
    }

    #[test]
    fn a_new_session_identifies_and_a_known_one_resumes_on_its_url() {
        let mut s = Session::new("tok");
        let steps = s.on_payload(&hello(), 0.25);
        assert_eq!(
            steps[0],
            Step::Heartbeat {
                first: Duration::from_secs(10),
                every: Duration::from_secs(40)
            }
        );
        let Step::Send(identify) = &steps[1] else {
            panic!("{steps:?}")
        };
        assert_eq!(identify["op"], op::IDENTIFY);
        assert_eq!(identify["d"]["token"], "tok");
        assert_eq!(identify["d"]["intents"], INTENTS);
        assert_eq!(
            s.url("wss://gw.example"),
            "wss://gw.example/?v=10&encoding=json"
        );

        feed(&mut s, &ready(1));
        feed(
            &mut s,
            &json!({ "op": 0, "s": 7, "t": "MESSAGE_CREATE", "d": {} }),
        );
        // An event not handled yet (its message not stored) is not seen.
        s.on_payload(
            &json!({ "op": 0, "s": 8, "t": "MESSAGE_CREATE", "d": {} }),
            0.0,
        );
        assert_eq!(s.bot_id.as_deref(), Some("900"));
        assert_eq!(
            s.url("wss://gw.example"),
            "wss://resume.example/?v=10&encoding=json"
        );
        let steps = s.on_payload(&hello(), 0.0);
        assert_eq!(
            steps[1],
            Step::Send(
                json!({ "op": 6, "d": { "token": "tok", "session_id": "sess-1", "seq": 7 } })
            )
        );
    }

    #[test]
    fn heartbeats_carry_the_sequence_and_a_missed_ack_is_a_zombie() {
        let mut s = Session::new("tok");
        s.on_payload(&hello(), 0.0);
        assert_eq!(
            s.on_heartbeat_due(),
            Step::Send(json!({ "op": 1, "d": null }))
        );
        s.on_payload(&json!({ "op": 11 }), 0.0);
        feed(&mut s, &ready(3));
        assert_eq!(s.on_heartbeat_due(), Step::Send(json!({ "op": 1, "d": 3 })));
        // No ack before the next: close and resume.
        assert_eq!(
            s.on_heartbeat_due(),
            Step::Reconnect {
                resume: true,
                after: Duration::ZERO
            }
        );
        // The gateway may ask for a heartbeat at once.
        assert_eq!(
            s.on_payload(&json!({ "op": 1, "d": null }), 0.0),
            [Step::Send(json!({ "op": 1, "d": 3 }))]
        );
    }

    #[test]
    fn reconnects_and_invalid_sessions_resume_only_what_can_be_resumed() {
        let mut s = Session::new("tok");
        feed(&mut s, &ready(5));
        let resume = Step::Reconnect {
            resume: true,
            after: Duration::ZERO,
        };
        assert_eq!(
            s.on_payload(&json!({ "op": 7, "d": null }), 0.0),
            std::slice::from_ref(&resume)
        );
        assert_eq!(s.on_payload(&json!({ "op": 9, "d": true }), 0.0), [resume]);
        // Not resumable: the session is forgotten, and a new one waits
        // one to five seconds.
        assert_eq!(
            s.on_payload(&json!({ "op": 9, "d": false }), 0.5),
            [Step::Reconnect {
                resume: false,
                after: Duration::from_secs(3)
            }]
        );
        assert!(!s.can_resume());
        assert_eq!(
            s.url("wss://gw.example"),
            "wss://gw.example/?v=10&encoding=json"
        );
    }

    #[test]
    fn close_codes_say_whether_to_resume_start_afresh_or_stop() {
        for (code, expected) in [
            (None, "resume"),
            (Some(1006), "resume"),
            (Some(4000), "resume"),
            (Some(4008), "resume"),
            (Some(4007), "afresh"),
            (Some(4009), "afresh"),
            (Some(4004), "stop: bot token"),
            (Some(4013), "stop: invalid intents"),
            (Some(4014), "stop: Message Content"),
        ] {
            let mut s = Session::new("tok");
            feed(&mut s, &ready(2));
            let got = match s.on_close(code) {
                Step::Reconnect { resume: true, .. } => "resume".to_owned(),
                Step::Reconnect { resume: false, .. } => "afresh".to_owned(),
                Step::Stop(why) => format!("stop: {why}"),
                other => panic!("{other:?}"),
            };
            let wanted = expected.split(": ").collect::<Vec<_>>();
            assert!(got.starts_with(wanted[0]), "{code:?}: {got}");
            if let Some(word) = wanted.get(1) {
                assert!(got.contains(word), "{code:?}: {got}");
            }
        }
    }

    #[test]
    fn odd_payloads_change_nothing() {
        let mut s = Session::new("tok");
        for payload in [
            json!(null),
            json!({ "op": 99 }),
            json!({ "op": "x" }),
            json!([1]),
        ] {
            assert_eq!(s.on_payload(&payload, 0.0), Vec::<Step>::new(), "{payload}");
        }
        assert!(!s.can_resume());
    }
}
