//! Conversations more than one test or benchmark plays: the bundled config
//! with a model at a fake, and a worker that looks in an empty folder a
//! few times (short tool results, as most steps have).

use serde_json::json;

use crate::Hearth;
use crate::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use, system_prompt};
use crate::prompt_cache::CacheOutcome;

/// How every worker's system prompt starts.
pub const WORKER: &str = "You are a worker of hearth";

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
            "allowed_tools": ["list_directory", "read_file", "search_files", "write_file",
                              "apply_patch", "delete_path", "shell_exec", "process_start",
                              "process_status", "process_logs", "process_stop", "web_fetch",
                              "web_search"]
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
