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

use std::time::{Duration, Instant};

use hearth_tests::browser::Browser;
use hearth_tests::canvas::Canvas;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::procs::{Found, descendant, group_gone};
use hearth_tests::{Hearth, plugin};
use serde_json::json;

#[test]
fn live_output_and_the_stop_button_work_in_chromium() {
    let browser = Browser::new(false);

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

    let mut sleeper: Option<Found> = None;
    let shell = |command: &str| {
        anthropic_tool_use(None, "t1", "shell_exec", &json!({ "command": command }))
    };
    browser.run("control.test.mjs", &canvas, &[], |step| match step {
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
    });
    let decided: String = h
        .db()
        .query_row("SELECT decided_by FROM confirmations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(decided, "stop");
}
