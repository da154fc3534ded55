//! hearth-sdk: the plugin ABI, its JSON protocol, and a safe layer for Rust plugins.
//!
//! A hearth plugin is a shared library that exports `hearth_plugin_v1`. In
//! Rust, implement [`Plugin`] for a type and export it with
//! [`export_plugin!`]; the SDK does the unsafe work, catches every panic at
//! the boundary, and forwards `tracing` and `log` records to the host.
//!
//! ```ignore
//! use hearth_sdk::{Host, Plugin, PluginError, protocol::{Description, Risk, ToolSpec}};
//! use serde_json::{Value, json};
//!
//! struct Echo;
//! impl Plugin for Echo {
//!     const NAME: &'static str = "echo";
//!     const VERSION: &'static str = env!("CARGO_PKG_VERSION");
//!     fn init(_host: Host, _config: Value) -> Result<Self, PluginError> { Ok(Echo) }
//!     fn describe(&self) -> Description { Description::default() }
//!     fn call_tool(&self, _tool: &str, args: Value) -> Result<Value, PluginError> { Ok(args) }
//! }
//! hearth_sdk::export_plugin!(Echo);
//! ```
//!
//! The host uses [`abi`] and [`protocol`] too, so both sides agree by
//! construction; C plugins use `include/hearth.h`, kept equal to [`abi`] by a
//! test.

pub mod abi;
pub mod args;
pub mod calls;
pub mod export;
pub mod files;
pub mod floor;
mod host;
pub mod landlock;
pub mod live;
mod logging;
pub mod paths;
mod plugin;
pub mod protocol;
pub mod sandbox;

pub use host::{Host, HostCallError, Level, SubmitError};
pub use plugin::{Plugin, PluginError, parse_args};
