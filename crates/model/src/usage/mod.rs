//! What the model calls use: every call's tokens recorded with the agent,
//! session, model and time; the reports `/usage` and `hearth usage` show;
//! and the token budgets that end a turn.
//!
//! - `store`: the `usage` table, written in batches by a thread;
//! - `prices`: US dollars per million tokens, defaults and `[prices]`;
//! - `period`: today and this month in the owner's zone;
//! - `report`: tokens and estimated cost per model over those spans, the
//!   share of prompt tokens read from the cache, the fixed overhead;
//! - `cache_watch`: the warning when a conversation's cache breaks.
//!
//! [`Meter`] is the daemon's one instance. Every model call that answered
//! is recorded through it (a turn's steps, the step before a compaction
//! and its summary, workers); it keeps today's total and each running
//! turn's total in memory, so checking a budget before a call costs a lock
//! and a comparison, never a query. Budgets count every token the provider
//! reported (input, output, cache reads and writes): `[agent]
//! daily_token_budget` over all agents' calls since local midnight,
//! `[agent] max_tokens_per_turn` over one turn's calls (its workers'
//! included), and a scheduled task's own `token_budget` likewise. A call
//! that failed reported nothing and counts nothing.

pub mod cache_watch;
pub mod period;
pub mod prices;
pub mod report;
mod store;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use jiff::tz::TimeZone;

pub use prices::{Price, Prices};
pub use store::ModelTotals;

use crate::llm::Usage;
use hearth_base::config::Config;
use hearth_base::store::{Cold, now_ms};
use hearth_base::time_text::{human, local_time};
use period::Span;

/// Why a model call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A step of a turn.
    Turn,
    /// The notepad step before a compaction.
    PreCompaction,
    /// A compaction's summary.
    Compaction,
    /// A delegated worker's step.
    Worker,
    /// A summary of long output by the cheap model (`[llm.cheap]`).
    Summary,
    /// A step of a group's leader or member (`groups`).
    Group,
    /// Automatic memory capture by the cheap model (`[memory.capture]`).
    Capture,
}

impl Kind {
    /// Its name in the `usage` table.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Turn => "turn",
            Kind::PreCompaction => "pre_compaction",
            Kind::Compaction => "compaction",
            Kind::Worker => "worker",
            Kind::Summary => "summary",
            Kind::Group => "group",
            Kind::Capture => "capture",
        }
    }
}

/// Who made a model call, and in what.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The agent whose work it is (for a worker, the agent that spawned
    /// it).
    pub agent: i64,
    /// The session it belongs to.
    pub session: Option<i64>,
    /// The turn (its inbox message) whose count it adds to.
    pub turn: Option<i64>,
    /// Why.
    pub kind: Kind,
    /// The wire format (`llm::Llm::provider`).
    pub provider: &'static str,
    /// The model that answered.
    pub model: &'a str,
}

/// `[agent] daily_token_budget` and `max_tokens_per_turn`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budgets {
    /// Tokens all agents may use per local day.
    pub daily: Option<u64>,
    /// Tokens one turn may use.
    pub per_turn: Option<u64>,
}

/// What the meter and the reports read from the config.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The owner's zone, by name (`[owner] timezone`, else the system's).
    pub zone_name: String,
    /// That zone.
    pub zone: TimeZone,
    /// The budgets.
    pub budgets: Budgets,
    /// The price table.
    pub prices: Prices,
}

impl Settings {
    /// The settings `config` gives.
    pub fn from_config(config: &Config) -> Settings {
        let zone_name = hearth_base::schedule::owner_zone(config.owner.timezone.as_deref());
        let zone = hearth_base::schedule::time_zone(&zone_name).unwrap_or(TimeZone::UTC);
        Settings {
            zone_name,
            zone,
            budgets: Budgets {
                daily: config.agent.daily_token_budget,
                per_turn: config.agent.max_tokens_per_turn,
            },
            prices: Prices::new(config.prices.clone()),
        }
    }
}

/// A budget that is used up: what ends a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spent {
    /// `[agent] daily_token_budget`.
    Daily {
        /// The budget.
        budget: u64,
        /// Tokens used today.
        used: u64,
        /// When today ends, in the owner's zone.
        resets_at_ms: i64,
        /// That zone's name.
        zone: String,
    },
    /// `[agent] max_tokens_per_turn`.
    Turn {
        /// The limit.
        limit: u64,
        /// Tokens this turn used.
        used: u64,
    },
    /// A scheduled task's own `token_budget`.
    Task {
        /// The budget.
        budget: u64,
        /// Tokens this run used.
        used: u64,
    },
}

