//! hearth's agents and what they act with.
//!
//! - `agent`: the main agent and its workers: a turn (the prompt, the
//!   model's stream, tool calls, stopping), its history and attachments;
//! - `tools`: the tool registry (built-in, plugin and Lua tools; the one way
//!   any of them is called, ruled by the policy and audited) and the
//!   built-in tools;
//! - `groups`: agent groups, a lead and members working a plan;
//! - `scheduler`: reminders and scheduled tasks, fired on the wall clock.
//!
//! It is the top of the library stack: everything but the binary's
//! command line and life cycle (`hearth`) lies below it.

pub mod agent;
pub mod groups;
pub mod scheduler;
pub mod tools;
