//! The agents: each takes one inbound message at a time from its inbox,
//! runs a turn (prompt, model, tools, repeat), and hands the reply to the
//! outbox (or, when another agent asked, to that agent's inbox).
//!
//! - `history`: the inbox queue, sessions, messages, compactions;
//! - `profiles`: the agents table (the main agent and sub-agents);
//! - `turn`: one turn, with tool calls, compaction and cancellation;
//! - `prompt`: the system prompt;
//! - `slash`: commands answered without the model;
//! - `voice`: voice messages transcribed when a turn takes them.
//! - `budget`: a turn's model calls recorded, and the budgets that end it.
//! - `stop`: `/stop` cutting a running tool call short, and its live output.
//!
//! One runner task per agent: an agent's turns run one at a time, in
//! order; different agents' turns run at the same time.

pub mod activity;
mod attachments;
mod budget;
mod context;
mod document_caps;
mod documents;
pub mod history;
mod images;
mod memories;
pub mod model_choice;
pub mod profiles;
pub mod prompt;
mod slash;
pub mod stamp;
pub mod step;
mod stop;
pub mod templates;
mod tool_defs;
mod turn;
mod voice;
pub mod workers;

pub use tool_defs::ToolDefs;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth_sdk::protocol::ChannelEvent;

use crate::tools::ToolRegistry;
use hearth_base::channels::events::ChannelEvents;
use hearth_base::config::AgentConfig;
use hearth_base::store::now_ms;
use hearth_data::router::{AgentSignals, Router};
use hearth_model::llm::Llm;
use hearth_plugins::{ActivePlugin, state_word};
use history::Conversations;
use profiles::Profile;

/// One agent: who it is, its signals and model, on what every agent shares.
pub struct Agent {
    /// Who this agent is.
    pub profile: Profile,
    /// Its wake-ups and stop signal.
    pub signals: Arc<AgentSignals>,
    /// What every agent shares.
    pub base: AgentBase,
    /// The model (the agent's own, when it names one), or why there is
    /// none.
    pub llm: Result<Arc<Llm>, String>,
    /// Files `attach_file` put on the running turn's reply. An agent's
    /// turns run one at a time, so one list serves.
    pub attached: std::sync::Mutex<Vec<hearth_sdk::protocol::Attachment>>,
    /// The tool definitions sent to the model (those the agent may use),
    /// rebuilt when the tool set changes.
    pub tool_defs: ToolDefs,
    /// Each conversation's context, kept while the prompt cache holds it.
    pub contexts: context::Contexts,
}

/// What every agent shares: the store, the model, the tools, the channels.
#[derive(Clone)]
pub struct AgentBase {
    /// The conversation tables.
    pub conversations: Arc<Conversations>,
    /// Every agent's memories and scratchpad.
    pub notes: Arc<hearth_data::knowledge::notes::Notes>,
    /// The configured model, or why there is none.
    pub llm: Result<Arc<Llm>, String>,
    /// Every tool.
    pub tools: Arc<ToolRegistry>,
    /// Wake-ups and stop signals.
    pub router: Arc<Router>,
    /// `[agent]`.
    pub config: AgentConfig,
    /// The main agent's identity, versioned.
    pub identity: Arc<hearth_data::knowledge::identity::Identity>,
    /// The owner's name.
    pub owner: Option<String>,
    /// Plugin names and states, for `/status`.
    pub plugins: Vec<String>,
    /// The kernel floor, in words, for `/status`.
    pub floor: String,
    /// Automatic memory capture, in words (`on: ...` or why it is off),
    /// for `/status` and `/memory`.
    pub capture: String,
    /// The config file the daemon runs with (absolute), `None` for the
    /// built-in defaults: one-shot commands use the same one.
    pub config_file: Option<std::path::PathBuf>,
    /// The plugins that serve a channel.
    pub channels: Vec<Arc<ActivePlugin>>,
    /// When the daemon started.
    pub started: Instant,
    /// Streamed text and status for the channels that show them.
    pub events: Arc<ChannelEvents>,
    /// `spawn_agent`'s workers (a daemon's).
    pub workers: Option<Arc<workers::Workers>>,
    /// Which agents are at work.
    pub activity: Arc<activity::Activity>,
    /// The scheduler's jobs: a firing's options, and how its run went.
    pub jobs: Option<Arc<crate::scheduler::Jobs>>,
    /// Where the owner is reached (a scheduled task's answer).
    pub reach: Arc<hearth_data::people::Reach>,
    /// Indexes stored messages for search, once turns settle.
    pub indexer: Option<Arc<hearth_data::knowledge::index::Indexer>>,
    /// The owner's time zone: message times and the prompt's clock.
    pub zone: jiff::tz::TimeZone,
    /// Records every model call's tokens; the budgets.
    pub usage: Arc<hearth_model::usage::Meter>,
    /// Where the copies of images prepared for the model are saved
    /// (`$HEARTH_HOME/media`).
    pub media_dir: std::path::PathBuf,
    /// `[documents]`: how much of a document is read, and when a PDF goes
    /// to the model as the file.
    pub documents: hearth_base::config::DocumentsConfig,
}

