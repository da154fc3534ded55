//! The crash suite's driver, shared by its short form (`tests/crash.rs`, in
//! `cargo test`) and its long form (`tests/benches/crash.rs`).
//!
//! The real daemon runs with the Telegram plugin against the fake Bot API
//! and a fake model that answers after a delay, often with tool calls
//! first; a low compaction threshold makes the conversation compact every
//! few turns, and one-shot scheduled tasks come due throughout. Updates
//! arrive at random moments while the daemon is killed with SIGKILL at
//! random moments (seeded, so a failure can be replayed) and restarted.
//! After the last restart everything settles, and [`Figures`] says what
//! survived: acknowledged updates lost (the poller moved its offset past
//! them, yet they are not in the inbox), updates and tasks never answered,
//! duplicated replies and whether each falls in the outbox's send window
//! (a reply Telegram took whose `delivered` mark the kill prevented: the
//! last send of a killed life, sent again after the restart), and the
//! result of `PRAGMA integrity_check` after every restart.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_llm::{Recorded, Reply, anthropic_text, anthropic_tool_use};
use crate::telegram_home::{OWNER, TelegramHome};
use crate::{Daemon, Hearth};

/// The environment variable that replays a run: its seed.
pub const SEED_VAR: &str = "HEARTH_CRASH_SEED";

/// What one run does.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Telegram updates sent in all.
    pub updates: usize,
    /// SIGKILLs, each followed by a restart.
    pub kills: usize,
    /// One-shot scheduled tasks, due one after another during the kills.
    pub tasks: usize,
    /// The seed of every random choice the driver makes.
    pub seed: u64,
}

impl Plan {
    /// `updates` and `kills`, a task per ten updates, and the seed from
    /// [`SEED_VAR`] or else the clock. The seed is printed, so a failed
    /// run can be replayed.
    pub fn new(updates: usize, kills: usize) -> Plan {
        let seed = match std::env::var(SEED_VAR) {
            Ok(text) => text
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("{SEED_VAR}={text:?} is not a number")),
            Err(_) => clock_seed(),
        };
        eprintln!("crash suite: seed {seed} (replay with {SEED_VAR}={seed})");
        Plan {
            updates,
            kills,
            tasks: updates.div_ceil(10),
            seed,
        }
    }
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Figures {
    /// The plan's seed.
    pub seed: u64,
    /// Updates sent.
    pub updates: usize,
    /// Kills made.
    pub kills: usize,
    /// Updates the poller acknowledged (moved its offset past).
    pub acknowledged: usize,
    /// Acknowledged updates missing from the inbox, by `update_id`.
    pub acknowledged_lost: Vec<i64>,
    /// Updates and tasks with no reply at the end, by tag.
    pub unanswered: Vec<String>,
    /// Replies sent more than once (each extra copy counts one).
    pub duplicates: usize,
    /// Duplicates that were not the last send of a killed life, or whose
    /// copies differ: each with why.
    pub duplicates_outside_window: Vec<String>,
    /// `PRAGMA integrity_check` answers other than `ok`, with the restart.
    pub integrity_failures: Vec<String>,
    /// Scheduled tasks set.
    pub tasks: usize,
    /// Tasks whose firing is in the inbox.
    pub tasks_fired: usize,
    /// Firings stored more than once.
    pub tasks_fired_twice: usize,
    /// Turns the daemon re-ran after a restart (a kill cut them short).
    pub turns_rerun: usize,
    /// Kills by the moment they were aimed at.
    pub kill_moments: BTreeMap<&'static str, usize>,
    /// Kills that landed while a model answer was streaming.
    pub kills_in_model_calls: usize,
    /// Tool calls the model asked for.
    pub tool_calls: usize,
    /// Compactions the daemon logged.
    pub compactions: usize,
    /// The whole run.
    pub elapsed: Duration,
}

