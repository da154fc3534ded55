//! Token counts and what they cost: the two small types the config, the
//! model client and the usage meter all need, kept below all three so
//! none of them imports another for them.
//!
//! `Usage` is what a provider reported for one call (`llm` reads it off
//! the stream); `Price` is US dollars per million tokens for each of its
//! four counts (`config` reads `[prices]` into it, `usage` has the
//! defaults and the reports).

use serde::{Deserialize, Serialize};

/// Token counts, the same for every provider. The four counts are
/// disjoint and each is priced on its own: Anthropic reports them so
/// (its `input_tokens` leaves out cache reads and writes), and OpenAI's
/// `prompt_tokens`, which includes its cached tokens, is split into
/// `input_tokens` and `cache_read_tokens` when it is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens read afresh: neither read from nor written to a cache.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Every token the call processed: what the token budgets count.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

/// One model's prices, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Price {
    /// A prompt token read afresh.
    pub input: f64,
    /// A generated token.
    pub output: f64,
    /// A prompt token read from the cache.
    pub cache_read: f64,
    /// A prompt token written to the cache.
    pub cache_write: f64,
}

impl Price {
    /// What `usage` costs at this price, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per_million = usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_write_tokens as f64 * self.cache_write;
        per_million / 1_000_000.0
    }
}
