//! `ToolRegistry`: the one table of tools, and the one way to call them.

use std::collections::BTreeMap;
use std::sync::Arc;

use hearth_sdk::protocol::{ToolCall, ToolSpec, method};
use serde_json::Value;

use super::schema;
use crate::plugins::{ActivePlugin, InvokeError, PluginSet};

/// All tools, by name.
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Tool>,
}

/// One registered tool.
pub struct Tool {
    /// Name, description, schema and risk.
    pub spec: ToolSpec,
    /// What runs it.
    pub provider: Provider,
}

/// What runs a tool.
pub enum Provider {
    /// A native plugin.
    Plugin(Arc<ActivePlugin>),
}

/// Why a tool call failed. The message is what the caller (the owner, or
/// the model) sees, so it says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// No tool has that name.
    #[error("unknown tool {name:?}{}", suggestion.as_ref().map(|s| format!("; did you mean {s:?}?")).unwrap_or_default())]
    Unknown {
        /// The name asked for.
        name: String,
        /// The closest known name.
        suggestion: Option<String>,
    },
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Which field and why.
        message: String,
    },
    /// The provider failed or is unavailable.
    #[error("{tool} failed: {error}")]
    Provider {
        /// The tool.
        tool: String,
        /// What the provider said.
        error: InvokeError,
    },
    /// The provider answered something that is not JSON.
    #[error("{tool} returned a malformed result: {message}")]
    BadResult {
        /// The tool.
        tool: String,
        /// The parse error.
        message: String,
    },
}

impl ToolRegistry {
    /// Collects every active plugin's tools. A name that is invalid or
    /// already taken is skipped with a warning, returned for `hearth check`.
    pub fn from_plugins(plugins: &PluginSet) -> (ToolRegistry, Vec<String>) {
        let mut registry = ToolRegistry::default();
        let mut warnings = Vec::new();
        for plugin in plugins.active() {
            for spec in &plugin.description().tools {
                let provider = Provider::Plugin(Arc::clone(plugin));
                if let Err(why) = registry.add(spec.clone(), provider) {
                    let why = format!("plugin {}: {why}", plugin.name);
                    tracing::warn!("{why}");
                    warnings.push(why);
                }
            }
        }
        (registry, warnings)
    }

    /// Registers a tool; refuses an invalid or duplicate name.
    pub fn add(&mut self, spec: ToolSpec, provider: Provider) -> Result<(), String> {
        if !valid_name(&spec.name) {
            return Err(format!(
                "tool name {:?} is invalid: use 1-64 characters of a-z, 0-9, `_`, `.` and `-`",
                spec.name
            ));
        }
        if let Some(existing) = self.tools.get(&spec.name) {
            return Err(format!(
                "tool {} is already provided by {}; this one is skipped",
                spec.name,
                existing.provider.describe()
            ));
        }
        self.tools
            .insert(spec.name.clone(), Tool { spec, provider });
        Ok(())
    }

    /// Every tool, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Tool> {
        self.tools.values()
    }

    /// Validates `args` and runs the tool. Blocks until it answers: call it
    /// from a thread that may block.
    pub fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        let tool = self.tools.get(name).ok_or_else(|| ToolError::Unknown {
            name: name.to_owned(),
            suggestion: self.closest(name),
        })?;
        schema::validate(&args, &tool.spec.parameters).map_err(|message| {
            ToolError::InvalidArguments {
                tool: name.to_owned(),
                message,
            }
        })?;
        match &tool.provider {
            Provider::Plugin(plugin) => {
                let payload = serde_json::to_vec(&ToolCall {
                    tool: name.to_owned(),
                    args,
                })
                .map_err(|e| ToolError::InvalidArguments {
                    tool: name.to_owned(),
                    message: e.to_string(),
                })?;
                let answer = plugin
                    .invoke(method::TOOL_CALL, &payload)
                    .map_err(|error| ToolError::Provider {
                        tool: name.to_owned(),
                        error,
                    })?;
                serde_json::from_slice(&answer).map_err(|e| ToolError::BadResult {
                    tool: name.to_owned(),
                    message: e.to_string(),
                })
            }
        }
    }

    /// The known name with the longest common prefix, if it shares at
    /// least three characters.
    fn closest(&self, name: &str) -> Option<String> {
        self.tools
            .keys()
            .map(|k| {
                (
                    k.bytes()
                        .zip(name.bytes())
                        .take_while(|(a, b)| a == b)
                        .count(),
                    k,
                )
            })
            .filter(|(n, _)| *n >= 3)
            // On a tie, the shorter name: "ech" suggests "echo", not "echo_panic".
            .max_by_key(|(n, k)| (*n, std::cmp::Reverse(k.len())))
            .map(|(_, k)| k.clone())
    }
}

impl Provider {
    /// Where the tool comes from, for listings and messages.
    pub fn describe(&self) -> String {
        match self {
            Provider::Plugin(p) => format!("plugin {}", p.name),
        }
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-')
        })
}
