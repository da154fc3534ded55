//! One agent's model loop inside a group: the leader planning or summing
//! up, a member working on a deliverable.
//!
//! Like a worker's run (`agent/workers.rs`), but in a session that
//! outlives the daemon: every message is stored as it is made, so a run a
//! restart cut short goes on from its stored session instead of starting
//! over. The group's own tools (`group_post`, `submit_plan`, ...) are
//! answered by the caller's handler, not the registry: they only mean
//! something inside this run.

use std::sync::Arc;

use rusqlite::params;
use serde_json::Value;

use crate::agent::step::{self, Who};
use crate::tools::ToolRegistry;
use hearth_base::caller::{Caller, ToolScope};
use hearth_base::store::{Cold, now_ms};
use hearth_model::llm::{Block, Llm, Message, Role, ToolDef};
use hearth_model::usage::{Kind, Meter};

/// Tools a group's agents never get in a group run, whatever their list
/// says: they reach people, spawn agents or change groups and agents.
pub const NEVER: [&str; 12] = [
    "spawn_agent",
    "send_message",
    "send_agent_message",
    "manage_agents",
    "manage_contacts",
    "manage_agent_templates",
    "manage_groups",
    "assign_mission",
    "attach_file",
    "reply_with_voice",
    "canvas_show",
    "manage_schedule",
];

/// What a run needs.
pub struct Run<'a> {
    /// The model, with the agent's override applied.
    pub llm: &'a Llm,
    /// The registry, for the agent's own tools.
    pub tools: &'a Arc<ToolRegistry>,
    /// Who the calls are made as (the agent).
    pub caller: Caller,
    /// Which registry tools it is offered.
    pub scope: ToolScope,
    /// Where model calls are counted.
    pub usage: &'a Meter,
    /// Where the session is stored.
    pub cold: &'a Cold,
    /// The agent.
    pub agent: i64,
    /// Its session.
    pub session: i64,
    /// The system prompt.
    pub system: crate::agent::prompt::SystemPrompt,
    /// The group's tools offered in this run.
    pub own: Vec<ToolDef>,
    /// The most model calls.
    pub max_steps: u32,
    /// The most tokens, in and out.
    pub token_budget: u64,
}

/// What the handler made of a call to one of the group's tools.
pub struct Handled {
    /// The tool's result, or its error.
    pub result: Result<Value, String>,
    /// End the run after this step (the deliverable is reported complete,
    /// the plan accepted).
    pub stop: bool,
}

/// How a run ended.
pub enum Ended {
    /// The model answered without calling a tool.
    Answered(String),
    /// A group tool ended it.
    Stopped,
    /// It hit a bound, named here.
    Bound(String),
    /// The model failed.
    Failed(String),
}

