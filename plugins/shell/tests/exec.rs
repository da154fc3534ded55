//! `shell_exec` on the plugin's own API, with real processes: results,
//! exit codes and signals, the timeout killing the whole group, background
//! processes holding the output, the output cap and its log, the
//! environment, the working directory, and malformed arguments refused
//! with the field named.

mod common;

use std::time::{Duration, Instant};

use common::{Fixture, alive, eventually};
use hearth_shell::Config;
use serde_json::json;

#[test]
fn a_command_gives_its_stdout_stderr_and_exit_code() {
    let f = Fixture::new();
    let got = f.ok(
        "shell_exec",
        json!({"command": "echo out; echo err >&2; printf 'no newline'; exit 3"}),
    );
    assert_eq!(got["exit_code"], 3);
    assert_eq!(got["signal"], json!(null));
    assert_eq!(got["stdout"], "out\nno newline");
    assert_eq!(got["stderr"], "err\n");
    assert_eq!(got["timed_out"], false);
    assert_eq!(got["truncated"], false);
    assert!(
        got.get("log").is_none() && got.get("confined").is_none(),
        "{got}"
    );
    assert!(got["duration_ms"].as_u64().unwrap() < 5000);
    // A command line starting with `-` is a command, not a shell option.
    let dash = f.ok("shell_exec", json!({"command": "-x"}));
    assert_eq!(dash["exit_code"], 127);
    // Invalid UTF-8 is replaced, not refused.
    let bytes = f.ok("shell_exec", json!({"command": "printf 'a\\377b'"}));
    assert_eq!(bytes["stdout"], "a\u{fffd}b");
}

#[test]
fn a_command_killed_by_a_signal_has_no_exit_code() {
    let f = Fixture::new();
    let got = f.ok("shell_exec", json!({"command": "kill -TERM $$"}));
    assert_eq!(got["exit_code"], json!(null));
    assert_eq!(got["signal"], "SIGTERM");
    assert_eq!(got["timed_out"], false);
}

#[test]
fn the_timeout_kills_the_whole_process_group() {
    let f = Fixture::new();
    let start = Instant::now();
    let got = f.ok(
        "shell_exec",
        json!({"command": "sleep 30 & echo $!; sleep 30; echo never", "timeout_s": 1}),
    );
    let took = start.elapsed();
    assert_eq!(got["timed_out"], true, "{got}");
    assert_eq!(got["signal"], "SIGKILL");
    assert_eq!(got["exit_code"], json!(null));
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(!got["stdout"].as_str().unwrap().contains("never"));
    let background: i32 = got["stdout"].as_str().unwrap().trim().parse().unwrap();
    eventually(
        Duration::from_secs(5),
        "the background sleep to die",
        || !alive(background),
    );
}

#[test]
fn background_processes_holding_the_output_are_killed_after_a_second() {
    let f = Fixture::new();
    let start = Instant::now();
    let got = f.ok(
        "shell_exec",
        json!({"command": "sleep 30 & echo $!; echo started"}),
    );
    let took = start.elapsed();
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert_eq!(got["exit_code"], 0);
    assert_eq!(got["timed_out"], false);
    assert!(
        got["note"].as_str().unwrap().contains("process_start"),
        "{got}"
    );
    let background: i32 = got["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    eventually(
        Duration::from_secs(5),
        "the background sleep to die",
        || !alive(background),
    );
    // One that lets go of the output is left alone, and the call returns
    // at once.
    let start = Instant::now();
    let got = f.ok(
        "shell_exec",
        json!({"command": "sleep 30 >/dev/null 2>&1 & echo $!"}),
    );
    assert!(start.elapsed() < Duration::from_millis(900));
    assert!(got.get("note").is_none(), "{got}");
    let kept: i32 = got["stdout"].as_str().unwrap().trim().parse().unwrap();
    assert!(alive(kept));
    // SAFETY: kill(2) on the sleep this test started.
    unsafe { libc::kill(kept, libc::SIGKILL) };
}

