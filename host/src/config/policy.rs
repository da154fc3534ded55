//! `[policy]`: how the confirmation gate behaves.

use serde::Deserialize;

/// `[policy]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// How long a confirmation waits for the owner before it is denied.
    pub confirm_timeout_ms: u64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            confirm_timeout_ms: 60_000,
        }
    }
}
