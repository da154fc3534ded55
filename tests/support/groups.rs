//! Agent groups played by the fake model: the leader (known by its
//! planning prompt) hands in scripted plans, each member (known by the
//! deliverable its prompt names) reports working, then complete. Shared by
//! `tests/groups.rs` and `tests/groups_browser.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::canvas;
use crate::fake_llm::{
    FakeLlm, Recorded, Reply, anthropic_error, anthropic_text, anthropic_tool_use,
};
use crate::{Daemon, Hearth, plugin};

/// A member's model call: which deliverable, how many messages it sent,
/// and when it arrived.
#[derive(Clone, Debug)]
pub struct Seen {
    pub key: String,
    pub messages: usize,
    pub at: Instant,
}

/// What a script saw.
pub struct Played {
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub leader: Arc<Mutex<Vec<String>>>,
}

/// What the fake model does for a group.
pub struct Script {
    /// The leader's plans: `[round][try]`, a reply for each.
    pub plans: Vec<Vec<Reply>>,
    /// The deliverable whose member's model call fails.
    pub failing: Option<&'static str>,
    /// The pause before each event of a member's first answer.
    pub pace: Duration,
    /// While set, a member's second call is answered slowly (a kill
    /// lands in it).
    pub stall: Arc<AtomicBool>,
    /// Added to every member's result (markup the canvas must show as
    /// text).
    pub result_tail: &'static str,
    /// Every member call, in arrival order.
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The messages of every leader call, in arrival order.
    leader: Arc<Mutex<Vec<String>>>,
}

impl Script {
    pub fn new(plans: Vec<Vec<Reply>>) -> Script {
        Script {
            plans,
            failing: None,
            pace: Duration::from_millis(250),
            stall: Arc::new(AtomicBool::new(false)),
            result_tail: "",
            seen: Arc::new(Mutex::new(Vec::new())),
            leader: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Answers every request of `fake` by this script.
    pub fn play(self, fake: &FakeLlm) -> Played {
        let played = Played {
            seen: Arc::clone(&self.seen),
            leader: Arc::clone(&self.leader),
        };
        fake.respond_with(move |r| self.answer(r));
        played
    }

    /// The reply to `r`, by whom its system prompt says it is for.
    pub fn answer(&self, r: &Recorded) -> Reply {
        let system = crate::fake_llm::system_prompt(&r.body);
        let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
        let first = messages.first().map(Value::to_string).unwrap_or_default();
        if system.starts_with("You lead an agent group") {
            self.leader
                .lock()
                .unwrap()
                .push(Value::Array(messages.clone()).to_string());
            if first.contains("Every deliverable of group") {
                return anthropic_text("SUMMARY: the mission is done.");
            }
            let round = usize::from(first.contains("Why you plan again"));
            let tries = &self.plans[round.min(self.plans.len() - 1)];
            let attempt = usize::from(messages.len() > 1);
            return tries[attempt.min(tries.len() - 1)].clone();
        }
        if system.starts_with("You are a member of an agent group") {
            let key = system
                .split("Your deliverable: ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or("?")
                .to_owned();
            self.seen.lock().unwrap().push(Seen {
                key: key.clone(),
                messages: messages.len(),
                at: Instant::now(),
            });
            if self.failing == Some(key.as_str()) {
                return anthropic_error(
                    400,
                    "invalid_request_error",
                    "the fake model refuses D2",
                    None,
                );
            }
            if messages.len() == 1 {
                let status = json!({ "state": "working", "progress": format!("on {key}") });
                return paced(
                    anthropic_tool_use(None, "toolu_status", "group_status", &status),
                    self.pace,
                );
            }
            let done = json!({ "type": "complete", "content": format!("result of {key}{}", self.result_tail) });
            let reply = anthropic_tool_use(None, "toolu_done", "group_post", &done);
            if self.stall.load(Ordering::SeqCst) {
                return paced(reply, Duration::from_secs(20));
            }
            return reply;
        }
        anthropic_text("ok")
    }
}

pub fn paced(reply: Reply, gap: Duration) -> Reply {
    match reply {
        Reply::Sse(sse) => Reply::Paced { sse, gap },
        other => other,
    }
}

/// The leader hands in `deliverables` through `submit_plan`.
pub fn submit(deliverables: Value) -> Reply {
    anthropic_tool_use(
        None,
        "toolu_plan",
        "submit_plan",
        &json!({ "summary": "Build the thing", "deliverables": deliverables }),
    )
}

/// D1 → D2, D1 → D3, (D2, D3) → D4.
pub fn diamond() -> Value {
    json!([
        { "id": "D1", "title": "Design", "assignee": "ada" },
        { "id": "D2", "title": "Backend", "assignee": "bob", "depends_on": ["D1"] },
        { "id": "D3", "title": "Frontend", "assignee": "cyd", "depends_on": ["D1"] },
        { "id": "D4", "title": "Ship", "assignee": "ada", "depends_on": ["D2", "D3"] }
    ])
}

/// As [`home`], with the canvas: a channel that shows cards and groups.
pub fn home_with_canvas(fake: &FakeLlm) -> Hearth {
    Hearth::with_plugins(
        &[plugin("canvas")],
        &format!(
            "{}[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n",
            canvas::CONFIG,
            fake.url()
        ),
    )
}

pub fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

/// Three sub-agents in group `crew`, ada leading.
pub fn staff(h: &Hearth) {
    for name in ["ada", "bob", "cyd"] {
        let args = json!({
            "action": "create", "name": name,
            "system_prompt": format!("You are the {name} test agent."),
            "allowed_tools": [],
        });
        h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
            .ok();
    }
    h.cmd(&["groups", "create", "crew"]).ok();
    for (name, role) in [
        ("ada", "architect"),
        ("bob", "backend"),
        ("cyd", "frontend"),
    ] {
        h.cmd(&["groups", "add", "crew", name, "--role", role]).ok();
    }
}
