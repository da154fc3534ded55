//! One-shot CLI commands beside a running daemon: `hearth plugins`, `tools`,
//! `tool call`, `approvals` and `audit` go through the control socket, show
//! the daemon's live state, and never start a second copy of its plugins
//! (the probe counts its inits in a file). A guarded `tool call` waits for
//! the owner's answer on the canvas, and Ctrl-C withdraws it; typed at a
//! terminal, it asks there, and the answer typed is the owner's. Without a
//! daemon the commands work on their own, `audit` and `approvals` with the
//! store alone. Hostile socket input gets a clear error and the daemon
//! serves on. Only a client that shows the control token is the owner: one
//! without it is refused and changes nothing, and a CLI that cannot read it
//! says so and never works on its own instead.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth_tests::canvas::{self, Canvas};
use hearth_tests::control::{self, Control};
use hearth_tests::pty::OnTerminal;
use hearth_tests::{Daemon, Hearth, Run, outside_roots, plugin, probe};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// A home with the probe (counting its inits) and `plugins`, `extra` in
/// its config.
struct Home {
    h: Hearth,
    dir: tempfile::TempDir,
}

impl Home {
    fn new(plugins: &[PathBuf], extra: &str) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let (inits, exec) = (dir.path().join("inits"), dir.path().join("exec"));
        let mut paths = plugins.to_vec();
        paths.push(probe());
        let h = Hearth::with_plugins(
            &paths,
            &format!("[plugins.probe]\ninit_log = {inits:?}\nexec_log = {exec:?}\n{extra}"),
        );
        Home { h, dir }
    }

    /// How many times the probe was initialised, in any process.
    fn inits(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("inits"))
            .map_or(0, |text| text.lines().count())
    }

    /// Runs `hearth <args>` and checks it started no plugin.
    fn cli(&self, args: &[&str]) -> Run {
        let before = self.inits();
        let run = self.h.cmd(args);
        assert_eq!(
            self.inits(),
            before,
            "`hearth {}` initialised a plugin\nstderr: {}",
            args.join(" "),
            run.stderr
        );
        run
    }
}

/// Asserts the daemon logged a control request of `op`.
fn served(daemon: &Daemon, op: &str) {
    let needle = format!("\"op\":\"{op}\"");
    daemon.wait_for_log(
        |l| l.contains("control request") && l.contains(&needle),
        WAIT,
    );
}

#[test]
fn each_command_beside_a_daemon_goes_through_the_socket_and_shows_live_state() {
    let home = Home::new(&[], "");
    let daemon = home.h.daemon();
    assert_eq!(home.inits(), 1);

    // The call runs in the daemon's probe: the health it submits is what
    // the daemon's `plugins` then shows.
    let status = r#"{"type":"channel_status","state":"degraded","detail":"set by the cli"}"#;
    let args = json!({ "raw": status }).to_string();
    let out = home.cli(&["tool", "call", "probe_submit", &args]);
    assert!(out.ok().contains("Ok"), "{}", out.stdout);
    served(&daemon, "tool_call");

    let rows = home.cli(&["plugins", "--json"]).json();
    let probe = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "probe")
        .expect("the probe is listed");
    assert_eq!(probe["state"], "active");
    assert_eq!(probe["channel_status"]["state"], "degraded", "{probe}");
    let table = home.cli(&["plugins"]);
    assert!(
        table
            .ok()
            .contains("channel probe: degraded (set by the cli)"),
        "{}",
        table.stdout
    );
    served(&daemon, "plugins");

    let tools = home.cli(&["tools", "--json"]).json();
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["spec"]["name"].as_str())
        .collect();
    assert!(names.contains(&"probe_exec"), "{names:?}");
    assert!(home.cli(&["tools"]).ok().contains("plugin probe"));
    served(&daemon, "tools");

    // The audit is the daemon's, current to the call just made.
    let audit = home
        .cli(&["audit", "--json", "--tool", "probe_submit"])
        .json();
    let row = &audit.as_array().unwrap()[0];
    assert_eq!(row["caller"], "owner via cli", "{row}");
    assert_eq!(row["outcome"], "ok");
    assert!(home.cli(&["audit"]).ok().contains("owner via cli"));
    served(&daemon, "audit");

    let granted = json!({ "marker": "m1" });
    home.h.grant("probe_exec", &granted);
    let grants = home.cli(&["approvals", "--json"]).json();
    assert_eq!(grants[0]["tool"], "probe_exec", "{grants}");
    let id = grants[0]["id"].to_string();
    served(&daemon, "approvals");
    assert!(
        home.cli(&["approvals", "revoke", &id])
            .ok()
            .contains("revoked")
    );
    served(&daemon, "revoke");
    let missing = home.cli(&["approvals", "revoke", &id]).fails();
    assert!(missing.contains("no active grant"), "{missing}");
    let all = home.cli(&["approvals", "--all", "--json"]).json();
    assert!(!all[0]["revoked_at_ms"].is_null(), "{all}");

    // A refused call is an error from the daemon, not a second runtime's.
    let refused = home.cli(&["tool", "call", "no_such_tool"]).fails();
    assert!(refused.contains("unknown tool"), "{refused}");
    assert_eq!(home.inits(), 1);
}

