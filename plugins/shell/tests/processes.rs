//! Background processes on the plugin's own API, with real processes:
//! start, logs, stop (TERM, and KILL for one that ignores TERM), status
//! across a "restart" (a fresh instance on the same home), a record whose
//! pid was recycled, exit notices, and ids that continue after those on
//! disk.

mod common;

use std::time::{Duration, Instant};

use common::{Fixture, alive, eventually, instance, kill_group};
use hearth_shell::Config;
use hearth_shell::meta::{self, Meta};
use serde_json::{Value, json};

fn pid_of(record: &Value) -> i32 {
    record["pid"].as_i64().expect("pid") as i32
}

#[test]
fn a_process_starts_detached_logs_and_stops_on_sigterm() {
    let f = Fixture::new();
    let started = f.ok(
        "process_start",
        json!({"command": "echo hello; echo oops >&2; exec sleep 60", "name": "sleeper"}),
    );
    let pid = pid_of(&started);
    assert_eq!(started["id"], "proc-1");
    assert_eq!(started["name"], "sleeper");
    assert_eq!(started["status"], "running");
    assert_eq!(started["alive"], true);
    assert_eq!(started["cwd"], f.home().display().to_string());
    let dir = f.home().join("processes/proc-1");
    assert_eq!(
        started["stdout"],
        dir.join("stdout.log").display().to_string()
    );
    // Its own session: the daemon's terminal and signals do not reach it.
    // SAFETY: getsid(2) on a pid.
    assert_eq!(unsafe { libc::getsid(pid) }, pid);
    let on_disk = meta::read(&dir).unwrap();
    assert_eq!(
        on_disk.start_ticks,
        meta::proc_stat(pid).unwrap().start_ticks
    );
    eventually(Duration::from_secs(5), "the output", || {
        f.ok("process_logs", json!({"id": "proc-1"}))["text"] == "hello\n"
    });
    let err = f.ok(
        "process_logs",
        json!({"id": "proc-1", "stream": "stderr", "lines": 5}),
    );
    assert_eq!(err["text"], "oops\n");
    assert_eq!(err["lines"], 1);
    assert_eq!(err["earlier"], false);
    let status = f.ok("process_status", json!({"id": "proc-1"}));
    assert_eq!(status["alive"], true);
    let second = f.ok("process_start", json!({"command": "exec sleep 60"}));
    assert_eq!(second["id"], "proc-2");
    let all = f.ok("process_status", json!({}));
    let ids: Vec<&str> = all["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["proc-1", "proc-2"]);

    let start = Instant::now();
    let stopped = f.ok("process_stop", json!({"id": "proc-1"}));
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(stopped["status"], "stopped");
    assert_eq!(stopped["ended_by"], "terminated");
    assert_eq!(stopped["signal"], "SIGTERM");
    assert_eq!(stopped["alive"], false);
    assert!(!alive(pid));
    assert_eq!(meta::read(&dir).unwrap().status, meta::Status::Stopped);
    // Stopping is not a failure: no notice.
    std::thread::sleep(Duration::from_millis(300));
    assert!(f.notices.lock().unwrap().is_empty());
    let again = f.fails("process_stop", json!({"id": "proc-1"}));
    assert!(
        again.contains("proc-1 is not running (was killed by SIGTERM)"),
        "{again}"
    );
    f.ok("process_stop", json!({"id": "proc-2"}));
}

#[test]
fn a_process_that_ignores_sigterm_is_killed_after_five_seconds() {
    let f = Fixture::new();
    let started = f.ok(
        "process_start",
        json!({"command": "trap '' TERM; sleep 60 & wait; sleep 60"}),
    );
    let pid = pid_of(&started);
    // Let bash set up the trap before it is tested.
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let stopped = f.ok("process_stop", json!({"id": started["id"].clone()}));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(4900) && took < Duration::from_secs(7),
        "{took:?}"
    );
    assert_eq!(stopped["ended_by"], "killed");
    assert_eq!(stopped["signal"], "SIGKILL");
    assert_eq!(stopped["status"], "stopped");
    assert!(!alive(pid));
    // The whole group went, the background sleep too (perhaps still a
    // zombie its new parent has not reaped yet).
    assert!(!meta::group_alive(pid));
}

