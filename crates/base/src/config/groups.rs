//! `[groups]`: how agent groups run ([groups.md](../../../docs/groups.md)).

use serde::Deserialize;

/// `[groups]`, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupsConfig {
    /// Whether a new group's plans run without the owner's approval.
    pub auto_execute: bool,
    /// The most model calls a member makes on one deliverable.
    pub max_steps: u32,
    /// The most tokens (in and out) a member spends on one deliverable.
    pub token_budget: u64,
    /// The wall-clock limit of one deliverable, in milliseconds.
    pub deliverable_timeout_ms: u64,
}

impl Default for GroupsConfig {
    fn default() -> Self {
        GroupsConfig {
            auto_execute: false,
            max_steps: 40,
            token_budget: 400_000,
            deliverable_timeout_ms: 30 * 60 * 1000,
        }
    }
}

/// `[groups]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGroups {
    auto_execute: Option<bool>,
    max_steps: Option<u32>,
    token_budget: Option<u64>,
    deliverable_timeout_ms: Option<u64>,
}

/// Checks `[groups]`; the error is `(key, message)`.
pub(super) fn build(raw: RawGroups) -> Result<GroupsConfig, (String, String)> {
    let defaults = GroupsConfig::default();
    let max_steps = raw.max_steps.unwrap_or(defaults.max_steps);
    if !(1..=500).contains(&max_steps) {
        return Err(("groups.max_steps".into(), "must be 1 to 500".into()));
    }
    let token_budget = raw.token_budget.unwrap_or(defaults.token_budget);
    if token_budget == 0 {
        return Err(("groups.token_budget".into(), "must be at least 1".into()));
    }
    let timeout = raw
        .deliverable_timeout_ms
        .unwrap_or(defaults.deliverable_timeout_ms);
    if !(1_000..=7 * 24 * 3_600_000).contains(&timeout) {
        return Err((
            "groups.deliverable_timeout_ms".into(),
            "must be 1000 (a second) to 604800000 (a week)".into(),
        ));
    }
    Ok(GroupsConfig {
        auto_execute: raw.auto_execute.unwrap_or(defaults.auto_execute),
        max_steps,
        token_budget,
        deliverable_timeout_ms: timeout,
    })
}
