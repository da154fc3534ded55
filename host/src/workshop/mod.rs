//! The agent's workshop: what it builds with besides its Lua tools.
//!
//! `data` is its own SQLite file (`agent_data.db`), reached by
//! `execute_sql`, Lua's `hearth.db` and page queries; `versions` keeps
//! every earlier content of what the agent writes (tools, skills,
//! libraries, pages) so a bad edit can be rolled back.

pub mod data;
pub mod versions;

use std::path::Path;

pub use data::{Access, AgentData, Bounds, DataError, Rows};

/// The workshop's parts a daemon holds.
pub struct Workshop {
    /// The agent's database.
    pub data: AgentData,
}

impl Workshop {
    /// The workshop of the daemon whose home is `home`.
    pub fn new(home: &Path) -> Workshop {
        Workshop {
            data: AgentData::new(&home.join("agent_data.db")),
        }
    }
}