#[test]
fn status_after_a_restart_judges_by_pid_and_start_time() {
    let home = tempfile::tempdir().unwrap();
    let (first, _) = instance(home.path(), Config::default());
    let started = first
        .call("process_start", &json!({"command": "exec sleep 60"}))
        .unwrap();
    let pid = pid_of(&started);
    // The daemon stops: the plugin shuts down, the process lives on.
    first.processes.shutdown();
    drop(first);
    std::thread::sleep(Duration::from_millis(100));
    assert!(alive(pid));

    let (second, notices) = instance(home.path(), Config::default());
    let status = second
        .call("process_status", &json!({"id": "proc-1"}))
        .unwrap();
    assert_eq!(status["alive"], true);
    assert_eq!(status["status"], "running");

    // A record whose pid is alive but started at another time is a
    // recycled pid: not alive, and marked gone.
    let root = home.path().canonicalize().unwrap().join("processes");
    let mut fake: Meta = meta::read(&root.join("proc-1")).unwrap();
    fake.id = "proc-9".into();
    fake.start_ticks += 1;
    std::fs::create_dir(root.join("proc-9")).unwrap();
    meta::write(&root.join("proc-9"), &fake).unwrap();
    let status = second
        .call("process_status", &json!({"id": "proc-9"}))
        .unwrap();
    assert_eq!(status["alive"], false);
    assert_eq!(status["status"], "gone");
    assert_eq!(
        meta::read(&root.join("proc-9")).unwrap().status,
        meta::Status::Gone
    );
    let refused = second
        .call("process_stop", &json!({"id": "proc-9"}))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("proc-9 is not running (is gone"),
        "{refused}"
    );
    assert!(
        alive(pid),
        "stopping the recycled record touched the live process"
    );
    // A record from another boot is not alive either.
    let mut other_boot: Meta = meta::read(&root.join("proc-1")).unwrap();
    other_boot.boot_id = "another-boot".into();
    assert!(!other_boot.is_alive());

    // The new instance can stop what the old one started, by group.
    let stopped = second
        .call("process_stop", &json!({"id": "proc-1"}))
        .unwrap();
    assert_eq!(stopped["ended_by"], "terminated");
    assert!(!alive(pid));
    // A process that is not its child is not reported by the new instance.
    let next = second
        .call("process_start", &json!({"command": "true"}))
        .unwrap();
    assert_eq!(next["id"], "proc-10");
    std::thread::sleep(Duration::from_millis(300));
    assert!(notices.lock().unwrap().is_empty());
}

#[test]
fn a_process_that_fails_on_its_own_is_reported_to_the_agent() {
    let f = Fixture::new();
    let lines: String = (1..=30).map(|i| format!("echo err{i} >&2; ")).collect();
    let started = f.ok(
        "process_start",
        json!({"command": format!("{lines}echo fine; exit 3"), "name": "builder"}),
    );
    eventually(Duration::from_secs(5), "the notice", || {
        !f.notices.lock().unwrap().is_empty()
    });
    let notice = f.notices.lock().unwrap()[0].clone();
    assert_eq!(
        notice.key,
        format!("proc-1-exit-{}", started["started_at_ms"])
    );
    let text = &notice.text;
    assert!(
        text.starts_with("Background process proc-1 (\"builder\") exited with code 3."),
        "{text}"
    );
    assert!(text.contains("Command: echo err1 >&2;"), "{text}");
    // The last 20 lines of stderr, not the first ten.
    assert!(
        text.contains("err11\n") && text.ends_with("err30"),
        "{text}"
    );
    assert!(!text.contains("err10\n"), "{text}");
    let status = f.ok("process_status", json!({"id": "proc-1"}));
    assert_eq!(status["status"], "exited");
    assert_eq!(status["exit_code"], 3);
    assert_eq!(status["alive"], false);
    assert!(status["ended_at_ms"].as_i64().is_some());
    // Success and signals from outside: one notice for the signal only.
    f.ok("process_start", json!({"command": "true"}));
    let victim = f.ok("process_start", json!({"command": "exec sleep 60"}));
    kill_group(pid_of(&victim));
    eventually(Duration::from_secs(5), "the second notice", || {
        f.notices.lock().unwrap().len() == 2
    });
    std::thread::sleep(Duration::from_millis(300));
    let notices = f.notices.lock().unwrap().clone();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(
        notices[1].text.contains("proc-3 was killed by SIGKILL"),
        "{notices:?}"
    );
    assert!(notices[1].text.contains("(stderr is empty)"), "{notices:?}");
    assert_eq!(
        f.ok("process_status", json!({"id": "proc-2"}))["status"],
        "exited"
    );
}

