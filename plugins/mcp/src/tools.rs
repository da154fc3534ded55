//! A server's tools as it describes them, and as hearth offers them.
//!
//! What the server says is untrusted text written for some model: its
//! description is bounded, its schema accepted only when it is an object
//! schema, and its annotations (`readOnlyHint`, ...) ignored. The risk
//! tier comes from the owner's config alone, since a server could call a
//! destructive tool read-only.

use hearth_sdk::protocol::{Targets, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::ServerConfig;
use crate::names;

/// The longest description offered to the model, in bytes.
pub const MAX_DESCRIPTION: usize = 1024;

/// One tool as the server listed it (what the cache keeps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTool {
    /// Its name on the server, used in `tools/call`.
    pub name: String,
    /// Its display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments' JSON Schema.
    #[serde(default, rename = "inputSchema")]
    pub input_schema: Value,
}

impl ServerTool {
    /// Reads one entry of a `tools/list` answer; `None` without a name.
    pub fn from_listing(value: &Value) -> Option<ServerTool> {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .filter(|s| !s.trim().is_empty())
        };
        Some(ServerTool {
            name: value.get("name")?.as_str()?.to_owned(),
            title: text("title"),
            description: text("description"),
            input_schema: value.get("inputSchema").cloned().unwrap_or(Value::Null),
        })
    }
}

/// One tool as hearth offers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its name on the server.
    pub original: String,
    /// Its arguments' schema as the server gave it (for 2026-07-28's
    /// `Mcp-Param-*` headers).
    pub schema: Value,
    /// What the host is told (`mcp.SERVER.tool`, description, schema,
    /// risk).
    pub spec: ToolSpec,
}

/// The tools a server offers now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// In the server's order.
    pub entries: Vec<Entry>,
}

impl Table {
    /// The hearth tools for `tools` as `config` shapes them: disabled ones
    /// left out, names mapped, risk from the config.
    pub fn build(config: &ServerConfig, tools: &[ServerTool]) -> Table {
        let offered: Vec<&ServerTool> = tools
            .iter()
            .filter(|t| config.tool_enabled(&t.name))
            .collect();
        let originals: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        let hearth = names::hearth_names(&config.name, &originals);
        let entries = offered
            .into_iter()
            .zip(hearth)
            .map(|(tool, name)| Entry {
                original: tool.name.clone(),
                schema: tool.input_schema.clone(),
                spec: ToolSpec {
                    name,
                    description: description(&config.name, tool),
                    parameters: parameters(&tool.input_schema),
                    risk: config.risk_of(&tool.name),
                    targets: Targets::default(),
                },
            })
            .collect();
        Table { entries }
    }

    /// The entry named `hearth_name`.
    pub fn find(&self, hearth_name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.spec.name == hearth_name)
    }

    /// The specs, for the host.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.iter().map(|e| &e.spec)
    }
}

/// The description the model reads: the server's (or the title, or a
/// line naming the tool), bounded.
fn description(server: &str, tool: &ServerTool) -> String {
    let text = match (&tool.title, &tool.description) {
        (Some(title), Some(description)) if !description.starts_with(title.as_str()) => {
            format!("{title}: {description}")
        }
        (_, Some(description)) => description.clone(),
        (Some(title), None) => title.clone(),
        (None, None) => format!("The tool {:?} of the MCP server {server:?}.", tool.name),
    };
    crate::text::cut(text.trim(), MAX_DESCRIPTION)
}

/// The arguments' schema: the server's when it describes an object (what
/// a tool call's arguments are), else one that takes any object.
fn parameters(schema: &Value) -> Value {
    let is_object_schema = schema.as_object().is_some_and(|s| {
        s.get("type").and_then(Value::as_str) == Some("object")
            || (s.get("type").is_none() && s.contains_key("properties"))
    });
    if is_object_schema {
        schema.clone()
    } else {
        json!({"type": "object"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use hearth_sdk::protocol::Risk;

    fn server_config(extra: Value) -> ServerConfig {
        let mut server = json!({"command": "x", "risk": "write"});
        for (k, v) in extra.as_object().unwrap() {
            server[k] = v.clone();
        }
        Config::parse(&json!({"servers": {"fs": server}}))
            .unwrap()
            .servers
            .remove(0)
    }

    fn tool(name: &str, schema: Value) -> ServerTool {
        ServerTool {
            name: name.into(),
            title: None,
            description: Some(format!("{name} does things")),
            input_schema: schema,
        }
    }

    #[test]
    fn tools_become_hearth_tools_shaped_by_the_config() {
        let config = server_config(json!({"tools": {
            "read_file": {"risk": "read"}, "delete_all": {"enabled": false}}}));
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let table = Table::build(
            &config,
            &[
                tool("read_file", schema.clone()),
                tool("writeFile", schema.clone()),
                tool("delete_all", schema.clone()),
            ],
        );
        let names: Vec<&str> = table.specs().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mcp.fs.read_file", "mcp.fs.write_file"]);
        assert_eq!(table.entries[0].spec.risk, Risk::Read);
        assert_eq!(
            table.entries[1].spec.risk,
            Risk::Write,
            "the server's default"
        );
        assert_eq!(
            table.find("mcp.fs.write_file").unwrap().original,
            "writeFile"
        );
        assert_eq!(table.entries[1].spec.parameters, schema);
    }

    #[test]
    fn odd_schemas_and_descriptions_are_made_safe() {
        let cases = [
            (Value::Null, json!({"type": "object"})),
            (json!({"type": "string"}), json!({"type": "object"})),
            (json!([1]), json!({"type": "object"})),
            (json!({"properties": {}}), json!({"properties": {}})),
        ];
        for (schema, expected) in cases {
            assert_eq!(parameters(&schema), expected, "for {schema}");
        }
        let long = ServerTool {
            name: "t".into(),
            title: Some("Title".into()),
            description: Some("x".repeat(5000)),
            input_schema: Value::Null,
        };
        let text = description("s", &long);
        assert!(text.len() <= MAX_DESCRIPTION + "…".len());
        assert!(text.starts_with("Title: xxx"));
        let bare = ServerTool {
            name: "t".into(),
            title: None,
            description: None,
            input_schema: Value::Null,
        };
        assert_eq!(
            description("s", &bare),
            "The tool \"t\" of the MCP server \"s\"."
        );
    }

    #[test]
    fn listings_are_read_leniently() {
        let listed = json!({"name": "echo", "title": "", "description": "Echoes",
            "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        let tool = ServerTool::from_listing(&listed).unwrap();
        assert_eq!(tool.title, None);
        assert_eq!(tool.description.as_deref(), Some("Echoes"));
        assert!(ServerTool::from_listing(&json!({"title": "no name"})).is_none());
    }
}
