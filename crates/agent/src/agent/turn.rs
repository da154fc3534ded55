//! One turn: from an inbound message to the reply in the outbox.
//!
//! The turn appends the owner's message to the session, then loops: build
//! the prompt, call the model, store its answer, run the tools it asked for
//! (through the registry, on blocking threads), store their results, and go
//! again, until the model answers without tools or `max_steps` is reached.
//! Every step is stored as it happens. A model failure becomes a clear
//! reply; a bad tool name or bad arguments become a tool error the model
//! sees and can correct.

use std::sync::Arc;

use serde_json::Value;

use hearth_sdk::protocol::{Attachment, ChannelEvent};

use super::Agent;
use super::history::{AGENT_CHANNEL, AgentMessage, Claimed, History, Speaker};
use super::prompt::{ContextParts, PromptParts, context, system_prompt};
use super::stamp::message_header;
use super::step::cache_key;
use crate::scheduler::Job;
use crate::scheduler::fire::{SCHEDULER_CHANNEL, SILENT};
use crate::tools::{ATTACH_FILE, NOTEPAD, REPLY_WITH_VOICE, SPAWN_AGENT, ToolError, TurnContext};
use hearth_base::scope::{self, CallScope};
use hearth_model::llm::{Block, ChatRequest, Llm, Message, Role, StreamEvent};
use hearth_model::usage::Kind;

/// A tool call running on a blocking thread.
struct Started {
    id: String,
    name: String,
    call: tokio::task::JoinHandle<Result<Value, ToolError>>,
    /// Its stop signal and where its output goes.
    scope: Arc<CallScope>,
}

/// The first wait before a turn that could not be stored is queued again.
const REQUEUE_FIRST_WAIT: std::time::Duration = std::time::Duration::from_millis(250);
/// The longest wait between those attempts.
const REQUEUE_MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The most characters of one tool result shown to the model.
const MAX_TOOL_RESULT_CHARS: usize = 32_000;

/// The reply when no model is configured.
pub(super) const NO_MODEL: &str = "No model is configured, so I can only answer slash commands \
(try /help). To set one up, add an [llm] section to hearth.toml: for Anthropic, provider = \
\"anthropic\" and model = \"...\", with your key in the ANTHROPIC_API_KEY environment variable; \
for a local model, provider = \"openai\", base_url = \"http://127.0.0.1:11434/v1\" (Ollama) and \
the model's name.";

impl Agent {
    /// Runs one turn and stores its reply.
    pub(super) async fn turn(&self, claimed: Claimed) {
        let started = std::time::Instant::now();
        self.attached_files().clear();
        self.announce(true);
        // Another agent's words are never the owner's commands.
        let typed_command = claimed.text.trim_start().starts_with('/')
            && matches!(claimed.speaker, Speaker::Owner | Speaker::Contact(_));
        let job = self.job_of(&claimed);
        let (reply, last) = if typed_command {
            (super::slash::handle(self, &claimed).await, None)
        } else {
            match (&self.llm_now(), &job) {
                (Ok(llm), Some(job)) if job.model.is_some() || job.token_budget.is_some() => {
                    let llm = match &job.model {
                        Some(model) => Arc::new(llm.with_model(model)),
                        None => Arc::clone(llm),
                    };
                    let budget = job.token_budget.map(|b| b.max(0) as u64);
                    self.converse(&llm, &claimed, budget).await
                }
                (Ok(llm), _) => self.converse(llm, &claimed, None).await,
                (Err(_), _) => (NO_MODEL.to_owned(), None),
            }
        };
        // A run that ends in the model's final answer went well; anything
        // else (no model, a model error, the step limit, a stop) failed.
        let outcome = match &last {
            Some(_) => Ok(()),
            None => Err(reply.lines().next().unwrap_or_default().to_owned()),
        };
        self.base
            .events
            .flush(&claimed.channel, std::time::Duration::from_secs(1))
            .await;
        let last = last.as_ref().map(|(session, message)| (*session, message));
        let files = std::mem::take(&mut *self.attached_files());
        let reply_to = self.reply_route(&claimed, &reply);
        let deliver_to = self.delivery(&claimed, job.as_ref(), &reply);
        match self.base.conversations.finish(
            &claimed,
            last,
            &reply,
            &files,
            reply_to.as_ref(),
            deliver_to
                .as_ref()
                .map(|(c, chat)| (c.as_str(), chat.as_str())),
        ) {
            Ok(()) => match &reply_to {
                Some(answer) => self.base.router.agent(answer.to).wake.notify_one(),
                None => self.base.router.outbox_wake.notify_one(),
            },
            Err(e) => {
                tracing::error!(inbox = claimed.id, "cannot store the reply: {e}");
                if passes(&e) {
                    self.requeue(claimed.id).await;
                }
            }
        }
        if let Some(job) = claimed.job_id {
            self.record_job_outcome(job, outcome);
        }
        if let Some(indexer) = &self.base.indexer {
            indexer.poke.notify_one();
        }
        self.announce(false);
        tracing::info!(
            inbox = claimed.id,
            ms = started.elapsed().as_millis() as u64,
            "turn done"
        );
    }

