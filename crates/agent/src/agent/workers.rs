//! Delegated workers: `spawn_agent` runs one task in a fresh, invisible
//! session and hands the final answer back to the caller as the tool's
//! result.
//!
//! A worker gets the workers' base prompt plus its spec's instructions,
//! never the caller's history or the owner's memory, and only the tools on
//! its list minus those that reach people, channels or other agents
//! (`spawn_agent` among them: workers do not spawn workers). It is bounded
//! three ways: model calls (`max_turns`), tokens (`token_budget`, as the
//! provider counts them) and wall-clock time (`[agent] worker_timeout_ms`);
//! the bound it hits is named in its result, with what it had so far. Its
//! model calls are recorded (`usage`) and count toward the daily budget
//! and its caller's turn, so a spent budget stops it too.
//!
//! Every run is stored in `workers` as it starts. After a crash, a run still
//! marked `running` is `interrupted`: the caller's turn is run again (as
//! every interrupted turn is), and that retried turn is told once which of
//! its earlier attempt's workers were lost (`reported`).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use rusqlite::params;
use serde_json::{Value, json};

use super::templates::WorkerSpec;
use crate::tools::{ToolRegistry, TurnContext};
use hearth_base::caller::{Caller, ToolScope};
use hearth_base::store::{Cold, now_ms};
use hearth_model::llm::{Block, Llm, Message, Role, ToolDef};
use hearth_model::summary::Summaries;
use hearth_model::usage::{Kind, Meter};

/// Tools a worker never gets, whatever its list says: they reach people,
/// channels, other agents, or spawn more workers.
const NEVER: [&str; 9] = [
    "spawn_agent",
    "send_message",
    "send_agent_message",
    "manage_agents",
    "manage_contacts",
    "manage_agent_templates",
    "attach_file",
    "reply_with_voice",
    "canvas_show",
];

/// The start of every worker's prompt.
const BASE_PROMPT: &str = "You are a worker of hearth, a personal assistant: another agent gave you \
one task. Do it with the tools you have and answer with the result alone; your final answer is \
handed back as it is. You cannot ask anyone anything and do not see the conversation the task \
came from. If the task cannot be done, say why in one or two sentences.";

/// The workers' settings.
#[derive(Clone, Debug)]
pub struct WorkerLimits {
    /// The wall-clock limit of one worker.
    pub timeout: Duration,
    /// Results longer than this are cut, the whole kept in a file.
    pub max_result_chars: usize,
    /// Where long results are kept (`$HEARTH_HOME/workers`).
    pub dir: PathBuf,
}

/// Tells the channels that a worker, by name, started (`true`) or ended.
pub type Announce = Box<dyn Fn(&str, bool) + Send + Sync>;

/// What a run of the daemon needs to run workers; connected once the
/// model and the registry exist (the registry holds the tool that holds
/// this, so it is held weakly).
struct Connected {
    llm: Result<Arc<Llm>, String>,
    tools: Weak<ToolRegistry>,
    handle: tokio::runtime::Handle,
    announce: Announce,
}

/// Runs workers.
pub struct Workers {
    cold: Cold,
    usage: Arc<Meter>,
    /// Summaries of results over the size bound, with a cheap model.
    summaries: Arc<Summaries>,
    limits: WorkerLimits,
    connected: OnceLock<Connected>,
}

impl Workers {
    /// Workers storing their runs on `cold`, their model calls on `usage`,
    /// summarizing long results with `summaries`.
    pub fn new(
        cold: Cold,
        usage: Arc<Meter>,
        summaries: Arc<Summaries>,
        limits: WorkerLimits,
    ) -> Workers {
        Workers {
            cold,
            usage,
            summaries,
            limits,
            connected: OnceLock::new(),
        }
    }

    /// Gives the workers the model, the registry, the runtime to drive
    /// model calls on, and how to tell the channels a worker is busy.
    pub fn connect(
        &self,
        llm: Result<Arc<Llm>, String>,
        tools: &Arc<ToolRegistry>,
        handle: tokio::runtime::Handle,
        announce: Announce,
    ) {
        let _ = self.connected.set(Connected {
            llm,
            tools: Arc::downgrade(tools),
            handle,
            announce,
        });
    }

    /// At start: runs cut short by the last stop become `interrupted`.
    pub fn recover(&self) -> rusqlite::Result<usize> {
        self.cold.lock().execute(
            "UPDATE workers SET status = 'interrupted', finished_at_ms = ?1 WHERE status = 'running'",
            [now_ms()],
        )
    }

    /// The tasks of the workers an earlier attempt of turn `inbox_id`
    /// started and a restart cut short, each told once: they are marked
    /// reported here.
    pub fn interrupted_for(&self, inbox_id: i64) -> rusqlite::Result<Vec<String>> {
        let conn = self.cold.lock();
        let mut stmt = conn.prepare_cached(
            "UPDATE workers SET reported = 1 \
             WHERE caller_inbox_id = ?1 AND status = 'interrupted' AND reported = 0 RETURNING task",
        )?;
        stmt.query_map([inbox_id], |r| r.get(0))?.collect()
    }

