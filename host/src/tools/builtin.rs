//! Built-in tools: the ones the host itself provides.
//!
//! `read_skill`, `script_status` and `write_script` let the agent read the
//! skills it has, see why a script of its own does not load, and write or
//! fix scripts, which the daemon validates before saving and loads at once.
//! `remember`, `forget` and `recall` keep the agent's memory facts.

use std::sync::Arc;

use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

use crate::agent::memory::Memory;
use crate::scripting::{Scripts, describe_problem};

/// What built-in tools work on.
#[derive(Default)]
pub struct BuiltinContext {
    /// The script subsystem.
    pub scripts: Option<Arc<Scripts>>,
    /// The main agent's memory.
    pub memory: Option<Arc<Memory>>,
}

/// The built-in tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// The full body of a skill.
    ReadSkill,
    /// Every script's load state.
    ScriptStatus,
    /// Validate, write and load a script.
    WriteScript,
    /// Keep a fact in memory.
    Remember,
    /// Drop a fact.
    Forget,
    /// List facts.
    Recall,
}

impl Builtin {
    /// Every built-in tool.
    pub const ALL: [Builtin; 6] = [
        Builtin::ReadSkill,
        Builtin::ScriptStatus,
        Builtin::WriteScript,
        Builtin::Remember,
        Builtin::Forget,
        Builtin::Recall,
    ];

    /// Whether `context` has what this tool needs.
    pub fn available(self, context: &BuiltinContext) -> bool {
        match self {
            Builtin::ReadSkill | Builtin::ScriptStatus | Builtin::WriteScript => {
                context.scripts.is_some()
            }
            Builtin::Remember | Builtin::Forget | Builtin::Recall => context.memory.is_some(),
        }
    }

    /// Its spec.
    pub fn spec(self) -> ToolSpec {
        match self {
            Builtin::ReadSkill => ToolSpec {
                name: "read_skill".into(),
                description: "Returns the full instructions of a skill, by name, from the skills index.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "name": { "type": "string" } },
                    "required": ["name"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::ScriptStatus => ToolSpec {
                name: "script_status".into(),
                description: "Lists the Lua tools and skills, and every script that failed to load with its file, line and error.".into(),
                parameters: json!({ "type": "object", "additionalProperties": false }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::WriteScript => ToolSpec {
                name: "write_script".into(),
                description: "Creates or replaces a Lua tool or skill file under $HEARTH_HOME (tools/<name>.lua, skills/<skill>/SKILL.md, skills/<skill>/<name>.lua). The source is validated first; a broken script is refused with its error and nothing is written.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "maxLength": 200 },
                        "source": { "type": "string" }
                    },
                    "required": ["path", "source"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::Remember => ToolSpec {
                name: "remember".into(),
                description: "Keeps a short fact about the owner or the world in memory; memory is shown in every prompt.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "fact": { "type": "string", "minLength": 1, "maxLength": 500 } },
                    "required": ["fact"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::Forget => ToolSpec {
                name: "forget".into(),
                description: "Drops a remembered fact by its id.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "id": { "type": "integer" } },
                    "required": ["id"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::Recall => ToolSpec {
                name: "recall".into(),
                description: "Lists remembered facts with their ids, optionally only those containing `query`.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "query": { "type": "string" } },
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
        }
    }

    /// Runs it with validated `args`.
    pub fn call(self, context: &BuiltinContext, args: &Value) -> Result<Value, String> {
        let scripts = || context.scripts.as_deref().ok_or("scripts are not running");
        let memory = || {
            context
                .memory
                .as_deref()
                .ok_or("the agent's memory is not available")
        };
        match self {
            Builtin::Remember => memory()?.remember(args["fact"].as_str().unwrap_or_default()),
            Builtin::Forget => memory()?.forget(args["id"].as_i64().unwrap_or_default()),
            Builtin::Recall => memory()?.recall(args["query"].as_str()),
            Builtin::ReadSkill => {
                let name = args["name"].as_str().unwrap_or_default();
                let catalog = scripts()?.catalog();
                let skill = catalog.skill(name).ok_or_else(|| {
                    let known: Vec<&str> = catalog.skills().map(|s| s.doc.name.as_str()).collect();
                    format!(
                        "no skill named {name:?}; known skills: {}",
                        known.join(", ")
                    )
                })?;
                let tools: Vec<String> = catalog
                    .tools()
                    .iter()
                    .filter(|t| t.spec.name.starts_with(&format!("{name}.")))
                    .map(|t| t.spec.name.clone())
                    .collect();
                Ok(json!({
                    "name": skill.doc.name,
                    "description": skill.doc.description,
                    "tags": skill.doc.tags,
                    "tools": tools,
                    "body": skill.doc.body,
                }))
            }
            Builtin::ScriptStatus => {
                let catalog = scripts()?.catalog();
                let tools: Vec<Value> = catalog
                    .tools()
                    .iter()
                    .map(|t| json!({ "name": t.spec.name, "file": t.file }))
                    .collect();
                let skills: Vec<Value> = catalog
                    .skills()
                    .map(|s| json!({ "name": s.doc.name, "description": s.doc.description }))
                    .collect();
                let errors: Vec<Value> = catalog
                    .problems()
                    .iter()
                    .map(|p| json!({ "file": p.file, "line": p.line, "message": p.message, "error": describe_problem(p) }))
                    .collect();
                Ok(json!({ "tools": tools, "skills": skills, "errors": errors }))
            }
            Builtin::WriteScript => {
                let path = args["path"].as_str().unwrap_or_default();
                let source = args["source"].as_str().unwrap_or_default();
                scripts()?.write_script(path, source)
            }
        }
    }
}
