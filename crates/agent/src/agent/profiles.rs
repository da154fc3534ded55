//! The `agents` table: the main agent and the sub-agents the owner's main
//! agent creates, each with its own prompt, tool whitelist and model.
//!
//! Agent 1 is the main agent: every tool (`["*"]`), the owner's memory,
//! the identity file. A sub-agent gets a deny-by-default base prompt plus
//! its own `system_prompt`, only the tools its whitelist names (plus
//! `send_agent_message`), and never the owner's memory or conversations.
//! Only the main agent changes this table, through `manage_agents`.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use hearth_base::caller::{Caller, ToolScope};
use hearth_base::store::MAIN_AGENT;
use hearth_base::store::now_ms;

/// The tool every sub-agent has: talking to other agents.
pub const SEND_AGENT_MESSAGE: &str = "send_agent_message";
/// The longest agent name.
const MAX_NAME_CHARS: usize = 40;
/// The longest sub-agent prompt.
pub const MAX_PROMPT_CHARS: usize = 20_000;

/// Who an agent is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Its row id (1: the main agent).
    pub id: i64,
    /// Its unique name.
    pub name: String,
    /// Its own instructions (empty for the main agent, whose identity is
    /// the identity file).
    pub system_prompt: String,
    /// Its tool whitelist as stored (`["*"]`: every tool).
    pub allowed_tools: Vec<String>,
    /// The model it asks first, when not the configured one.
    pub model: Option<String>,
    /// Whether it takes messages.
    pub enabled: bool,
}

/// Why a change to the agents was refused.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// No agent has that name.
    #[error("no agent named {0:?}; `list` shows them")]
    Unknown(String),
    /// The name is taken.
    #[error("an agent named {0:?} already exists; names are unique (ignoring case)")]
    Duplicate(String),
    /// A field is malformed.
    #[error("field `{field}`: {why}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The main agent is kept from the config.
    #[error("the main agent is not changed here: its identity comes from hearth.toml")]
    MainAgent,
    /// SQLite failed.
    #[error("the agents store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// A new sub-agent, or changes to one.
#[derive(Clone, Debug, Default)]
pub struct Draft {
    /// Its name (a new name, for an update).
    pub name: Option<String>,
    /// Its instructions.
    pub system_prompt: Option<String>,
    /// Its whitelist.
    pub allowed_tools: Option<Vec<String>>,
    /// Its model; `Some(None)` clears the override.
    pub model: Option<Option<String>>,
    /// Enabled or not.
    pub enabled: Option<bool>,
}

impl Profile {
    /// Whether this is the main agent.
    pub fn is_main(&self) -> bool {
        self.id == MAIN_AGENT
    }

    /// The tools it may use.
    pub fn scope(&self) -> ToolScope {
        if self.is_main() {
            return ToolScope::All;
        }
        // A sub-agent never gets every tool, whatever its row says.
        let names: Vec<String> = self
            .allowed_tools
            .iter()
            .filter(|n| *n != "*")
            .cloned()
            .collect();
        ToolScope::from_list(&names).with(SEND_AGENT_MESSAGE)
    }

    /// The caller its tool calls are made as.
    pub fn caller(&self) -> Caller {
        if self.is_main() {
            Caller::agent(self.id)
        } else {
            Caller::scoped_agent(self.id, self.scope())
        }
    }
}

/// Every agent, the main one first.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<Profile>> {
    conn.prepare_cached(&format!("{SELECT} ORDER BY id"))?
        .query_map([], row)?
        .collect()
}

/// One agent by id.
pub fn get(conn: &Connection, id: i64) -> rusqlite::Result<Option<Profile>> {
    conn.prepare_cached(&format!("{SELECT} WHERE id = ?1"))?
        .query_row([id], row)
        .optional()
}

/// The model agent `id`'s row names: a sub-agent's own, or the one the
/// owner chose for the main agent (`/model`, `hearth model`).
pub fn model_of(conn: &Connection, id: i64) -> rusqlite::Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT model FROM agents WHERE id = ?1")?
        .query_row([id], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}

/// Sets the model the owner chose for the main agent; `None` goes back to
/// `[llm] model`. (`update` refuses the main agent: its identity is the
/// config's; the model choice is the owner's, made from chat.)
pub fn choose_main_model(conn: &Connection, model: Option<&str>) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE agents SET model = ?1, updated_at_ms = ?2 WHERE id = ?3",
        params![model, now_ms(), MAIN_AGENT],
    )?;
    Ok(())
}

/// One agent's id by name (ignoring case).
pub fn id_of(conn: &Connection, name: &str) -> Result<i64, AgentsError> {
    conn.prepare_cached("SELECT id FROM agents WHERE name = ?1 COLLATE NOCASE")?
        .query_row([name.trim()], |r| r.get(0))
        .optional()?
        .ok_or_else(|| AgentsError::Unknown(name.trim().to_owned()))
}

