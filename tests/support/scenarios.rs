//! Conversations more than one test or benchmark plays: the bundled config
//! with a model at a fake, a worker that looks in an empty folder a few
//! times (short tool results, as most steps have), and a group's mission
//! of one deliverable.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::Hearth;
use crate::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use, system_prompt};
use crate::groups::{Script, submit};
use crate::prompt_cache::CacheOutcome;

/// How every worker's system prompt starts.
pub const WORKER: &str = "You are a worker of hearth";

/// How every group member's system prompt starts.
pub const MEMBER: &str = "You are a member of an agent group";

/// The tools the scenarios' workers and members work with: the owner's
/// files, processes and the web.
const WORKING_TOOLS: [&str; 13] = [
    "list_directory",
    "read_file",
    "search_files",
    "write_file",
    "apply_patch",
    "delete_path",
    "shell_exec",
    "process_start",
    "process_status",
    "process_logs",
    "process_stop",
    "web_fetch",
    "web_search",
];

/// `config/hearth.toml` as a newcomer runs it, with its canvas on a free
/// port.
pub fn bundled_config() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../config/hearth.toml"
    ))
    .expect("read config/hearth.toml")
    .replace("127.0.0.1:8080", "127.0.0.1:0")
}

/// Scripts a turn in which the main agent spawns a worker with file,
/// process and web tools that lists an empty folder `steps` times, then
/// answers; returns the folder. The turn starts with the owner's next
/// message.
pub fn script_worker(fake: &FakeLlm, h: &Hearth, steps: usize) -> std::path::PathBuf {
    let empty = h.home().join("empty");
    std::fs::create_dir_all(&empty).expect("an empty folder");
    fake.push(anthropic_tool_use(
        None,
        "w1",
        "spawn_agent",
        &json!({"spec": {
            "system_prompt": "You look through the owner's files and report what you find.",
            "allowed_tools": WORKING_TOOLS
        }, "task": "look in the empty folder"}),
    ));
    for step in 0..steps {
        fake.push_for(
            WORKER,
            anthropic_tool_use(
                None,
                &format!("t{step}"),
                "list_directory",
                &json!({"path": empty.display().to_string()}),
            ),
        );
    }
    fake.push_for(WORKER, anthropic_text("The folder is empty."));
    fake.push(anthropic_text("The worker found nothing."));
    empty
}

/// The cache outcomes of the workers' calls, in order (every call must
/// have been answered with a stream).
pub fn worker_outcomes(fake: &FakeLlm) -> Vec<CacheOutcome> {
    let (requests, outcomes) = (fake.requests(), fake.cache_outcomes());
    assert_eq!(requests.len(), outcomes.len(), "every call was answered");
    requests
        .iter()
        .zip(outcomes)
        .filter(|(r, _)| system_prompt(&r.body).starts_with(WORKER))
        .map(|(_, o)| o)
        .collect()
}

/// Plays a group's mission of one deliverable on the daemon of `h`, whose
/// model is `fake` (it must not have answered anything yet): two agents
/// with [`WORKING_TOOLS`] in group `crew`, the lead's plan approved by the
/// owner, the member's report. Returns the cache outcomes of the members'
/// calls, in order.
pub fn group_mission(fake: &FakeLlm, h: &Hearth) -> Vec<CacheOutcome> {
    let kinds: Arc<Mutex<Vec<bool>>> = Arc::default();
    let script = Script::new(vec![vec![submit(json!([
        { "id": "D1", "title": "Survey the files", "assignee": "bob" }
    ]))]]);
    let seen = Arc::clone(&kinds);
    fake.respond_with(move |r| {
        seen.lock()
            .expect("kinds")
            .push(system_prompt(&r.body).starts_with(MEMBER));
        script.answer(r)
    });
    for name in ["ada", "bob"] {
        let args = json!({
            "action": "create", "name": name,
            "system_prompt": format!("You are {name}, who looks after the owner's files."),
            "allowed_tools": WORKING_TOOLS,
        });
        h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
            .ok();
    }
    h.cmd(&["groups", "create", "crew"]).ok();
    h.cmd(&["groups", "add", "crew", "ada", "--role", "lead"])
        .ok();
    h.cmd(&["groups", "add", "crew", "bob", "--role", "files"])
        .ok();
    h.cmd(&["groups", "mission", "crew", "Survey", "the", "files"])
        .ok();
    let status = || -> String {
        h.db()
            .query_row("SELECT status FROM groups WHERE name = 'crew'", [], |r| {
                r.get(0)
            })
            .expect("the group's status")
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while status() != "awaiting-approval" {
        assert!(Instant::now() < deadline, "no plan: {}", status());
        std::thread::sleep(Duration::from_millis(100));
    }
    h.cmd(&["groups", "approve", "crew"]).ok();
    while status() != "complete" {
        assert!(
            Instant::now() < deadline,
            "the mission never completed: {}",
            status()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let kinds = kinds.lock().expect("kinds").clone();
    kinds
        .iter()
        .zip(fake.cache_outcomes())
        .filter(|(member, _)| **member)
        .map(|(_, o)| o)
        .collect()
}