impl Run<'_> {
    /// Runs the loop over `messages` (the stored session so far, with the
    /// new message at the end, already stored), with `handle` answering
    /// the group's tools.
    pub async fn drive(
        &self,
        messages: &mut Vec<Message>,
        handle: &mut (dyn FnMut(&str, &Value) -> Option<Handled> + Send),
    ) -> Ended {
        let mut defs: Vec<ToolDef> = self
            .tools
            .list()
            .into_iter()
            .filter(|t| self.scope.allows(&t.spec.name) && !NEVER.contains(&t.spec.name.as_str()))
            .filter(|t| !t.spec.name.starts_with("canvas_"))
            .map(|t| crate::tools::offered(t.spec))
            .collect();
        defs.extend(self.own.iter().cloned());
        let defs: Arc<[ToolDef]> = defs.into();
        let mut tokens = 0u64;
        for _ in 0..self.max_steps {
            if let Err(spent) = self.usage.check(None) {
                return Ended::Bound(spent.bound());
            }
            let who = Who {
                agent: self.agent,
                session: self.session,
                turn: None,
                kind: Kind::Group,
            };
            let (answer, used) =
                match step::ask(self.llm, self.usage, &who, &self.system, messages, &defs).await {
                    Ok(step) => step,
                    Err(why) => return Ended::Failed(why),
                };
            tokens += used;
            store(self.cold, self.session, &answer);
            let calls: Vec<(String, String, Value)> = answer
                .tool_uses()
                .map(|(id, name, input)| {
                    (
                        id.to_owned(),
                        self.tools.resolve(name).into_owned(),
                        input.clone(),
                    )
                })
                .collect();
            let text = answer.text();
            messages.push(answer);
            if calls.is_empty() {
                return Ended::Answered(text);
            }
            let mut results = Vec::with_capacity(calls.len());
            let mut stop = false;
            for (id, name, input) in calls {
                let (content, is_error) = match handle(&name, &input) {
                    Some(handled) => {
                        stop |= handled.stop;
                        outcome_of(handled.result)
                    }
                    None => self.call(name, input).await,
                };
                results.push(Block::ToolResult {
                    tool_use_id: id,
                    content,
                    is_error,
                });
            }
            let results = Message {
                role: Role::User,
                content: results,
            };
            store(self.cold, self.session, &results);
            messages.push(results);
            if stop {
                return Ended::Stopped;
            }
            if tokens > self.token_budget {
                return Ended::Bound(format!(
                    "its token budget of {} ([groups] token_budget; it used {tokens})",
                    self.token_budget
                ));
            }
        }
        Ended::Bound(format!(
            "its {} model calls ([groups] max_steps)",
            self.max_steps
        ))
    }

    /// One of the agent's own tools, through the registry on a blocking
    /// thread; a tool outside its scope is refused there.
    async fn call(&self, name: String, input: Value) -> (String, bool) {
        if NEVER.contains(&name.as_str()) || !self.scope.allows(&name) {
            return (
                format!("{name} is not one of your tools in this group"),
                true,
            );
        }
        step::call_tool(self.tools, &self.caller, name, input).await
    }
}

/// A stored session, read back to go on with it. A step a restart cut
/// between the model's tool calls and their results gets results that
/// say so, since the calls may or may not have run.
pub fn load(cold: &Cold, session: i64) -> Vec<Message> {
    let rows: Vec<(String, String)> = {
        let conn = cold.lock();
        let stmt = conn
            .prepare_cached("SELECT role, content FROM messages WHERE session_id = ?1 ORDER BY id");
        match stmt.and_then(|mut s| {
            s.query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        }) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(session, "cannot read a group session: {e}");
                Vec::new()
            }
        }
    };
    let mut messages: Vec<Message> = rows
        .into_iter()
        .map(|(role, content)| Message {
            role: if role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            },
            content: serde_json::from_str(&content).unwrap_or_default(),
        })
        .collect();
    let open: Vec<String> = messages
        .last()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.tool_uses().map(|(id, _, _)| id.to_owned()).collect())
        .unwrap_or_default();
    if !open.is_empty() {
        let results = Message {
            role: Role::User,
            content: open
                .into_iter()
                .map(|id| Block::ToolResult {
                    tool_use_id: id,
                    content: "hearth restarted before this call's result was kept: it may or may \
                              not have run. Check before doing it again."
                        .into(),
                    is_error: true,
                })
                .collect(),
        };
        store(cold, session, &results);
        messages.push(results);
    }
    messages
}

/// Stores a message of the session.
pub fn store(cold: &Cold, session: i64, message: &Message) {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let content = serde_json::to_string(&message.content).unwrap_or_else(|_| "[]".into());
    let stored = cold.lock().execute(
        "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
        params![session, role, content, now_ms()],
    );
    if let Err(e) = stored {
        tracing::warn!(session, "cannot store a group message: {e}");
    }
}

fn outcome_of(result: Result<Value, String>) -> (String, bool) {
    match result {
        Ok(value) => (value.to_string(), false),
        Err(e) => (e, true),
    }
}
