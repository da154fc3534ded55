//! Fuzzing the whole `rule` path with real parts: deleting `rm`s of
//! protected paths, however spelled (`hearth_fuzz::shell`), called through
//! the registry as the probe plugin's `probe_shell` in production mode.
//! The JSON Schema check, the policy's reading of `command`, `cwd` and
//! `env`, the owner's guards file and the guard all stand between the call
//! and the probe: every one asks (and, with no channel to ask on, is
//! refused), or, a spelling the guard cannot see into, reaches the probe
//! with the kernel's confinement (`/` protected). None runs unconfined.

use hearth_fuzz::{Target, shell};
use hearth_tests::{Hearth, probe};
use serde_json::json;

#[test]
fn no_spelling_of_a_deleting_rm_runs_unasked() {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        // Without a home, `~` means nothing to the policy: its paths are
        // not the ones this test spells.
        return;
    };
    let home = home.to_string_lossy().into_owned();
    let dir = tempfile::tempdir().expect("temp dir");
    let exec_log = dir.path().join("exec");
    let h = Hearth::with_plugins(
        &[probe()],
        &format!("[plugins.probe]\nexec_log = {exec_log:?}\n"),
    )
    .in_mode("production");
    let rt = h.runtime();
    let generator_home = home.clone();
    Target::new("guard_rm")
        .generator(move |rng| shell::deleting_rm(rng, &generator_home).into_bytes())
        .run(|input, _| {
            let command = String::from_utf8_lossy(input);
            let args = json!({ "command": command, "cwd": home, "env": { "RM": "rm" } });
            let before = std::fs::read_to_string(&exec_log).unwrap_or_default().len();
            match rt.tools.call("probe_shell", args) {
                Ok(result) => assert_eq!(
                    result["floor"]["protect"][0], "/",
                    "ran unconfined: {command}: {result}"
                ),
                Err(e) => {
                    let refusal = e.to_string();
                    assert!(
                        refusal.contains("needs the owner's approval"),
                        "refused for another reason: {refusal}"
                    );
                    let ran = std::fs::read_to_string(&exec_log).unwrap_or_default();
                    assert_eq!(ran.len(), before, "ran without asking: {command}");
                }
            }
        });
    rt.stop(std::time::Duration::from_secs(5)).expect("stops");
}
