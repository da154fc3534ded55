//! Built-in tools: the ones the host itself provides.
//!
//! `read_skill`, `script_status` and `write_script` let the agent read the
//! skills it has, see why a script of its own does not load, and write or
//! fix scripts, which the daemon validates before saving and loads at once.
//! `attach_file` puts a file on the turn's reply: the turn collects what it
//! returns and the channel sends the file after the reply's text. The tools
//! about people and agents are in `people`.

use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

use super::TurnContext;
use super::attach::ATTACH_FILE;
use super::context::BuiltinContext;
use super::knowledge::IdentityTool;
use super::workshop::WorkshopTool;
use crate::agent::profiles::SEND_AGENT_MESSAGE;
use hearth_base::caller::Caller;
use hearth_data::knowledge::notes::Notes;
use hearth_script::describe_problem;

/// The built-in tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// The full body of a skill.
    ReadSkill,
    /// Every script's load state.
    ScriptStatus,
    /// Validate, write and load a script.
    WriteScript,
    /// Attach a file to the reply.
    AttachFile,
    /// Contacts and their identities.
    ManageContacts,
    /// A message to the owner or a contact.
    SendMessage,
    /// Sub-agents.
    ManageAgents,
    /// A message to another agent.
    SendAgentMessage,
    /// Worker templates.
    ManageAgentTemplates,
    /// A delegated worker.
    SpawnAgent,
    /// Reminders and scheduled tasks.
    ManageSchedule,
    /// Memories and the scratchpad.
    ManageKnowledge,
    /// Edit the main agent's identity.
    UpdateIdentity,
    /// The identity's versions.
    IdentityHistory,
    /// Restore an identity version.
    IdentityRollback,
    /// The session's notepad.
    Notepad,
    /// Search past conversations.
    SearchHistory,
    /// The messages around a search hit.
    ReadHistory,
    /// The workshop's tools: the agent's database, versions, pages.
    Workshop(WorkshopTool),
    /// Speak the reply.
    ReplyWithVoice,
    /// Agent groups.
    ManageGroups,
    /// A group's mission.
    AssignMission,
}

/// The session notepad's tool, the one tool of the step before a
/// compaction.
pub const NOTEPAD: &str = "notepad";

/// The tool whose calls in one step run in parallel.
pub const SPAWN_AGENT: &str = "spawn_agent";

/// The JSON Schema of a worker spec.
fn worker_spec_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "system_prompt": { "type": "string", "maxLength": 20000 },
            "allowed_tools": { "type": "array", "items": { "type": "string", "maxLength": 100 }, "maxItems": 200 },
            "max_turns": { "type": "integer", "minimum": 1, "maximum": 50 },
            "model": { "type": "string", "maxLength": 200 },
            "token_budget": { "type": "integer", "minimum": 1 }
        },
        "additionalProperties": false
    })
}

impl Builtin {
    /// Every built-in tool.
    pub const ALL: [Builtin; 25] = [
        Builtin::ReadSkill,
        Builtin::ScriptStatus,
        Builtin::WriteScript,
        Builtin::AttachFile,
        Builtin::ManageContacts,
        Builtin::SendMessage,
        Builtin::ManageAgents,
        Builtin::SendAgentMessage,
        Builtin::ManageAgentTemplates,
        Builtin::SpawnAgent,
        Builtin::ManageSchedule,
        Builtin::SearchHistory,
        Builtin::ReadHistory,
        Builtin::ManageKnowledge,
        Builtin::UpdateIdentity,
        Builtin::IdentityHistory,
        Builtin::IdentityRollback,
        Builtin::Notepad,
        Builtin::Workshop(WorkshopTool::ExecuteSql),
        Builtin::Workshop(WorkshopTool::ScriptHistory),
        Builtin::Workshop(WorkshopTool::ScriptRollback),
        Builtin::Workshop(WorkshopTool::ManagePages),
        Builtin::ReplyWithVoice,
        Builtin::ManageGroups,
        Builtin::AssignMission,
    ];

