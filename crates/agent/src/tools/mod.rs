//! The tool registry: every tool the agent can call, whatever provides it.
//!
//! Architecture invariant: every tool call goes through one registry.
//! Plugin tools, built-in tools and Lua tools are the same thing here: a
//! spec (name, description, JSON Schema, risk) and a provider. Arguments are
//! validated against the schema before any provider sees them.

mod agent_tools;
mod attach;
mod builtin;
mod context;
mod groups;
mod knowledge;
mod offered;
mod pages;
mod people;
mod registry;
mod schedule;
pub mod schema;
mod secret_args;
mod turn_context;
mod voice;
mod workshop;

pub use attach::ATTACH_FILE;
pub use builtin::{Builtin, NOTEPAD, SPAWN_AGENT};
pub use context::BuiltinContext;
pub use groups::GroupActions;
pub use hearth_base::tool_names::{check_name, from_wire, wire_name};
pub use knowledge::KnowledgeTools;
pub use offered::offered;
pub use people::{PeopleTools, SpawnWorkers};
pub use registry::{Listed, Provider, Tool, ToolError, ToolRegistry};
pub use schedule::ScheduleTools;
pub use turn_context::TurnContext;
pub use voice::REPLY_WITH_VOICE;
pub use workshop::{EXECUTE_SQL, WorkshopTool};
