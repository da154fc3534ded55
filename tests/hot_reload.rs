//! Hot reload: a saved tool becomes callable, an edit changes it, a broken
//! edit leaves the old version serving with the error on record, and a
//! deleted file removes the tool. Each with the three ways editors save.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use hearth::scripting::watch;
use hearth::tools::ToolRegistry;
use hearth_tests::Hearth;
use serde_json::{Value, json};

fn version(n: u32) -> String {
    format!("return {{ name = 'hot', description = 'v{n}', run = function() return {n} end }}\n")
}

/// Waits until `check` holds for the tool's answer.
fn eventually(tools: &ToolRegistry, what: &str, check: impl Fn(&Result<Value, String>) -> bool) {
    let start = Instant::now();
    loop {
        let got = tools.call("hot", json!({})).map_err(|e| e.to_string());
        if check(&got) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: still {got:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn plain(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

fn truncate_then_write(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap();
    let (a, b) = text.split_at(text.len() / 2);
    file.write_all(a.as_bytes()).unwrap();
    file.flush().unwrap();
    std::thread::sleep(Duration::from_millis(60));
    file.write_all(b.as_bytes()).unwrap();
}

fn temp_then_rename(path: &Path, text: &str) {
    let tmp = path.with_file_name(".hot.lua.swp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn save_edit_break_and_delete_are_picked_up() {
    type Save = fn(&Path, &str);
    let modes: [(&str, Save); 3] = [
        ("plain", plain),
        ("truncate", truncate_then_write),
        ("rename", temp_then_rename),
    ];
    for (mode, save) in modes {
        let h = Hearth::new("");
        let rt = h.runtime();
        let _watcher = watch::start(rt.tools.scripts().unwrap().clone()).unwrap();
        let path = h.home().join("tools/hot.lua");
        let tools = &rt.tools;

        save(&path, &version(1));
        eventually(tools, mode, |r| r == &Ok(json!(1)));
        save(&path, &version(2));
        eventually(tools, mode, |r| r == &Ok(json!(2)));

        // Broken: a syntax error, then a table that is not a tool.
        for (broken, expected) in [
            (
                "return { name = 'hot', run = function() return 3 end\n\n  oops oops\n",
                "tools/hot.lua:3:",
            ),
            ("return { name = 'hot' }\n", "has no `description`"),
        ] {
            save(&path, broken);
            let scripts = rt.tools.scripts().unwrap();
            let start = Instant::now();
            let problem = loop {
                let found = scripts
                    .catalog()
                    .problems()
                    .into_iter()
                    .find(|p| p.file == path);
                if let Some(p) = found.filter(|p| p.message.contains(expected)) {
                    break p;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "{mode}: {expected:?} never recorded"
                );
                std::thread::sleep(Duration::from_millis(20));
            };
            assert_eq!(
                tools.call("hot", json!({})).unwrap(),
                json!(2),
                "{mode}: the old version must keep serving"
            );
            let status = tools.call("script_status", json!({})).unwrap();
            let listed = status["errors"].to_string();
            assert!(listed.contains("hot.lua"), "{mode}: {listed}");
            if expected.contains(":3:") {
                assert_eq!(problem.line, Some(3), "{mode}: {problem:?}");
            }
        }
        // Fixed again.
        save(&path, &version(4));
        eventually(tools, mode, |r| r == &Ok(json!(4)));
        // Deleted: gone.
        std::fs::remove_file(&path).unwrap();
        eventually(
            tools,
            mode,
            |r| matches!(r, Err(e) if e.contains("unknown tool")),
        );
        rt.stop(Duration::from_secs(5)).unwrap();
    }
}

#[test]
fn a_skill_folder_appears_and_disappears_whole() {
    let h = Hearth::new("");
    let rt = h.runtime();
    let _watcher = watch::start(rt.tools.scripts().unwrap().clone()).unwrap();
    let staging = h.home().join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(
        staging.join("SKILL.md"),
        "---\nname: garden\ndescription: Plants.\n---\nWater them.",
    )
    .unwrap();
    std::fs::write(
        staging.join("water.lua"),
        "return { name = 'water', description = 'x', run = function() return 'wet' end }",
    )
    .unwrap();
    std::fs::rename(&staging, h.home().join("skills/garden")).unwrap();
    let start = Instant::now();
    while rt.tools.call("garden.water", json!({})).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the skill never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        rt.tools
            .call("read_skill", json!({"name": "garden"}))
            .unwrap()["body"],
        "Water them."
    );
    std::fs::remove_dir_all(h.home().join("skills/garden")).unwrap();
    while rt.tools.call("garden.water", json!({})).is_ok() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the skill never went away"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        rt.tools
            .call("read_skill", json!({"name": "garden"}))
            .is_err()
    );
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn an_idle_daemon_does_not_reload_its_scripts() {
    // Reading a script is an inotify event too; reacting to it would make
    // every reload trigger the next.
    let h = Hearth::new("");
    let daemon = h.daemon();
    let loads = || {
        daemon
            .logs()
            .iter()
            .filter(|l| l.contains("script loaded"))
            .count()
    };
    std::thread::sleep(Duration::from_millis(500));
    let settled = loads();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        loads(),
        settled,
        "scripts were reloaded with nothing changed"
    );
}
