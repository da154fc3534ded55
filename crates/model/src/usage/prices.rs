//! What a model's tokens cost: US dollars per million tokens, for each of
//! the four counts (`tokens::Usage`), from the owner's `[prices]` table over
//! built-in defaults for common Anthropic and OpenAI models.
//!
//! The defaults are estimates: the providers' list prices as their price
//! pages gave them on 2026-11-25 (Anthropic's 5-minute cache writes;
//! OpenAI charges nothing extra for writing its cache, so a write is
//! priced as input). Prices change and batch or regional rates differ, so
//! every cost shown is called an estimate, and `[prices."MODEL"]` in
//! hearth.toml corrects or adds a model.
//!
//! A model is looked up by its exact name, then by its name without a
//! snapshot suffix (`claude-haiku-4-5-20251001`, `gpt-4o-2024-08-06` and
//! `claude-3-5-haiku-latest` find `claude-haiku-4-5`, `gpt-4o` and
//! `claude-3-5-haiku`); the owner's table is asked first each time. A
//! model found in neither shows its tokens and "no price".

use std::collections::BTreeMap;

pub use hearth_base::tokens::Price;

/// The price table: the owner's entries, then the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices {
    configured: BTreeMap<String, Price>,
}

impl Prices {
    /// The defaults with `configured` (`[prices]`) over them.
    pub fn new(configured: BTreeMap<String, Price>) -> Prices {
        Prices { configured }
    }

    /// The price of `model`, if any table knows it.
    pub fn get(&self, model: &str) -> Option<Price> {
        let names = std::iter::once(model).chain(without_snapshot(model));
        names.into_iter().find_map(|name| {
            self.configured
                .get(name)
                .copied()
                .or_else(|| default_price(name))
        })
    }
}

/// `model` without a trailing `-YYYYMMDD`, `-YYYY-MM-DD` or `-latest`.
fn without_snapshot(model: &str) -> Option<&str> {
    if let Some(base) = model.strip_suffix("-latest") {
        return Some(base);
    }
    let digits = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit());
    let (base, last) = model.rsplit_once('-')?;
    if digits(last, 8) {
        return Some(base);
    }
    // `-2024-08-06`: groups of four, two and two digits.
    let (base, month) = base.rsplit_once('-')?;
    let (base, year) = base.rsplit_once('-')?;
    (digits(year, 4) && digits(month, 2) && digits(last, 2)).then_some(base)
}

fn default_price(model: &str) -> Option<Price> {
    DEFAULTS
        .iter()
        .find(|(names, _)| names.contains(&model))
        .map(|(_, price)| *price)
}