impl Spent {
    /// The reply that ends the turn: which budget, how much was used, and
    /// what happens next.
    pub fn reply(&self, now_ms: i64) -> String {
        match self {
            Spent::Daily {
                budget,
                used,
                resets_at_ms,
                zone,
            } => format!(
                "I stopped: the daily token budget ([agent] daily_token_budget) of {} tokens is \
                 used up, {} tokens since midnight ({zone}). It resets at {}, in {}.",
                thousands(*budget),
                thousands(*used),
                local_time(*resets_at_ms, zone),
                human(resets_at_ms - now_ms)
            ),
            Spent::Turn { limit, used } => format!(
                "I stopped: this turn reached its token limit ([agent] max_tokens_per_turn) of {} \
                 tokens, with {} used. Ask me to continue if you want me to go on; the next \
                 message starts a fresh count.",
                thousands(*limit),
                thousands(*used)
            ),
            Spent::Task { budget, used } => format!(
                "I stopped: this task's token budget of {} is used up ({} tokens so far).",
                thousands(*budget),
                thousands(*used)
            ),
        }
    }

    /// The bound in a few words, for a worker's result.
    pub fn bound(&self) -> String {
        match self {
            Spent::Daily {
                budget,
                used,
                resets_at_ms,
                zone,
            } => format!(
                "the daily token budget ([agent] daily_token_budget) of {} tokens ({} used today; \
                 it resets at {})",
                thousands(*budget),
                thousands(*used),
                local_time(*resets_at_ms, zone)
            ),
            Spent::Turn { limit, used } => format!(
                "its caller's turn limit ([agent] max_tokens_per_turn) of {} tokens ({} used)",
                thousands(*limit),
                thousands(*used)
            ),
            Spent::Task { budget, used } => format!(
                "its caller's task budget of {} tokens ({} used)",
                thousands(*budget),
                thousands(*used)
            ),
        }
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Records model calls and keeps the counts the budgets read.
pub struct Meter {
    writer: store::Writer,
    cold: Cold,
    state: Mutex<State>,
    watch: cache_watch::CacheWatch,
}

struct State {
    settings: Settings,
    /// Today, in the owner's zone.
    day: Span,
    /// Tokens recorded in `day`.
    today: u64,
    /// The running turns, by inbox message.
    turns: HashMap<i64, TurnCount>,
    /// The day the owner was last told the daily budget stopped a
    /// contact's turn (told once a day).
    told_owner: Option<Span>,
    /// The characters of the main agent's last call's fixed part: the
    /// tools and the fixed system prompt.
    fixed_chars: Option<usize>,
    /// Prompt tokens of every call since the daemon started, and those
    /// read from the cache, for `/status`.
    prompt_tokens: u64,
    cached_tokens: u64,
}

/// How the prompt cache has served since the daemon started, for
/// `/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CacheFigures {
    /// Prompt tokens sent (read afresh, from the cache, or written to it).
    pub prompt_tokens: u64,
    /// Those read from the cache.
    pub cached_tokens: u64,
    /// About how many tokens the main agent's fixed prompt is (tools and
    /// fixed system prompt), once it has called the model.
    pub fixed_prompt_tokens: Option<u64>,
}

/// One running turn's tokens, and its own budget (a scheduled task's).
struct TurnCount {
    used: u64,
    budget: Option<u64>,
}

impl Meter {
    /// A meter recording on `cold`, with today's total read from the
    /// store.
    pub fn open(cold: Cold, settings: Settings) -> rusqlite::Result<Meter> {
        let day = period::day(now_ms(), &settings.zone);
        let today = store::tokens_in(&cold.lock(), day)?;
        Ok(Meter {
            writer: store::Writer::new(cold.clone()),
            cold,
            state: Mutex::new(State {
                settings,
                day,
                today,
                turns: HashMap::new(),
                told_owner: None,
                fixed_chars: None,
                prompt_tokens: 0,
                cached_tokens: 0,
            }),
            watch: cache_watch::CacheWatch::default(),
        })
    }

    /// Takes a conversation's newest request and what the provider
    /// reported for it, to warn when its cache breaks (`cache_watch`).
    pub fn watch(&self, session: i64, request: crate::llm::ChatRequest, usage: &Usage) {
        self.watch.observe(session, request, usage);
    }

    /// How the prompt cache has served since the start.
    pub fn cache_figures(&self) -> CacheFigures {
        let state = self.state();
        CacheFigures {
            prompt_tokens: state.prompt_tokens,
            cached_tokens: state.cached_tokens,
            fixed_prompt_tokens: state.fixed_chars.map(report::estimated_tokens),
        }
    }

