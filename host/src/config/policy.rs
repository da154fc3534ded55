//! `[policy]`: how the confirmation gate behaves, and where programs the
//! owner did not approve may write (the writable roots).

use serde::Deserialize;

/// `[policy]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// How long a confirmation waits for the owner before it is denied.
    pub confirm_timeout_ms: u64,
    /// Folders added to the mode's writable roots (`~/` is the owner's
    /// home): where unapproved programs and tools may create, change,
    /// rename and remove. The mode's own roots always count: development
    /// `$HEARTH_HOME` and `/tmp`; production the owner's home as well.
    pub writable_roots: Vec<String>,
    /// Whether every write and exec tool asks the owner even inside the
    /// roots. `None` takes the mode's choice: development asks, production
    /// lets the kernel's confinement stand in for the question. Without
    /// Landlock, commands ask in development mode whatever this says.
    pub ask_inside_roots: Option<bool>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            confirm_timeout_ms: 60_000,
            writable_roots: Vec::new(),
            ask_inside_roots: None,
        }
    }
}
