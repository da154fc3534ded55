//! The owner in control of a running call, on the plugin's own API with
//! real processes: `tool.cancel` kills a `shell_exec`'s process group at
//! once and ends a followed log; output is shown while the command runs,
//! paced and bounded even when it floods; cancels for calls that are not
//! running are harmless.

mod common;

use std::time::{Duration, Instant};

use common::{eventually, group_gone, watched};
use hearth_sdk::live::Limits;
use hearth_sdk::protocol::OutputStream;
use serde_json::json;

/// Everything shown live for stdout, joined.
fn shown_text(shown: &common::Shown) -> String {
    shown
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, p)| p.stream == OutputStream::Stdout)
        .map(|(_, p)| p.text.as_str())
        .collect()
}

#[test]
fn a_stopped_command_is_killed_with_its_group_at_once() {
    let (_home, shell, shown) = watched();
    std::thread::scope(|s| {
        let call = s.spawn(|| {
            shell.call_as(
                "shell_exec",
                &json!({"command": "echo $$; exec sleep 601", "timeout_s": 600}),
                None,
                Some("call-1"),
            )
        });
        let mut pgid = 0;
        eventually(Duration::from_secs(10), "the shell's pid, live", || {
            pgid = shown_text(&shown).trim().parse().unwrap_or(0);
            pgid > 0
        });
        assert!(!group_gone(pgid));
        let asked = Instant::now();
        assert!(shell.cancel("call-1"), "the call is running");
        let result = call.join().unwrap().expect("a result, not an error");
        let took = asked.elapsed();
        assert!(group_gone(pgid), "the group outlived the call");
        assert!(took < Duration::from_secs(1), "took {took:?}");
        assert_eq!(result["cancelled"], true, "{result}");
        assert_eq!(result["signal"], "SIGKILL", "{result}");
        assert_eq!(result["timed_out"], false, "{result}");
    });
    assert_eq!(shell.calls.running(), 0);
}

