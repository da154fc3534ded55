//! hearth's foundation: what every layer of the host shares. The SQLite
//! store and its schema, the config types and their checks, the secret
//! store and redaction, logging, channel events and the current call's
//! scope, schedules, prices and usage records, and a few small helpers.
//!
//! Architecture invariant: this crate depends on no other hearth crate but
//! the SDK (for the protocol's types). Everything above it (policy, the
//! model side, the agent, the plugin host, the binary) may use it; it
//! never calls back up (docs/ARCHITECTURE.md, "Layers").

pub mod caller;
pub mod channels;
pub mod config;
pub mod embed;
pub mod helpers;
pub mod hex;
pub mod logging;
pub mod queue;
pub mod schedule;
pub mod scope;
pub mod secrets;
pub mod store;
pub mod time_format;
pub mod time_text;
pub mod tls;
pub mod tokens;
pub mod tool_names;
