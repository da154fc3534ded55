//! The hearth host: config, store, plugin loader, tool registry and daemon.
//!
//! The binary in `main.rs` only calls [`cli::main`]. Everything else lives
//! here so integration tests and benchmarks drive the same code the daemon
//! runs. `docs/ARCHITECTURE.md` has the map; each module's own docs say what
//! it owns.

pub mod agent;
pub mod backup;
pub mod channels;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod doctor;
pub mod groups;
pub mod hex;
pub mod knowledge;
pub mod llm;
pub mod logging;
pub mod media;
pub mod people;
pub mod plugins;
pub mod policy;
pub mod queue;
pub mod router;
pub mod runtime;
pub mod schedule;
pub mod scheduler;
pub mod scope;
pub mod scripting;
pub mod secrets;
pub mod speech;
pub mod store;
pub mod summary;
pub mod time_text;
pub mod tls;
pub mod tokens;
pub mod tools;
pub mod usage;
pub mod workshop;
