//! The policy: what a tool call may do without the owner's say-so.
//!
//! Every call through the registry, from every source (the agent, Lua's
//! `hearth.tool`, the CLI), is checked here after its arguments are
//! validated. For now the rule is one line: a tool whose risk tier is
//! `exec` asks the owner through the confirmation gate (`confirm`). The
//! guards for shell commands and the development confinement come with the
//! capability plugins.
//!
//! Architecture invariant: the policy fails closed. A call that should ask
//! and cannot (no channel can show the request, nobody answers in time,
//! the answer comes from someone other than the owner) does not run.

pub mod confirm;
pub mod guard;

use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::Value;

pub use confirm::{Board, ConfirmGate};

/// The directories programs spawned by tools may write to: in development
/// mode `$HEARTH_HOME` and `/tmp`; in production, anywhere (empty).
pub fn confinement(config: &crate::config::Config) -> Vec<std::path::PathBuf> {
    match config.mode {
        crate::config::Mode::Development => {
            vec![config.home.clone(), std::path::PathBuf::from("/tmp")]
        }
        crate::config::Mode::Production => Vec::new(),
    }
}

/// The decision on one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the owner first; the reason is shown on the card.
    Ask(String),
}

/// The rules plus the gate they ask through.
pub struct Policy {
    gate: ConfirmGate,
}

/// Why a call was not run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Policy {
    /// A policy that asks through `gate`.
    pub fn new(gate: ConfirmGate) -> Policy {
        Policy { gate }
    }

    /// What the rules say about calling `spec` with `args`.
    pub fn decide(&self, spec: &ToolSpec, _args: &Value) -> Decision {
        match spec.risk {
            Risk::Exec => Decision::Ask(format!(
                "{} runs programs or has effects outside hearth (risk tier exec)",
                spec.name
            )),
            Risk::Read | Risk::Write => Decision::Allow,
        }
    }

    /// Decides, and asks the owner when the rules say so. Blocks while the
    /// owner decides: call it from a thread that may block.
    pub fn check(&self, spec: &ToolSpec, args: &Value) -> Result<(), Refused> {
        match self.decide(spec, args) {
            Decision::Allow => Ok(()),
            Decision::Ask(reason) => self.gate.ask(&spec.name, args, None, &reason),
        }
    }
}