impl Agent {
    /// The agent `profile` describes, on `base`. A sub-agent that names a
    /// model asks that model first.
    pub fn new(base: &AgentBase, profile: Profile) -> Agent {
        let llm = match (&base.llm, &profile.model) {
            (Ok(llm), Some(model)) => Ok(Arc::new(llm.with_model(model))),
            (llm, _) => llm.clone(),
        };
        Agent {
            signals: base.router.agent(profile.id),
            profile,
            base: base.clone(),
            llm,
            attached: Default::default(),
            tool_defs: Default::default(),
            contexts: Default::default(),
        }
    }

    /// Starts the runner: recovers interrupted turns, then takes messages
    /// as they arrive until the task is aborted.
    pub fn spawn(self: Arc<Self>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let id = self.profile.id;
            match self.base.conversations.recover(id) {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(agent = %self.profile.name, count = n, "re-running turns interrupted by the last stop")
                }
                Err(e) => tracing::error!("cannot recover interrupted turns: {e}"),
            }
            loop {
                // Registered before the inbox is read, so a message stored
                // in between still wakes this loop.
                let woken = self.signals.wake.notified();
                match self.base.conversations.claim_next(id) {
                    Ok(Some(claimed)) => self.turn(claimed).await,
                    Ok(None) => woken.await,
                    Err(e) => {
                        tracing::error!("cannot read the inbox: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        })
    }

    /// The configured model's name, if any.
    pub fn model(&self) -> Option<String> {
        self.llm_now().ok().map(|l| l.model().to_owned())
    }

    /// The model a turn asks now: the agent's own; for the main agent,
    /// the one the owner chose (`/model`, `hearth model`), read from its
    /// row at every turn so a choice made from the terminal takes effect
    /// without a restart (one indexed read, against a model call).
    pub fn llm_now(&self) -> Result<Arc<Llm>, String> {
        if !self.profile.is_main() {
            return self.llm.clone();
        }
        let base = self.base.llm.clone()?;
        match self.base.conversations.chosen_model(self.profile.id) {
            Ok(Some(model)) if model != base.model() && base.choices().contains(&model) => {
                Ok(Arc::new(base.with_model(&model)))
            }
            Ok(_) => Ok(base),
            Err(e) => {
                tracing::warn!("cannot read the chosen model, asking [llm] model: {e}");
                Ok(base)
            }
        }
    }

    /// Tells the channels that show it whether a turn is running.
    pub fn announce(&self, busy: bool) {
        // `busy` is the main agent's alone: a sub-agent answering a contact
        // must not make the owner's chat show "typing…". It is listed
        // among the agents at work instead.
        let now = if self.profile.is_main() {
            self.base.activity.main(busy)
        } else {
            self.base.activity.other(&self.profile.name, busy)
        };
        self.base.events.broadcast(&ChannelEvent::Status {
            busy: now.main_busy,
            model: self.base.activity.model().map(str::to_owned),
            working: now.working,
        });
    }

    /// What `/status` and `hearth status` show.
    pub fn status(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.llm_now().map(|l| l.model().to_owned()).unwrap_or_else(|why| format!("none ({why})")),
            "prompt_cache": self.base.usage.cache_figures(),
            "uptime_s": self.base.started.elapsed().as_secs(),
            "plugins": self.base.plugins,
            "channels": self.channel_health(),
            "servers": self.servers(),
            "tools": self.base.tools.list().len(),
            "queue": self.base.conversations.pending().unwrap_or(-1),
            "floor": self.base.floor,
            "config": self.base.config_file,
        })
    }

    /// `status` as text.
    pub fn status_text(&self) -> String {
        let s = self.status();
        let uptime = s["uptime_s"].as_u64().unwrap_or(0);
        let now = now_ms();
        // One line each: a down channel's reason can be long, and the
        // owner reads it here first.
        let channels: Vec<String> = self
            .base
            .channels
            .iter()
            .map(|p| {
                let health = match p.channel_status() {
                    Some(h) if h.detail.is_empty() => format!("{} {}", p.name, state_word(h.state)),
                    Some(h) => format!("{} {} ({})", p.name, state_word(h.state), h.detail),
                    None => format!("{} (no report yet)", p.name),
                };
                format!("\n  {health} {}", p.channel_activity().text(now))
            })
            .collect();
        let servers: Vec<String> = s["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["plugin"] == "mcp")
            .map(|p| {
                let (name, state) = (&p["name"], &p["state"]);
                let (name, state) = (name.as_str().unwrap_or("?"), state.as_str().unwrap_or("?"));
                match p["detail"].as_str().filter(|d| !d.is_empty()) {
                    Some(detail) => format!("{name} {state} ({detail})"),
                    None => format!("{name} {state}"),
                }
            })
            .collect();
        let mut servers = if servers.is_empty() {
            String::new()
        } else {
            format!("\nmcp servers: {}", servers.join(", "))
        };
        // Other plugins' parts (the browser's Chromium), one line each.
        for p in s["servers"].as_array().into_iter().flatten() {
            if p["plugin"] != "mcp" {
                servers.push_str(&format!(
                    "\n{}: {} ({})",
                    p["plugin"].as_str().unwrap_or("?"),
                    p["state"].as_str().unwrap_or("?"),
                    p["detail"].as_str().unwrap_or_default()
                ));
            }
        }
        format!(
            "model: {}\nprompt: {}\nuptime: {}h {:02}m {:02}s\nplugins: {}\nchannels:{}{servers}\ntools: {}\nqueue: {}\nfloor: {}\nmemory capture: {}",
            s["model"].as_str().unwrap_or("?"),
            cache_line(&self.base.usage.cache_figures()),
            uptime / 3600,
            uptime / 60 % 60,
            uptime % 60,
            self.base.plugins.join(", "),
            if channels.is_empty() {
                " none".to_owned()
            } else {
                channels.concat()
            },
            s["tools"],
            s["queue"],
            self.base.floor,
            self.base.capture
        )
    }

    /// `/browser`: what the agent's browser is doing.
    pub(super) fn browser_text(&self) -> String {
        let parts = hearth_plugins::parts(self.base.tools.plugins());
        match parts.iter().find(|p| p.plugin == "browser") {
            Some(part) => {
                let state = serde_json::to_value(part.status.state).unwrap_or_default();
                format!(
                    "browser: {} ({})",
                    state.as_str().unwrap_or("?"),
                    part.status.detail
                )
            }
            None => "The browser plugin is not loaded.".into(),
        }
    }

    /// The parts plugins run (MCP servers, the browser), with their health
    /// now.
    fn servers(&self) -> Vec<serde_json::Value> {
        hearth_plugins::parts(self.base.tools.plugins())
            .into_iter()
            .map(|part| {
                serde_json::json!({
                    "plugin": part.plugin,
                    "name": part.status.name,
                    "state": part.status.state,
                    "detail": part.status.detail,
                    "tools": part.status.tools,
                })
            })
            .collect()
    }

    /// Each channel plugin's last reported health and activity (Unix
    /// milliseconds; `null` for what has not happened since the start).
    fn channel_health(&self) -> Vec<serde_json::Value> {
        self.base
            .channels
            .iter()
            .map(|p| {
                let health = p.channel_status();
                let activity = p.channel_activity();
                serde_json::json!({
                    "plugin": p.name,
                    "channel": p.description().channel.as_ref().map(|c| c.name.clone()),
                    "state": health.as_ref().map(|h| state_word(h.state)),
                    "detail": health.map(|h| h.detail),
                    "since_ms": activity.since_ms,
                    "last_in_ms": activity.last_in_ms,
                    "last_out_ms": activity.last_out_ms,
                })
            })
            .collect()
    }

    /// `(name, description)` of every skill.
    pub fn skills(&self) -> Vec<(String, String)> {
        self.base
            .tools
            .scripts()
            .map(|s| {
                s.catalog()
                    .skills()
                    .map(|k| (k.doc.name.clone(), k.doc.description.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `/status`'s line on the prompt: its fixed part and how much of what
/// was sent the cache served.
fn cache_line(c: &hearth_model::usage::CacheFigures) -> String {
    let fixed = match c.fixed_prompt_tokens {
        Some(tokens) => format!("about {tokens} tokens of tools and instructions per call"),
        None => "no model call yet".to_owned(),
    };
    if c.prompt_tokens == 0 {
        return fixed;
    }
    format!(
        "{fixed}; {}% of {} prompt tokens since the start read from the cache",
        c.cached_tokens * 100 / c.prompt_tokens,
        c.prompt_tokens
    )
}
