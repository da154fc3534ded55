//! The example Rust plugin: the smallest useful use of `hearth-sdk`.
//!
//! It offers `echo`, which returns its text, and `echo_panic`, which panics on
//! purpose so tests can show that a panic stays inside the plugin and comes
//! back to the caller as an error. It logs through `tracing` to show that a
//! plugin's log lines reach the host's log.

use hearth_sdk::protocol::{Description, Risk, ToolSpec};
use hearth_sdk::{Host, Plugin, PluginError, parse_args};
use serde::Deserialize;
use serde_json::{Value, json};

/// The plugin's state: nothing but a prefix from config.
pub struct Echo {
    prefix: String,
}

/// Config table `[plugins.echo]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    prefix: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    text: String,
}

/// The `echo` tool on raw JSON, as the benchmark calls it directly.
pub fn echo_json(prefix: &str, args: Value) -> Result<Value, PluginError> {
    let args: EchoArgs = parse_args(args)?;
    Ok(json!({ "text": format!("{prefix}{}", args.text) }))
}

impl Plugin for Echo {
    const NAME: &'static str = "echo";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(_host: Host, config: Value) -> Result<Self, PluginError> {
        let config: Config = parse_args(config)?;
        tracing::info!("echo plugin started");
        Ok(Echo {
            prefix: config.prefix,
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: vec![
                ToolSpec {
                    name: "echo".into(),
                    description: "Returns the text it is given.".into(),
                    parameters: json!({
                        "type": "object",
                        "properties": { "text": { "type": "string" } },
                        "required": ["text"],
                        "additionalProperties": false
                    }),
                    risk: Risk::Read,
                    targets: Default::default(),
                },
                ToolSpec {
                    name: "echo_panic".into(),
                    description: "Panics on purpose, to show that a plugin panic is contained."
                        .into(),
                    parameters: json!({ "type": "object" }),
                    risk: Risk::Read,
                    targets: Default::default(),
                },
            ],
            channel: None,
        }
    }

    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError> {
        match tool {
            "echo" => echo_json(&self.prefix, args),
            "echo_panic" => panic!("echo_panic was called"),
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }

    fn shutdown(&self) {
        tracing::info!("echo plugin shutdown");
    }
}

hearth_sdk::export_plugin!(Echo);