#[test]
fn cancels_for_calls_that_are_not_running_change_nothing() {
    let (_home, shell, _shown) = watched();
    // Unknown: not running (and remembered, boundedly, in case it starts).
    assert!(!shell.cancel("never-seen"));
    let done = shell
        .call_as(
            "shell_exec",
            &json!({"command": "echo hi"}),
            None,
            Some("call-2"),
        )
        .unwrap();
    assert_eq!(done["stdout"], "hi\n");
    assert!(done.get("cancelled").is_none(), "{done}");
    // Finished: nothing to stop, and no error.
    assert!(!shell.cancel("call-2"));
    std::thread::scope(|s| {
        let call = s.spawn(|| {
            shell.call_as(
                "shell_exec",
                &json!({"command": "sleep 30"}),
                None,
                Some("call-3"),
            )
        });
        eventually(Duration::from_secs(10), "the call to start", || {
            shell.calls.running() == 1
        });
        // Twice: the second finds the call or not (it may have ended by
        // then), and changes nothing either way.
        assert!(shell.cancel("call-3"));
        shell.cancel("call-3");
        assert_eq!(call.join().unwrap().unwrap()["cancelled"], true);
    });
    // A cancel that overtook its call stops it at its start.
    assert!(!shell.cancel("call-4"));
    let started = Instant::now();
    let early = shell
        .call_as(
            "shell_exec",
            &json!({"command": "sleep 30"}),
            None,
            Some("call-4"),
        )
        .unwrap();
    assert_eq!(early["cancelled"], true, "{early}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn output_is_shown_while_the_command_still_runs() {
    let (_home, shell, shown) = watched();
    let result = shell
        .call_as(
            "shell_exec",
            &json!({"command": "echo first; sleep 1; echo second >&2; echo third"}),
            None,
            Some("call-5"),
        )
        .unwrap();
    let ended = Instant::now();
    let pieces = shown.lock().unwrap().clone();
    let (first_at, first) = &pieces[0];
    assert_eq!(
        (first.text.as_str(), first.stream),
        ("first\n", OutputStream::Stdout)
    );
    assert_eq!(first.call_id, "call-5");
    assert!(
        ended.duration_since(*first_at) > Duration::from_millis(700),
        "the first line came only {:?} before the end",
        ended.duration_since(*first_at)
    );
    assert_eq!(shown_text(&shown), "first\nthird\n");
    assert!(
        pieces
            .iter()
            .any(|(_, p)| p.stream == OutputStream::Stderr && p.text == "second\n"),
        "{pieces:?}"
    );
    // The result is what it always was.
    assert_eq!(result["stdout"], "first\nthird\n");
    assert_eq!(result["stderr"], "second\n");
    // Without a call id (a CLI call), nothing is shown.
    shown.lock().unwrap().clear();
    shell
        .call("shell_exec", &json!({"command": "echo quiet"}))
        .unwrap();
    assert!(shown.lock().unwrap().is_empty());
}

#[test]
fn a_flood_is_shown_paced_and_bounded_and_every_byte_is_accounted_for() {
    const BYTES: u64 = 40 * 1024 * 1024;
    let (_home, shell, shown) = watched();
    let started = Instant::now();
    let result = shell
        .call_as(
            "shell_exec",
            &json!({"command": format!("head -c {BYTES} /dev/zero | tr '\\0' x; echo")}),
            None,
            Some("call-6"),
        )
        .unwrap();
    let took = started.elapsed();
    assert_eq!(result["truncated"], true);
    assert_eq!(result["total"]["stdout"]["bytes"], BYTES + 1);
    let pieces = shown.lock().unwrap().clone();
    let text: u64 = pieces.iter().map(|(_, p)| p.text.len() as u64).sum();
    let skipped: u64 = pieces.iter().map(|(_, p)| p.skipped).sum();
    assert_eq!(text + skipped, BYTES + 1, "shown {text}, skipped {skipped}");
    assert!(text <= Limits::PLUGIN.total, "{text} bytes shown");
    assert!(
        pieces
            .iter()
            .all(|(_, p)| p.text.len() <= Limits::PLUGIN.piece),
        "a piece over {} bytes",
        Limits::PLUGIN.piece
    );
    // At most one batch per interval, and one at the end.
    let batches = took.as_millis() / Limits::PLUGIN.interval.as_millis() + 2;
    assert!(
        pieces.len() as u128 <= batches,
        "{} pieces in {took:?}",
        pieces.len()
    );
}

#[test]
fn a_followed_log_is_shown_live_and_ends_with_the_process_or_a_stop() {
    let (_home, shell, shown) = watched();
    let started = shell
        .call(
            "process_start",
            &json!({"command": "for i in 1 2 3; do echo line$i; sleep 0.3; done"}),
        )
        .unwrap();
    let id = started["id"].as_str().unwrap().to_owned();
    let logs = shell
        .call_as(
            "process_logs",
            &json!({"id": id, "follow_s": 60}),
            None,
            Some("call-7"),
        )
        .unwrap();
    assert_eq!(logs["followed"]["ended"], "exited", "{logs}");
    assert!(
        logs["text"].as_str().unwrap().ends_with("line3\n"),
        "{logs}"
    );
    assert!(
        shown_text(&shown).contains("line3\n"),
        "{}",
        shown_text(&shown)
    );

    let sleeper = shell
        .call(
            "process_start",
            &json!({"command": "echo up; exec sleep 60"}),
        )
        .unwrap();
    let id = sleeper["id"].as_str().unwrap().to_owned();
    std::thread::scope(|s| {
        let call = s.spawn(|| {
            shell.call_as(
                "process_logs",
                &json!({"id": id, "follow_s": 60}),
                None,
                Some("call-8"),
            )
        });
        eventually(Duration::from_secs(10), "the follow to start", || {
            shell.calls.running() == 1
        });
        let asked = Instant::now();
        assert!(shell.cancel("call-8"));
        let logs = call.join().unwrap().unwrap();
        assert!(asked.elapsed() < Duration::from_secs(1));
        assert_eq!(logs["followed"]["ended"], "cancelled", "{logs}");
        // Only the call stops: the process runs on.
        assert_eq!(logs["alive"], true, "{logs}");
    });
    shell.call("process_stop", &json!({"id": id})).unwrap();
}