    /// Puts a message whose turn could not be stored (a full disk) back in
    /// the queue, to be run again once the store takes writes (any other
    /// failure leaves it in flight, to be re-run after a restart). Until it
    /// does, this agent waits here: its next turn could not be stored
    /// either.
    async fn requeue(&self, inbox_id: i64) {
        let mut wait = REQUEUE_FIRST_WAIT;
        for attempt in 0.. {
            match self.base.conversations.requeue(inbox_id) {
                Ok(_) => {
                    tracing::info!(inbox = inbox_id, "the turn will run again");
                    if attempt == 0 {
                        // The store took this small write but not the
                        // turn's: a nearly full disk. Pause, so it does not
                        // become a loop of model calls.
                        tokio::time::sleep(REQUEUE_MAX_WAIT).await;
                    }
                    return;
                }
                Err(e) => tracing::debug!(inbox = inbox_id, "cannot queue the turn again yet: {e}"),
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(REQUEUE_MAX_WAIT);
        }
    }

    /// Where the reply of a turn that answers another agent goes: back to
    /// that agent's inbox, unless the hop limit is spent (then it stays in
    /// this agent's session only, and the log says why).
    fn reply_route<'a>(&'a self, claimed: &'a Claimed, reply: &'a str) -> Option<AgentMessage<'a>> {
        if claimed.source != "agent" {
            return None;
        }
        let Speaker::Agent(asker, _) = claimed.speaker else {
            return None;
        };
        let hops = claimed.hops + 1;
        if hops > i64::from(self.base.config.max_agent_hops) {
            tracing::warn!(
                inbox = claimed.id,
                hops,
                "agent reply not sent: the hop limit is spent"
            );
            return None;
        }
        let origin = claimed
            .origin
            .as_ref()
            .map_or((AGENT_CHANNEL, claimed.chat.as_str()), |(ch, chat)| {
                (ch.as_str(), chat.as_str())
            });
        Some(AgentMessage {
            to: asker,
            from: (self.profile.id, &self.profile.name),
            source: "agent_reply",
            text: reply,
            hops,
            origin,
            key: format!("reply:{}", claimed.id),
        })
    }

    /// The scheduled job a claimed message is a firing of.
    fn job_of(&self, claimed: &Claimed) -> Option<Job> {
        let (jobs, id) = (self.base.jobs.as_ref()?, claimed.job_id?);
        jobs.get(id).ok()
    }

    /// Where the reply goes when not where the message came from: a
    /// scheduled task's answer goes to the owner (a heartbeat's to the
    /// chat `[heartbeat]` names, if it names one), or nowhere when the
    /// model answers [`SILENT`].
    fn delivery(
        &self,
        claimed: &Claimed,
        job: Option<&Job>,
        reply: &str,
    ) -> Option<(String, String)> {
        if claimed.channel != SCHEDULER_CHANNEL {
            return None;
        }
        if reply.trim().eq_ignore_ascii_case(SILENT) {
            return Some((SCHEDULER_CHANNEL.to_owned(), claimed.chat.clone()));
        }
        if let Some(job) = job.filter(|j| j.kind == crate::scheduler::Kind::Heartbeat)
            && let (Some(channel), Some(chat)) = (&job.channel, &job.chat)
        {
            return Some((channel.clone(), chat.clone()));
        }
        Some(self.base.reach.owner_address_or_later())
    }

    /// Records how a job's run went; tells the owner when that disabled it.
    fn record_job_outcome(&self, job: i64, outcome: Result<(), String>) {
        let Some(jobs) = &self.base.jobs else { return };
        match jobs.record_outcome(job, outcome) {
            Ok(None) => {}
            Ok(Some(notice)) => {
                tracing::warn!(job, "{notice}");
                let (channel, chat) = self.base.reach.owner_address_or_later();
                let stored = jobs.with_conn(|conn| {
                    hearth_data::router::outbox::enqueue(conn, &channel, &chat, &notice, &[])
                });
                match stored {
                    Ok(_) => self.base.router.outbox_wake.notify_one(),
                    Err(e) => tracing::error!(job, "cannot tell the owner: {e}"),
                }
            }
            Err(e) => tracing::error!(job, "cannot record the job's outcome: {e}"),
        }
    }

    /// The model's part of a turn: the reply text, and the model's final
    /// message, which `finish` stores in the same transaction as the reply.
    /// `budget` bounds the tokens the turn's model calls may use.
    async fn converse(
        &self,
        llm: &Arc<Llm>,
        claimed: &Claimed,
        budget: Option<u64>,
    ) -> (String, Option<(i64, Message)>) {
        match self.steps(llm, claimed, budget).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!("the conversation store failed: {e}");
                (
                    format!("Something went wrong storing our conversation ({e})."),
                    None,
                )
            }
        }
    }

    async fn steps(
        &self,
        llm: &Arc<Llm>,
        claimed: &Claimed,
        budget: Option<u64>,
    ) -> rusqlite::Result<(String, Option<(i64, Message)>)> {
        let _count = self.base.usage.begin_turn(claimed.id, budget);
        let stop_at_start = self.signals.stop_generation();
        let stopped = || ("Stopped.".to_owned(), None);
        let mut lost = Vec::new();
        if claimed.retried {
            self.base.conversations.clear_turn(claimed.id)?;
            lost = self.interrupted_workers(claimed.id);
        }
        let session =
            self.base
                .conversations
                .session(self.profile.id, &claimed.channel, &claimed.chat)?;
        let header = message_header(
            claimed.received_at_ms,
            &self.base.zone,
            &claimed.channel,
            &claimed.speaker,
            self.base.owner.as_deref(),
        );
        let (files, voice_notes) = self.hear(claimed).await;
        let (typed, images) = self.incoming(llm, &claimed.text, files).await;
        let mut typed = format!("{header}\n{typed}");
        typed.push_str(&voice_notes);
        if !lost.is_empty() {
            typed.push_str(&format!(
                "\n\n[hearth: a restart cut short the earlier attempt at this message; the workers it \
                 had spawned were interrupted and their results are lost: {}. Spawn them again if \
                 they are still needed.]",
                lost.iter()
                    .map(|t| format!("{t:?}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let mut message = Message::user_text(typed);
        message.content.extend(images);
        self.base
            .conversations
            .append(session, claimed.id, &message)?;
        let streams = self.base.events.takes_events(&claimed.channel);
        let on_text = |event: StreamEvent<'_>| {
            if !streams {
                return;
            }
            let (chat, turn) = (claimed.chat.clone(), claimed.key.clone());
            let event = match event {
                StreamEvent::Restart => ChannelEvent::DeltaReset { chat, turn },
                StreamEvent::Text(text) => ChannelEvent::Delta {
                    chat,
                    turn,
                    text: text.to_owned(),
                },
            };
            self.base.events.send(&claimed.channel, &event);
        };
        // Read once; each step appends to this copy as it stores.
        let mut history = self.base.conversations.history(session)?;
        for _ in 0..self.base.config.max_steps {
            if self.maybe_compact(llm, session, &history, claimed).await {
                history = self.base.conversations.history(session)?;
            }
            if let Some(reply) = self.budget_spent(claimed) {
                return Ok((reply, None));
            }
            let request = self.request(llm, &history, session)?;
            let response = tokio::select! {
                r = llm.stream(&request, &on_text) => r,
                () = self.signals.stopped_since(stop_at_start) => return Ok(stopped()),
            };
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!("model call failed: {e}");
                    let text = format!(
                        "I could not get an answer from the model: {e}. Your message is saved; try again in a moment."
                    );
                    return Ok((text, None));
                }
            };
            self.record_call(llm, Kind::Turn, session, claimed, &response);
            if self.profile.is_main() {
                let scope = self.profile.scope();
                let tools_chars = self.tool_defs.current(&self.base.tools, &scope).chars;
                self.base
                    .usage
                    .note_fixed_prompt(tools_chars + request.system.len());
            }
            self.base.usage.watch(session, request, &response.usage);
            let answer = Message {
                role: Role::Assistant,
                content: response.content,
            };
            // A model names a dotted tool in its wire form; from here on
            // (policy, audit, cards) the registry's name is used.
            let calls: Vec<(String, String, Value)> = answer
                .tool_uses()
                .map(|(id, name, input)| {
                    let name = self.base.tools.resolve(name).into_owned();
                    (id.to_owned(), name, input.clone())
                })
                .collect();
            if calls.is_empty() {
                let text = answer.text();
                let text = if text.trim().is_empty() {
                    "(no answer)".to_owned()
                } else {
                    text
                };
                return Ok((text, Some((session, answer))));
            }
            self.base
                .conversations
                .append_to(&mut history, session, claimed.id, answer)?;
            if let Some(reply) = self.budget_spent(claimed) {
                return Ok((reply, None));
            }
            let mut results = Vec::with_capacity(calls.len());
            let mut images = Vec::new();
            // A stop during the step still gives every call a result, so
            // the session stays whole for the next turn.
            let mut cut = super::stop::Cut::default();
            let mut calls = calls.into_iter().peekable();
            while let Some((id, name, input)) = calls.next() {
                if cut.stopped() || self.signals.stop_generation() != stop_at_start {
                    let command = self.base.tools.command_line(&name, &input);
                    let content = cut.not_run(super::stop::label(&name, command.as_deref()));
                    results.push(Block::ToolResult {
                        tool_use_id: id,
                        content,
                        is_error: true,
                    });
                    continue;
                }
                // Workers spawned side by side run at the same time; every
                // other call runs alone, in the model's order.
                let mut batch = vec![self.start_tool(claimed, id, name.clone(), input)];
                while name == SPAWN_AGENT
                    && let Some((id, name, input)) = calls.next_if(|(_, n, _)| n == SPAWN_AGENT)
                {
                    batch.push(self.start_tool(claimed, id, name, input));
                }
                for started in batch {
                    let (result, shown, was_cut) =
                        self.finish_tool(llm, started, stop_at_start).await;
                    results.push(result);
                    images.extend(shown);
                    if let Some(label) = was_cut {
                        cut.cut(label);
                    }
                }
            }
            // Both APIs want images after every tool result.
            results.extend(images);
            let results = Message {
                role: Role::User,
                content: results,
            };
            self.base
                .conversations
                .append_to(&mut history, session, claimed.id, results)?;
            if cut.stopped() {
                return Ok((cut.reply(), None));
            }
        }
        let text = format!(
            "I stopped after {} steps without finishing; ask me to continue if you want me to go on.",
            self.base.config.max_steps
        );
        Ok((text, None))
    }

    /// Starts one tool call on a blocking thread.
    fn start_tool(&self, claimed: &Claimed, id: String, name: String, input: Value) -> Started {
        let tools = Arc::clone(&self.base.tools);
        let tool = name.clone();
        let caller = self.profile.caller();
        let turn = self.turn_context(claimed);
        let scope = Arc::new(self.call_scope(claimed, &id, &name, &input));
        let within = Arc::clone(&scope);
        let call = tokio::task::spawn_blocking(move || {
            scope::within(within, || tools.call_in_turn(&caller, &turn, &tool, input))
        });
        Started {
            id,
            name,
            call,
            scope,
        }
    }

    /// Waits for a started call; failures become an error result for the
    /// model. A call the owner's `/stop` cut short comes back with how the
    /// reply names it; an image a plugin tool returned, with the blocks that
    /// show it.
    async fn finish_tool(
        &self,
        llm: &Llm,
        started: Started,
        stop_at_start: u64,
    ) -> (Block, Vec<Block>, Option<String>) {
        let Started {
            id,
            name,
            call,
            scope,
        } = started;
        let mut images = Vec::new();
        let (ended, cut) = self.wait_tool(call, &scope, stop_at_start).await;
        let (content, is_error) = match ended {
            Some(Ok(Ok(value))) => {
                if (name == ATTACH_FILE || name == REPLY_WITH_VOICE)
                    && let Ok(file) =
                        serde_json::from_value::<Attachment>(value["attached"].clone())
                {
                    self.attached_files().push(file);
                }
                let mut content = value.to_string();
                if let Some(shown) = self.tool_image(llm, &name, &value).await {
                    content.push_str(&shown.note);
                    images = shown.blocks;
                }
                (content, false)
            }
            Some(Ok(Err(e))) => (e.to_string(), true),
            Some(Err(e)) => (format!("the tool call was lost: {e}"), true),
            None => (String::new(), true),
        };
        let (content, is_error) = match &cut {
            Some(_) => (super::stop::cut_result(&content), true),
            None => (content, is_error),
        };
        tracing::debug!(tool = %name, is_error, "tool call done");
        let result = Block::ToolResult {
            tool_use_id: id,
            content: truncate(content),
            is_error,
        };
        (result, images, cut)
    }

    fn attached_files(&self) -> std::sync::MutexGuard<'_, Vec<Attachment>> {
        self.attached.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tasks of workers an earlier attempt of this turn spawned that a
    /// restart cut short, each reported once.
    fn interrupted_workers(&self, inbox_id: i64) -> Vec<String> {
        let Some(workers) = &self.base.workers else {
            return Vec::new();
        };
        workers.interrupted_for(inbox_id).unwrap_or_else(|e| {
            tracing::error!("cannot read interrupted workers: {e}");
            Vec::new()
        })
    }

    /// What a tool call made in this turn knows about it.
    pub(super) fn turn_context(&self, claimed: &Claimed) -> TurnContext {
        TurnContext {
            agent: self.profile.id,
            agent_name: self.profile.name.clone(),
            inbox_id: claimed.id,
            hops: claimed.hops,
            channel: claimed.channel.clone(),
            chat: claimed.chat.clone(),
        }
    }

    /// The request for the next model call: the fixed prompt, the
    /// conversation's context (kept while the cache holds it), and the
    /// history.
    fn request(&self, llm: &Llm, history: &History, session: i64) -> rusqlite::Result<ChatRequest> {
        let scope = self.profile.scope();
        let tools = self.tool_defs.current(&self.base.tools, &scope);
        let identity = self.base.identity.current();
        let skills = self
            .skills()
            .into_iter()
            .filter(|(name, _)| self.profile.is_main() || scope.allows(&format!("{name}.*")))
            .collect();
        // The main agent writes the tools that use secrets; a sub-agent
        // (perhaps talking to a contact) is not told which ones exist.
        let secrets = match self.base.tools.secrets() {
            Some(secrets) if self.profile.is_main() => secrets.names(),
            _ => Vec::new(),
        };
        let system = system_prompt(&PromptParts {
            identity: &identity,
            profile: &self.profile,
            owner: self.base.owner.as_deref(),
            skills,
            secrets: &secrets,
        });
        let cache = llm.cache();
        let lifetime = cache.enabled.then(|| cache.ttl.duration());
        let context = self
            .contexts
            .get(session, history.summary.as_deref(), lifetime, || {
                let notepad = self.base.notes.notepad(session)?;
                // Each agent sees its own notes; the owner's are the main
                // agent's.
                let notes = self.base.notes.for_prompt(self.profile.id)?;
                Ok::<_, rusqlite::Error>(context(&ContextParts {
                    notes: &notes,
                    notepad: notepad.as_deref(),
                    summary: history.summary.as_deref(),
                }))
            })?;
        Ok(ChatRequest {
            system,
            context,
            cache_key: Some(cache_key(self.profile.id)),
            messages: super::documents::for_request(
                super::images::for_request(&history.messages, &llm.image_settings()),
                &llm.image_settings(),
            ),
            tools: tools.tools,
            max_tokens: llm.max_tokens(),
        })
    }

    /// Summarizes older messages once the history is too long. The cut
    /// falls just before a message the owner typed, so a tool call and its
    /// result are never separated.
    ///
    /// Returns whether it compacted.
    /// The step before a compaction: the agent is told it is coming and
    /// may save working state with the notepad tool, the only tool it is
    /// offered. One model call, bounded; its messages are not kept (the
    /// notepad is), and a failure only skips it.
    async fn before_compaction(
        &self,
        llm: &Llm,
        session: i64,
        history: &History,
        claimed: &Claimed,
    ) {
        let Ok(mut request) = self.request(llm, history, session) else {
            return;
        };
        let notice = "[hearth: this conversation is about to be compacted: older messages will be \
                      replaced by a short summary. Save what you need to keep working (the plan, \
                      decisions, open tasks, facts you would lose) to the notepad now with the \
                      notepad tool, then answer \"ok\".]";
        let mut messages = request.messages;
        match messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(Block::Text {
                text: notice.to_owned(),
            }),
            _ => messages.push(Message::user_text(notice.to_owned())),
        }
        request.messages = messages;
        // The tools stay as every call has them, though only the notepad
        // is wanted (the notice says so, and any other call is ignored):
        // the tools come first in the prompt, and a different list would
        // make the provider read the whole conversation afresh.
        request.max_tokens = request.max_tokens.min(1024);
        let response = match llm.complete(&request).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("the step before compaction failed, compacting anyway: {e}");
                return;
            }
        };
        self.record_call(llm, Kind::PreCompaction, session, claimed, &response);
        let answer = Message {
            role: Role::Assistant,
            content: response.content,
        };
        for (_, name, input) in answer.tool_uses() {
            if name != NOTEPAD {
                continue;
            }
            let (tools, caller, turn) = (
                Arc::clone(&self.base.tools),
                self.profile.caller(),
                self.turn_context(claimed),
            );
            let input = input.clone();
            let saved = tokio::task::spawn_blocking(move || {
                tools.call_in_turn(&caller, &turn, NOTEPAD, input)
            })
            .await;
            if !matches!(saved, Ok(Ok(_))) {
                tracing::warn!(session, "the notepad was not saved before compaction");
            }
        }
        tracing::info!(session, "the agent was told a compaction is coming");
    }

    async fn maybe_compact(
        &self,
        llm: &Llm,
        session: i64,
        history: &History,
        claimed: &Claimed,
    ) -> bool {
        let n = history.messages.len();
        if n <= self.base.config.compact_after_messages
            && history.chars <= self.base.config.compact_after_chars
        {
            return false;
        }
        let keep_from = n.saturating_sub(self.base.config.keep_recent_messages);
        let Some(cut) = (1..=keep_from)
            .rev()
            .find(|&i| is_typed_by_owner(&history.messages[i].1))
        else {
            return false;
        };
        // A spent budget skips the compaction; the step after says why.
        if !self.may_call(claimed) {
            return false;
        }
        self.before_compaction(llm, session, history, claimed).await;
        if !self.may_call(claimed) {
            return false;
        }
        let mut transcript = String::new();
        if let Some(summary) = &history.summary {
            transcript.push_str(&format!("Summary so far:\n{summary}\n\n"));
        }
        for (_, m) in &history.messages[..cut] {
            transcript.push_str(&render(m));
        }
        let request = ChatRequest::plain(
            "You summarize conversations between a person and their assistant. Keep every fact, \
             decision, open task and preference that matters for continuing; drop chit-chat. \
             Write plain prose, at most 300 words.",
            vec![Message::user_text(format!(
                "Summarize this conversation:\n\n{transcript}"
            ))],
            1024,
        );
        match llm.complete(&request).await {
            Ok(response) => {
                self.record_call(llm, Kind::Compaction, session, claimed, &response);
                let summary = Message {
                    role: Role::Assistant,
                    content: response.content,
                }
                .text();
                let up_to = history.messages[cut - 1].0;
                match self.base.conversations.compact(session, up_to, &summary) {
                    Ok(()) => {
                        tracing::info!(session, up_to, "conversation compacted");
                        true
                    }
                    Err(e) => {
                        tracing::warn!("cannot store the compaction: {e}");
                        false
                    }
                }
            }
            Err(e) => {
                tracing::warn!("compaction skipped, the model failed: {e}");
                false
            }
        }
    }
}

