//! The tool registry: every tool the agent can call, whatever provides it.
//!
//! Architecture invariant: every tool call goes through one registry.
//! Plugin tools (and, later, Lua and built-in tools) are the same thing here:
//! a spec (name, description, JSON Schema, risk) and a provider. Arguments are
//! validated against the schema before any provider sees them.

mod registry;
pub mod schema;

pub use registry::{Provider, Tool, ToolError, ToolRegistry};
