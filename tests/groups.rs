//! Agent groups end to end: the real daemon, sub-agents as members, the
//! fake model playing the leader (by its planning prompt) and the members
//! (by the deliverable their prompt names), the owner at `hearth groups`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hearth_tests::Hearth;
use hearth_tests::canvas::Canvas;
use hearth_tests::control::Control;
use hearth_tests::fake_llm::{FakeLlm, anthropic_text, anthropic_tool_use};
use hearth_tests::groups::{Script, Seen, diamond, home_with_canvas, staff, start, submit};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn home(fake: &FakeLlm) -> Hearth {
    home_with(fake, "")
}

/// As [`home`], with `extra` config.
fn home_with(fake: &FakeLlm, extra: &str) -> Hearth {
    Hearth::new(&format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n{extra}",
        fake.url()
    ))
}

/// Group `crew`'s status.
fn status(h: &Hearth) -> String {
    status_of(h, "crew")
}

fn status_of(h: &Hearth, group: &str) -> String {
    h.db()
        .query_row("SELECT status FROM groups WHERE name = ?1", [group], |r| {
            r.get(0)
        })
        .unwrap()
}

/// Waits until group `crew` is `want`.
fn wait_status(h: &Hearth, want: &str) {
    wait_group(h, "crew", want);
}

