//! The canvas's group view in a real browser: headless Chromium, driven by
//! `tests/browser/groups.test.mjs`, against the real daemon with the
//! canvas plugin, three sub-agents in group `crew` and the fake model
//! playing the leader (by its planning prompt) and the members (by the
//! deliverable their prompt names).
//!
//! The browser denies the first plan with a reason (checked here in the
//! leader's next planning request), approves the second, and watches the
//! mission run live. Steps as in `canvas_browser.rs`: the script prints
//! `STEP <name>`, this side answers `OK` or `FAIL why`. The screenshot of
//! the group view lands in `target/browser-artifacts/`.
//!
//! Needs `node`, Debian's `chromium`, and `npm ci` in `tests/browser`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth_tests::browser::Browser;
use hearth_tests::canvas::{self, Canvas};
use hearth_tests::fake_llm::{FakeLlm, Recorded, Reply, anthropic_text, anthropic_tool_use};
use hearth_tests::{Daemon, Hearth, plugin};
use serde_json::{Value, json};

/// The reason the browser gives when it sends the first plan back.
const REASON: &str = "split the backend from the frontend first";

#[test]
fn the_group_view_follows_a_mission_live_in_chromium() {
    let browser = Browser::new(false);
    let fake = FakeLlm::start();
    let leader = Script::new(vec![vec![submit(diamond())], vec![submit(diamond())]]).play(&fake);
    let h = Hearth::with_plugins(
        &[plugin("canvas")],
        &format!(
            "{}[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n",
            canvas::CONFIG,
            fake.url()
        ),
    );
    let _daemon = start(&h);
    staff(&h);
    // A second group, to pick between.
    h.cmd(&["groups", "create", "spare"]).ok();
    let canvas = Canvas::of(h.home());

    browser.run("groups.test.mjs", &canvas, &[], |step| match step {
        "login" | "done" => Ok(()),
        "mission" => {
            h.cmd(&["groups", "mission", "crew", "Build", "the", "thing"])
                .ok();
            Ok(())
        }
        "check-reason" => {
            let wanted = format!("The owner rejected the plan: {REASON}");
            wait_until(Duration::from_secs(30), || {
                leader.lock().unwrap().iter().any(|m| m.contains(&wanted))
            })
            .then_some(())
            .ok_or_else(|| {
                format!(
                    "no planning request of the leader carries {wanted:?}: {:?}",
                    leader.lock().unwrap()
                )
            })
        }
        other => Err(format!("unknown step {other}")),
    });
    assert!(
        browser.artifacts.join("group-view.png").is_file(),
        "no screenshot of the group view"
    );
}

/// What the fake model does for a group: the leader's plans by round, the
/// members' two steps (a paced status report, then `complete`).
struct Script {
    /// The leader's plans: `[round][try]`.
    plans: Vec<Vec<Reply>>,
    /// The pause before each event of a member's first answer, so the
    /// browser sees the deliverable running.
    pace: Duration,
    /// The messages of every leader call, in arrival order.
    leader: Arc<Mutex<Vec<String>>>,
}

impl Script {
    fn new(plans: Vec<Vec<Reply>>) -> Script {
        Script {
            plans,
            pace: Duration::from_millis(250),
            leader: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Answers every request of `fake` by this script; the leader's calls.
    fn play(self, fake: &FakeLlm) -> Arc<Mutex<Vec<String>>> {
        let leader = Arc::clone(&self.leader);
        fake.respond_with(move |r| self.answer(r));
        leader
    }

    fn answer(&self, r: &Recorded) -> Reply {
        let system = r.body["system"].as_str().unwrap_or_default();
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
            if messages.len() == 1 {
                let status = json!({ "state": "working", "progress": format!("on {key}") });
                return paced(
                    anthropic_tool_use(None, "toolu_status", "group_status", &status),
                    self.pace,
                );
            }
            // Markup in an agent's words must show as text.
            let done = json!({
                "type": "complete",
                "content": format!("result of {key} <img src=x onerror=\"window.pwned=1\">"),
            });
            return anthropic_tool_use(None, "toolu_done", "group_post", &done);
        }
        anthropic_text("ok")
    }
}

fn paced(reply: Reply, gap: Duration) -> Reply {
    match reply {
        Reply::Sse(sse) => Reply::Paced { sse, gap },
        other => other,
    }
}

/// The leader hands in `deliverables` through `submit_plan`.
fn submit(deliverables: Value) -> Reply {
    anthropic_tool_use(
        None,
        "toolu_plan",
        "submit_plan",
        &json!({ "summary": "Build the thing", "deliverables": deliverables }),
    )
}

/// D1 → D2, D1 → D3, (D2, D3) → D4.
fn diamond() -> Value {
    json!([
        { "id": "D1", "title": "Design", "assignee": "ada" },
        { "id": "D2", "title": "Backend", "assignee": "bob", "depends_on": ["D1"] },
        { "id": "D3", "title": "Frontend", "assignee": "cyd", "depends_on": ["D1"] },
        { "id": "D4", "title": "Ship", "assignee": "ada", "depends_on": ["D2", "D3"] }
    ])
}

fn start(h: &Hearth) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    })
}

/// Three sub-agents in group `crew`, ada leading.
fn staff(h: &Hearth) {
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

/// Whether `done` came true within `wait`.
fn wait_until(wait: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > wait {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}
