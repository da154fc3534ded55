//! Agent groups ([groups.md](../../../docs/groups.md)): the owner gives a
//! group of agents one mission; the leader plans it into deliverables with
//! dependencies; the members carry them out, in parallel where the
//! dependencies allow; the owner approves the plan and follows the work.
//!
//! `store/` owns the tables and every change to them; `plan.rs` reads and
//! checks plans; `engine.rs` is the daemon's task that plans, starts,
//! resumes and finishes work from what the tables say; `run.rs` is one
//! agent's model loop inside a group; `prompts.rs` what each is told;
//! `tools.rs` the group tools those runs answer; `mirror.rs` writes the
//! shared folder from the tables; `view.rs` the canvas's and the chat's
//! views; `milestones.rs` what the owner hears (and the plan's card); `names.rs` the random names; `actions.rs` what the owner and
//! the main agent ask for (`manage_groups`, `/groups`, `hearth groups`).
//!
//! **Architecture invariant: the database is the source of truth.** The
//! engine decides from the tables alone, so a restart resumes a mission
//! where it stood: a complete deliverable never runs again, a running one
//! goes on in its stored session.

pub mod actions;
mod engine;
#[cfg(test)]
mod fuzz;
mod milestones;
mod mirror;
pub mod names;
pub mod plan;
mod prompts;
mod run;
pub mod store;
mod tools;
pub mod view;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::Notify;

use crate::tools::ToolRegistry;
use hearth_base::channels::events::ChannelEvents;
use hearth_base::config::GroupsConfig;
use hearth_base::store::Cold;
use hearth_data::people::Reach;
use hearth_data::router::Router;
use hearth_model::llm::Llm;
use hearth_model::usage::Meter;

/// Why a request about a group was refused.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// No group has that name.
    #[error("no group named {0:?}; `list` shows them")]
    Unknown(String),
    /// The name is taken.
    #[error("a group named {0:?} already exists; names are unique (ignoring case)")]
    Duplicate(String),
    /// A field is malformed.
    #[error("{0}")]
    Invalid(String),
    /// The agent named does not exist.
    #[error("{name:?} is not an agent (agents: {known}); create it with manage_agents first")]
    NotAnAgent {
        /// The name given.
        name: String,
        /// The enabled agents.
        known: String,
    },
    /// The agent is disabled or deleted.
    #[error("agent {0:?} is disabled; enable it before it joins a group")]
    Disabled(String),
    /// The agent is not a member of the group.
    #[error("{agent:?} is not a member of {group}; add it with add_member first")]
    NotAMember {
        /// The agent named.
        agent: String,
        /// The group.
        group: String,
    },
    /// The agent is a member already.
    #[error("{agent} is already a member of {group}")]
    AlreadyMember {
        /// The agent.
        agent: String,
        /// The group.
        group: String,
    },
    /// The group has no members to take a mission.
    #[error("{0} has no members: add agents with add_member before giving it a mission")]
    Empty(String),
    /// The request does not fit where the group stands.
    #[error("{group} is {status}: {why}")]
    Busy {
        /// The group.
        group: String,
        /// Its status.
        status: &'static str,
        /// What cannot be done now.
        why: String,
    },
    /// SQLite failed.
    #[error("the groups store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// The groups of a running daemon: the tables, the engine's state, and
/// what the engine needs to run agents and reach the owner.
pub struct Groups {
    cold: Cold,
    /// `$HEARTH_HOME/groups`: one shared folder per group.
    dir: PathBuf,
    config: GroupsConfig,
    usage: Arc<Meter>,
    reach: Arc<Reach>,
    router: Arc<Router>,
    events: Arc<ChannelEvents>,
    /// Wakes the engine: something changed.
    wake: Notify,
    /// The work the engine runs now (in memory: after a restart, the
    /// tables say what to resume).
    active: Mutex<HashSet<engine::Job>>,
    connected: OnceLock<Connected>,
}

/// What the engine needs from a running daemon; the registry holds the
/// tools that hold this, so it is held weakly.
struct Connected {
    llm: Result<Arc<Llm>, String>,
    tools: Weak<ToolRegistry>,
}

/// What `Groups` is built from.
pub struct Parts {
    /// The shared cold connection.
    pub cold: Cold,
    /// `$HEARTH_HOME`.
    pub home: PathBuf,
    /// `[groups]`.
    pub config: GroupsConfig,
    /// The usage meter (group model calls count like any other).
    pub usage: Arc<Meter>,
    /// Where the owner is reached.
    pub reach: Arc<Reach>,
    /// The outbox's wake-up and the confirmations' board.
    pub router: Arc<Router>,
    /// The channels' events (cards and the live view).
    pub events: Arc<ChannelEvents>,
}

impl Groups {
    /// The groups, from `parts`; they run once [`Groups::connect`]ed.
    pub fn new(parts: Parts) -> Arc<Groups> {
        let groups = Arc::new(Groups {
            cold: parts.cold,
            dir: parts.home.join("groups"),
            config: parts.config,
            usage: parts.usage,
            reach: parts.reach,
            router: parts.router,
            events: parts.events,
            wake: Notify::new(),
            active: Mutex::new(HashSet::new()),
            connected: OnceLock::new(),
        });
        // The owner's answers to plan cards come through the confirmation
        // board, where no blocked call waits for them.
        let weak = Arc::downgrade(&groups);
        groups
            .router
            .confirmations
            .otherwise(Box::new(move |answer, by| {
                weak.upgrade().is_some_and(|g| {
                    g.answer_card(&answer.id, answer.approve, answer.reason.as_deref(), by)
                })
            }));
        groups
    }

    /// Gives the engine the model and the registry.
    pub fn connect(&self, llm: Result<Arc<Llm>, String>, tools: &Arc<ToolRegistry>) {
        let _ = self.connected.set(Connected {
            llm,
            tools: Arc::downgrade(tools),
        });
    }

    /// Tells the engine that something changed.
    pub fn poke(&self) {
        self.wake.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