    /// Notes the size of the main agent's fixed prompt (its tools and
    /// fixed system prompt), in characters, for the reports.
    pub fn note_fixed_prompt(&self, chars: usize) {
        self.state().fixed_chars = Some(chars);
    }

    /// Takes new budgets and prices (a config reload). The zone stays.
    pub fn configure(&self, config: &Config) {
        let fresh = Settings::from_config(config);
        let mut state = self.state();
        state.settings.budgets = fresh.budgets;
        state.settings.prices = fresh.prices;
    }

    /// Starts counting turn `inbox`'s tokens from zero, with the turn's own
    /// budget if it has one; the count ends when the guard is dropped.
    pub fn begin_turn(&self, inbox: i64, budget: Option<u64>) -> TurnGuard<'_> {
        self.state()
            .turns
            .insert(inbox, TurnCount { used: 0, budget });
        TurnGuard { meter: self, inbox }
    }

    /// Whether a model call may be made now for turn `turn`: the budget
    /// that is used up if not.
    pub fn check(&self, turn: Option<i64>) -> Result<(), Spent> {
        self.check_at(turn, now_ms())
    }

    fn check_at(&self, turn: Option<i64>, now: i64) -> Result<(), Spent> {
        let mut state = self.state();
        self.roll(&mut state, now);
        if let Some(budget) = state.settings.budgets.daily
            && state.today >= budget
        {
            return Err(Spent::Daily {
                budget,
                used: state.today,
                resets_at_ms: state.day.end_ms,
                zone: state.settings.zone_name.clone(),
            });
        }
        let Some(count) = turn.and_then(|id| state.turns.get(&id)) else {
            return Ok(());
        };
        if let Some(budget) = count.budget
            && count.used >= budget
        {
            return Err(Spent::Task {
                budget,
                used: count.used,
            });
        }
        match state.settings.budgets.per_turn {
            Some(limit) if count.used >= limit => Err(Spent::Turn {
                limit,
                used: count.used,
            }),
            _ => Ok(()),
        }
    }

    /// Records a call that answered with `usage`.
    pub fn record(&self, call: &Call<'_>, usage: &Usage) {
        self.record_at(call, usage, now_ms());
    }

    fn record_at(&self, call: &Call<'_>, usage: &Usage, now: i64) {
        let tokens = usage.total();
        {
            let mut state = self.state();
            self.roll(&mut state, now);
            state.today = state.today.saturating_add(tokens);
            state.prompt_tokens = state.prompt_tokens.saturating_add(
                usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            );
            state.cached_tokens = state.cached_tokens.saturating_add(usage.cache_read_tokens);
            if let Some(count) = call.turn.and_then(|id| state.turns.get_mut(&id)) {
                count.used = count.used.saturating_add(tokens);
            }
        }
        self.writer.push(store::Row {
            at_ms: now,
            agent: call.agent,
            session: call.session,
            inbox: call.turn,
            kind: call.kind,
            provider: call.provider,
            model: call.model.to_owned(),
            usage: *usage,
        });
    }

    /// Whether the owner should hear that `spent` stopped someone else's
    /// turn: always, except for the daily budget after the first time
    /// that day.
    pub fn tell_owner(&self, spent: &Spent) -> bool {
        if !matches!(spent, Spent::Daily { .. }) {
            return true;
        }
        let mut state = self.state();
        let today = state.day;
        let first = state.told_owner != Some(today);
        state.told_owner = Some(today);
        first
    }

    /// The report of `spans` (today, this month), with every recorded call
    /// in it.
    pub fn report(&self, now_ms: i64, spans: &[report::Which]) -> rusqlite::Result<report::Report> {
        self.writer.flush();
        let (settings, fixed) = {
            let state = self.state();
            (state.settings.clone(), state.fixed_chars)
        };
        let mut report = report::build(Some(&self.cold.lock()), &settings, now_ms, spans)?;
        report.fixed_prompt_tokens = fixed.map(report::estimated_tokens);
        Ok(report)
    }