#[test]
fn ids_continue_after_the_folders_on_disk() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.home().join("processes/proc-7")).unwrap();
    std::fs::create_dir_all(f.home().join("processes/other")).unwrap();
    let started = f.ok("process_start", json!({"command": "true"}));
    assert_eq!(started["id"], "proc-8");
    // The empty folder is listed with why it cannot be read.
    let all = f.ok("process_status", json!({}));
    assert_eq!(all["processes"][0]["id"], "proc-7");
    assert!(
        all["processes"][0]["error"]
            .as_str()
            .unwrap()
            .contains("there is no process proc-7")
    );
}

#[test]
fn process_logs_reads_the_end_of_a_long_log() {
    let f = Fixture::new();
    f.ok("process_start", json!({"command": "seq 1 300000"}));
    eventually(Duration::from_secs(10), "the process to end", || {
        f.ok("process_status", json!({"id": "proc-1"}))["status"] == "exited"
    });
    let got = f.ok("process_logs", json!({"id": "proc-1", "lines": 3}));
    assert_eq!(got["text"], "299998\n299999\n300000\n");
    assert_eq!(got["earlier"], true);
    assert_eq!(got["status"], "exited");
    let most = f.ok("process_logs", json!({"id": "proc-1", "lines": 2000}));
    assert_eq!(most["lines"], 2000);
}

#[test]
fn malformed_process_arguments_are_refused_with_the_field_named() {
    let f = Fixture::new();
    f.ok("process_start", json!({"command": "true"}));
    let cases = [
        ("process_start", json!({}), "field `command`: is required"),
        (
            "process_start",
            json!({"command": "true", "name": ""}),
            "field `name`",
        ),
        (
            "process_start",
            json!({"command": "true", "name": "x".repeat(101)}),
            "field `name`: must be at most 100",
        ),
        (
            "process_start",
            json!({"command": "true", "cwd": "nowhere"}),
            "field `cwd`",
        ),
        (
            "process_start",
            json!({"command": "true", "env": {"LD_AUDIT": "x"}}),
            "field `env`: LD_AUDIT",
        ),
        ("process_stop", json!({}), "field `id`: is required"),
        (
            "process_stop",
            json!({"id": "../../etc"}),
            "field `id`: expected an id like proc-3",
        ),
        (
            "process_stop",
            json!({"id": "proc-42"}),
            "there is no process proc-42",
        ),
        ("process_status", json!({"id": "proc-"}), "field `id`"),
        (
            "process_status",
            json!({"id": 1}),
            "field `id`: expected a string",
        ),
        (
            "process_logs",
            json!({"id": "proc-1", "stream": "both"}),
            "field `stream`: expected \"stdout\" or \"stderr\"",
        ),
        (
            "process_logs",
            json!({"id": "proc-1", "lines": 0}),
            "field `lines`: expected an integer from 1 to 2000",
        ),
        (
            "process_logs",
            json!({"id": "proc-1", "lines": 2001}),
            "field `lines`",
        ),
        (
            "process_logs",
            json!({"id": "proc-1", "extra": true}),
            "field `extra`: unknown field",
        ),
    ];
    for (tool, args, expected) in cases {
        let err = f.fails(tool, args.clone());
        assert!(
            err.contains(expected),
            "{tool} {args}: expected {expected:?} in {err}"
        );
    }
}