    fn start_row(
        &self,
        caller: &Caller,
        turn: Option<&TurnContext>,
        spec: &WorkerSpec,
        task: &str,
    ) -> Result<(i64, i64), String> {
        let conn = self.cold.lock();
        let agent = turn.map_or(hearth_base::store::MAIN_AGENT, |t| t.agent);
        let store = |e: rusqlite::Error| format!("the worker could not be stored: {e}");
        conn.execute(
            "INSERT INTO sessions (agent_id, channel, chat, started_at_ms, ended_at_ms) \
             VALUES (?1, 'worker', ?2, ?3, ?3)",
            params![agent, caller.as_str(), now_ms()],
        )
        .map_err(store)?;
        let session = conn.last_insert_rowid();
        conn.execute(
            "INSERT INTO workers (caller_agent_id, caller_inbox_id, spec, task, session_id, started_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                agent,
                turn.map(|t| t.inbox_id),
                serde_json::to_string(spec).unwrap_or_default(),
                task,
                session,
                now_ms()
            ],
        )
        .map_err(store)?;
        Ok((conn.last_insert_rowid(), session))
    }

    /// The result as the caller sees it: whole, or cut with the whole kept
    /// in a file whose path is given.
    /// A result within the bound, or its head, where the whole is kept,
    /// and (with a cheap model) a summary of the whole.
    fn shorten(&self, id: i64, task: &str, text: &str) -> String {
        if text.chars().count() <= self.limits.max_result_chars {
            return text.to_owned();
        }
        let summary = if self.summaries.configured() {
            let task: String = task.chars().take(300).collect();
            let about = format!("the answer of a helper agent that was asked: {task}");
            match self.summaries.summarize_blocking(&about, text) {
                Ok(summary) => {
                    format!("[a summary of the whole result, by the cheap model:]\n{summary}\n\n")
                }
                Err(e) => {
                    tracing::info!(worker = id, "the long result is not summarized: {e}");
                    String::new()
                }
            }
        } else {
            String::new()
        };
        let path = self.limits.dir.join(format!("worker-{id}.txt"));
        let kept = std::fs::create_dir_all(&self.limits.dir)
            .and_then(|()| std::fs::write(&path, text))
            .map(|()| format!("the whole result is in {}", path.display()))
            .unwrap_or_else(|e| format!("the whole result could not be kept: {e}"));
        let head: String = text.chars().take(self.limits.max_result_chars).collect();
        format!(
            "{summary}{head}\n[cut at {} characters; {kept}]",
            self.limits.max_result_chars
        )
    }
}

/// How a worker ended.
enum Outcome {
    /// It answered.
    Done(String),
    /// It hit a bound.
    Bound {
        /// Which, in words.
        bound: String,
        /// Its last text.
        so_far: String,
    },
    /// The model failed.
    Failed(String),
}

/// One worker's run.
struct Run<'a> {
    id: i64,
    spec: &'a WorkerSpec,
    scope: ToolScope,
    caller: Caller,
    llm: &'a Llm,
    tools: &'a Arc<ToolRegistry>,
    cold: &'a Cold,
    usage: &'a Meter,
    /// The agent that spawned it.
    agent: i64,
    /// Its own session.
    session: i64,
    /// The turn that spawned it, whose count its calls add to.
    turn: Option<i64>,
}