    /// Commits every queued row and stops the writer (a clean stop).
    pub fn close(&self) {
        self.writer.close();
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves `state` to the day `now` falls in, if it has left the one it
    /// counts (midnight passed, or the clock was set): the new day's total
    /// is read from the store once every queued row is in it.
    fn roll(&self, state: &mut State, now: i64) {
        if state.day.contains(now) {
            return;
        }
        state.day = period::day(now, &state.settings.zone);
        self.writer.flush();
        state.today = store::tokens_in(&self.cold.lock(), state.day).unwrap_or_else(|e| {
            tracing::error!("cannot read today's model usage, counting from zero: {e}");
            0
        });
    }
}

/// Ends a turn's count when dropped.
pub struct TurnGuard<'a> {
    meter: &'a Meter,
    inbox: i64,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.meter.state().turns.remove(&self.inbox);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(budgets: Budgets) -> (tempfile::TempDir, Meter) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        hearth_base::store::Store::open(&path).unwrap();
        let settings = Settings {
            zone_name: "Europe/Berlin".into(),
            zone: TimeZone::get("Europe/Berlin").unwrap(),
            budgets,
            prices: Prices::default(),
        };
        let meter = Meter::open(Cold::open(&path).unwrap(), settings).unwrap();
        (dir, meter)
    }

    fn call(turn: Option<i64>) -> Call<'static> {
        Call {
            agent: 1,
            session: Some(1),
            turn,
            kind: Kind::Turn,
            provider: "anthropic",
            model: "m",
        }
    }

    fn used(input: u64) -> Usage {
        Usage {
            input_tokens: input,
            ..Usage::default()
        }
    }

    #[test]
    fn the_daily_budget_counts_until_local_midnight_then_starts_again() {
        let (_dir, meter) = meter(Budgets {
            daily: Some(1000),
            per_turn: None,
        });
        let now = now_ms();
        let today = period::day(now, &TimeZone::get("Europe/Berlin").unwrap());
        meter.record_at(&call(None), &used(600), now);
        assert_eq!(meter.check_at(None, now), Ok(()));
        meter.record_at(&call(None), &used(500), now);
        assert_eq!(
            meter.check_at(None, now),
            Err(Spent::Daily {
                budget: 1000,
                used: 1100,
                resets_at_ms: today.end_ms,
                zone: "Europe/Berlin".into(),
            })
        );
        // The first check after midnight reads the new day from the store,
        // with every queued row in it: none of them is the new day's.
        assert_eq!(meter.check_at(None, today.end_ms), Ok(()));
        meter.record_at(&call(None), &used(999), today.end_ms + 1);
        assert_eq!(meter.check_at(None, today.end_ms + 2), Ok(()));
        // A clock set back finds the earlier day's total in the store.
        assert!(matches!(
            meter.check_at(None, now),
            Err(Spent::Daily { used: 1100, .. })
        ));
        meter.writer.flush();
        let all = Span {
            start_ms: 0,
            end_ms: i64::MAX,
        };
        assert_eq!(store::tokens_in(&meter.cold.lock(), all).unwrap(), 2099);
    }

    #[test]
    fn a_turn_counts_its_own_calls_against_its_limits_until_it_ends() {
        let (_dir, meter) = meter(Budgets {
            daily: None,
            per_turn: Some(500),
        });
        {
            let _turn = meter.begin_turn(7, Some(300));
            meter.record(&call(Some(7)), &used(200));
            meter.record(&call(Some(8)), &used(10_000));
            assert_eq!(meter.check(Some(7)), Ok(()));
            meter.record(&call(Some(7)), &used(100));
            assert_eq!(
                meter.check(Some(7)),
                Err(Spent::Task {
                    budget: 300,
                    used: 300
                })
            );
        }
        // Ended: a retried turn starts from zero.
        assert_eq!(meter.check(Some(7)), Ok(()));
        let _turn = meter.begin_turn(7, None);
        meter.record(&call(Some(7)), &used(500));
        assert_eq!(
            meter.check(Some(7)),
            Err(Spent::Turn {
                limit: 500,
                used: 500
            })
        );
        assert_eq!(meter.check(None), Ok(()), "no turn, no turn limit");
    }

    #[test]
    fn the_owner_hears_of_the_daily_budget_once_a_day_and_of_the_rest_each_time() {
        let (_dir, meter) = meter(Budgets::default());
        let daily = Spent::Daily {
            budget: 1,
            used: 2,
            resets_at_ms: 0,
            zone: "UTC".into(),
        };
        let turn = Spent::Turn { limit: 1, used: 2 };
        assert!(meter.tell_owner(&daily));
        assert!(!meter.tell_owner(&daily));
        assert!(meter.tell_owner(&turn));
        assert!(meter.tell_owner(&turn));
    }

    #[test]
    fn thousands_are_grouped() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (123_456, "123,456"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(thousands(n), text);
        }
    }
}
