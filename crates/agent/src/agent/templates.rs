//! The `agent_templates` table: what a delegated worker is (a prompt, a
//! tool list and its bounds), named so the main agent can spawn the same
//! kind of worker again with `spawn_agent`.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use hearth_base::store::now_ms;

/// The most model calls a worker may make.
pub const MAX_TURNS: u32 = 50;
/// Model calls when a spec names none.
pub const DEFAULT_TURNS: u32 = 8;
/// Tokens (in and out, over all its calls) when a spec names none.
pub const DEFAULT_TOKEN_BUDGET: u64 = 100_000;
/// The largest token budget.
const MAX_TOKEN_BUDGET: u64 = 10_000_000;

/// A worker's kind: from a template, or given inline to `spawn_agent`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// Its instructions, after the workers' base prompt.
    pub system_prompt: String,
    /// The tools it may use (never those that reach people or spawn).
    pub allowed_tools: Vec<String>,
    /// Model calls at most.
    pub max_turns: u32,
    /// The model it asks first, when not the configured one.
    pub model: Option<String>,
    /// Tokens in and out at most, over all its calls.
    pub token_budget: u64,
}

/// A stored template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Template {
    /// Its unique name.
    pub name: String,
    /// What a worker of this kind is.
    #[serde(flatten)]
    pub spec: WorkerSpec,
}

/// Why a template or a spec was refused.
#[derive(Debug, thiserror::Error)]
pub enum TemplatesError {
    /// No template has that name.
    #[error("no agent template named {0:?}; `list` shows them")]
    Unknown(String),
    /// The name is taken.
    #[error("an agent template named {0:?} already exists; names are unique (ignoring case)")]
    Duplicate(String),
    /// A field is malformed.
    #[error("field `{field}`: {why}")]
    Invalid {
        /// The field.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// SQLite failed.
    #[error("the templates store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Every template, by name.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<Template>> {
    conn.prepare_cached(&format!("{SELECT} ORDER BY name"))?
        .query_map([], row)?
        .collect()
}

/// One template by name (ignoring case).
pub fn get(conn: &Connection, name: &str) -> Result<Template, TemplatesError> {
    conn.prepare_cached(&format!("{SELECT} WHERE name = ?1"))?
        .query_row([name.trim()], row)
        .optional()?
        .ok_or_else(|| TemplatesError::Unknown(name.trim().to_owned()))
}

/// Stores a new template.
pub fn create(conn: &Connection, name: &str, spec: &WorkerSpec) -> Result<(), TemplatesError> {
    let name = check_name(name)?;
    if get(conn, &name).is_ok() {
        return Err(TemplatesError::Duplicate(name));
    }
    check(spec, "")?;
    let now = now_ms();
    conn.execute(
        "INSERT INTO agent_templates (name, system_prompt, allowed_tools, max_turns, model, token_budget, \
         created_at_ms, updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
        params![
            name,
            spec.system_prompt,
            serde_json::to_string(&spec.allowed_tools).unwrap_or_else(|_| "[]".into()),
            spec.max_turns,
            spec.model,
            spec.token_budget as i64,
            now
        ],
    )?;
    Ok(())
}

/// Replaces a template's spec.
pub fn update(conn: &Connection, name: &str, spec: &WorkerSpec) -> Result<(), TemplatesError> {
    get(conn, name)?;
    check(spec, "")?;
    conn.execute(
        "UPDATE agent_templates SET system_prompt = ?1, allowed_tools = ?2, max_turns = ?3, model = ?4, \
         token_budget = ?5, updated_at_ms = ?6 WHERE name = ?7",
        params![
            spec.system_prompt,
            serde_json::to_string(&spec.allowed_tools).unwrap_or_else(|_| "[]".into()),
            spec.max_turns,
            spec.model,
            spec.token_budget as i64,
            now_ms(),
            name.trim()
        ],
    )?;
    Ok(())
}

/// Deletes a template.
pub fn delete(conn: &Connection, name: &str) -> Result<(), TemplatesError> {
    get(conn, name)?;
    conn.execute("DELETE FROM agent_templates WHERE name = ?1", [name.trim()])?;
    Ok(())
}

/// Checks a spec; `prefix` names where it sits in the arguments (`spec.`).
pub fn check(spec: &WorkerSpec, prefix: &str) -> Result<(), TemplatesError> {
    let invalid = |field: &str, why: String| TemplatesError::Invalid {
        field: format!("{prefix}{field}"),
        why,
    };
    if spec.system_prompt.chars().count() > super::profiles::MAX_PROMPT_CHARS {
        return Err(invalid(
            "system_prompt",
            format!("at most {} characters", super::profiles::MAX_PROMPT_CHARS),
        ));
    }
    if !(1..=MAX_TURNS).contains(&spec.max_turns) {
        return Err(invalid("max_turns", format!("must be 1 to {MAX_TURNS}")));
    }
    if !(1..=MAX_TOKEN_BUDGET).contains(&spec.token_budget) {
        return Err(invalid(
            "token_budget",
            format!("must be 1 to {MAX_TOKEN_BUDGET}"),
        ));
    }
    if let Some(bad) = spec
        .allowed_tools
        .iter()
        .find(|t| *t == "*" || t.is_empty() || t.chars().any(char::is_whitespace))
    {
        return Err(invalid(
            "allowed_tools",
            format!("{bad:?}: name the tools a worker may use (\"*\" is the main agent's alone)"),
        ));
    }
    Ok(())
}

const SELECT: &str = "SELECT name, system_prompt, allowed_tools, max_turns, model, token_budget \
                      FROM agent_templates";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Template> {
    let tools: String = r.get(2)?;
    Ok(Template {
        name: r.get(0)?,
        spec: WorkerSpec {
            system_prompt: r.get(1)?,
            allowed_tools: serde_json::from_str(&tools).unwrap_or_default(),
            max_turns: r.get(3)?,
            model: r.get(4)?,
            token_budget: r.get::<_, i64>(5)?.max(0) as u64,
        },
    })
}

fn check_name(name: &str) -> Result<String, TemplatesError> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > 40
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    {
        return Err(TemplatesError::Invalid {
            field: "name".into(),
            why: "1 to 40 letters, digits, '-' and '_'".into(),
        });
    }
    Ok(name.to_owned())
}