/// Whether a store error is one that passes (a full disk, an I/O error, a
/// lock), after which the turn is worth running again.
fn passes(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked, DiskFull, SystemIoFailure};
    matches!(
        e.sqlite_error_code(),
        Some(DiskFull | SystemIoFailure | DatabaseBusy | DatabaseLocked)
    )
}

/// A user message with text and no tool results: something the owner typed.
fn is_typed_by_owner(m: &Message) -> bool {
    m.role == Role::User
        && m.content.iter().any(|b| matches!(b, Block::Text { .. }))
        && !m
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
}

/// One message as transcript lines for the summarizer.
fn render(m: &Message) -> String {
    let who = match m.role {
        Role::User => "Owner",
        Role::Assistant => "Assistant",
    };
    let mut out = String::new();
    for b in &m.content {
        match b {
            Block::Text { text } => out.push_str(&format!("{who}: {text}\n")),
            Block::ToolUse { name, input, .. } => {
                out.push_str(&format!("{who} called {name} with {input}\n"))
            }
            Block::ToolResult {
                content, is_error, ..
            } => {
                let content: String = content.chars().take(500).collect();
                out.push_str(&format!(
                    "Tool {}: {content}\n",
                    if *is_error { "error" } else { "result" }
                ));
            }
            Block::Image(image) => out.push_str(&format!(
                "{who} showed an image: {} ({}x{}), saved at {}\n",
                image.name, image.width, image.height, image.source
            )),
            Block::Document(pdf) => {
                let text: String = pdf.text.chars().take(500).collect();
                out.push_str(&format!(
                    "{who} sent a PDF: {} ({} pages), saved at {}; it begins: {text}\n",
                    pdf.name, pdf.pages, pdf.source
                ))
            }
            // The summary keeps what was said and done, not how the model
            // got there.
            Block::Thinking { .. } | Block::RedactedThinking { .. } => {}
        }
    }
    out
}

fn truncate(mut text: String) -> String {
    if text.chars().count() > MAX_TOOL_RESULT_CHARS {
        text = text.chars().take(MAX_TOOL_RESULT_CHARS).collect();
        text.push_str("\n[truncated]");
    }
    text
}
