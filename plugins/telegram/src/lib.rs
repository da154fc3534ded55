//! The telegram channel plugin (being built).

pub mod format;

use hearth_sdk::protocol::Description;
use hearth_sdk::{Host, Plugin, PluginError};
use serde_json::Value;

/// The plugin.
pub struct Channel;

impl Plugin for Channel {
    const NAME: &'static str = "telegram";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(_host: Host, _config: Value) -> Result<Self, PluginError> {
        Ok(Channel)
    }

    fn describe(&self) -> Description {
        Description::default()
    }

    fn call_tool(&self, tool: &str, _args: Value) -> Result<Value, PluginError> {
        Err(PluginError::Unsupported(format!("no tool {tool}")))
    }
}

hearth_sdk::export_plugin!(Channel);