/// Creates a sub-agent; returns its id.
pub fn create(conn: &Connection, draft: &Draft) -> Result<i64, AgentsError> {
    let name = check_name(draft.name.as_deref().unwrap_or_default())?;
    if id_of(conn, &name).is_ok() {
        return Err(AgentsError::Duplicate(name));
    }
    let prompt = check_prompt(draft.system_prompt.as_deref().unwrap_or_default())?;
    let tools = check_tools(draft.allowed_tools.as_deref().unwrap_or_default())?;
    let now = now_ms();
    conn.execute(
        "INSERT INTO agents (name, system_prompt, allowed_tools, model, enabled, created_at_ms, updated_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![
            name,
            prompt,
            tools,
            draft.model.clone().flatten(),
            draft.enabled.unwrap_or(true),
            now
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Changes a sub-agent.
pub fn update(conn: &Connection, name: &str, draft: &Draft) -> Result<(), AgentsError> {
    let id = id_of(conn, name)?;
    if id == MAIN_AGENT {
        return Err(AgentsError::MainAgent);
    }
    let tx = conn.unchecked_transaction()?;
    if let Some(new) = &draft.name {
        let new = check_name(new)?;
        if id_of(&tx, &new).is_ok_and(|other| other != id) {
            return Err(AgentsError::Duplicate(new));
        }
        tx.execute(
            "UPDATE agents SET name = ?1 WHERE id = ?2",
            params![new, id],
        )?;
    }
    if let Some(prompt) = &draft.system_prompt {
        tx.execute(
            "UPDATE agents SET system_prompt = ?1 WHERE id = ?2",
            params![check_prompt(prompt)?, id],
        )?;
    }
    if let Some(tools) = &draft.allowed_tools {
        tx.execute(
            "UPDATE agents SET allowed_tools = ?1 WHERE id = ?2",
            params![check_tools(tools)?, id],
        )?;
    }
    if let Some(model) = &draft.model {
        tx.execute(
            "UPDATE agents SET model = ?1 WHERE id = ?2",
            params![model, id],
        )?;
    }
    if let Some(enabled) = draft.enabled {
        tx.execute(
            "UPDATE agents SET enabled = ?1 WHERE id = ?2",
            params![enabled, id],
        )?;
    }
    tx.execute(
        "UPDATE agents SET updated_at_ms = ?1 WHERE id = ?2",
        params![now_ms(), id],
    )?;
    tx.commit()?;
    Ok(())
}

/// Deletes a sub-agent: it is disabled and renamed out of the way, since
/// its sessions and messages keep pointing at its row.
pub fn delete(conn: &Connection, name: &str) -> Result<(), AgentsError> {
    let id = id_of(conn, name)?;
    if id == MAIN_AGENT {
        return Err(AgentsError::MainAgent);
    }
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "UPDATE agents SET enabled = 0, name = name || ' (deleted ' || id || ')', updated_at_ms = ?1 \
         WHERE id = ?2",
        params![now_ms(), id],
    )?;
    tx.execute(
        "UPDATE contacts SET agent_id = NULL WHERE agent_id = ?1",
        [id],
    )?;
    tx.commit()?;
    Ok(())
}

const SELECT: &str = "SELECT id, name, system_prompt, allowed_tools, model, enabled FROM agents";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Profile> {
    let tools: String = r.get(3)?;
    Ok(Profile {
        id: r.get(0)?,
        name: r.get(1)?,
        system_prompt: r.get(2)?,
        allowed_tools: serde_json::from_str(&tools).unwrap_or_default(),
        model: r.get(4)?,
        enabled: r.get(5)?,
    })
}

fn check_name(name: &str) -> Result<String, AgentsError> {
    let name = name.trim();
    let invalid = |why: &str| AgentsError::Invalid {
        field: "name",
        why: why.into(),
    };
    if name.is_empty() {
        return Err(invalid("must not be empty"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(invalid(&format!("at most {MAX_NAME_CHARS} characters")));
    }
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid("only letters, digits, '-' and '_'"));
    }
    Ok(name.to_owned())
}

fn check_prompt(prompt: &str) -> Result<String, AgentsError> {
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return Err(AgentsError::Invalid {
            field: "system_prompt",
            why: format!("at most {MAX_PROMPT_CHARS} characters"),
        });
    }
    Ok(prompt.trim().to_owned())
}

fn check_tools(tools: &[String]) -> Result<String, AgentsError> {
    if let Some(bad) = tools.iter().find(|t| *t == "*") {
        return Err(AgentsError::Invalid {
            field: "allowed_tools",
            why: format!("{bad:?} (every tool) is for the main agent only; name the tools"),
        });
    }
    if let Some(bad) = tools
        .iter()
        .find(|t| t.is_empty() || t.len() > 100 || t.chars().any(char::is_whitespace))
    {
        return Err(AgentsError::Invalid {
            field: "allowed_tools",
            why: format!("{bad:?} is not a tool name"),
        });
    }
    Ok(serde_json::to_string(tools).unwrap_or_else(|_| "[]".into()))
}