#[test]
fn output_over_the_cap_gives_head_and_tail_and_a_log_with_everything() {
    let f = Fixture::new();
    let got = f.ok(
        "shell_exec",
        json!({"command": "seq 1 100000; echo boom >&2; exit 1"}),
    );
    assert_eq!(got["exit_code"], 1);
    assert_eq!(got["truncated"], true);
    let stdout = got["stdout"].as_str().unwrap();
    let head: String = (1..=50).map(|i| format!("{i}\n")).collect();
    let tail: String = (99_901..=100_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        stdout,
        format!("{head}… 99850 lines omitted; the whole output is in the log …\n{tail}")
    );
    assert_eq!(got["stderr"], "boom\n");
    assert_eq!(got["total"]["stdout"]["lines"], 100_000);
    assert_eq!(got["total"]["stderr"], json!({"lines": 1, "bytes": 5}));
    let log = std::path::PathBuf::from(got["log"].as_str().unwrap());
    assert!(log.starts_with(f.home().join("logs")), "{}", log.display());
    let text = std::fs::read_to_string(&log).unwrap();
    let all: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(text, format!("{all}boom\n"));
    // Each call gets its own log.
    let again = f.ok("shell_exec", json!({"command": "seq 1 300"}));
    assert_ne!(again["log"], got["log"]);
}

#[test]
fn both_streams_over_the_cap_are_read_together_without_blocking() {
    let f = Fixture::new();
    let got = f.ok(
        "shell_exec",
        json!({"command": "for i in $(seq 1 20000); do echo out$i; echo err$i >&2; done"}),
    );
    assert_eq!(got["exit_code"], 0);
    assert!(got["stdout"].as_str().unwrap().ends_with("out20000\n"));
    assert!(got["stderr"].as_str().unwrap().ends_with("err20000\n"));
    let text = std::fs::read_to_string(got["log"].as_str().unwrap()).unwrap();
    assert_eq!(text.lines().count(), 40_000);
    assert!(text.lines().any(|l| l == "err12345"));
}

#[test]
fn the_caps_come_from_the_config() {
    let config = Config {
        max_output_lines: Some(8),
        ..Config::default()
    };
    let f = Fixture::with(config, |_| None);
    let got = f.ok("shell_exec", json!({"command": "seq 1 8"}));
    assert_eq!(got["truncated"], false);
    let got = f.ok("shell_exec", json!({"command": "seq 1 9"}));
    assert_eq!(
        got["stdout"],
        "1\n2\n… 3 lines omitted; the whole output is in the log …\n6\n7\n8\n9\n"
    );
}