impl Figures {
    /// The figures as lines for a person.
    pub fn report(&self) -> String {
        format!(
            "seed {}\nupdates {} (acknowledged {}), kills {}, {:.1} s\n\
             acknowledged lost: {}\nunanswered: {}\nintegrity failures: {}\n\
             duplicates: {} (outside the send window: {})\n\
             scheduled tasks: {} set, {} fired ({} twice)\n\
             kills aimed at: {}\n\
             turns re-run after a kill: {}; kills during a model answer: {}; \
             tool calls: {}; compactions: {}",
            self.seed,
            self.updates,
            self.acknowledged,
            self.kills,
            self.elapsed.as_secs_f64(),
            self.acknowledged_lost.len(),
            self.unanswered.len(),
            self.integrity_failures.len(),
            self.duplicates,
            self.duplicates_outside_window.len(),
            self.tasks,
            self.tasks_fired,
            self.tasks_fired_twice,
            self.kill_moments
                .iter()
                .map(|(moment, n)| format!("{moment} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.turns_rerun,
            self.kills_in_model_calls,
            self.tool_calls,
            self.compactions,
        )
    }

    /// Panics, with the report and the details, unless nothing was lost,
    /// everything was answered, the store stayed sound and every
    /// duplicate fell in the send window (at most one per kill).
    pub fn assert_sound(&self) {
        let mut wrong = Vec::new();
        if !self.acknowledged_lost.is_empty() {
            wrong.push(format!(
                "acknowledged but lost: {:?}",
                self.acknowledged_lost
            ));
        }
        if !self.unanswered.is_empty() {
            wrong.push(format!("never answered: {:?}", self.unanswered));
        }
        if !self.integrity_failures.is_empty() {
            wrong.push(format!("integrity: {:?}", self.integrity_failures));
        }
        if !self.duplicates_outside_window.is_empty() {
            wrong.push(format!(
                "duplicates outside the send window: {:?}",
                self.duplicates_outside_window
            ));
        }
        if self.duplicates > self.kills {
            wrong.push(format!(
                "{} duplicates for {} kills",
                self.duplicates, self.kills
            ));
        }
        if self.tasks_fired != self.tasks || self.tasks_fired_twice > 0 {
            wrong.push(format!(
                "{} tasks, {} fired, {} fired twice",
                self.tasks, self.tasks_fired, self.tasks_fired_twice
            ));
        }
        assert!(
            wrong.is_empty(),
            "{}\n{}\n(replay with {SEED_VAR}={})",
            self.report(),
            wrong.join("\n"),
            self.seed
        );
    }
}

/// Runs `plan` and returns what survived.
pub fn run(plan: &Plan) -> Figures {
    let started = Instant::now();
    let mut rng = Rng(plan.seed);
    let model = Arc::new(Model {
        rng: Mutex::new(Rng(plan.seed ^ 0x5EED_F00D)),
        ..Model::default()
    });
    let s = TelegramHome::new(
        "",
        "[agent]\ncompact_after_messages = 12\nkeep_recent_messages = 4\n",
    );
    let answering = Arc::clone(&model);
    s.llm
        .respond_with(move |request| respond(request, &answering));
    let tasks = set_tasks(&s.home, plan);

    let mut figures = Figures {
        seed: plan.seed,
        updates: plan.updates,
        kills: plan.kills,
        tasks: plan.tasks,
        ..Figures::default()
    };
    let mut pushed: Vec<i64> = Vec::with_capacity(plan.updates);
    // How many messages the fake had taken when each killed life ended.
    let mut life_ends: Vec<usize> = Vec::with_capacity(plan.kills);
    let mut open_streams = 0;
    for life in 0..plan.kills {
        let mut daemon = s.start();
        check_integrity(&s.home, life, &mut figures);
        let quota = (plan.updates - pushed.len()) / (plan.kills - life + 1);
        let length = Duration::from_millis(rng.between(300, 2000));
        let mut at: Vec<Duration> = (0..quota)
            .map(|_| Duration::from_millis(rng.between(0, length.as_millis() as u64)))
            .collect();
        at.sort_unstable();
        let born = Instant::now();
        for moment in at {
            sleep_until(born + moment);
            pushed.push(push(&s, pushed.len()));
        }
        sleep_until(born + length);
        let moment = MOMENTS[rng.between(0, MOMENTS.len() as u64) as usize];
        let landed = wait_for(moment, &s, &model, &tasks, &mut rng, &mut pushed, plan);
        let streaming = s.llm.received().len() - s.llm.answered().len();
        if streaming > open_streams {
            figures.kills_in_model_calls += 1;
        }
        daemon.kill9();
        *figures.kill_moments.entry(landed.name()).or_default() += 1;
        // A request Telegram was reading as the process died still counts.
        std::thread::sleep(Duration::from_millis(50));
        open_streams = s.llm.received().len() - s.llm.answered().len();
        life_ends.push(s.telegram.sent().len());
        tally_logs(&daemon, &mut figures);
    }

    let mut daemon = s.start();
    check_integrity(&s.home, plan.kills, &mut figures);
    while pushed.len() < plan.updates {
        pushed.push(push(&s, pushed.len()));
        std::thread::sleep(Duration::from_millis(rng.between(0, 20)));
    }
    let tags: Vec<String> = (0..plan.updates)
        .map(|n| format!("ping-{n}"))
        .chain((0..plan.tasks).map(|n| format!("task-{n}")))
        .collect();
    let last_due = tasks.iter().max().copied().unwrap_or(0);
    settle(&s, &tags, last_due, plan);
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit(Duration::from_secs(30));
    tally_logs(&daemon, &mut figures);
    check_integrity(&s.home, plan.kills + 1, &mut figures);

    judge(&s, &pushed, &tags, &life_ends, &mut figures);
    figures.tool_calls = model.tool_calls.load(Ordering::Relaxed);
    figures.elapsed = started.elapsed();
    figures
}

/// How long the last restart may take to answer everything, beyond the
/// last task's due time.
fn settle_limit(plan: &Plan) -> Duration {
    Duration::from_secs(60) + Duration::from_millis(500) * (plan.updates + plan.tasks) as u32
}

/// Waits until every tag has a reply and Telegram holds no unconfirmed
/// update, or the limit passes (the judgement then says what is missing).
fn settle(s: &TelegramHome, tags: &[String], last_due_ms: i64, plan: &Plan) {
    let wait_for_tasks = (last_due_ms - hearth::store::now_ms()).max(0) as u64;
    let deadline = Instant::now() + Duration::from_millis(wait_for_tasks) + settle_limit(plan);
    while Instant::now() < deadline {
        let answered = replies(s);
        if s.telegram.pending_updates().is_empty() && tags.iter().all(|t| answered.contains_key(t))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Fills in what was lost, unanswered and duplicated.
fn judge(
    s: &TelegramHome,
    pushed: &[i64],
    tags: &[String],
    life_ends: &[usize],
    figures: &mut Figures,
) {
    let offset = s
        .telegram
        .requests_for("getUpdates")
        .iter()
        .filter_map(|r| r.params["offset"].as_i64())
        .max()
        .unwrap_or(0);
    let db = s.home.db();
    let stored: BTreeSet<i64> = query(
        &db,
        "SELECT idempotency_key FROM inbox WHERE channel = 'telegram'",
    )
    .into_iter()
    .filter_map(|key| key.parse().ok())
    .collect();
    let acknowledged: Vec<i64> = pushed.iter().copied().filter(|id| *id < offset).collect();
    figures.acknowledged = acknowledged.len();
    figures.acknowledged_lost = acknowledged
        .into_iter()
        .filter(|id| !stored.contains(id))
        .collect();

    let fired = query(
        &db,
        "SELECT job_id FROM inbox WHERE source = 'scheduler' AND job_id IS NOT NULL",
    );
    figures.tasks_fired = fired.iter().collect::<BTreeSet<_>>().len();
    figures.tasks_fired_twice = fired.len() - figures.tasks_fired;

    let answered = replies(s);
    figures.unanswered = tags
        .iter()
        .filter(|t| !answered.contains_key(*t))
        .cloned()
        .collect();
    let sent = s.telegram.sent();
    for (tag, at) in &answered {
        figures.duplicates += at.len() - 1;
        for pair in at.windows(2) {
            let (first, again) = (pair[0], pair[1]);
            let life = life_ends.iter().position(|end| first < *end);
            let last_of_a_killed_life = life.is_some_and(|l| life_ends[l] == first + 1);
            let later_life = life.is_some_and(|l| again >= life_ends[l]);
            if !last_of_a_killed_life || !later_life {
                figures.duplicates_outside_window.push(format!(
                    "{tag}: sends #{first} and #{again}, lives end at {life_ends:?}"
                ));
            } else if sent[first].text != sent[again].text {
                figures
                    .duplicates_outside_window
                    .push(format!("{tag}: two different replies"));
            }
        }
    }
}

/// Where each tag's replies are among the messages sent (their indexes).
fn replies(s: &TelegramHome) -> BTreeMap<String, Vec<usize>> {
    let mut found: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (n, sent) in s.telegram.sent().iter().enumerate() {
        if sent.chat_id != OWNER {
            continue;
        }
        if let Some(tag) = sent.text.strip_prefix("re: ").and_then(tag_in) {
            found.entry(tag).or_default().push(n);
        }
    }
    found
}

/// Sends update number `n` from the owner; its `update_id`.
fn push(s: &TelegramHome, n: usize) -> i64 {
    s.telegram
        .push_message(OWNER, OWNER, &format!("hello, this is ping-{n}"))
}

/// Stores the plan's one-shot tasks, due one after another over the time
/// the kills are expected to take; their due instants.
fn set_tasks(home: &Hearth, plan: &Plan) -> Vec<i64> {
    // Creates the store.
    home.cmd(&["schedule", "list"]).ok();
    let span_ms = plan.kills as i64 * 1_800;
    let now = hearth::store::now_ms();
    let db = home.db();
    (0..plan.tasks)
        .map(|n| {
            let due = now + 2_000 + span_ms * n as i64 / plan.tasks.max(1) as i64;
            db.execute(
                "INSERT INTO jobs (kind, zone, at_ms, text, agent_id, next_run_ms, created_at_ms, updated_at_ms) \
                 VALUES ('task', 'UTC', ?1, ?2, 1, ?1, ?3, ?3)",
                rusqlite::params![due, format!("check on task-{n}"), now],
            )
            .expect("store a scheduled task");
            due
        })
        .collect()
}

/// Runs `PRAGMA integrity_check` beside the running daemon (a reader of
/// its own, so the daemon's recovery of the write-ahead log is not
/// disturbed), recording anything but `ok`.
fn check_integrity(home: &Hearth, restart: usize, figures: &mut Figures) {
    let db = home.db();
    db.busy_timeout(Duration::from_secs(10))
        .expect("set a busy timeout");
    let answer = query(&db, "PRAGMA integrity_check");
    if answer != ["ok"] {
        figures
            .integrity_failures
            .push(format!("restart {restart}: {}", answer.join("; ")));
    }
}

/// Every first column of `sql`'s rows, as text.
fn query(db: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut stmt = db.prepare(sql).expect("prepare a query");
    stmt.query_map([], |r| {
        let value: rusqlite::types::Value = r.get(0)?;
        Ok(match value {
            rusqlite::types::Value::Text(text) => text,
            rusqlite::types::Value::Integer(n) => n.to_string(),
            other => format!("{other:?}"),
        })
    })
    .expect("run a query")
    .collect::<Result<_, _>>()
    .expect("read a row")
}

/// Adds what a life's log says: turns re-run, compactions.
fn tally_logs(daemon: &Daemon, figures: &mut Figures) {
    for line in daemon.logs() {
        let Ok(entry) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let fields = &entry["fields"];
        match fields["message"].as_str() {
            Some("re-running turns interrupted by the last stop") => {
                figures.turns_rerun += fields["count"].as_u64().unwrap_or(1) as usize;
            }
            Some("conversation compacted") => figures.compactions += 1,
            _ => {}
        }
    }
}

/// A seed from the clock, for a run that was not asked to replay one.
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn sleep_until(moment: Instant) {
    std::thread::sleep(moment.saturating_duration_since(Instant::now()));
}

/// The fake model: a summary for a compaction, "ok" for the step before
/// one, and for a turn a tool call (at most two in a row) or the reply
/// naming the message it answers, each streamed with a delay.
fn respond(request: &Recorded, model: &Model) -> Reply {
    let mut rng = model.rng.lock().unwrap_or_else(PoisonError::into_inner);
    let gap = Duration::from_millis(rng.between(2, 15));
    let paced = |reply: Reply| match reply {
        Reply::Sse(sse) => Reply::Paced { sse, gap },
        other => other,
    };
    let body = &request.body;
    if crate::fake_llm::system_prompt(body).starts_with("You summarize conversations") {
        model.summaries.fetch_add(1, Ordering::Relaxed);
        return paced(anthropic_text("The owner sent pings; each got its answer."));
    }
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    if tools == ["notepad"] {
        return paced(anthropic_text("ok"));
    }
    let (tag, steps) = last_typed(&body["messages"]);
    let tag = tag.unwrap_or_else(|| "nothing".to_owned());
    let offered: Vec<&str> = ["notepad", "search_history"]
        .into_iter()
        .filter(|name| tools.contains(name))
        .collect();
    if steps < 2 && !offered.is_empty() && rng.between(0, 10) < 4 {
        let n = model.tool_calls.fetch_add(1, Ordering::Relaxed);
        let name = offered[n % offered.len()];
        let input = match name {
            "notepad" => json!({"action": "replace", "text": format!("working on {tag}")}),
            _ => json!({"query": "ping"}),
        };
        return paced(anthropic_tool_use(
            None,
            &format!("toolu_crash_{n}"),
            name,
            &input,
        ));
    }
    paced(anthropic_text(&format!("re: {tag}")))
}

/// The tag of the last message a person (or the scheduler) typed, and how
/// many model steps followed it.
fn last_typed(messages: &Value) -> (Option<String>, usize) {
    let mut steps = 0;
    for message in messages.as_array().into_iter().flatten().rev() {
        if message["role"] == "assistant" {
            steps += 1;
            continue;
        }
        let blocks: Vec<&Value> = match &message["content"] {
            Value::Array(blocks) => blocks.iter().collect(),
            other => vec![other],
        };
        if blocks.iter().any(|b| b["type"] == "tool_result") {
            continue;
        }
        let text: String = blocks
            .iter()
            .filter_map(|b| b.as_str().or_else(|| b["text"].as_str()))
            .collect();
        return (tag_in(&text), steps);
    }
    (None, steps)
}

/// The last `ping-N` or `task-N` in `text`.
fn tag_in(text: &str) -> Option<String> {
    ["ping-", "task-"]
        .into_iter()
        .filter_map(|prefix| {
            let at = text.rfind(prefix)?;
            let digits: String = text[at + prefix.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            (!digits.is_empty()).then(|| (at, format!("{prefix}{digits}")))
        })
        .max()
        .map(|(_, tag)| tag)
}

/// What the fake model shares with the driver.
#[derive(Default)]
struct Model {
    rng: Mutex<Rng>,
    /// Tool calls asked for.
    tool_calls: AtomicUsize,
    /// Compaction summaries asked for.
    summaries: AtomicUsize,
}

/// The moments a kill is aimed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Moment {
    /// Whatever is happening when a life's random length is up.
    Anytime,
    /// Just after an update arrived: the poll, the gate, the inbox write,
    /// the offset.
    Inbound,
    /// Just after Telegram took a reply: the outbox's send window.
    Delivery,
    /// Just after a model answer ended: storing the step, running its
    /// tools, the reply's hand-off to the outbox.
    AfterModel,
    /// While a compaction's summary streams or is stored.
    Compaction,
    /// As a scheduled task comes due.
    Firing,
}

const MOMENTS: [Moment; 6] = [
    Moment::Anytime,
    Moment::Inbound,
    Moment::Delivery,
    Moment::AfterModel,
    Moment::Compaction,
    Moment::Firing,
];

/// The longest a life waits for the moment its kill is aimed at.
const AIM_LIMIT: Duration = Duration::from_secs(4);

impl Moment {
    fn name(self) -> &'static str {
        match self {
            Moment::Anytime => "anytime",
            Moment::Inbound => "an update's arrival",
            Moment::Delivery => "a reply's delivery",
            Moment::AfterModel => "a model answer's end",
            Moment::Compaction => "a compaction",
            Moment::Firing => "a task's firing",
        }
    }
}

/// Waits for `moment` (at most [`AIM_LIMIT`]) and a little random time
/// after it; returns the moment it got, [`Moment::Anytime`] when the one
/// aimed at did not come.
fn wait_for(
    moment: Moment,
    s: &TelegramHome,
    model: &Model,
    tasks: &[i64],
    rng: &mut Rng,
    pushed: &mut Vec<i64>,
    plan: &Plan,
) -> Moment {
    let deadline = Instant::now() + AIM_LIMIT;
    let until = |done: &dyn Fn() -> bool| {
        while !done() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        true
    };
    let came = match moment {
        Moment::Anytime => true,
        Moment::Inbound if pushed.len() < plan.updates => {
            pushed.push(push(s, pushed.len()));
            std::thread::sleep(Duration::from_millis(rng.between(0, 30)));
            true
        }
        Moment::Inbound => false,
        Moment::Delivery => {
            let sent = s.telegram.sent().len();
            let came = s.telegram.wait_for_sent(sent + 1, AIM_LIMIT).len() > sent;
            std::thread::sleep(Duration::from_micros(rng.between(0, 3000)));
            came
        }
        Moment::AfterModel => {
            let answered = s.llm.answered().len();
            let came = until(&|| s.llm.answered().len() > answered);
            std::thread::sleep(Duration::from_millis(rng.between(0, 10)));
            came
        }
        Moment::Compaction => {
            let summaries = model.summaries.load(Ordering::Relaxed);
            let came = until(&|| model.summaries.load(Ordering::Relaxed) > summaries);
            std::thread::sleep(Duration::from_millis(rng.between(0, 200)));
            came
        }
        Moment::Firing => {
            let now = hearth::store::now_ms();
            match tasks.iter().find(|due| **due > now) {
                Some(due) if *due - now < AIM_LIMIT.as_millis() as i64 => {
                    let wait = (*due - now) as u64 + rng.between(0, 20);
                    std::thread::sleep(Duration::from_millis(wait));
                    true
                }
                _ => false,
            }
        }
    };
    if came { moment } else { Moment::Anytime }
}

/// SplitMix64: a small seeded generator, so a run is replayed from its
/// seed without a dependency.
#[derive(Default)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..high` (`low` when the range is empty).
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % high.saturating_sub(low).max(1)
    }
}