    /// Whether only the running daemon provides this tool: it needs the
    /// people, the scheduler or the groups, which a one-shot command (`hearth
    /// tools`, `hearth tool call`) does not start.
    pub fn daemon_only(self) -> bool {
        matches!(
            self,
            Builtin::ManageContacts
                | Builtin::SendMessage
                | Builtin::ManageAgents
                | Builtin::SendAgentMessage
                | Builtin::ManageAgentTemplates
                | Builtin::SpawnAgent
                | Builtin::ManageSchedule
                | Builtin::ManageGroups
                | Builtin::AssignMission
        )
    }

    /// Whether `context` has what this tool needs.
    pub fn available(self, context: &BuiltinContext) -> bool {
        match self {
            Builtin::ReadSkill | Builtin::ScriptStatus | Builtin::WriteScript => {
                context.scripts.is_some()
            }
            Builtin::ManageKnowledge | Builtin::Notepad => context.notes.is_some(),
            Builtin::AttachFile => true,
            Builtin::ManageContacts
            | Builtin::SendMessage
            | Builtin::ManageAgents
            | Builtin::SendAgentMessage
            | Builtin::ManageAgentTemplates
            | Builtin::SpawnAgent => context.people.is_some(),
            Builtin::ManageSchedule => context.schedule.is_some(),
            Builtin::SearchHistory | Builtin::ReadHistory => context.knowledge.is_some(),
            Builtin::UpdateIdentity | Builtin::IdentityHistory | Builtin::IdentityRollback => {
                context.identity.is_some()
            }
            Builtin::Workshop(tool) => tool.available(context),
            Builtin::ReplyWithVoice => context.speech.as_ref().is_some_and(|s| s.tts().is_some()),
            Builtin::ManageGroups | Builtin::AssignMission => context.groups.is_some(),
        }
    }

    /// The tier of this call when it depends on the arguments, over the
    /// spec's.
    pub fn risk(self, context: &BuiltinContext, args: &Value) -> Option<Risk> {
        match self {
            Builtin::Workshop(tool) => tool.risk(context, args),
            _ => None,
        }
    }

    /// Why this call should ask the owner whatever the mode, if it should.
    pub fn asks(self, context: &BuiltinContext, args: &Value) -> Option<String> {
        match (self, &context.people) {
            (Builtin::SendMessage, Some(people)) => people.asks(args),
            _ => None,
        }
    }