/// The owner's commands added since the control socket (people, agents,
/// the schedule, usage, MCP, the doctor, backups): each one beside a daemon is
/// served by it, and none starts a plugin of its own.
#[test]
fn the_owners_later_commands_beside_a_daemon_are_served_by_it() {
    let home = Home::new(&[], "");
    let daemon = home.h.daemon();
    let cases: [(&[&str], &str, &str); 10] = [
        (&["agents", "--json"], "agents", "main"),
        (&["contacts", "--json"], "contacts", "owner"),
        (&["schedule", "--json"], "schedule", "[]"),
        (&["schedule", "disable", "4242"], "schedule", ""),
        (
            &["usage", "--day", "--json"],
            "usage",
            "\"period\": \"day\"",
        ),
        (&["mcp", "list", "--json"], "mcp", "servers"),
        (&["doctor", "--json"], "doctor", "\"check\": \"daemon\""),
        (&["backup", "--json"], "backup", "hearth-backup-"),
        (
            &["groups", "create", "night-shift"],
            "groups",
            "created night-shift",
        ),
        (&["groups", "--json"], "groups", "\"night-shift\""),
    ];
    for (args, op, shown) in cases {
        let run = home.cli(args);
        let out = format!("{}{}", run.stdout, run.stderr);
        assert!(out.contains(shown), "`hearth {}`: {out}", args.join(" "));
        served(&daemon, op);
    }
    // A job that does not exist is the daemon's answer, not a crash.
    let missing = home.cli(&["schedule", "disable", "4242"]).fails();
    assert!(missing.contains("4242"), "{missing}");
    assert_eq!(home.inits(), 1);
}

