//! The canvas's group view in a real browser: headless Chromium, driven by
//! `tests/browser/groups.test.mjs`, against the real daemon with the
//! canvas plugin, three sub-agents in group `crew` and the fake model
//! playing the leader (by its planning prompt) and the members (by the
//! deliverable their prompt names).
//!
//! The browser denies the first plan with a reason (checked here in the
//! leader's next planning request), approves the second, and watches the
//! mission run live. Steps as in `canvas_browser.rs`: the script prints
//! `STEP <name>`, this side answers `OK` or `FAIL why`. The screenshot of
//! the group view lands in `target/browser-artifacts/`.
//!
//! Needs `node`, Debian's `chromium`, and `npm ci` in `tests/browser`.

use std::time::{Duration, Instant};

use hearth_tests::browser::Browser;
use hearth_tests::canvas::Canvas;
use hearth_tests::fake_llm::FakeLlm;
use hearth_tests::groups::{Script, diamond, home_with_canvas, staff, start, submit};

/// The reason the browser gives when it sends the first plan back.
const REASON: &str = "split the backend from the frontend first";

#[test]
fn the_group_view_follows_a_mission_live_in_chromium() {
    let browser = Browser::new(false);
    let fake = FakeLlm::start();
    let mut script = Script::new(vec![vec![submit(diamond())], vec![submit(diamond())]]);
    // Markup in an agent's words must show as text.
    script.result_tail = " <img src=x onerror=\"window.pwned=1\">";
    let leader = script.play(&fake).leader;
    let h = home_with_canvas(&fake);
    let _daemon = start(&h);
    staff(&h);
    // A second group, to pick between.
    h.cmd(&["groups", "create", "spare"]).ok();
    let canvas = Canvas::of(h.home());

    browser.run("groups.test.mjs", &canvas, &[], |step| match step {
        "login" | "done" => Ok(()),
        "mission" => {
            h.cmd(&["groups", "mission", "crew", "Build", "the", "thing"])
                .ok();
            Ok(())
        }
        "check-reason" => {
            let wanted = format!("The owner rejected the plan: {REASON}");
            wait_until(Duration::from_secs(30), || {
                leader.lock().unwrap().iter().any(|m| m.contains(&wanted))
            })
            .then_some(())
            .ok_or_else(|| {
                format!(
                    "no planning request of the leader carries {wanted:?}: {:?}",
                    leader.lock().unwrap()
                )
            })
        }
        other => Err(format!("unknown step {other}")),
    });
    assert!(
        browser.artifacts.join("group-view.png").is_file(),
        "no screenshot of the group view"
    );
}

/// Whether `done` came true within `wait`.
fn wait_until(wait: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > wait {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}
