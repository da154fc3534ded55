//! Development-mode confinement with the real kernel: commands (run or
//! started in the background) can write beneath the allowed roots and to
//! `/dev/null`, and nowhere else; a working directory outside the roots is
//! refused. Skipped, with a message, on kernels without Landlock.

mod common;

use std::time::Duration;

use common::{Fixture, eventually};
use hearth_shell::{Config, landlock_abi, landlock_status};
use serde_json::json;

/// A fixture confined to its home and `extra`, or `None` (with a message)
/// when the kernel cannot enforce it.
fn confined(extra: &std::path::Path) -> Option<Fixture> {
    if let Err(why) = landlock_abi() {
        eprintln!("skipped: this kernel has no Landlock ({why})");
        return None;
    }
    let extra = extra.display().to_string();
    Some(Fixture::with(Config::default(), |home| {
        vec![home.display().to_string(), extra]
    }))
}

#[test]
fn the_probe_reports_the_kernels_landlock() {
    let status = landlock_status();
    match landlock_abi() {
        Ok(abi) => {
            assert!(abi >= 1);
            assert_eq!(status, format!("landlock ABI {abi}"));
        }
        Err(why) => assert_eq!(status, format!("unavailable: {why}")),
    }
}

#[test]
fn a_confined_command_writes_only_beneath_the_roots() {
    let root = tempfile::tempdir().unwrap();
    // Writable for this user, but not a root: only Landlock can refuse it.
    let outside = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let home = f.home();
    let root = root.path().canonicalize().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let run = |command: String| f.ok("shell_exec", json!({"command": command}));

    let inside = run(format!(
        "touch {0}/in-root && mkdir {0}/dir && echo x > {1}/in-home && echo quiet > /dev/null && echo out",
        root.display(),
        home.display()
    ));
    assert_eq!(inside["exit_code"], 0, "{inside}");
    assert_eq!(inside["confined"], "landlock");
    assert!(root.join("in-root").exists() && root.join("dir").is_dir());
    assert!(home.join("in-home").exists());

    let cases = [
        "touch /etc/hearth-x".to_owned(),
        format!("touch {}/x", outside.display()),
        format!("mkdir {}/d", outside.display()),
        format!("ln -s /etc/passwd {}/link", outside.display()),
        format!("mv {}/in-root {}/moved", root.display(), outside.display()),
    ];
    for command in cases {
        let got = run(command.clone());
        assert_ne!(got["exit_code"], 0, "{command}: {got}");
        let stderr = got["stderr"].as_str().unwrap();
        assert!(
            stderr.contains("Permission denied") || stderr.contains("Operation not permitted"),
            "{command}: {stderr}"
        );
    }
    assert!(!std::path::Path::new("/etc/hearth-x").exists());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(root.join("in-root").exists());
    // Reading and running programs anywhere still works.
    let read = run("head -c 10 /etc/passwd >/dev/null && ls / >/dev/null && echo ok".into());
    assert_eq!(read["stdout"], "ok\n", "{read}");
}

#[test]
fn a_confined_background_process_is_confined_too() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let outside = outside.path().canonicalize().unwrap();
    let started = f.ok(
        "process_start",
        json!({"command": format!("touch {}/x", outside.display())}),
    );
    assert_eq!(started["confined"], "landlock");
    eventually(Duration::from_secs(5), "the process to end", || {
        f.ok("process_status", json!({"id": "proc-1"}))["status"] == "exited"
    });
    let stderr = f.ok("process_logs", json!({"id": "proc-1", "stream": "stderr"}));
    assert!(
        stderr["text"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{stderr}"
    );
    assert!(!outside.join("x").exists());
    // Its failure was reported.
    eventually(Duration::from_secs(5), "the notice", || {
        f.notices.lock().unwrap().len() == 1
    });
}

#[test]
fn a_working_directory_outside_the_roots_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let root = root.path().canonicalize().unwrap();
    for tool in ["shell_exec", "process_start"] {
        let err = f.fails(tool, json!({"command": "true", "cwd": "/etc"}));
        assert!(
            err.contains("field `cwd`: /etc is outside the directories development mode lets commands work in"),
            "{err}"
        );
        assert!(err.contains(&f.home().display().to_string()), "{err}");
        assert!(err.contains(&root.display().to_string()), "{err}");
        // `..` out of the home is resolved before the check.
        let err = f.fails(tool, json!({"command": "true", "cwd": "../.."}));
        assert!(err.contains("is outside"), "{err}");
    }
    let inside = f.ok(
        "shell_exec",
        json!({"command": "pwd", "cwd": root.display().to_string()}),
    );
    assert_eq!(inside["stdout"], format!("{}\n", root.display()));
}
