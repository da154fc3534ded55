//! The workshop's tools: `execute_sql` on the agent's own database,
//! `script_history` and `script_rollback` over the versions of what it
//! wrote, `manage_pages` for the pages the canvas serves.
//!
//! `execute_sql` is one tool with two tiers: a statement SQLite judges
//! read-only is ruled as a read, anything else as a write, so a dashboard's
//! SELECT never waits for the owner while a DELETE is asked about where the
//! mode asks about writes.

use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

use super::context::BuiltinContext;
use hearth_base::caller::Caller;
use hearth_data::workshop::{Access, Bounds, Workshop};

pub use hearth_data::workshop::EXECUTE_SQL;

/// The workshop's built-in tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkshopTool {
    /// SQL on the agent's own database.
    ExecuteSql,
    /// The versions of one of the agent's scripts.
    ScriptHistory,
    /// Restore a script's version.
    ScriptRollback,
    /// The pages the canvas serves.
    ManagePages,
}

impl WorkshopTool {
    /// Whether `context` has what this tool needs.
    pub fn available(self, context: &BuiltinContext) -> bool {
        match self {
            WorkshopTool::ExecuteSql | WorkshopTool::ManagePages => context.workshop.is_some(),
            WorkshopTool::ScriptHistory | WorkshopTool::ScriptRollback => context.scripts.is_some(),
        }
    }

    /// Its spec.
    pub fn spec(self) -> ToolSpec {
        match self {
            WorkshopTool::ExecuteSql => ToolSpec {
                name: EXECUTE_SQL.into(),
                description: "Runs one SQLite statement on your database; values go in `params` (array for ?, object for :name), not in the SQL.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "sql": { "type": "string", "minLength": 1, "maxLength": 100000 },
                        "params": { "type": ["array", "object", "null"] },
                        "read_only": { "type": "boolean" }
                    },
                    "required": ["sql"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            WorkshopTool::ScriptHistory => ToolSpec {
                name: "script_history".into(),
                description: "Lists the versions of one of your scripts (name or path) or pages (pages/<path>).".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "name": { "type": "string", "minLength": 1, "maxLength": 300 } },
                    "required": ["name"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            WorkshopTool::ScriptRollback => ToolSpec {
                name: "script_rollback".into(),
                description: "Restores a version from script_history, saved as the newest.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "minLength": 1, "maxLength": 300 },
                        "version": { "type": "integer", "minimum": 1 }
                    },
                    "required": ["name", "version"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            WorkshopTool::ManagePages => super::pages::spec(),
        }
    }

    /// The tier of one call, where it depends on the arguments:
    /// `execute_sql` is a read when SQLite judges the statement read-only.
    /// A statement that does not prepare keeps the tool's own tier; running
    /// it reports why.
    pub fn risk(self, context: &BuiltinContext, args: &Value) -> Option<Risk> {
        match (self, context.workshop.as_deref()) {
            (WorkshopTool::ExecuteSql, Some(workshop)) => {
                let sql = args["sql"].as_str().unwrap_or_default();
                let reads = args["read_only"].as_bool() == Some(true)
                    || workshop.data.is_read_only(sql).unwrap_or(false);
                reads.then_some(Risk::Read)
            }
            (WorkshopTool::ManagePages, _) => {
                matches!(args["action"].as_str(), Some("list" | "help" | "history"))
                    .then_some(Risk::Read)
            }
            _ => None,
        }
    }

    /// Runs it with validated `args`.
    pub fn call(
        self,
        context: &BuiltinContext,
        caller: &Caller,
        args: &Value,
    ) -> Result<Value, String> {
        let workshop = || {
            context
                .workshop
                .as_deref()
                .ok_or("the agent's workshop is served by the daemon")
        };
        let scripts = || context.scripts.as_deref().ok_or("scripts are not running");
        let name = args["name"].as_str().unwrap_or_default();
        match self {
            WorkshopTool::ExecuteSql => execute_sql(workshop()?, args),
            WorkshopTool::ManagePages => super::pages::manage(workshop()?, caller, args),
            // A page, named where the canvas serves it, has its versions
            // in the same table: `manage_pages` answers for it.
            WorkshopTool::ScriptHistory | WorkshopTool::ScriptRollback
                if name.starts_with("pages/") =>
            {
                let mut call = args.clone();
                call["path"] = json!(&name["pages/".len()..]);
                call["action"] = json!(if self == WorkshopTool::ScriptHistory {
                    "history"
                } else {
                    "rollback"
                });
                if let Some(call) = call.as_object_mut() {
                    call.remove("name");
                }
                super::pages::manage(workshop()?, caller, &call)
            }
            WorkshopTool::ScriptHistory => scripts()?.history(name),
            WorkshopTool::ScriptRollback => {
                let version = args["version"].as_i64().unwrap_or_default();
                scripts()?.rollback(name, version, caller.as_str())
            }
        }
    }
}

/// Runs `execute_sql`.
fn execute_sql(workshop: &Workshop, args: &Value) -> Result<Value, String> {
    let access = if args["read_only"].as_bool() == Some(true) {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let sql = args["sql"].as_str().unwrap_or_default();
    workshop
        .data
        .run(access, sql, &args["params"], Bounds::TOOL)
        .map(|rows| rows.to_json())
        .map_err(|e| e.to_string())
}
