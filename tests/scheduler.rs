//! The scheduler end to end: the real daemon, its clock moved with
//! `HEARTH_FAKE_NOW` where a test needs another day, the fake Bot API and
//! the fake model where a firing must reach someone.
//!
//! Jobs are created the way the owner and the agent create them: with
//! `manage_schedule` through the running daemon, or by the model's tool
//! call in a Telegram conversation.

use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{anthropic_text, anthropic_tool_use};
use hearth_tests::telegram_home::{OWNER, TelegramHome};
use hearth_tests::{Daemon, Hearth};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

/// Starts the daemon with its clock at `now` (RFC 3339), or the real one.
fn start_at(h: &Hearth, now: Option<&str>) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        if let Some(now) = now {
            cmd.env("HEARTH_FAKE_NOW", now);
        }
    })
}

/// Calls `manage_schedule` through the running daemon as the owner.
fn schedule(h: &Hearth, args: Value) -> Value {
    h.cmd(&["tool", "call", "manage_schedule", &args.to_string()])
        .json()
}

/// Calls `manage_schedule` in a way that must be refused; the error.
fn schedule_fails(h: &Hearth, args: Value) -> String {
    h.cmd(&["tool", "call", "manage_schedule", &args.to_string()])
        .fails()
}

/// `(job id, text)` of every message the scheduler stored, oldest first.
fn firings(h: &Hearth) -> Vec<(i64, String)> {
    let db = h.db();
    let mut stmt = db
        .prepare("SELECT job_id, text FROM inbox WHERE source = 'scheduler' ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn a_reminder_set_in_a_telegram_chat_comes_back_to_that_chat() {
    let s = TelegramHome::new("", "");
    let _daemon = s.start();
    s.llm.push(anthropic_tool_use(
        None,
        "toolu_1",
        "manage_schedule",
        &json!({"action": "add", "kind": "reminder", "in": "2s", "text": "stretch"}),
    ));
    s.llm.push(anthropic_text("I will remind you."));
    s.llm.push(anthropic_text("Time to stretch!"));
    s.telegram
        .push_message(OWNER, OWNER, "remind me in two seconds to stretch");
    let sent = s.wait_sent_to(OWNER, 2);
    assert!(sent[0].text.contains("I will remind you."), "{sent:#?}");
    assert!(sent[1].text.contains("Time to stretch!"), "{sent:#?}");
    // The model was told what fired, as the scheduler, in the same session.
    let requests = s.llm.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("Reminder (job 1"), "{last}");
    assert!(last.contains("stretch"), "{last}");
    assert!(last.contains("remind me in two seconds"), "{last}");
    assert!(last.contains("comes from your scheduler"), "{last}");
    let tool_answer = requests[1].body.to_string();
    assert!(tool_answer.contains("next_runs"), "{tool_answer}");
}

