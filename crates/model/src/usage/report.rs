//! The usage report: tokens and estimated cost per model, today and this
//! month in the owner's zone, and where the budgets stand. `/usage` shows
//! it as text; `hearth usage` as text or JSON.

use rusqlite::Connection;
use serde::Serialize;

use super::period::{self, Span};
use super::store::{self, ModelTotals};
use super::{Settings, thousands};
use hearth_base::time_text::local_time;

/// A span a report covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Which {
    /// Today.
    Day,
    /// This month.
    Month,
}

impl Which {
    /// Today, then this month.
    pub const BOTH: [Which; 2] = [Which::Day, Which::Month];
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The owner's zone the spans are read in.
    pub zone: String,
    /// One entry per span asked for.
    pub periods: Vec<Period>,
    /// Where the budgets stand.
    pub budgets: BudgetState,
    /// What every call of the main agent sends before any conversation
    /// (its tools and fixed system prompt), estimated at four characters a
    /// token; known to a running daemon once it has called the model.
    pub fixed_prompt_tokens: Option<u64>,
}

/// About how many tokens `chars` characters of prompt are: four to a
/// token, as English text and JSON average.
pub fn estimated_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The share of `usage`'s prompt tokens read from the cache, when it
/// has prompt tokens.
fn hit_share(input: u64, read: u64, write: u64) -> Option<f64> {
    let prompt = input + read + write;
    (prompt > 0).then(|| read as f64 / prompt as f64)
}

/// One span's usage.
#[derive(Clone, Debug, Serialize)]
pub struct Period {
    /// Which span.
    pub period: Which,
    /// Its local date or month (`2026-11-25`, `2026-11`).
    pub label: String,
    /// Its first instant, RFC 3339 (UTC).
    pub from: String,
    /// The instant after it.
    pub to: String,
    /// Per model, the most tokens first.
    pub models: Vec<ModelLine>,
    /// Calls in all.
    pub calls: u64,
    /// Tokens in all.
    pub total_tokens: u64,
    /// The share of prompt tokens read from the cache, over every model.
    pub cache_hit_share: Option<f64>,
    /// The estimated cost of the models that have a price, in US dollars.
    pub cost_usd: f64,
    /// The models without a price (their tokens are not in `cost_usd`).
    pub unpriced: Vec<String>,
}

/// One model's calls in a span.
#[derive(Clone, Debug, Serialize)]
pub struct ModelLine {
    /// The wire format.
    pub provider: String,
    /// The model.
    pub model: String,
    /// How many calls.
    pub calls: u64,
    /// Prompt tokens read afresh.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_write_tokens: u64,
    /// All four.
    pub total_tokens: u64,
    /// The share of prompt tokens read from the cache.
    pub cache_hit_share: Option<f64>,
    /// The estimated cost, in US dollars; `None` without a price.
    pub cost_usd: Option<f64>,
}

/// The budgets, and today's tokens against the daily one.
#[derive(Clone, Debug, Serialize)]
pub struct BudgetState {
    /// `[agent] daily_token_budget`.
    pub daily_token_budget: Option<u64>,
    /// Tokens used today.
    pub used_today: u64,
    /// When today ends (the daily budget's reset), RFC 3339 (UTC).
    pub resets_at: String,
    /// The same, in the owner's zone, for people.
    pub resets_at_local: String,
    /// `[agent] max_tokens_per_turn`.
    pub max_tokens_per_turn: Option<u64>,
}

/// The report for `spans` at `now_ms`, from the rows on `conn` (none
/// without a store).
pub fn build(
    conn: Option<&Connection>,
    settings: &Settings,
    now_ms: i64,
    spans: &[Which],
) -> rusqlite::Result<Report> {
    let today = period::day(now_ms, &settings.zone);
    let periods = spans
        .iter()
        .map(|which| {
            let span = match which {
                Which::Day => today,
                Which::Month => period::month(now_ms, &settings.zone),
            };
            let date = period::local_date(now_ms, &settings.zone);
            let label = match which {
                Which::Day => date.to_string(),
                Which::Month => format!("{:04}-{:02}", date.year(), date.month()),
            };
            let totals = match conn {
                Some(conn) => store::by_model(conn, span)?,
                None => Vec::new(),
            };
            Ok(period_report(*which, label, span, totals, settings))
        })
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Report {
        zone: settings.zone_name.clone(),
        periods,
        budgets: BudgetState {
            daily_token_budget: settings.budgets.daily,
            used_today: match conn {
                Some(conn) => store::tokens_in(conn, today)?,
                None => 0,
            },
            resets_at: rfc3339(today.end_ms),
            resets_at_local: local_time(today.end_ms, &settings.zone_name),
            max_tokens_per_turn: settings.budgets.per_turn,
        },
        fixed_prompt_tokens: None,
    })
}

