//! The hearth binary's own layer: the command line, the daemon's life cycle
//! and control socket, `doctor`, backups, and the runtime that builds every
//! part from the config. The parts themselves are the crates below
//! (`hearth-base` up to `hearth-agent`).
//!
//! The binary in `main.rs` only calls [`cli::main`]. Everything else lives
//! here so integration tests and benchmarks drive the same code the daemon
//! runs. `docs/ARCHITECTURE.md` has the map; each module's own docs say what
//! it owns.

// The library crates' modules under one roof, for the integration tests
// and benchmarks, which drive the daemon through `hearth::store`,
// `hearth::tools` and the rest; the host's own code names each crate
// (docs/ARCHITECTURE.md, "The crate split").
pub use hearth_agent::{agent, groups, scheduler, tools};
pub use hearth_base::{
    caller, channels, config, hex, logging, queue, schedule, scope, secrets, store, time_format,
    time_text, tls, tokens, tool_names,
};
pub use hearth_data::{knowledge, people, router, workshop};
pub use hearth_model::{llm, media, speech, summary, usage};
pub use hearth_plugins as plugins;
pub use hearth_policy as policy;
pub use hearth_script as scripting;

pub mod backup;
pub mod capture;
pub mod cli;
pub mod daemon;
pub mod doctor;
pub mod housekeeping;
mod resident;
pub mod runtime;
