//! The agent's workshop: what it builds with besides its Lua tools.
//!
//! `data` is its own SQLite file (`agent_data.db`), reached by
//! `execute_sql`, Lua's `hearth.db` and page queries; `pages` are what the
//! canvas serves at `/pages/<path>`; `versions` keeps
//! every earlier content of what the agent writes (tools, skills,
//! libraries, pages) so a bad edit can be rolled back.

pub mod data;
pub mod pages;
pub mod versions;

use std::path::Path;

use hearth_base::store::Cold;

pub use data::{Access, AgentData, Bounds, DataError, Rows};
pub use pages::Pages;

/// The workshop's parts a daemon holds.
pub struct Workshop {
    /// The agent's database.
    pub data: AgentData,
    /// The pages the canvas serves.
    pub pages: Pages,
}

/// The name of the SQL tool over the agent's database, which Lua's
/// `hearth.db` calls too: here, below both the tools and scripting.
pub const EXECUTE_SQL: &str = "execute_sql";

impl Workshop {
    /// The workshop of the daemon whose home is `home`, keeping its
    /// records on `cold`.
    pub fn new(home: &Path, cold: Cold) -> Workshop {
        Workshop {
            data: AgentData::new(&home.join("agent_data.db")),
            pages: Pages::new(cold, home),
        }
    }
}