#[test]
fn the_working_directory_defaults_to_the_home_and_must_exist() {
    let f = Fixture::new();
    let home = f.home();
    std::fs::create_dir(home.join("sub")).unwrap();
    std::fs::write(home.join("file"), "").unwrap();
    let pwd = |cwd: Option<&str>| {
        let args = match cwd {
            Some(c) => json!({"command": "pwd", "cwd": c}),
            None => json!({"command": "pwd"}),
        };
        f.ok("shell_exec", args)["stdout"]
            .as_str()
            .unwrap()
            .trim()
            .to_owned()
    };
    assert_eq!(pwd(None), home.display().to_string());
    assert_eq!(pwd(Some("sub")), home.join("sub").display().to_string());
    assert_eq!(pwd(Some("/")), "/");
    let cases = [
        (json!({"command": "pwd", "cwd": "nowhere"}), "field `cwd`: "),
        (
            json!({"command": "pwd", "cwd": "nowhere"}),
            "nowhere does not exist",
        ),
        (
            json!({"command": "pwd", "cwd": "file"}),
            "is not a directory",
        ),
    ];
    for (args, expected) in cases {
        let err = f.fails("shell_exec", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
}

#[test]
fn the_environment_is_an_allow_list_plus_the_calls_own_variables() {
    let f = Fixture::new();
    let got = f.ok(
        "shell_exec",
        json!({"command": "env", "env": {"GREETING": "hi there", "EMPTY": ""}}),
    );
    let env = got["stdout"].as_str().unwrap();
    assert!(env.lines().any(|l| l == "GREETING=hi there"), "{env}");
    assert!(env.lines().any(|l| l == "EMPTY="), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    let home = format!("HEARTH_HOME={}", f.home().display());
    assert!(env.lines().any(|l| l == home), "{env}");
    // Cargo gives this test process variables the daemon would not pass on.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(!env.contains("CARGO_MANIFEST_DIR"), "{env}");
    let config = Config {
        pass_env: vec!["CARGO_MANIFEST_DIR".into()],
        ..Config::default()
    };
    let passing = Fixture::with(config, |_| None);
    let got = passing.ok("shell_exec", json!({"command": "echo $CARGO_MANIFEST_DIR"}));
    assert_eq!(
        got["stdout"].as_str().unwrap().trim(),
        env!("CARGO_MANIFEST_DIR")
    );
}

#[test]
fn malformed_and_hostile_arguments_are_refused_with_the_field_named() {
    let f = Fixture::new();
    let cases = [
        (json!({}), "field `command`: is required"),
        (
            json!({"command": 5}),
            "field `command`: expected a string, got a number",
        ),
        (json!({"command": ""}), "field `command`: must not be empty"),
        (
            json!({"command": "  "}),
            "field `command`: must not be empty",
        ),
        (
            json!({"command": "echo a\u{0}b"}),
            "field `command`: must not contain a NUL",
        ),
        (
            json!({"command": "true", "timeout_s": 0}),
            "field `timeout_s`: expected an integer from 1 to 600, got 0",
        ),
        (
            json!({"command": "true", "timeout_s": 601}),
            "field `timeout_s`",
        ),
        (
            json!({"command": "true", "timeout_s": -1}),
            "field `timeout_s`",
        ),
        (
            json!({"command": "true", "timeout_s": 1.5}),
            "field `timeout_s`",
        ),
        (
            json!({"command": "true", "timeout_s": "5"}),
            "field `timeout_s`: expected an integer, got a string",
        ),
        (
            json!({"command": "true", "env": {"A": 1}}),
            "field `env`: the value of \"A\" must be a string, not a number",
        ),
        (
            json!({"command": "true", "env": ["A=1"]}),
            "field `env`: expected an object of strings, got an array",
        ),
        (
            json!({"command": "true", "env": {"A": "x\u{0}y"}}),
            "field `env`: the value of \"A\" contains a NUL",
        ),
        (
            json!({"command": "true", "env": {"A=B": "x"}}),
            "field `env`: \"A=B\" is not a variable name",
        ),
        (
            json!({"command": "true", "env": {"": "x"}}),
            "is not a variable name",
        ),
        (
            json!({"command": "true", "env": {"1X": "x"}}),
            "is not a variable name",
        ),
        (
            json!({"command": "true", "env": {"BASH_ENV": "/tmp/evil"}}),
            "field `env`: BASH_ENV changes what the shell runs",
        ),
        (
            json!({"command": "true", "env": {"LD_PRELOAD": "/tmp/evil.so"}}),
            "LD_PRELOAD changes what the shell runs",
        ),
        (
            json!({"command": "true", "env": {"path": "/tmp"}}),
            "path changes what the shell runs",
        ),
        (
            json!({"command": "true", "env": {"BASH_FUNC_ls%%": "() { :; }"}}),
            "is not a variable name",
        ),
        (
            json!({"command": "true", "cwd": "a\u{0}b"}),
            "field `cwd`: must not contain a NUL",
        ),
        (
            json!({"command": "true", "cwd": 3}),
            "field `cwd`: expected a string",
        ),
        (
            json!({"command": "true", "extra": 1}),
            "field `extra`: unknown field",
        ),
        (json!("echo hi"), "arguments must be a JSON object"),
    ];
    for (args, expected) in cases {
        let err = f.fails("shell_exec", args.clone());
        assert!(
            err.contains(expected),
            "{args}: expected {expected:?} in {err}"
        );
    }
}
