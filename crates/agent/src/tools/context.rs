//! What the built-in tools work on: the daemon's services, each present
//! only where it runs (a one-shot command has no people, schedule or
//! groups). Its own file, below the tools that read it and the registry
//! that holds it.

use std::sync::Arc;

use super::{GroupActions, KnowledgeTools, PeopleTools, ScheduleTools};
use hearth_data::knowledge::identity::Identity;
use hearth_data::knowledge::notes::Notes;
use hearth_data::workshop::Workshop;
use hearth_script::Scripts;

/// What built-in tools work on.
#[derive(Default)]
pub struct BuiltinContext {
    /// The script subsystem.
    pub scripts: Option<Arc<Scripts>>,
    /// Every agent's memories and scratchpad.
    pub notes: Option<Arc<Notes>>,
    /// The main agent's versioned identity.
    pub identity: Option<Arc<Identity>>,
    /// Contacts, messages and agents (a daemon's, not a one-shot command's).
    pub people: Option<Arc<PeopleTools>>,
    /// Reminders and scheduled tasks (a daemon's).
    pub schedule: Option<Arc<ScheduleTools>>,
    /// Search over past conversations.
    pub knowledge: Option<Arc<KnowledgeTools>>,
    /// The agent's database (and, with it, its pages).
    pub workshop: Option<Arc<Workshop>>,
    /// The owner's secrets: every result is redacted of their values.
    pub secrets: Option<Arc<hearth_base::secrets::Secrets>>,
    /// Speech-to-text and text-to-speech, as configured.
    pub speech: Option<Arc<hearth_model::speech::Speech>>,
    /// Agent groups (a daemon's).
    pub groups: Option<Arc<dyn GroupActions>>,
}