fn period_report(
    which: Which,
    label: String,
    span: Span,
    totals: Vec<ModelTotals>,
    settings: &Settings,
) -> Period {
    let models: Vec<ModelLine> = totals
        .into_iter()
        .map(|t| ModelLine {
            cost_usd: settings.prices.get(&t.model).map(|p| p.cost(&t.usage)),
            input_tokens: t.usage.input_tokens,
            output_tokens: t.usage.output_tokens,
            cache_read_tokens: t.usage.cache_read_tokens,
            cache_write_tokens: t.usage.cache_write_tokens,
            total_tokens: t.usage.total(),
            cache_hit_share: hit_share(
                t.usage.input_tokens,
                t.usage.cache_read_tokens,
                t.usage.cache_write_tokens,
            ),
            calls: t.calls,
            provider: t.provider,
            model: t.model,
        })
        .collect();
    Period {
        period: which,
        label,
        from: rfc3339(span.start_ms),
        to: rfc3339(span.end_ms),
        calls: models.iter().map(|m| m.calls).sum(),
        total_tokens: models.iter().map(|m| m.total_tokens).sum(),
        cache_hit_share: hit_share(
            models.iter().map(|m| m.input_tokens).sum(),
            models.iter().map(|m| m.cache_read_tokens).sum(),
            models.iter().map(|m| m.cache_write_tokens).sum(),
        ),
        // Folded from +0.0: an empty `sum` of floats is -0.0.
        cost_usd: models
            .iter()
            .filter_map(|m| m.cost_usd)
            .fold(0.0, |total, cost| total + cost),
        unpriced: models
            .iter()
            .filter(|m| m.cost_usd.is_none())
            .map(|m| m.model.clone())
            .collect(),
        models,
    }
}

impl Report {
    /// The report for people: a block per span, a line per model, then the
    /// budgets.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.periods {
            let name = match p.period {
                Which::Day => "Today",
                Which::Month => "This month",
            };
            out.push_str(&format!(
                "{name} ({}, {}): {} tokens in {} model calls{}{}\n",
                p.label,
                self.zone,
                thousands(p.total_tokens),
                thousands(p.calls),
                total_cost(p),
                p.cache_hit_share
                    .map(|share| format!("; {} of the prompt read from the cache", percent(share)))
                    .unwrap_or_default()
            ));
            for m in &p.models {
                out.push_str(&format!(
                    "- {} ({}): {} calls; {}; {}\n",
                    m.model,
                    m.provider,
                    thousands(m.calls),
                    counts(m),
                    m.cost_usd.map_or("no price".to_owned(), dollars)
                ));
            }
        }
        if let Some(tokens) = self.fixed_prompt_tokens {
            out.push_str(&format!(
                "Every call starts with about {} tokens of tools and instructions (the fixed \
                 part, read from the cache after the first call).\n",
                thousands(tokens)
            ));
        }
        let b = &self.budgets;
        match b.daily_token_budget {
            Some(budget) => out.push_str(&format!(
                "Daily budget ([agent] daily_token_budget): {} of {} tokens used; it resets at {}.\n",
                thousands(b.used_today),
                thousands(budget),
                b.resets_at_local
            )),
            None => out.push_str("Daily budget: none ([agent] daily_token_budget).\n"),
        }
        match b.max_tokens_per_turn {
            Some(limit) => out.push_str(&format!(
                "Per turn ([agent] max_tokens_per_turn): at most {} tokens.\n",
                thousands(limit)
            )),
            None => out.push_str("Per turn: no limit ([agent] max_tokens_per_turn).\n"),
        }
        out.push_str(
            "Costs are estimates in US dollars from the price table; [prices.\"MODEL\"] in \
             hearth.toml corrects or adds a model.",
        );
        out
    }
}

/// `, about $0.52`, and what has no price.
fn total_cost(p: &Period) -> String {
    let priced = p.models.len() - p.unpriced.len();
    match (priced, p.unpriced.is_empty()) {
        (0, true) => String::new(),
        (0, false) => ", no price".into(),
        (_, true) => format!(", about {}", dollars(p.cost_usd)),
        (_, false) => format!(
            ", about {} without {} (no price)",
            dollars(p.cost_usd),
            p.unpriced.join(", ")
        ),
    }
}

/// A model's four counts, leaving out the cache's when it was not used.
fn counts(m: &ModelLine) -> String {
    let mut parts = vec![format!("{} in", thousands(m.input_tokens))];
    if m.cache_read_tokens > 0 {
        parts.push(format!("{} cache read", thousands(m.cache_read_tokens)));
    }
    if m.cache_write_tokens > 0 {
        parts.push(format!("{} cache write", thousands(m.cache_write_tokens)));
    }
    parts.push(format!("{} out", thousands(m.output_tokens)));
    if let Some(share) = m
        .cache_hit_share
        .filter(|_| m.cache_read_tokens + m.cache_write_tokens > 0)
    {
        parts.push(format!("{} cached", percent(share)));
    }
    parts.join(", ")
}

/// `87%`; a share just short of whole stays short of it (`99%`).
fn percent(share: f64) -> String {
    format!("{}%", (share * 100.0).floor() as u64)
}

/// `$0.52`; a small amount keeps its first significant digits (`$0.0031`).
pub fn dollars(amount: f64) -> String {
    if amount > 0.0 && amount < 0.01 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

fn rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_keep_small_amounts_readable() {
        for (amount, text) in [
            (0.0, "$0.00"),
            (0.00312, "$0.0031"),
            (0.52, "$0.52"),
            (12.3456, "$12.35"),
        ] {
            assert_eq!(dollars(amount), text);
        }
    }
}