fn wait_group(h: &Hearth, group: &str, want: &str) {
    let started = Instant::now();
    loop {
        let now = status_of(h, group);
        if now == want {
            return;
        }
        assert!(
            started.elapsed() < WAIT,
            "{group} stayed {now}, never {want}:\n{}",
            h.cmd(&["groups", "show", group]).stdout
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the owner was told, in order.
fn told(h: &Hearth) -> Vec<String> {
    let conn = h.db();
    let mut stmt = conn.prepare("SELECT text FROM outbox ORDER BY id").unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn deliverable(h: &Hearth, key: &str) -> (String, i64) {
    h.db()
        .query_row(
            "SELECT status, starts FROM group_deliverables WHERE key = ?1",
            [key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

fn first(seen: &[Seen], key: &str, messages: usize) -> Instant {
    seen.iter()
        .find(|s| s.key == key && s.messages == messages)
        .unwrap_or_else(|| panic!("no call of {key} with {messages} messages: {seen:?}"))
        .at
}

#[test]
fn a_plan_is_approved_and_carried_out_in_dependency_order_in_parallel() {
    let fake = FakeLlm::start();
    let seen = Script::new(vec![vec![submit(diamond())]]).play(&fake).seen;
    let h = home(&fake);
    let _daemon = start(&h);
    staff(&h);

    h.cmd(&["groups", "mission", "crew", "Build", "the", "thing"])
        .ok();
    wait_status(&h, "awaiting-approval");
    let shown = h.cmd(&["groups", "show", "crew"]).ok().to_owned();
    for line in [
        "D2 Backend — bob ← D1",
        "D4 Ship — ada ← D2, D3",
        "/groups crew approve",
    ] {
        assert!(shown.contains(line), "{line:?} not in\n{shown}");
    }
    assert!(
        told(&h)[0].contains("Group crew has a plan"),
        "{:?}",
        told(&h)
    );
    let plan = std::fs::read_to_string(h.home().join("groups/crew/plan.md")).unwrap();
    assert!(
        plan.starts_with("---\n") && plan.contains("depends_on:"),
        "{plan}"
    );

    h.cmd(&["groups", "approve", "crew"]).ok();
    wait_status(&h, "complete");

    let seen = seen.lock().unwrap().clone();
    let (d1_done, d2, d3) = (
        first(&seen, "D1", 3),
        first(&seen, "D2", 1),
        first(&seen, "D3", 1),
    );
    let (d2_done, d3_done, d4) = (
        first(&seen, "D2", 3),
        first(&seen, "D3", 3),
        first(&seen, "D4", 1),
    );
    assert!(
        d1_done < d2 && d1_done < d3,
        "D2 or D3 started before D1 was done"
    );
    // Both started before either finished: they ran at the same time.
    assert!(
        d2 < d3_done && d3 < d2_done,
        "D2 and D3 ran one after the other: {seen:?}"
    );
    assert!(
        d4 > d2_done && d4 > d3_done,
        "D4 started before D2 and D3 were done"
    );
    for key in ["D1", "D2", "D3", "D4"] {
        assert_eq!(deliverable(&h, key), ("complete".into(), 1), "{key}");
    }
    // Milestones only: the plan, four deliverables, the summary.
    let told = told(&h);
    assert_eq!(told.len(), 6, "{told:#?}");
    assert!(
        told[5].contains("completed its mission")
            && told[5].contains("SUMMARY: the mission is done.")
    );
    // The shared folder mirrors the tables.
    let dir = h.home().join("groups/crew");
    let d2 = std::fs::read_to_string(dir.join("assignments/D2.md")).unwrap();
    assert!(
        d2.contains("Status: complete") && d2.contains("result of D2"),
        "{d2}"
    );
    let bob: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("status/bob.json")).unwrap())
            .unwrap();
    assert_eq!(bob["state"], "idle");
    let log = std::fs::read_to_string(dir.join("comms/log.md")).unwrap();
    assert!(log.contains("bob [status D2] working: on D2"), "{log}");
}

#[test]
fn a_refused_plan_gets_one_more_try_then_goes_to_the_owner_to_assign() {
    let bad = json!([
        { "id": "D1", "title": "One", "assignee": "zed" },
        { "id": "D2", "title": "Two", "assignee": "bob", "depends_on": ["D9"] },
        { "id": "A", "title": "Loop a", "assignee": "bob", "depends_on": ["B"] },
        { "id": "B", "title": "Loop b", "assignee": "cyd", "depends_on": ["A"] }
    ]);
    let good_markdown = "Here it is.\n---\nsummary: Two steps\ndeliverables:\n  - id: D1\n    title: One\n    assignee: bob\n  - id: D2\n    title: Two\n    assignee: cyd\n    depends_on: [D1]\n---\n";
    let fake = FakeLlm::start();
    let leader = Script::new(vec![
        vec![submit(bad.clone()), anthropic_text(good_markdown)],
        vec![submit(bad.clone()), submit(bad)],
    ])
    .play(&fake)
    .leader;
    let h = home(&fake);
    let _daemon = start(&h);
    staff(&h);

    // The first try is refused with every problem named; the second (a
    // markdown answer) is the plan.
    h.cmd(&["groups", "mission", "crew", "two", "steps"]).ok();
    wait_status(&h, "awaiting-approval");
    let refusal = leader.lock().unwrap()[1].clone();
    for problem in [
        "assignee \\\"zed\\\" is not a member",
        "dependency \\\"D9\\\" is not a deliverable",
        "cycle: A → B → A",
        "last try",
    ] {
        assert!(refusal.contains(problem), "{problem} not in {refusal}");
    }
    let shown = h.cmd(&["groups", "show", "crew"]).ok().to_owned();
    assert!(
        shown.contains("D2 Two — cyd ← D1") && !shown.contains("! "),
        "{shown}"
    );

    // A second failure in the next round: the owner assigns by hand.
    h.cmd(&["groups", "reject", "crew", "use", "ada", "too"])
        .ok();
    wait_until("the second round's plan", || {
        h.db()
            .query_row("SELECT plan_errors IS NOT NULL FROM groups", [], |r| {
                r.get::<_, bool>(0)
            })
            .unwrap()
    });
    assert_eq!(status(&h), "awaiting-approval");
    let replan = leader.lock().unwrap().last().cloned().unwrap();
    assert!(
        replan.contains("The owner rejected the plan: use ada too"),
        "{replan}"
    );
    let shown = h.cmd(&["groups", "show", "crew"]).ok().to_owned();
    assert!(
        shown.contains("! deliverable D1: assignee \"zed\" is not a member"),
        "{shown}"
    );
    assert!(
        h.cmd(&["groups", "approve", "crew"])
            .fails()
            .contains("assign it by hand first")
    );
    let told = told(&h);
    assert!(
        told.last().unwrap().contains("could not make a valid plan"),
        "{told:#?}"
    );
    let plan =
        "---\nsummary: by hand\ndeliverables:\n  - {id: D1, title: One, assignee: bob}\n---\n";
    let file = h.write("plan.md", plan);
    h.cmd(&["groups", "plan", "crew", file.to_str().unwrap()])
        .ok();
    wait_status(&h, "complete");
}

#[test]
fn a_failed_deliverable_blocks_what_follows_and_the_leader_plans_the_rest() {
    let rest = json!([
        { "id": "D5", "title": "Backend again", "assignee": "bob", "depends_on": ["D1"] },
        { "id": "D6", "title": "Ship", "assignee": "ada", "depends_on": ["D5", "D3"] }
    ]);
    let fake = FakeLlm::start();
    let mut script = Script::new(vec![vec![submit(diamond())], vec![submit(rest)]]);
    script.failing = Some("D2");
    let leader = script.play(&fake).leader;
    let h = home(&fake);
    let _daemon = start(&h);
    staff(&h);
    h.cmd(&["groups", "mission", "crew", "Build"]).ok();
    wait_status(&h, "awaiting-approval");
    h.cmd(&["groups", "approve", "crew"]).ok();

    // D3 finishes; D2 failed and D4 is blocked; the leader plans again.
    wait_until("the second plan", || {
        status(&h) == "awaiting-approval"
            && h.db()
                .query_row("SELECT plan_round FROM groups", [], |r| r.get::<_, i64>(0))
                .unwrap()
                == 2
    });
    assert_eq!(deliverable(&h, "D2").0, "failed");
    assert_eq!(deliverable(&h, "D3").0, "complete");
    assert_eq!(deliverable(&h, "D4").0, "blocked");
    let errored: String = h
        .db()
        .query_row(
            "SELECT m.state FROM group_members m JOIN agents a ON a.id = m.agent_id WHERE a.name = 'bob'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(errored, "errored");
    let told = told(&h);
    assert!(
        told.iter()
            .any(|t| t.contains("D2 \"Backend\" failed") && t.contains("refuses D2")),
        "{told:#?}"
    );
    let replan = leader.lock().unwrap().last().cloned().unwrap();
    assert!(
        replan.contains("D2 \\\"Backend\\\" (bob)") && replan.contains("Blocked by it: D4"),
        "{replan}"
    );

    h.cmd(&["groups", "approve", "crew"]).ok();
    wait_status(&h, "complete");
    let keys: Vec<String> = {
        let conn = h.db();
        let mut stmt = conn
            .prepare("SELECT key FROM group_deliverables WHERE status = 'complete' ORDER BY key")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(keys, ["D1", "D3", "D5", "D6"]);
}

#[test]
fn after_kill_9_no_deliverable_runs_twice_and_the_group_completes() {
    let fake = FakeLlm::start();
    let script = Script::new(vec![vec![submit(diamond())]]);
    let stall = Arc::clone(&script.stall);
    let seen = script.play(&fake).seen;
    let h = home(&fake);
    let mut daemon = start(&h);
    staff(&h);
    h.cmd(&["groups", "mission", "crew", "Build"]).ok();
    wait_status(&h, "awaiting-approval");
    stall.store(false, Ordering::SeqCst);
    h.cmd(&["groups", "approve", "crew"]).ok();
    // D1 done, D2 and D3 in their second step, slowed: kill there.
    wait_until("D1 to complete", || deliverable(&h, "D1").0 == "complete");
    stall.store(true, Ordering::SeqCst);
    wait_until("D2 and D3 to be in their second step", || {
        let seen = seen.lock().unwrap();
        ["D2", "D3"]
            .iter()
            .all(|k| seen.iter().any(|s| s.key == *k && s.messages == 3))
    });
    daemon.kill9();
    stall.store(false, Ordering::SeqCst);
    let _daemon = start(&h);
    wait_status(&h, "complete");

    let seen = seen.lock().unwrap().clone();
    for key in ["D1", "D2", "D3", "D4"] {
        let fresh = seen
            .iter()
            .filter(|s| s.key == key && s.messages == 1)
            .count();
        assert_eq!(fresh, 1, "{key} started afresh {fresh} times: {seen:?}");
        assert_eq!(deliverable(&h, key), ("complete".into(), 1), "{key}");
    }
    assert_eq!(
        seen.iter().filter(|s| s.key == "D1").count(),
        2,
        "D1 ran again: {seen:?}"
    );
    let completes: i64 = h
        .db()
        .query_row(
            "SELECT count(*) FROM group_posts WHERE kind = 'complete'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(completes, 4);
}

#[test]
fn six_hundred_groups_have_unique_names_and_the_next_is_numbered() {
    let fake = FakeLlm::start();
    let h = home(&fake);
    let _daemon = start(&h);
    let mut control = Control::open(h.home());
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..600 {
        let answer = control.ask(&json!({ "op": "groups", "action": "create" }));
        let name = answer["result"]["group"].as_str().unwrap().to_owned();
        assert!(name.split('-').count() == 2, "{name}");
        assert!(names.insert(name.clone()), "{name} twice");
    }
    let next = control.ask(&json!({ "op": "groups", "action": "create" }));
    let next = next["result"]["group"].as_str().unwrap();
    assert!(next.ends_with("-2") && !names.contains(next), "{next}");
}

#[test]
fn bad_requests_are_refused_with_what_is_wrong() {
    let fake = FakeLlm::start();
    let h = home(&fake);
    let _daemon = start(&h);
    let args =
        json!({ "action": "create", "name": "bob", "system_prompt": "b", "allowed_tools": [] });
    h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
        .ok();
    h.cmd(&["groups", "create", "empty-team"]).ok();
    let cases: [(&[&str], &str); 9] = [
        (
            &["groups", "mission", "empty-team", "do", "it"],
            "empty-team has no members",
        ),
        (
            &["groups", "add", "empty-team", "nobody"],
            "\"nobody\" is not an agent (agents: main, bob)",
        ),
        (
            &["groups", "leader", "empty-team", "bob"],
            "\"bob\" is not a member of empty-team",
        ),
        (&["groups", "create", "Bad Name"], "is not a group name"),
        (&["groups", "create", "empty-team"], "already exists"),
        (
            &["groups", "approve", "empty-team"],
            "there is no plan waiting for approval",
        ),
        (&["groups", "show", "nope"], "no group named \"nope\""),
        (
            &["groups", "assign", "empty-team", "D1", "bob"],
            "while they wait for approval",
        ),
        (
            &["groups", "plan", "empty-team", "/nonexistent/plan.md"],
            "/nonexistent/plan.md",
        ),
    ];
    for (args, expected) in cases {
        let error = h.cmd(args).fails();
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    h.cmd(&["groups", "add", "empty-team", "bob"]).ok();
    let long = "x".repeat(20_001);
    assert!(
        h.cmd(&["groups", "mission", "empty-team", &long])
            .fails()
            .contains("at most 20000")
    );
    let mut control = Control::open(h.home());
    for (request, expected) in [
        (
            json!({ "op": "groups", "action": "explode" }),
            "unknown action \"explode\"",
        ),
        (
            json!({ "op": "groups", "action": "add_member", "group": "empty-team" }),
            "field `agent`: required",
        ),
        (
            json!({ "op": "groups", "action": "show", "group": 7 }),
            "field `group`: required",
        ),
    ] {
        let answer = control.ask(&request);
        assert_eq!(answer["op"], "error", "{answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(expected),
            "{answer}"
        );
    }
    // The daemon keeps serving.
    assert!(
        h.cmd(&["groups"])
            .ok()
            .contains("empty-team — idle (1 member)")
    );
}

#[test]
fn the_plan_card_goes_back_with_a_reason_and_the_view_follows_live_on_the_canvas() {
    let fake = FakeLlm::start();
    let leader = Script::new(vec![vec![submit(diamond())], vec![submit(diamond())]])
        .play(&fake)
        .leader;
    let h = home_with_canvas(&fake);
    let _daemon = start(&h);
    let canvas = Canvas::of(h.home());
    staff(&h);
    let (mut ws, hello) = canvas.connect();
    assert_eq!(hello["groups"][0]["name"], "crew", "{hello}");
    h.cmd(&["groups", "mission", "crew", "Build"]).ok();

    // The card: the plan in lines; denied with a reason, it goes back.
    let card = ws.wait_for(WAIT, |f| f["type"] == "confirmation");
    let card = &card["confirmation"];
    assert_eq!(card["tool"], "group plan");
    assert_eq!(
        card["args"]["deliverables"][3]["depends_on"],
        json!(["D2", "D3"])
    );
    assert!(
        card["command"]
            .as_str()
            .unwrap()
            .contains("D2: Backend — bob (after D1)")
    );
    let reason = "split the backend in two";
    ws.send(
        &json!({ "type": "confirm", "id": card["id"], "approve": false, "reason": reason })
            .to_string(),
    );
    let decided = ws.wait_for(WAIT, |f| {
        f["type"] == "confirmation" && f["confirmation"]["state"] == "denied"
    });
    assert_eq!(decided["confirmation"]["id"], card["id"]);
    let card = ws.wait_for(WAIT, |f| {
        f["type"] == "confirmation" && f["confirmation"]["state"] == "pending"
    });
    let again = leader.lock().unwrap().last().cloned().unwrap();
    assert!(
        again.contains(&format!("The owner rejected the plan: {reason}")),
        "{again}"
    );

    // Approved on the canvas, the group view follows the work.
    ws.send(
        &json!({ "type": "confirm", "id": card["confirmation"]["id"], "approve": true })
            .to_string(),
    );
    let running = ws.wait_for(WAIT, |f| {
        f["type"] == "group" && f["group"]["deliverables"][0]["status"] == "running"
    });
    assert_eq!(
        running["group"]["members"][0]["state"], "working",
        "{running}"
    );
    let done = ws.wait_for(WAIT, |f| {
        f["type"] == "group" && f["group"]["status"] == "complete"
    });
    let view = &done["group"];
    assert!(
        view["deliverables"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["status"] == "complete")
    );
    assert_eq!(view["summary"], "SUMMARY: the mission is done.");
    assert!(
        view["posts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "complete" && p["who"] == "bob")
    );
    // A browser that connects now gets the same view.
    let (_, hello) = canvas.connect();
    assert_eq!(hello["groups"][0]["status"], "complete");
    // Renamed, the group is one group under its new name.
    let renamed = h
        .cmd(&["groups", "rename", "crew", "old-crew"])
        .ok()
        .to_owned();
    assert_eq!(renamed.trim(), "renamed crew to old-crew");
    ws.wait_for(WAIT, |f| {
        f["type"] == "group" && f["group"]["name"] == "old-crew"
    });
    let (_, hello) = canvas.connect();
    let names: Vec<&str> = hello["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["old-crew"]);
    assert!(h.home().join("groups/old-crew/plan.md").is_file());
    assert!(!h.home().join("groups/crew").exists());
}

#[test]
fn the_owner_reads_and_decides_a_group_in_chat() {
    let fake = FakeLlm::start();
    Script::new(vec![vec![submit(diamond())]]).play(&fake);
    let h = home(&fake);
    let _daemon = start(&h);
    staff(&h);
    assert_eq!(h.chat("/groups").ok().trim(), "crew — idle (3 members)");
    h.cmd(&["groups", "mission", "crew", "Build"]).ok();
    wait_status(&h, "awaiting-approval");
    let shown = h.chat("/groups crew").ok().to_owned();
    assert!(shown.contains("· D3 Frontend — cyd ← D1"), "{shown}");
    assert!(
        h.chat("/groups crew assign D9 bob")
            .ok()
            .contains("no deliverable \"D9\"")
    );
    assert!(
        h.chat("/groups crew assign D3 bob")
            .ok()
            .contains("D3 is bob's")
    );
    assert!(
        h.chat("/groups crew approve")
            .ok()
            .contains("crew is executing its plan")
    );
    wait_status(&h, "complete");
    assert!(h.chat("/groups crew").ok().contains("✓ D3 Frontend — bob"));
    assert!(
        h.chat("/groups crew dance")
            .ok()
            .starts_with("Usage: /groups")
    );
}

#[test]
fn without_a_daemon_hearth_groups_says_to_start_one() {
    let h = Hearth::new("");
    let error = h.cmd(&["groups", "show", "crew"]).fails();
    assert!(error.contains("hearth is not running"), "{error}");
}

#[test]
fn a_member_over_its_budget_fails_its_deliverable_and_the_owner_hears_why() {
    let fake = FakeLlm::start();
    Script::new(vec![vec![submit(diamond())]]).play(&fake);
    let h = home_with(&fake, "[groups]\nmax_steps = 1\n");
    let _daemon = start(&h);
    staff(&h);
    h.cmd(&["groups", "mission", "crew", "Build"]).ok();
    wait_status(&h, "awaiting-approval");
    h.cmd(&["groups", "approve", "crew"]).ok();
    wait_until("D1 to fail", || deliverable(&h, "D1").0 == "failed");
    for key in ["D2", "D3", "D4"] {
        wait_until("the rest to be blocked", || {
            deliverable(&h, key).0 == "blocked"
        });
    }
    let why = "its member hit its 1 model calls ([groups] max_steps)";
    wait_until("the owner to hear", || {
        told(&h).iter().any(|t| t.contains(why))
    });
    let error: String = h
        .db()
        .query_row(
            "SELECT error FROM group_deliverables WHERE key = 'D1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(error, why);
}

#[test]
fn the_main_agent_makes_a_group_and_gives_it_a_mission_but_never_approves() {
    let fake = FakeLlm::start();
    let h = home(&fake);
    let _daemon = start(&h);
    let args =
        json!({ "action": "create", "name": "bob", "system_prompt": "b", "allowed_tools": [] });
    h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
        .ok();
    let calls = [
        (
            "manage_groups",
            json!({ "action": "create", "name": "duo" }),
        ),
        (
            "manage_groups",
            json!({ "action": "add_member", "group": "duo", "agent": "bob", "role": "does it all" }),
        ),
        (
            "assign_mission",
            json!({ "group": "duo", "mission": "Tidy the garage" }),
        ),
    ];
    for (n, (tool, input)) in calls.iter().enumerate() {
        fake.push(anthropic_tool_use(None, &format!("toolu_{n}"), tool, input));
    }
    fake.push(anthropic_text("The duo is on it."));
    // The leader's planning turn (bob) gets a plan it can hand in.
    fake.push_for(
        "You lead an agent group",
        anthropic_tool_use(
        None,
        "toolu_plan",
        "submit_plan",
        &json!({ "summary": "s", "deliverables": [{ "id": "D1", "title": "Tidy", "assignee": "bob" }] }),
    ),
    );
    assert_eq!(
        h.chat("get bob to tidy the garage").ok().trim(),
        "The duo is on it."
    );
    wait_group(&h, "duo", "awaiting-approval");
    let shown = h.cmd(&["groups", "show", "duo"]).ok().to_owned();
    assert!(
        shown.contains("Members: ★bob (idle)") && shown.contains("Mission: Tidy the garage"),
        "{shown}"
    );
    // Deciding a plan is not among the agent's actions.
    let refused = h
        .cmd(&[
            "tool",
            "call",
            "manage_groups",
            &json!({ "action": "approve", "group": "duo" }).to_string(),
        ])
        .fails();
    assert!(refused.contains("action"), "{refused}");
    assert_eq!(status_of(&h, "duo"), "awaiting-approval");
}

#[test]
fn a_new_leader_plans_the_next_mission() {
    let fake = FakeLlm::start();
    let leader = Script::new(vec![vec![submit(diamond())]])
        .play(&fake)
        .leader;
    let h = home(&fake);
    let _daemon = start(&h);
    staff(&h);
    h.cmd(&["groups", "leader", "crew", "bob"]).ok();
    assert!(
        h.cmd(&["groups", "show", "crew"])
            .ok()
            .contains("Members: ada (idle), ★bob (idle)")
    );
    h.cmd(&["groups", "mission", "crew", "Build"]).ok();
    wait_status(&h, "awaiting-approval");
    let asked = leader.lock().unwrap()[0].clone();
    assert!(
        asked.contains("- bob (leader: you): backend") && asked.contains("- ada: architect"),
        "{asked}"
    );
}

#[test]
fn with_auto_execute_a_plan_runs_without_approval() {
    let fake = FakeLlm::start();
    let one = json!([{ "id": "D1", "title": "Design", "assignee": "ada" }]);
    Script::new(vec![vec![submit(one)]]).play(&fake);
    let h = home(&fake);
    let _daemon = start(&h);
    staff(&h);
    h.cmd(&["groups", "create", "solo", "--auto-execute"]).ok();
    h.cmd(&["groups", "add", "solo", "ada"]).ok();
    h.cmd(&["groups", "mission", "solo", "Design", "it"]).ok();
    wait_group(&h, "solo", "complete");
    let told = told(&h);
    assert!(!told.iter().any(|t| t.contains("has a plan")), "{told:#?}");
    let log = std::fs::read_to_string(h.home().join("groups/solo/comms/log.md")).unwrap();
    assert!(
        log.contains("The plan runs without approval (auto_execute)."),
        "{log}"
    );
}

#[test]
fn a_plan_the_leader_writes_to_plan_md_is_read() {
    let fake = FakeLlm::start();
    let h = home(&fake);
    let _daemon = start(&h);
    for (name, tools) in [("ada", json!(["write_file"])), ("bob", json!([]))] {
        let args = json!({ "action": "create", "name": name, "system_prompt": "x", "allowed_tools": tools });
        h.cmd(&["tool", "call", "manage_agents", &args.to_string()])
            .ok();
    }
    h.cmd(&["groups", "create", "pair"]).ok();
    h.cmd(&["groups", "add", "pair", "ada"]).ok();
    h.cmd(&["groups", "add", "pair", "bob"]).ok();
    let file = h.home().join("groups/pair/plan.md");
    let plan = "---\nsummary: From the file\ndeliverables:\n  - {id: W1, title: Write, assignee: bob}\n---\n";
    let leader = "You lead an agent group";
    fake.push_for(
        leader,
        anthropic_tool_use(
            None,
            "toolu_w",
            "write_file",
            &json!({ "path": file, "content": plan }),
        ),
    );
    fake.push_for(leader, anthropic_text("The plan is in plan.md."));
    h.cmd(&["groups", "mission", "pair", "Write", "it"]).ok();
    wait_group(&h, "pair", "awaiting-approval");
    let shown = h.cmd(&["groups", "show", "pair"]).ok().to_owned();
    assert!(
        shown.contains("· W1 Write — bob") && !shown.contains("! "),
        "{shown}"
    );
    let asked = fake.requests()[0].body.to_string();
    assert!(
        asked.contains(&file.display().to_string()),
        "the leader is not told where plan.md is"
    );
}

#[test]
fn members_leave_and_groups_are_archived_between_missions() {
    let fake = FakeLlm::start();
    Script::new(vec![vec![submit(diamond())]]).play(&fake);
    let h = home(&fake);
    let _daemon = start(&h);
    staff(&h);
    // The leader leaves: the next member leads.
    h.cmd(&["groups", "remove", "crew", "ada"]).ok();
    let shown = h.cmd(&["groups", "show", "crew"]).ok().to_owned();
    assert!(
        shown.contains("Members: ★bob (idle), cyd (idle)"),
        "{shown}"
    );
    h.cmd(&["groups", "add", "crew", "ada"]).ok();
    h.cmd(&["groups", "mission", "crew", "Build"]).ok();
    wait_status(&h, "awaiting-approval");
    let busy = h.cmd(&["groups", "remove", "crew", "cyd"]).fails();
    assert!(
        busy.contains("crew is awaiting-approval: members leave between missions"),
        "{busy}"
    );
    let again = h.cmd(&["groups", "mission", "crew", "Other"]).fails();
    assert!(
        again.contains("a group takes one mission at a time"),
        "{again}"
    );
    h.cmd(&["groups", "archive", "crew"]).ok();
    assert!(
        h.cmd(&["groups"])
            .ok()
            .contains("crew — archived (3 members)")
    );
    let archived = h.cmd(&["groups", "mission", "crew", "More"]).fails();
    assert!(archived.contains("crew is archived"), "{archived}");
}