/// A price with the cache's own rates.
const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
    Price {
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// Estimates, taken from the providers' price pages on 2026-11-25 (USD per
/// million tokens: input, output, cache read, cache write). Correct them
/// with `[prices."MODEL"]` rather than trusting them for a bill.
const DEFAULTS: &[(&[&str], Price)] = &[
    // Anthropic: the cache write is the 5-minute one.
    (&["claude-fable-5-1"], p(10.0, 50.0, 0.25, 12.5)),
    (&["claude-fable-5"], p(10.0, 50.0, 1.0, 12.5)),
    (&["claude-opus-5-5"], p(4.0, 20.0, 0.2, 5.0)),
    (
        &[
            "claude-opus-5",
            "claude-opus-4-8",
            "claude-opus-4-7",
            "claude-opus-4-6",
            "claude-opus-4-5",
        ],
        p(5.0, 25.0, 0.5, 6.25),
    ),
    (
        &["claude-opus-4-1", "claude-opus-4-0", "claude-opus-4"],
        p(15.0, 75.0, 1.5, 18.75),
    ),
    (&["claude-sonnet-5-5"], p(2.0, 10.0, 0.1, 2.5)),
    (&["claude-sonnet-5"], p(2.0, 10.0, 0.2, 2.5)),
    (
        &[
            "claude-sonnet-4-6",
            "claude-sonnet-4-5",
            "claude-sonnet-4-0",
            "claude-sonnet-4",
            "claude-3-7-sonnet",
        ],
        p(3.0, 15.0, 0.3, 3.75),
    ),
    (&["claude-haiku-4-5"], p(1.0, 5.0, 0.1, 1.25)),
    (&["claude-3-5-haiku"], p(0.8, 4.0, 0.08, 1.0)),
    (&["claude-3-haiku"], p(0.25, 1.25, 0.03, 0.3)),
    // OpenAI: cached input is the cache read; writes cost input.
    (&["gpt-5", "gpt-5.1"], p(1.25, 10.0, 0.125, 1.25)),
    (&["gpt-5-mini"], p(0.25, 2.0, 0.025, 0.25)),
    (&["gpt-5-nano"], p(0.05, 0.4, 0.005, 0.05)),
    (&["gpt-4.1"], p(2.0, 8.0, 0.5, 2.0)),
    (&["gpt-4.1-mini"], p(0.4, 1.6, 0.1, 0.4)),
    (&["gpt-4.1-nano"], p(0.1, 0.4, 0.025, 0.1)),
    (&["gpt-4o"], p(2.5, 10.0, 1.25, 2.5)),
    (&["gpt-4o-mini"], p(0.15, 0.6, 0.075, 0.15)),
    (&["o3"], p(2.0, 8.0, 0.5, 2.0)),
    (&["o4-mini"], p(1.1, 4.4, 0.275, 1.1)),
];

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_base::tokens::Usage;

    #[test]
    fn a_model_is_found_by_name_then_without_its_snapshot_and_the_owners_table_wins() {
        let mut configured = BTreeMap::new();
        configured.insert("gpt-4o".to_owned(), p(1.0, 2.0, 0.5, 1.0));
        configured.insert("my-local".to_owned(), p(0.0, 0.0, 0.0, 0.0));
        configured.insert("gpt-4o-2024-05-13".to_owned(), p(5.0, 15.0, 5.0, 5.0));
        let prices = Prices::new(configured);
        // (model, price found)
        let cases = [
            ("claude-sonnet-4-5", Some(p(3.0, 15.0, 0.3, 3.75))),
            ("claude-sonnet-4-5-20250929", Some(p(3.0, 15.0, 0.3, 3.75))),
            ("claude-haiku-4-5-20251001", Some(p(1.0, 5.0, 0.1, 1.25))),
            ("claude-3-5-haiku-latest", Some(p(0.8, 4.0, 0.08, 1.0))),
            ("claude-opus-4-20250514", Some(p(15.0, 75.0, 1.5, 18.75))),
            ("gpt-4o-mini-2024-07-18", Some(p(0.15, 0.6, 0.075, 0.15))),
            // The owner's entry beats the default, dated or not...
            ("gpt-4o", Some(p(1.0, 2.0, 0.5, 1.0))),
            ("gpt-4o-2024-08-06", Some(p(1.0, 2.0, 0.5, 1.0))),
            // ...and an exact entry beats the snapshot's base.
            ("gpt-4o-2024-05-13", Some(p(5.0, 15.0, 5.0, 5.0))),
            ("my-local", Some(p(0.0, 0.0, 0.0, 0.0))),
            // Not a snapshot: a different model, not priced as gpt-4o.
            ("gpt-4o-audio-preview", None),
            ("llama3:8b", None),
            ("anthropic/claude-sonnet-4.5", None),
            ("", None),
        ];
        for (model, want) in cases {
            assert_eq!(prices.get(model), want, "{model}");
        }
    }

    #[test]
    fn a_cost_prices_each_count_on_its_own() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 400_000,
        };
        let cost = p(3.0, 15.0, 0.3, 3.75).cost(&usage);
        // 3 + 1.5 + 0.6 + 1.5
        assert!((cost - 6.6).abs() < 1e-9, "{cost}");
        assert_eq!(p(3.0, 15.0, 0.3, 3.75).cost(&Usage::default()), 0.0);
    }
}
