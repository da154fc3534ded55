//! The `Plugin` trait that a Rust plugin implements, and its error type.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Host;
use crate::protocol::{
    ChannelEvent, Description, Floor, OutboundMessage, PluginStatus, SendReceipt, ToolCall,
    ViewInput,
};

/// A native plugin written in Rust. Export it with [`crate::export_plugin!`].
///
/// The host may call every method from any of its threads, and
/// [`Plugin::call_tool`] from several at once, hence `Send + Sync`.
pub trait Plugin: Sized + Send + Sync + 'static {
    /// The plugin's name: the key of its `[plugins.<name>]` config table.
    const NAME: &'static str;
    /// The plugin's version, usually `env!("CARGO_PKG_VERSION")`.
    const VERSION: &'static str;

    /// Builds the plugin from its config table (a JSON object; `{}` when the
    /// config has none). Start threads or a runtime here if needed.
    fn init(host: Host, config: Value) -> Result<Self, PluginError>;

    /// The tools it offers and the channel it serves.
    fn describe(&self) -> Description;

    /// Runs one of its tools with arguments the host has validated.
    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError>;

    /// Runs one of its tools under the kernel floor the host asked for
    /// (`Some` only for tools whose targets declare `floor`). A plugin
    /// that declares the floor overrides this and applies it to every
    /// program the call starts. The default runs [`Plugin::call_tool`]
    /// when there is no floor, and refuses the call when there is one:
    /// a floor the plugin does not apply must not be taken for granted.
    fn call_tool_floored(
        &self,
        tool: &str,
        args: Value,
        floor: Option<Floor>,
    ) -> Result<Value, PluginError> {
        match floor {
            None => self.call_tool(tool, args),
            Some(_) => Err(PluginError::Unsupported(format!(
                "plugin {} was asked to run {tool} under the kernel floor, which it does not \
                 apply; it was not run",
                Self::NAME
            ))),
        }
    }

    /// Runs one tool call as the host sent it, with its
    /// [`ToolCall::call_id`] (what [`Plugin::cancel_call`] and live output
    /// name). A plugin that can stop its calls or shows their output
    /// overrides this; the default runs [`Plugin::call_tool_floored`].
    fn run_call(&self, call: ToolCall) -> Result<Value, PluginError> {
        self.call_tool_floored(&call.tool, call.args, call.floor)
    }

    /// Stops the running call `call_id` (the owner typed `/stop`); returns
    /// whether one was running. Called on another thread than the call's,
    /// perhaps twice, perhaps after the call ended: neither is an error.
    /// The call should then end promptly. [`crate::calls::Calls`] keeps
    /// the running calls and their stop flags. The default says the plugin
    /// cannot stop its calls; the host then lets them run to their end.
    fn cancel_call(&self, call_id: &str) -> Result<bool, PluginError> {
        let _ = call_id;
        Err(PluginError::Unsupported(format!(
            "plugin {} cannot stop its calls",
            Self::NAME
        )))
    }

    /// Sends a message on its channel. The default says it serves none.
    fn send(&self, message: OutboundMessage) -> Result<SendReceipt, PluginError> {
        let _ = message;
        Err(PluginError::Unsupported(format!(
            "plugin {} serves no channel",
            Self::NAME
        )))
    }

    /// Takes a channel event (streamed text, agent status, a confirmation
    /// to show). Called only when the description's channel sets `events`;
    /// the default ignores events.
    fn event(&self, event: ChannelEvent) -> Result<(), PluginError> {
        let _ = event;
        Ok(())
    }

    /// The health of the parts the plugin runs, for `/status` and `hearth
    /// mcp list`. The default says it has none to report.
    fn status(&self) -> Result<PluginStatus, PluginError> {
        Err(PluginError::Unsupported(format!(
            "plugin {} reports no status",
            Self::NAME
        )))
    }

    /// The owner acted on a live view the plugin showed
    /// ([`crate::Host::view_show`]): a click, keys, an address. Comes from
    /// the owner's screen, never the model; answer promptly. The default
    /// says the plugin shows no view.
    fn view_input(&self, input: ViewInput) -> Result<Value, PluginError> {
        let _ = input;
        Err(PluginError::Unsupported(format!(
            "plugin {} shows no view",
            Self::NAME
        )))
    }

    /// Stops the plugin: join its threads and flush. Called once, last.
    fn shutdown(&self) {}
}

/// Why a plugin call failed; the message reaches the caller as text.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The arguments or config did not have the expected shape.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The plugin does not offer what was asked (unknown tool or method).
    #[error("{0}")]
    Unsupported(String),
    /// The work itself failed; the caller may try again (a channel's
    /// send is retried with backoff).
    #[error("{0}")]
    Failed(String),
    /// Refused for good: the same call again cannot succeed (the
    /// recipient's server said no), so the host gives it up at once
    /// instead of retrying. `HEARTH_REFUSED` on the ABI.
    #[error("{0}")]
    Refused(String),
}

impl PluginError {
    /// Shorthand for [`PluginError::Failed`].
    pub fn failed(message: impl Into<String>) -> Self {
        PluginError::Failed(message.into())
    }
}

/// Deserializes tool arguments or config into `T`, with an error that names
/// the offending field: `` `listen`: invalid type: integer `8080`, expected
/// a string ``. (serde's own message names the field only when it is
/// missing or unknown; the host turns the name into a file and line.)
pub fn parse_args<T: DeserializeOwned>(value: Value) -> Result<T, PluginError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let error = e.into_inner();
        let text = error.to_string();
        // serde names a missing or unknown field itself: say it once.
        let named = text.starts_with("unknown field") || text.starts_with("missing field");
        PluginError::InvalidArguments(if path == "." || named {
            text
        } else {
            format!("`{path}`: {text}")
        })
    })
}