#[test]
fn a_task_answer_reaches_the_notify_channel_even_when_it_was_down() {
    let s = TelegramHome::new("", "");
    let config = std::fs::read_to_string(s.home.config()).unwrap();
    s.home
        .write_config(&config.replace("[owner]\n", "[owner]\nnotify = \"telegram\"\n"));
    let _daemon = s.start();
    s.telegram
        .fail_next("sendMessage", 502, "Bad Gateway: the channel is down");
    s.llm.push(anthropic_text("Your inbox: 3 new invoices."));
    s.llm.push(anthropic_text("[silent]"));
    let task = schedule(
        &s.home,
        json!({"action": "add", "kind": "task", "in": "1s", "text": "summarize my inbox",
               "model": "fake-small"}),
    );
    assert_eq!(task["kind"], "task");
    let sent = s.wait_sent_to(OWNER, 1);
    assert!(sent[0].text.contains("3 new invoices"), "{sent:#?}");
    // The task asked the model it names.
    let asked = &s.llm.requests()[0].body;
    assert_eq!(asked["model"], "fake-small");
    assert!(asked.to_string().contains("summarize my inbox"));
    assert!(s.telegram.requests_for("sendMessage").len() >= 2);
    // A task that answers [silent] delivers nothing.
    schedule(
        &s.home,
        json!({"action": "add", "kind": "task", "in": "1s", "text": "anything new?"}),
    );
    wait_until("the silent task's turn", || {
        s.home
            .db()
            .query_row(
                "SELECT count(*) FROM inbox WHERE source = 'scheduler' AND status = 'done'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            == 2
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.sent_to(OWNER).len(), 1, "{:#?}", s.telegram.sent());
    // Each firing ran in a fresh session of its own.
    let sessions: i64 = s
        .home
        .db()
        .query_row(
            "SELECT count(*) FROM sessions WHERE channel = 'scheduler'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(sessions, 2);
}

#[test]
fn a_time_that_dst_skips_fires_once_at_the_first_valid_instant() {
    let h = Hearth::new("[owner]\ntimezone = \"Europe/Berlin\"\n");
    // Two seconds before 03:00 CEST on the day Berlin springs forward.
    let _daemon = start_at(&h, Some("2026-03-29T00:59:58Z"));
    let job = schedule(
        &h,
        json!({"action": "add", "kind": "task", "cron": "30 2 * * *", "text": "water the plants"}),
    );
    assert_eq!(
        job["next_runs"],
        json!([
            "2026-03-29 03:00 CEST",
            "2026-03-30 02:30 CEST",
            "2026-03-31 02:30 CEST"
        ])
    );
    wait_until("the 02:30 job", || !firings(&h).is_empty());
    std::thread::sleep(Duration::from_millis(1500));
    let fired = firings(&h);
    assert_eq!(fired.len(), 1, "{fired:#?}");
    assert!(
        fired[0].1.contains("due 2026-03-29 03:00 CEST"),
        "{fired:#?}"
    );
    assert!(!fired[0].1.contains("late"), "{fired:#?}");
}

#[test]
fn runs_missed_while_down_follow_each_jobs_policy() {
    // No model runs these tasks: each run fails, and must not disable them.
    let h = Hearth::new("[scheduler]\nmax_failures = 10\n");
    let mut daemon = start_at(&h, Some("2026-01-05T10:00:00Z"));
    let mut ids = Vec::new();
    for missed in ["once", "skip", "all"] {
        let job = schedule(
            &h,
            json!({"action": "add", "kind": "task", "cron": "0 * * * *", "zone": "UTC",
                   "text": format!("hourly {missed}"), "missed": missed}),
        );
        ids.push(job["id"].as_i64().unwrap());
    }
    daemon.kill9();
    // Down across 11:00, 12:00 and 13:00.
    let _daemon = start_at(&h, Some("2026-01-05T13:30:00Z"));
    wait_until("the late runs", || firings(&h).len() >= 4);
    std::thread::sleep(Duration::from_millis(500));
    let fired = firings(&h);
    let of = |id: i64| -> Vec<&String> {
        fired
            .iter()
            .filter(|(job, _)| *job == id)
            .map(|(_, t)| t)
            .collect()
    };
    let once = of(ids[0]);
    assert_eq!(once.len(), 1, "{fired:#?}");
    assert!(once[0].contains("2 h 30 min late"), "{once:?}");
    assert!(once[0].contains("3 runs were missed"), "{once:?}");
    assert!(of(ids[1]).is_empty(), "{fired:#?}");
    let all = of(ids[2]);
    assert_eq!(all.len(), 3, "{fired:#?}");
    for (text, due) in all.iter().zip(["11:00", "12:00", "13:00"]) {
        assert!(
            text.contains(&format!("due 2026-01-05 {due} UTC")),
            "{text}"
        );
    }
    // Each job's next run is 14:00.
    let list = schedule(&h, json!({"action": "list"}));
    for job in list["jobs"].as_array().unwrap() {
        assert_eq!(job["next_run"], "2026-01-05 14:00 UTC", "{job}");
    }
    let skipped = &list["jobs"].as_array().unwrap()[1]["last_outcome"];
    assert_eq!(skipped, "skipped 3 missed run(s)");
}

#[test]
fn killed_at_random_points_while_100_jobs_fire_every_firing_is_stored_once() {
    let h = Hearth::new("");
    // Creates the store; the jobs are written while nothing runs.
    h.cmd(&["schedule", "list"]).ok();
    let now = hearth::store::now_ms();
    {
        let db = h.db();
        for i in 0..100 {
            // Due one after another, 25 ms apart, from a second from now.
            let due = now + 1_000 + i * 25;
            db.execute(
                "INSERT INTO jobs (kind, zone, at_ms, text, agent_id, next_run_ms, created_at_ms, updated_at_ms) \
                 VALUES ('task', 'UTC', ?1, ?2, 1, ?1, ?3, ?3)",
                rusqlite::params![due, format!("job number {i}"), now],
            )
            .unwrap();
        }
    }
    let mut seed = now as u64;
    for _ in 0..5 {
        let mut daemon = start_at(&h, None);
        // A pseudo-random moment within the firing window.
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(200 + (seed >> 33) % 1200));
        daemon.kill9();
    }
    let _daemon = start_at(&h, None);
    wait_until("every firing", || firings(&h).len() >= 100);
    std::thread::sleep(Duration::from_millis(500));
    let fired = firings(&h);
    assert_eq!(fired.len(), 100, "seed {now}");
    let mut jobs: Vec<i64> = fired.iter().map(|(job, _)| *job).collect();
    jobs.sort_unstable();
    jobs.dedup();
    assert_eq!(jobs.len(), 100, "a job fired twice (seed {now})");
}

#[test]
fn limits_refuse_with_clear_errors_and_failing_jobs_are_disabled() {
    let h = Hearth::new(
        "[scheduler]\nmax_jobs_per_agent = 2\nmax_creations_per_hour = 4\nmax_failures = 2\n",
    );
    let _daemon = start_at(&h, None);
    let add = |text: &str| json!({"action": "add", "kind": "task", "cron": "@daily", "text": text});
    let first = schedule(&h, add("one"))["id"].as_i64().unwrap();
    schedule(&h, add("two"));
    let err = schedule_fails(&h, add("three"));
    assert!(err.contains("main already has 2 jobs"), "{err}");
    assert!(err.contains("max_jobs_per_agent"), "{err}");
    schedule(&h, json!({"action": "remove", "id": first}));
    let third = schedule(&h, add("three"))["id"].as_i64().unwrap();
    schedule(&h, json!({"action": "remove", "id": third}));
    schedule(&h, add("four"));
    schedule(&h, json!({"action": "remove", "id": third + 1}));
    let err = schedule_fails(&h, add("five"));
    assert!(
        err.contains("4 jobs were created in the last hour"),
        "{err}"
    );
    assert!(err.contains("max_creations_per_hour"), "{err}");

    // No model is configured, so every run of a task fails; the second
    // failure in a row disables the job and tells the owner.
    let id = 2;
    for run in 1..=2 {
        h.cmd(&["schedule", "run", &id.to_string()]).ok();
        wait_until("the run's outcome", || {
            h.db()
                .query_row("SELECT failures FROM jobs WHERE id = ?1", [id], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap()
                == run
        });
    }
    let list = h.cmd(&["schedule", "list", "--json"]).json();
    let job = &list.as_array().unwrap()[0];
    assert_eq!(job["state"], "disabled", "{job}");
    let told: String = h
        .db()
        .query_row(
            "SELECT text FROM outbox WHERE text LIKE '%disabled%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(told.contains("job 2 failed 2 times in a row"), "{told}");
    let enabled = h.cmd(&["schedule", "enable", "2"]).ok().to_owned();
    assert!(enabled.contains("job 2 is scheduled"), "{enabled}");
    let shown = h.chat("/schedule").ok().to_owned();
    assert!(shown.contains("Jobs (times in"), "{shown}");
    assert!(shown.contains("two"), "{shown}");
}

#[test]
fn bad_input_is_refused_naming_the_field() {
    let h = Hearth::new("");
    let _daemon = start_at(&h, None);
    let cases = [
        (
            json!({"action": "add", "kind": "task", "cron": "61 * * * *", "text": "x"}),
            "field `cron`",
        ),
        (
            json!({"action": "add", "kind": "task", "cron": "0 0 30 2 *", "text": "x"}),
            "never fires",
        ),
        (
            json!({"action": "add", "kind": "task", "cron": "@daily", "zone": "Mars/Base", "text": "x"}),
            "field `zone`",
        ),
        (
            json!({"action": "add", "kind": "task", "at": "2020-01-01 09:00", "text": "x"}),
            "field `at`: 2020-01-01 09:00",
        ),
        (
            json!({"action": "add", "kind": "task", "at": "someday", "text": "x"}),
            "field `at`",
        ),
        (
            json!({"action": "add", "kind": "task", "in": "-5m", "text": "x"}),
            "field `in`",
        ),
        (
            json!({"action": "add", "kind": "task", "in": "5m", "text": "x", "agent": "nobody"}),
            "field `agent`",
        ),
        (
            json!({"action": "add", "kind": "task", "in": "5m", "text": "  "}),
            "field `text`",
        ),
        (
            json!({"action": "add", "kind": "task", "in": "5m", "cron": "@daily", "text": "x"}),
            "give only one",
        ),
        (
            json!({"action": "add", "kind": "task", "text": "x"}),
            "`cron`, `at` or `in` is required",
        ),
        (
            json!({"action": "add", "kind": "reminder", "in": "5m", "text": "x"}),
            "field `kind`",
        ),
        (
            json!({"action": "add", "kind": "task", "in": "5m", "text": "x".repeat(20_001)}),
            "maxLength",
        ),
        (
            json!({"action": "update", "id": 999, "text": "x"}),
            "no job 999",
        ),
        (json!({"action": "launch"}), "action"),
    ];
    for (args, want) in cases {
        let err = schedule_fails(&h, args.clone());
        assert!(err.contains(want), "{args}: {err}");
    }
    assert!(
        schedule(&h, json!({"action": "list"}))["jobs"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn an_idle_daemon_with_200_jobs_far_ahead_makes_no_wake_ups() {
    // The script watcher is off: other tests' daemons open the bundled
    // scripts, and every open is an inotify event for each watcher.
    let h = Hearth::new("[scripts]\nwatch = false\n");
    let daemon = start_at(&h, None);
    for i in 0..199 {
        h.db()
            .execute(
                "INSERT INTO jobs (kind, cron, zone, text, agent_id, next_run_ms, created_at_ms, updated_at_ms) \
                 VALUES ('task', '0 9 1 1 *', 'UTC', ?1, 1, ?2, 0, 0)",
                rusqlite::params![format!("new year {i}"), hearth::store::now_ms() + 86_400_000 * 30],
            )
            .unwrap();
    }
    // A change wakes the scheduler once; it then sleeps until next month.
    schedule(
        &h,
        json!({"action": "add", "kind": "task", "cron": "0 9 1 1 *", "text": "one more"}),
    );
    std::thread::sleep(Duration::from_secs(1));
    let before = context_switches(daemon.pid());
    std::thread::sleep(Duration::from_secs(10));
    let after = context_switches(daemon.pid());
    let woke = switched(&before, &after);
    let total: i64 = woke.iter().map(|(_, n)| n).sum();
    assert!(total <= 2, "context switches in 10 s of idling: {woke:#?}");
}

/// Context switches of every thread of process `pid` so far, by thread.
fn context_switches(pid: i32) -> Vec<(String, i64)> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let path = task.unwrap().path();
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        let name = format!(
            "{} {}",
            status.lines().next().unwrap_or_default(),
            path.display()
        );
        let switches = status
            .lines()
            .filter_map(|line| {
                line.strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            })
            .map(|n| n.trim().parse::<i64>().unwrap_or(0))
            .sum();
        threads.push((name, switches));
    }
    threads
}

/// The switches each thread made between two readings, where it made any.
fn switched(before: &[(String, i64)], after: &[(String, i64)]) -> Vec<(String, i64)> {
    after
        .iter()
        .map(|(name, n)| {
            let was = before
                .iter()
                .find(|(b, _)| b == name)
                .map_or(0, |(_, n)| *n);
            (name.clone(), n - was)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}