impl Run<'_> {
    async fn drive(&self, task: &str) -> Outcome {
        let mut messages = vec![Message::user_text(task.to_owned())];
        self.store(&messages[0]);
        let fixed = if self.spec.system_prompt.is_empty() {
            BASE_PROMPT.to_owned()
        } else {
            format!(
                "{BASE_PROMPT}\n\n## Your instructions\n{}",
                self.spec.system_prompt
            )
        };
        let system = super::prompt::SystemPrompt {
            fixed,
            context: String::new(),
        };
        let tools: Arc<[ToolDef]> = self
            .tools
            .list()
            .into_iter()
            .filter(|t| self.scope.allows(&t.spec.name))
            .map(|t| crate::tools::offered(t.spec))
            .collect();
        let mut tokens = 0u64;
        for _ in 0..self.spec.max_turns {
            if let Err(spent) = self.usage.check(self.turn) {
                return Outcome::Bound {
                    bound: spent.bound(),
                    so_far: self.last_text(),
                };
            }
            let who = super::step::Who {
                agent: self.agent,
                session: self.session,
                turn: self.turn,
                kind: Kind::Worker,
            };
            let (answer, used) = match super::step::ask(
                self.llm, self.usage, &who, &system, &messages, &tools,
            )
            .await
            {
                Ok(step) => step,
                Err(why) => return Outcome::Failed(why),
            };
            tokens += used;
            self.store(&answer);
            let calls: Vec<(String, String, Value)> = answer
                .tool_uses()
                .map(|(id, name, input)| {
                    let name = self.tools.resolve(name).into_owned();
                    (id.to_owned(), name, input.clone())
                })
                .collect();
            let text = answer.text();
            messages.push(answer);
            if calls.is_empty() {
                return Outcome::Done(text);
            }
            if tokens > self.spec.token_budget {
                return Outcome::Bound {
                    bound: format!(
                        "its token budget of {} (it used {tokens})",
                        self.spec.token_budget
                    ),
                    so_far: text,
                };
            }
            if let Err(spent) = self.usage.check(self.turn) {
                return Outcome::Bound {
                    bound: spent.bound(),
                    so_far: text,
                };
            }
            let mut results = Vec::with_capacity(calls.len());
            for (id, name, input) in calls {
                let (content, is_error) =
                    super::step::call_tool(self.tools, &self.caller, name, input).await;
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
            self.store(&results);
            messages.push(results);
        }
        Outcome::Bound {
            bound: format!("its {} model calls (max_turns)", self.spec.max_turns),
            so_far: self.last_text(),
        }
    }

    /// The worker's last words, from its stored session.
    fn last_text(&self) -> String {
        let conn = self.cold.lock();
        let content: Option<String> = conn
            .query_row(
                "SELECT m.content FROM messages m JOIN workers w ON w.session_id = m.session_id \
                 WHERE w.id = ?1 AND m.role = 'assistant' ORDER BY m.id DESC LIMIT 1",
                [self.id],
                |r| r.get(0),
            )
            .ok();
        let blocks: Vec<Block> = content
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or_default();
        let text = Message {
            role: Role::Assistant,
            content: blocks,
        }
        .text();
        if text.trim().is_empty() {
            "(nothing yet)".into()
        } else {
            text
        }
    }

    fn store(&self, message: &Message) {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let content = serde_json::to_string(&message.content).unwrap_or_else(|_| "[]".into());
        let stored = self.cold.lock().execute(
            "INSERT INTO messages (session_id, role, content, created_at_ms) \
             SELECT session_id, ?1, ?2, ?3 FROM workers WHERE id = ?4",
            params![role, content, now_ms(), self.id],
        );
        if let Err(e) = stored {
            tracing::warn!(worker = self.id, "cannot store a worker's message: {e}");
        }
    }
}

/// A worker's tools: its list, minus what it may never have.
fn worker_scope(allowed: &[String]) -> ToolScope {
    let names: Vec<String> = allowed
        .iter()
        .filter(|t| !NEVER.contains(&t.as_str()) && !t.starts_with("canvas_"))
        .cloned()
        .collect();
    ToolScope::from_list(&names)
}

/// `spawn_agent` reaches the workers through this.
impl crate::tools::SpawnWorkers for Workers {
    /// Runs `task` as a worker of `spec` for `caller`, blocking until it
    /// ends. Call it from a thread that may block.
    fn run(
        &self,
        caller: &Caller,
        turn: Option<&TurnContext>,
        spec: &WorkerSpec,
        task: &str,
    ) -> Result<Value, String> {
        let connected = self
            .connected
            .get()
            .ok_or("workers run only in the daemon")?;
        let llm = connected.llm.clone()?;
        let llm = match &spec.model {
            Some(model) => Arc::new(llm.with_model(model)),
            None => llm,
        };
        let tools = connected.tools.upgrade().ok_or("the daemon is stopping")?;
        let (id, session) = self.start_row(caller, turn, spec, task)?;
        let name = format!("worker {id}");
        (connected.announce)(&name, true);
        let scope = worker_scope(&spec.allowed_tools);
        let run = Run {
            id,
            spec,
            scope: scope.clone(),
            caller: Caller::worker(id, scope),
            llm: &llm,
            tools: &tools,
            cold: &self.cold,
            usage: &self.usage,
            agent: turn.map_or(hearth_base::store::MAIN_AGENT, |t| t.agent),
            session,
            turn: turn.map(|t| t.inbox_id),
        };
        let deadline = Instant::now() + self.limits.timeout;
        let outcome = connected.handle.block_on(async {
            match tokio::time::timeout_at(deadline.into(), run.drive(task)).await {
                Ok(outcome) => outcome,
                Err(_) => Outcome::Bound {
                    bound: format!(
                        "its wall-clock limit of {} s ([agent] worker_timeout_ms)",
                        self.limits.timeout.as_secs()
                    ),
                    so_far: run.last_text(),
                },
            }
        });
        (connected.announce)(&name, false);
        let (status, text) = match outcome {
            Outcome::Done(text) => ("done", text),
            Outcome::Bound { bound, so_far } => (
                "done",
                format!("[the worker stopped at {bound}; what it had so far:]\n{so_far}"),
            ),
            Outcome::Failed(why) => ("failed", format!("[the worker failed: {why}]")),
        };
        let shown = self.shorten(id, task, &text);
        self.cold
            .lock()
            .execute(
                "UPDATE workers SET status = ?1, result = ?2, finished_at_ms = ?3 WHERE id = ?4",
                params![status, text, now_ms(), id],
            )
            .map_err(|e| format!("the worker's result could not be stored: {e}"))?;
        Ok(json!({ "worker": id, "status": status, "result": shown }))
    }
}