    /// Its spec.
    pub fn spec(self) -> ToolSpec {
        match self {
            Builtin::Workshop(tool) => tool.spec(),
            Builtin::ReplyWithVoice => super::voice::spec(),
            Builtin::ManageGroups => super::groups::manage_spec(),
            Builtin::AssignMission => super::groups::mission_spec(),
            Builtin::ReadSkill => ToolSpec {
                name: "read_skill".into(),
                description: "Returns a skill's full instructions.".into(),
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
                description: "Lists the Lua tools and skills, and scripts that failed to load and why.".into(),
                parameters: json!({ "type": "object", "additionalProperties": false }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::WriteScript => ToolSpec {
                name: "write_script".into(),
                description: "Validates, saves and loads a Lua script: tools/<name>.lua or skills/<skill>/(SKILL.md|<name>.lua) under $HEARTH_HOME.".into(),
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
            Builtin::ManageContacts => ToolSpec {
                name: "manage_contacts".into(),
                description: "Manages contacts, their channel ids and agent, and pairing codes. See action \"help\".".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": { "enum": ["help", "list", "add", "update", "disable", "enable", "remove", "add_identity", "remove_identity", "approve"] },
                        "name": { "type": "string", "maxLength": 80 },
                        "new_name": { "type": "string", "maxLength": 80 },
                        "agent": { "type": "string", "maxLength": 40 },
                        "enabled": { "type": "boolean" },
                        "channel": { "type": "string", "maxLength": 64 },
                        "id": { "type": "string", "maxLength": 200 },
                        "code": { "type": "string", "maxLength": 16 }
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::SendMessage => ToolSpec {
                name: "send_message".into(),
                description: "Sends a message now to \"owner\" or a contact (asks the owner first), files attached.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "to": { "type": "string", "minLength": 1, "maxLength": 80 },
                        "text": { "type": "string", "minLength": 1, "maxLength": 4000 },
                        "attachments": {
                            "type": "array",
                            "items": { "type": "string", "minLength": 1, "maxLength": 4096 },
                            "maxItems": 10
                        }
                    },
                    "required": ["to", "text"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::ManageAgents => ToolSpec {
                name: "manage_agents".into(),
                description: "Manages sub-agents (instructions, tools, model). See action \"help\".".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": { "enum": ["help", "list", "create", "update", "delete"] },
                        "name": { "type": "string", "maxLength": 40 },
                        "new_name": { "type": "string", "maxLength": 40 },
                        "system_prompt": { "type": "string", "maxLength": 20000 },
                        "allowed_tools": { "type": "array", "items": { "type": "string", "maxLength": 100 }, "maxItems": 200 },
                        "model": { "type": ["string", "null"], "maxLength": 200 },
                        "enabled": { "type": "boolean" }
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::SearchHistory => ToolSpec {
                name: "search_history".into(),
                description: "Searches past conversations (FTS5 syntax); read_history shows a hit's context.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "query": { "type": "string", "minLength": 1, "maxLength": 500 },
                        "agent": { "type": "string", "maxLength": 40 },
                        "channel": { "type": "string", "maxLength": 100 },
                        "since": { "type": "string", "maxLength": 40 },
                        "until": { "type": "string", "maxLength": 40 },
                        "limit": { "type": "integer", "minimum": 1, "maximum": 50 }
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::ReadHistory => ToolSpec {
                name: "read_history".into(),
                description: "The n messages around one of a past session (ids from search_history).".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "session": { "type": "integer" },
                        "around_message": { "type": "integer" },
                        "n": { "type": "integer", "minimum": 1, "maximum": 20 }
                    },
                    "required": ["session", "around_message"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::ManageKnowledge => ToolSpec {
                name: "manage_knowledge".into(),
                description: "Your notes: memory (short facts, all in every prompt: keep few) or scratchpad (titles in the prompt). See action \"help\".".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "tier": { "enum": ["memory", "scratchpad"] },
                        "action": { "enum": ["help", "add", "update", "remove", "list", "read"] },
                        "id": { "type": "integer" },
                        "text": { "type": "string", "maxLength": 500 },
                        "title": { "type": "string", "maxLength": 200 },
                        "body": { "type": "string", "maxLength": 20000 },
                        "query": { "type": "string", "maxLength": 200 }
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::UpdateIdentity => ToolSpec {
                name: "update_identity".into(),
                description: "Edits your identity (top of your prompt), versioned: append, or replace the section headed `section`.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "mode": { "enum": ["append", "replace_section"] },
                        "text": { "type": "string", "minLength": 1, "maxLength": 8000 },
                        "section": { "type": "string", "maxLength": 200 }
                    },
                    "required": ["mode", "text"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::IdentityHistory => ToolSpec {
                name: "identity_history".into(),
                description: "Lists your identity's versions; with `version`, its text.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "version": { "type": "integer", "minimum": 1 } },
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::IdentityRollback => ToolSpec {
                name: "identity_rollback".into(),
                description: "Restores an earlier identity version.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "version": { "type": "integer", "minimum": 1 } },
                    "required": ["version"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::Notepad => ToolSpec {
                name: NOTEPAD.into(),
                description: "This conversation's notepad: in every prompt, kept through compaction.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": { "enum": ["replace", "append", "clear"] },
                        "text": { "type": "string", "maxLength": 8000 }
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::ManageSchedule => ToolSpec {
                name: "manage_schedule".into(),
                description: "Reminders (wake this conversation) and tasks (a fresh session answers the owner), once or by cron. See action \"help\".".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": { "enum": ["help", "list", "add", "update", "enable", "disable", "remove", "run_now"] },
                        "id": { "type": "integer" },
                        "kind": { "enum": ["reminder", "task"] },
                        "text": { "type": "string", "maxLength": 20000 },
                        "cron": { "type": "string", "maxLength": 200 },
                        "zone": { "type": "string", "maxLength": 100 },
                        "at": { "type": "string", "maxLength": 100 },
                        "in": { "type": "string", "maxLength": 100 },
                        "agent": { "type": "string", "maxLength": 40 },
                        "model": { "type": ["string", "null"], "maxLength": 200 },
                        "token_budget": { "type": ["integer", "null"], "minimum": 1000 },
                        "missed": { "enum": ["once", "skip", "all"] }
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::SendAgentMessage => ToolSpec {
                name: SEND_AGENT_MESSAGE.into(),
                description: "Asks another agent; its answer comes back here as a new message.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "agent": { "type": "string", "minLength": 1, "maxLength": 40 },
                        "text": { "type": "string", "minLength": 1, "maxLength": 20000 }
                    },
                    "required": ["agent", "text"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::ManageAgentTemplates => ToolSpec {
                name: "manage_agent_templates".into(),
                description: "Manages spawn_agent's worker templates. See action \"help\".".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": { "enum": ["help", "list", "create", "update", "delete"] },
                        "name": { "type": "string", "maxLength": 40 },
                        "spec": worker_spec_schema()
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                risk: Risk::Write,
                targets: Default::default(),
            },
            Builtin::SpawnAgent => ToolSpec {
                name: SPAWN_AGENT.into(),
                description: "Runs a task in a worker (`template` or inline `spec`) that does not see this conversation, and returns its answer; calls in one step run in parallel.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "template": { "type": "string", "minLength": 1, "maxLength": 40 },
                        "spec": worker_spec_schema(),
                        "task": { "type": "string", "minLength": 1, "maxLength": 50000 }
                    },
                    "required": ["task"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
            Builtin::AttachFile => ToolSpec {
                name: ATTACH_FILE.into(),
                description: "Attaches a file (absolute path) to your reply.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "minLength": 1, "maxLength": 4096 },
                        "name": { "type": "string", "minLength": 1, "maxLength": 200 }
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                risk: Risk::Read,
                targets: Default::default(),
            },
        }
    }

    /// Runs it with validated `args` for `caller`, in `turn` when the model
    /// made the call.
    pub fn call(
        self,
        context: &BuiltinContext,
        caller: &Caller,
        turn: Option<&TurnContext>,
        args: &Value,
    ) -> Result<Value, String> {
        let people = || {
            context
                .people
                .as_deref()
                .ok_or("contacts and agents are served by the running daemon")
        };
        let scripts = || context.scripts.as_deref().ok_or("scripts are not running");
        let knowledge = || {
            context
                .knowledge
                .as_deref()
                .ok_or("the history is not available")
        };
        // Each agent keeps its own notes; the owner's are the main agent's.
        let notes = || -> Result<(&Notes, i64), String> {
            let agent = match caller.agent_id() {
                Some(agent) => agent,
                None if !caller.is_scoped() => hearth_base::store::MAIN_AGENT,
                None => {
                    return Err(
                        "notes belong to the agents: a contact or a worker cannot read or change them"
                            .into(),
                    );
                }
            };
            let notes = context.notes.as_deref().ok_or("notes are not available")?;
            Ok((notes, agent))
        };
        match self {
            Builtin::ManageKnowledge => {
                let (notes, agent) = notes()?;
                super::knowledge::manage(notes, agent, args)
            }
            Builtin::Notepad => {
                let (notes, _) = notes()?;
                let turn =
                    turn.ok_or("the notepad belongs to a conversation; this call has none")?;
                notes.write_notepad(
                    turn.agent,
                    &turn.channel,
                    &turn.chat,
                    args["action"].as_str().unwrap_or_default(),
                    args["text"].as_str(),
                )
            }
            Builtin::UpdateIdentity | Builtin::IdentityHistory | Builtin::IdentityRollback => {
                let identity = context
                    .identity
                    .as_deref()
                    .ok_or("the identity is not available")?;
                let tool = match self {
                    Builtin::UpdateIdentity => IdentityTool::Update,
                    Builtin::IdentityRollback => IdentityTool::Rollback,
                    _ => IdentityTool::History,
                };
                super::knowledge::identity(tool, identity, caller, args)
            }
            Builtin::AttachFile => super::attach::attach(args),
            Builtin::ReplyWithVoice => super::voice::call(
                context
                    .speech
                    .as_deref()
                    .ok_or("text-to-speech is not available here")?,
                args,
            ),
            Builtin::Workshop(tool) => tool.call(context, caller, args),
            Builtin::ManageGroups | Builtin::AssignMission => super::groups::call(
                context
                    .groups
                    .as_deref()
                    .ok_or("groups run in the daemon")?,
                caller,
                args,
                self == Builtin::AssignMission,
            ),
            Builtin::ManageContacts => people()?.manage_contacts(args),
            Builtin::SendMessage => people()?.send_message(args),
            Builtin::ManageAgents => people()?.manage_agents(caller, args),
            Builtin::SendAgentMessage => people()?.send_agent_message(turn, args),
            Builtin::ManageAgentTemplates => people()?.manage_templates(args),
            Builtin::SpawnAgent => people()?.spawn_agent(caller, turn, args),
            Builtin::SearchHistory => {
                let recall = context.notes.as_deref().and_then(Notes::recall);
                knowledge()?.search_history(caller, args, recall.map(|r| &**r))
            }
            Builtin::ReadHistory => knowledge()?.read_history(caller, args),
            Builtin::ManageSchedule => context
                .schedule
                .as_deref()
                .ok_or("the scheduler runs in the daemon")?
                .call(caller, turn, args),
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
                let mut answer = json!({
                    "name": skill.doc.name,
                    "description": skill.doc.description,
                    "tags": skill.doc.tags,
                    "tools": tools,
                    "body": skill.doc.body,
                    "folder": skill.dir,
                    "files": skill_files(&skill.dir),
                });
                // The published format's extras, only where the skill has
                // them: every key costs the model tokens.
                if let Some(license) = &skill.doc.license {
                    answer["license"] = json!(license);
                }
                if !skill.doc.allowed_tools.is_empty() {
                    answer["allowed_tools"] = json!(skill.doc.allowed_tools);
                }
                Ok(answer)
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
                    .map(|s| {
                        let mut skill =
                            json!({ "name": s.doc.name, "description": s.doc.description });
                        if !s.doc.notes.is_empty() {
                            skill["notes"] = json!(s.doc.notes);
                        }
                        skill
                    })
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
                scripts()?.write_script(path, source, caller.as_str(), "saved by write_script")
            }
        }
    }
}

/// The most files of a skill's folder `read_skill` lists.
const MOST_SKILL_FILES: usize = 200;

/// The files of a skill's folder beside its `SKILL.md` (its references,
/// scripts and resources), relative to it, sorted: what the agent may open
/// with `read_file` when the instructions point to them.
fn skill_files(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            match entry.file_type() {
                Ok(t) if t.is_dir() && !hidden => stack.push(path),
                Ok(t) if t.is_file() && !hidden => {
                    if let Ok(rel) = path.strip_prefix(dir)
                        && rel != std::path::Path::new("SKILL.md")
                    {
                        out.push(rel.display().to_string());
                    }
                }
                _ => {}
            }
            if out.len() >= MOST_SKILL_FILES {
                break;
            }
        }
    }
    out.sort();
    out
}
