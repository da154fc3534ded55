//! The owner in control of a running turn, in a real Chromium: runs
//! `tests/browser/control.test.mjs` against the daemon with the canvas and
//! the shell plugin and a fake model. The browser sees a command's first
//! line in a live pane while the command still runs, stops `sleep 600`
//! with the Stop button (this side checks the process group is gone), and
//! sees a pending confirmation card turn "withdrawn" when it stops the
//! turn.
//!
//! Needs `node`, Debian's `chromium`, and `npm ci` in `tests/browser`;
//! `.ci/run` installs all three.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hearth_tests::canvas::Canvas;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::procs::{Found, descendant, group_gone};
use hearth_tests::{Hearth, plugin, target_dir};
use serde_json::json;

#[test]
fn live_output_and_the_stop_button_work_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned();
    let browser_dir = root.join("tests/browser");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        browser_dir.join("node_modules/playwright-core").is_dir() && Path::new(&chromium).is_file(),
        "run `npm ci` in tests/browser and install Debian's chromium (.ci/run does)"
    );
    let artifacts = target_dir().join("browser-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();

    let fake = FakeLlm::start();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let h = Hearth::with_plugins(
        &[plugin("canvas"), plugin("shell")],
        &format!(
            "[plugins.canvas]\nlisten = \"127.0.0.1:{port}\"\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n",
            fake.url()
        ),
    );
    let daemon = h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
    });
    let canvas = Canvas::of(h.home());

    let mut node = Command::new("node")
        .arg(browser_dir.join("control.test.mjs"))
        .current_dir(&root)
        .env("HEARTH_CANVAS_LOGIN", canvas.login_url())
        .env("HEARTH_CANVAS_BASE", canvas.base())
        .env("HEARTH_ARTIFACTS", &artifacts)
        .env("CHROMIUM", &chromium)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run node (install Node.js)");
    let mut to_node = node.stdin.take().unwrap();
    let from_node = BufReader::new(node.stdout.take().unwrap());
    let mut sleeper: Option<Found> = None;
    let shell = |command: &str| {
        anthropic_tool_use(None, "t1", "shell_exec", &json!({ "command": command }))
    };
    for line in from_node.lines().map_while(Result::ok) {
        let Some(step) = line.strip_prefix("STEP ") else {
            continue;
        };
        let answer: Result<(), String> = match step {
            "login" | "done" => Ok(()),
            "live" => {
                fake.push(shell("echo first-line; sleep 3; echo second-line"));
                fake.push(anthropic_text("Printed both."));
                Ok(())
            }
            "check-live-running" => Ok(()),
            "stop" => {
                fake.push(shell("sleep 600"));
                Ok(())
            }
            "check-sleeping" => {
                let start = Instant::now();
                loop {
                    if let Some(found) = descendant(daemon.pid(), &["sleep", "600"]) {
                        sleeper = Some(found);
                        break Ok(());
                    }
                    if start.elapsed() > Duration::from_secs(20) {
                        break Err("sleep 600 never started".into());
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            "check-stopped" => match sleeper {
                Some(found) if group_gone(found.pgid) => Ok(()),
                Some(_) => Err("the process group of sleep 600 is still there".into()),
                None => Err("no sleep 600 was seen".into()),
            },
            "withdraw" => {
                // The guard asks before a recursive delete in /etc.
                fake.push(shell("rm -r /etc/hearth-stop-test"));
                Ok(())
            }
            other => Err(format!("unknown step {other}")),
        };
        let reply = match answer {
            Ok(()) => "OK".to_owned(),
            Err(why) => format!("FAIL {why}"),
        };
        writeln!(to_node, "{reply}").expect("answer the browser script");
    }
    let status = node.wait().unwrap();
    assert!(
        status.success(),
        "the browser test failed ({status}); screenshots in {}",
        artifacts.display()
    );
    let decided: String = h
        .db()
        .query_row("SELECT decided_by FROM confirmations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(decided, "stop");
}