/// A `hearth tool call` running in the background, its stderr collected.
struct Pending {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Pending {
    fn start(h: &Hearth, tool: &str, args: &Value) -> Pending {
        let mut child = h
            .command(&["tool", "call", tool, &args.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start hearth tool call");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        Pending { child, stderr }
    }

    /// Waits until stderr holds `text`; returns all of stderr.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let all = self.stderr.lock().unwrap().clone();
            if all.contains(text) {
                return all;
            }
            assert!(start.elapsed() < WAIT, "no {text:?} on stderr:\n{all}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit; returns the code and stdout.
    fn finish(mut self) -> (Option<i32>, String, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(start.elapsed() < WAIT, "hearth tool call did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let stderr = self.stderr.lock().unwrap().clone();
        (status.code(), stdout, stderr)
    }
}

/// A daemon with the canvas and the shell, a directory outside
/// `$HEARTH_HOME` to delete, and the guarded command that deletes it.
fn guarded_setup() -> (Home, Daemon, Canvas, tempfile::TempDir, PathBuf, Value) {
    let home = Home::new(&[plugin("canvas"), plugin("shell")], canvas::CONFIG);
    let daemon = home.h.daemon();
    let canvas = Canvas::of(home.h.home());
    let outside = outside_roots();
    let victim = outside.path().join("victim");
    std::fs::create_dir_all(victim.join("inside")).unwrap();
    let args = json!({ "command": format!("rm -r {}", victim.display()) });
    (home, daemon, canvas, outside, victim, args)
}

fn pending_card(ws: &mut canvas::Ws) -> Value {
    let frame = ws.wait_for(WAIT, |f| {
        f["type"] == "confirmation" && f["confirmation"]["state"] == "pending"
    });
    frame["confirmation"].clone()
}

#[test]
fn a_guarded_tool_call_waits_for_approval_on_the_canvas_and_runs_only_after_it() {
    let (home, _daemon, canvas, _outside, victim, args) = guarded_setup();
    let (mut ws, _) = canvas.connect();
    let call = Pending::start(&home.h, "shell_exec", &args);
    let card = pending_card(&mut ws);
    assert_eq!(card["tool"], "shell_exec");
    assert_eq!(card["command"], args["command"], "{card}");
    let waiting = call.wait_for("waiting for approval on canvas:");
    assert!(
        waiting.contains(&format!("rm -r {}", victim.display())),
        "{waiting}"
    );
    // Nothing ran while the owner had not answered.
    std::thread::sleep(Duration::from_millis(300));
    assert!(victim.exists(), "the command ran before the approval");

    ws.send(&json!({ "type": "confirm", "id": card["id"], "approve": true }).to_string());
    let (code, stdout, stderr) = call.finish();
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert!(!victim.exists(), "the approved command did not run");
    let result: Value = serde_json::from_str(&stdout).expect("the result is JSON");
    assert!(result.is_object(), "{result}");

    let audit = home
        .cli(&["audit", "--json", "--tool", "shell_exec"])
        .json();
    let row = &audit.as_array().unwrap()[0];
    assert_eq!(row["caller"], "owner via cli");
    assert_eq!(row["approval"], "approved", "{row}");
    assert_eq!(home.inits(), 1);
}

#[test]
fn ctrl_c_withdraws_the_request_and_the_command_never_runs() {
    let (home, _daemon, canvas, _outside, victim, args) = guarded_setup();
    let (mut ws, _) = canvas.connect();
    let call = Pending::start(&home.h, "shell_exec", &args);
    let card = pending_card(&mut ws);
    call.wait_for("Ctrl-C withdraws the request");
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(
        unsafe { libc::kill(call.child.id() as i32, libc::SIGINT) },
        0
    );
    let (code, stdout, stderr) = call.finish();
    assert_eq!(code, Some(130), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stderr.contains("error: interrupted"), "{stderr}");
    assert!(stderr.contains("withdrawn"), "{stderr}");

    // The card is taken down, and a late approval runs nothing.
    let decided = ws.wait_for(WAIT, |f| {
        f["type"] == "confirmation"
            && f["confirmation"]["id"] == card["id"]
            && f["confirmation"]["state"] != "pending"
    });
    assert_eq!(decided["confirmation"]["state"], "expired", "{decided}");
    assert_eq!(decided["confirmation"]["decided_by"], "withdrawn");
    ws.send(&json!({ "type": "confirm", "id": card["id"], "approve": true }).to_string());
    std::thread::sleep(Duration::from_millis(500));
    assert!(victim.exists(), "a withdrawn command ran");

    let audit = home
        .cli(&["audit", "--json", "--tool", "shell_exec"])
        .json();
    let row = &audit.as_array().unwrap()[0];
    assert_eq!(row["approval"], "withdrawn", "{row}");
    assert_eq!(row["outcome"], "refused");
}

#[test]
fn a_cli_that_dies_while_waiting_withdraws_its_request() {
    let (home, _daemon, canvas, _outside, victim, args) = guarded_setup();
    let (mut ws, _) = canvas.connect();
    let mut call = Pending::start(&home.h, "shell_exec", &args);
    let card = pending_card(&mut ws);
    call.wait_for("waiting for approval");
    call.child.kill().unwrap();
    let decided = ws.wait_for(WAIT, |f| {
        f["type"] == "confirmation"
            && f["confirmation"]["id"] == card["id"]
            && f["confirmation"]["state"] != "pending"
    });
    assert_eq!(
        decided["confirmation"]["decided_by"], "withdrawn",
        "{decided}"
    );
    ws.send(&json!({ "type": "confirm", "id": card["id"], "approve": true }).to_string());
    std::thread::sleep(Duration::from_millis(500));
    assert!(victim.exists(), "the request of a dead CLI ran");
}

#[test]
fn a_call_that_needs_no_approval_runs_on_and_a_second_ctrl_c_stops_waiting() {
    let home = Home::new(&[plugin("shell")], "");
    let daemon = home.h.daemon();
    // In a subfolder: a confined command makes nothing directly in
    // `$HEARTH_HOME`, beside the credentials.
    std::fs::create_dir_all(home.h.home().join("work")).unwrap();
    let marker = home.h.home().join("work/ran");
    let args = json!({ "command": format!("sleep 3 && touch {}", marker.display()) });
    let call = Pending::start(&home.h, "shell_exec", &args);
    // The CLI hooks Ctrl-C before it sends the request.
    served(&daemon, "tool_call");
    let interrupt = || {
        // SAFETY: kill(2) on the child this test started.
        assert_eq!(
            unsafe { libc::kill(call.child.id() as i32, libc::SIGINT) },
            0
        );
    };
    interrupt();
    call.wait_for("withdrawing the request");
    interrupt();
    let started = Instant::now();
    let (code, _, stderr) = call.finish();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("goes on in the daemon"), "{stderr}");
    // Nothing asked, so nothing was withdrawn: the command runs to its end.
    while !marker.exists() {
        assert!(started.elapsed() < WAIT, "the running call was stopped");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn without_a_daemon_audit_and_approvals_open_the_store_alone() {
    let home = Home::new(&[], "");
    // No daemon has ever run here: the commands make the store themselves.
    assert!(home.cli(&["audit"]).ok().contains("no tool calls recorded"));
    assert!(home.cli(&["approvals"]).ok().contains("no standing grants"));
    assert_eq!(home.inits(), 0);

    // `tool call` loads the plugins it needs, as it always did; a guarded
    // command is refused at once, since no channel can ask the owner.
    let out = home
        .h
        .cmd(&["tool", "call", "probe_shell", r#"{"command":"sudo true"}"#]);
    let refused = out.fails();
    assert!(refused.contains("approval"), "{refused}");
    assert_eq!(home.inits(), 1);
    let audit = home.cli(&["audit", "--json"]).json();
    assert_eq!(audit[0]["caller"], "local", "{audit}");
    home.h
        .grant("probe_shell", &json!({ "command": "sudo true" }));
    let grants = home.cli(&["approvals", "--json"]).json();
    let id = grants[0]["id"].to_string();
    assert!(
        home.cli(&["approvals", "revoke", &id])
            .ok()
            .contains("revoked")
    );
    assert_eq!(home.inits(), 1);
}

#[test]
fn a_command_during_the_daemons_start_waits_for_it() {
    let home = Home::new(&[], "init_sleep_ms = 1500");
    let mut cmd = home.h.command(&["run"]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut starting = cmd.spawn().expect("start hearth run");
    // The socket is bound before the plugins start.
    let socket = home.h.home().join("hearth.sock");
    let since = Instant::now();
    while !socket.exists() {
        assert!(since.elapsed() < WAIT, "no control socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    let rows = home.h.cmd(&["plugins", "--json"]).json();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "probe")
    );
    assert_eq!(home.inits(), 1, "the command started its own copy");
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(
        unsafe { libc::kill(starting.id() as i32, libc::SIGTERM) },
        0
    );
    assert!(starting.wait().unwrap().success());
}

#[test]
fn a_stale_socket_file_is_not_a_daemon() {
    let home = Home::new(&[], "");
    // A socket file nobody listens on, as a crash leaves it.
    drop(std::os::unix::net::UnixListener::bind(home.h.home().join("hearth.sock")).unwrap());
    let rows = home.h.cmd(&["plugins", "--json"]).json();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "probe")
    );
    assert_eq!(home.inits(), 1, "the command works on its own");
    assert!(home.cli(&["audit"]).ok().contains("no tool calls recorded"));
}

/// A raw connection to the control socket.
fn connect(home: &Path) -> (UnixStream, BufReader<UnixStream>) {
    let stream = UnixStream::connect(home.join("hearth.sock")).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let reader = BufReader::new(stream.try_clone().unwrap());
    (stream, reader)
}

/// The next answer, or `None` once the daemon closed the connection.
fn answer(reader: &mut BufReader<UnixStream>) -> Option<Value> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(serde_json::from_str(&line).expect("the daemon answers JSON")),
    }
}

#[test]
fn hostile_socket_input_gets_a_clear_error_and_the_daemon_serves_on() {
    let home = Home::new(&[], "");
    let _daemon = home.h.daemon();
    let oversized = {
        let mut line = vec![b'x'; (1 << 20) + 10];
        line.push(b'\n');
        line
    };
    // (what is sent, the error code, whether the connection is then closed)
    let cases: Vec<(Vec<u8>, &str, bool)> = vec![
        (b"garbage\n".to_vec(), "bad_request", false),
        (b"{\"no_op\":1}\n".to_vec(), "bad_request", false),
        (b"{\"op\":\"format_disk\"}\n".to_vec(), "hello_first", false),
        (b"{\"op\":\"tools\"}\n".to_vec(), "hello_first", false),
        (b"{\"op\":\"status\"}\n".to_vec(), "hello_first", false),
        (b"{\"op\":\"hello\"}\n".to_vec(), "bad_request", false),
        (
            b"{\"op\":\"hello\",\"version\":99}\n".to_vec(),
            "version",
            true,
        ),
        (
            b"{\"op\":\"hello\",\"version\":1}\n".to_vec(),
            "version",
            true,
        ),
        (
            b"{\"op\":\"hello\",\"version\":2}\n".to_vec(),
            "version",
            true,
        ),
        (b"\xff\xfe{}\n".to_vec(), "bad_request", true),
        (oversized, "too_long", true),
    ];
    for (input, code, closes) in cases {
        let shown = String::from_utf8_lossy(&input[..input.len().min(40)]).into_owned();
        let (mut stream, mut reader) = connect(home.h.home());
        stream.write_all(&input).unwrap();
        let error = answer(&mut reader).unwrap_or_else(|| panic!("no answer to {shown:?}"));
        assert_eq!(error["op"], "error", "{shown:?}: {error}");
        assert_eq!(error["code"], code, "{shown:?}: {error}");
        assert!(
            error["message"].as_str().is_some_and(|m| m.len() > 10),
            "{error}"
        );
        if closes {
            assert!(answer(&mut reader).is_none(), "{shown:?} left it open");
        } else {
            // The same connection still takes the hello, and then serves.
            writeln!(stream, "{}", control::hello(home.h.home())).unwrap();
            let hello = answer(&mut reader).unwrap();
            assert_eq!(hello["op"], "hello", "after {shown:?}: {hello}");
            stream.write_all(b"{\"op\":\"status\"}\n").unwrap();
            let status = answer(&mut reader).unwrap();
            assert_eq!(status["op"], "status", "after {shown:?}: {status}");
        }
    }
    // Requests after a hello, on one connection; `withdraw` with no call.
    let (mut stream, mut reader) = connect(home.h.home());
    for (request, op) in [
        (control::hello(home.h.home()), "hello"),
        (json!({ "op": "withdraw" }), "error"),
        (json!({ "op": "tool_call", "args": {} }), "error"),
        (
            json!({ "op": "tool_call", "name": "probe_host", "args": [] }),
            "error",
        ),
        (json!({ "op": "audit", "limit": -1 }), "error"),
        (json!({ "op": "revoke" }), "error"),
        (json!({ "op": "plugins" }), "plugins"),
    ] {
        writeln!(stream, "{request}").unwrap();
        let got = answer(&mut reader).expect("an answer");
        assert_eq!(got["op"], op, "{request}: {got}");
    }
    // And the CLI still works.
    assert!(home.cli(&["plugins"]).ok().contains("probe"));
    assert_eq!(home.inits(), 1);
}

/// The ways a client may try the socket without the owner's token: no
/// hello at all (protocol 1's `chat`), a hello without a token, a hello
/// with a wrong one. Each is refused, and nothing it asked for happens.
#[test]
fn a_client_without_the_token_is_refused_and_nothing_happens() {
    let home = Home::new(&[], "");
    let daemon = home.h.daemon();
    let token = control::token(home.h.home());
    let hello = control::hello(home.h.home());
    let wrong = {
        let mut hello = hello.clone();
        let flipped = if token.starts_with('0') { "1" } else { "0" };
        hello["token"] = format!("{flipped}{}", &token[1..]).into();
        hello
    };
    let mut no_token = hello.clone();
    no_token.as_object_mut().unwrap().remove("token");

    // Protocol 1's requests, without a hello: served before, refused now.
    let mut c = Control::connect(home.h.home());
    for request in [
        json!({ "op": "chat", "chat": "terminal", "text": "hello from a stranger" }),
        json!({ "op": "subscribe", "chat": "terminal" }),
        json!({ "op": "groups", "action": "create", "name": "intruders" }),
    ] {
        let refused = c.ask(&request);
        assert_eq!(refused["code"], "hello_first", "{request}: {refused}");
    }
    // A hello without the token, or with a wrong one: refused, closed.
    for (bad, why) in [(&no_token, "has no `token`"), (&wrong, "is wrong")] {
        let mut c = Control::connect(home.h.home());
        let refused = c.ask(bad);
        assert_eq!(refused["code"], "unauthorized", "{refused}");
        let message = refused["message"].as_str().unwrap();
        assert!(
            message.contains(why) && message.contains("control.token"),
            "{message}"
        );
        assert!(!message.contains(&token), "the refusal shows the token");
        assert!(
            c.answer().is_none(),
            "a refused client's connection stays open"
        );
    }
    daemon.wait_for_log(|l| l.contains("control client refused"), WAIT);
    assert!(
        daemon.logs().iter().all(|l| !l.contains(&token)),
        "the log shows the token"
    );

    // Nothing happened: no message stored, no group made.
    let stored: i64 = home
        .h
        .db()
        .query_row("SELECT COUNT(*) FROM inbox", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 0);
    let groups = home.cli(&["groups", "--json"]).json();
    assert!(!groups.to_string().contains("intruders"), "{groups}");
    // The owner's own client, with the token, is served.
    let mut owner = Control::open(home.h.home());
    assert_eq!(owner.ask(&json!({ "op": "status" }))["op"], "status");
}

#[test]
fn the_control_token_is_owner_only_fresh_at_each_start_and_gone_after_a_clean_stop() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new(&[], "");
    let path = home.h.home().join(hearth::daemon::control::TOKEN_FILE);
    let mut daemon = home.h.daemon();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let first = control::token(home.h.home());
    assert!(
        first.len() == 64 && first.bytes().all(|b| b.is_ascii_hexdigit()),
        "{first:?}"
    );
    // The owner's CLI reads it and is served.
    assert!(home.cli(&["status"]).ok().contains("uptime"));

    daemon.signal(libc::SIGTERM);
    assert!(daemon.wait_exit(WAIT).0.success());
    assert!(!path.exists(), "a clean stop leaves the token behind");

    let _daemon = home.h.daemon();
    let second = control::token(home.h.home());
    assert_ne!(first, second, "a restart kept the token");
    assert!(home.cli(&["status"]).ok().contains("uptime"));
}

/// What a program hearth runs sees: a token it cannot read (the kernel
/// floor hides it). Without root, the file is made unreadable; as root,
/// which reads any file, a token that is not the daemon's and a token
/// that is gone stand in for it. The command refuses, saying why, and
/// never works on its own instead (no plugin of its own, no store).
#[test]
fn a_cli_that_cannot_read_the_token_refuses_and_never_works_alone() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new(&[], "");
    let _daemon = home.h.daemon();
    let path = home.h.home().join(hearth::daemon::control::TOKEN_FILE);
    let token = control::token(home.h.home());
    let refused = |why: &str| {
        for args in [
            &["plugins"][..],
            &["contacts", "approve", "K7PX2M"],
            &["audit"],
        ] {
            let out = home.cli(args).fails();
            assert!(
                out.contains("hearth cannot act as the owner here: the control token (")
                    && out.contains(&path.display().to_string())
                    && out.contains(why)
                    && out.contains(
                        "Programs hearth runs are never the owner; run this from your own terminal."
                    ),
                "`hearth {}`: {out}",
                args.join(" ")
            );
        }
        assert_eq!(
            home.inits(),
            1,
            "a refused command loaded the plugins itself"
        );
    };
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        refused("cannot be read (permission denied)");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    std::fs::write(&path, "0".repeat(64)).unwrap();
    refused("is not the running daemon's");
    std::fs::remove_file(&path).unwrap();
    refused("does not exist, though a daemon answers");
    // With the daemon's token back, the same commands work.
    std::fs::write(&path, &token).unwrap();
    assert!(home.cli(&["plugins"]).ok().contains("probe"));
}

/// `hearth tool call` on a terminal (`tool`, `args`), as the owner types it.
fn on_terminal(h: &Hearth, tool: &str, args: &Value) -> OnTerminal {
    OnTerminal::spawn(h.command(&["tool", "call", tool, &args.to_string()]))
}

/// The newest audit row of `shell_exec`.
fn last_shell_call(home: &Home) -> Value {
    let audit = home
        .cli(&["audit", "--json", "--tool", "shell_exec"])
        .json();
    audit.as_array().unwrap().last().unwrap().clone()
}

/// No channel here shows confirmations: the owner's terminal is where the
/// question is asked, and `y` typed there runs the command.
#[test]
fn at_the_owners_terminal_tool_call_asks_there_and_y_runs_it() {
    let home = Home::new(&[plugin("shell")], "");
    let _daemon = home.h.daemon();
    let outside = outside_roots();
    let victim = outside.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let args = json!({ "command": format!("rm -r {}", victim.display()) });
    let mut call = on_terminal(&home.h, "shell_exec", &args);
    let screen = call.wait_for("Approve? [y/N] ", WAIT);
    for shown in [
        "tool:      shell_exec".to_owned(),
        format!("arguments: {args}"),
        format!("command:   rm -r {}", victim.display()),
        "reason:    `rm` deletes".to_owned(),
    ] {
        assert!(screen.contains(&shown), "{shown:?} not shown:\n{screen}");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(victim.exists(), "the command ran before the owner answered");

    call.type_line("y");
    let (code, stdout, screen) = call.finish(WAIT);
    assert_eq!(code, Some(0), "stdout: {stdout}\nscreen: {screen}");
    assert!(!victim.exists(), "the approved command did not run");
    let result: Value = serde_json::from_str(&stdout).expect("the result is JSON");
    assert_eq!(result["exit_code"], 0, "{result}");
    let row = last_shell_call(&home);
    assert_eq!(row["caller"], "owner via cli", "{row}");
    assert_eq!(row["approval"], "approved", "{row}");
    assert_eq!(row["approver"], "owner via cli terminal", "{row}");
    assert_eq!(row["outcome"], "ok", "{row}");
}

/// With the canvas running, the card is there too; `n` at the terminal
/// refuses the call, and the card shows who decided.
#[test]
fn at_the_owners_terminal_n_refuses_the_call_and_the_card_shows_it() {
    let (home, _daemon, canvas, _outside, victim, args) = guarded_setup();
    let (mut ws, _) = canvas.connect();
    let mut call = on_terminal(&home.h, "shell_exec", &args);
    let card = pending_card(&mut ws);
    let screen = call.wait_for("Approve? [y/N] ", WAIT);
    assert!(
        screen.contains("also shown on canvas; the first answer counts"),
        "{screen}"
    );

    call.type_line("n");
    let (code, stdout, screen) = call.finish(WAIT);
    assert_ne!(code, Some(0), "stdout: {stdout}\nscreen: {screen}");
    assert!(screen.contains("the owner denied"), "{screen}");
    assert!(victim.exists(), "a refused command ran");
    let decided = ws.wait_for(WAIT, |f| {
        f["type"] == "confirmation"
            && f["confirmation"]["id"] == card["id"]
            && f["confirmation"]["state"] != "pending"
    });
    assert_eq!(decided["confirmation"]["state"], "denied", "{decided}");
    assert_eq!(
        decided["confirmation"]["decided_by"], "owner via cli terminal",
        "{decided}"
    );
    // A late answer on the canvas runs nothing.
    ws.send(&json!({ "type": "confirm", "id": card["id"], "approve": true }).to_string());
    std::thread::sleep(Duration::from_millis(500));
    assert!(victim.exists(), "a refused command ran after all");
    let row = last_shell_call(&home);
    assert_eq!(row["approval"], "denied", "{row}");
    assert_eq!(row["approver"], "owner via cli terminal", "{row}");
    assert_eq!(row["outcome"], "refused", "{row}");
}

/// Only the connection that was asked can answer, and only its question.
#[test]
fn another_connection_cannot_answer_a_terminals_question() {
    let (home, _daemon, _canvas, _outside, victim, args) = guarded_setup();
    let mut asker = Control::open(home.h.home());
    let waiting = asker.ask(&json!({
        "op": "tool_call", "name": "shell_exec", "args": args, "terminal": true,
    }));
    assert_eq!(waiting["op"], "confirm", "{waiting}");
    let id = waiting["id"].clone();
    let mut other = Control::open(home.h.home());
    let refused = other.ask(&json!({ "op": "answer", "id": id, "approve": true }));
    assert_eq!(refused["code"], "not_found", "{refused}");
    let wrong = asker.ask(&json!({ "op": "answer", "id": "nope", "approve": true }));
    assert_eq!(wrong["code"], "not_found", "{wrong}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        victim.exists(),
        "another connection's answer ran the command"
    );
    // The asker's own answer counts, once. Its acknowledgement and the
    // call's end race each other: both come, in either order.
    let mut ends = [
        asker.ask(&json!({ "op": "answer", "id": id, "approve": false })),
        asker.answer().unwrap(),
    ];
    ends.sort_by_key(|m| m["op"].to_string());
    assert_eq!(
        ends[0],
        json!({ "op": "answered", "id": id, "counted": true })
    );
    assert_eq!(ends[1]["code"], "tool", "{}", ends[1]);
    let again = asker.ask(&json!({ "op": "answer", "id": id, "approve": true }));
    assert_eq!(again["code"], "not_found", "{again}");
    assert!(victim.exists());
}
