//! The agent: takes one inbound message at a time from the inbox, runs a
//! turn (prompt, model, tools, repeat), and hands the reply to the outbox.
//!
//! - `history`: the inbox queue, sessions, messages, compactions;
//! - `turn`: one turn, with tool calls, compaction and cancellation;
//! - `prompt`: the system prompt;
//! - `slash`: commands answered without the model;
//! - `memory`: the facts the agent keeps.
//!
//! One runner task per agent: its turns run one at a time, in order. Only
//! the main agent (id 1) exists so far; other agents' runners will run
//! concurrently beside it.

mod attachments;
pub mod history;
pub mod memory;
pub mod prompt;
mod slash;
mod tool_defs;
mod turn;

pub use tool_defs::ToolDefs;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth_sdk::protocol::{ChannelEvent, ChannelState};

use crate::config::AgentConfig;
use crate::llm::Llm;
use crate::plugins::ActivePlugin;
use crate::router::Router;
use crate::router::events::ChannelEvents;
use crate::tools::ToolRegistry;
use history::Conversations;
use memory::Memory;

/// Everything a turn needs.
pub struct Agent {
    /// The conversation tables.
    pub conversations: Conversations,
    /// The agent's memory.
    pub memory: Arc<Memory>,
    /// The model, or why there is none.
    pub llm: Result<Arc<Llm>, String>,
    /// Every tool.
    pub tools: Arc<ToolRegistry>,
    /// Wake-ups and the stop signal.
    pub router: Arc<Router>,
    /// `[agent]`.
    pub config: AgentConfig,
    /// The identity text.
    pub identity: String,
    /// The owner's name.
    pub owner: Option<String>,
    /// Plugin names and states, for `/status`.
    pub plugins: Vec<String>,
    /// The kernel floor under unapproved production commands, in words,
    /// for `/status`.
    pub floor: String,
    /// The plugins that serve a channel, for their health in `/status`.
    pub channels: Vec<Arc<ActivePlugin>>,
    /// When the daemon started.
    pub started: Instant,
    /// Streamed text and status for the channels that show them.
    pub events: Arc<ChannelEvents>,
    /// Files `attach_file` put on the running turn's reply. Turns run one
    /// at a time, so one list serves.
    pub attached: std::sync::Mutex<Vec<hearth_sdk::protocol::Attachment>>,
    /// The tool definitions sent to the model, rebuilt when the tool set
    /// changes.
    pub tool_defs: ToolDefs,
}

impl Agent {
    /// Starts the runner: recovers interrupted turns, then takes messages
    /// as they arrive until the task is aborted.
    pub fn spawn(self: Arc<Self>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            match self.conversations.recover() {
                Ok(0) => {}
                Ok(n) => tracing::info!(count = n, "re-running turns interrupted by the last stop"),
                Err(e) => tracing::error!("cannot recover interrupted turns: {e}"),
            }
            loop {
                match self.conversations.claim_next() {
                    Ok(Some(claimed)) => self.turn(claimed).await,
                    Ok(None) => self.router.agent_wake.notified().await,
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
        self.llm.as_ref().ok().map(|l| l.model().to_owned())
    }

    /// Tells the channels that show it whether a turn is running.
    pub fn announce(&self, busy: bool) {
        self.events.broadcast(&ChannelEvent::Status {
            busy,
            model: self.model(),
        });
    }

    /// What `/status` and `hearth status` show.
    pub fn status(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.llm.as_ref().map(|l| l.model().to_owned()).unwrap_or_else(|why| format!("none ({why})")),
            "uptime_s": self.started.elapsed().as_secs(),
            "plugins": self.plugins,
            "channels": self.channel_health(),
            "tools": self.tools.list().len(),
            "queue": self.conversations.pending().unwrap_or(-1),
            "floor": self.floor,
        })
    }

    /// `status` as text.
    pub fn status_text(&self) -> String {
        let s = self.status();
        let uptime = s["uptime_s"].as_u64().unwrap_or(0);
        let channels: Vec<String> = self
            .channels
            .iter()
            .map(|p| match p.channel_status() {
                Some(h) if h.detail.is_empty() => format!("{} {}", p.name, state_name(h.state)),
                Some(h) => format!("{} {} ({})", p.name, state_name(h.state), h.detail),
                None => format!("{} (no report)", p.name),
            })
            .collect();
        format!(
            "model: {}\nuptime: {}h {:02}m {:02}s\nplugins: {}\nchannels: {}\ntools: {}\nqueue: {}\nfloor: {}",
            s["model"].as_str().unwrap_or("?"),
            uptime / 3600,
            uptime / 60 % 60,
            uptime % 60,
            self.plugins.join(", "),
            if channels.is_empty() {
                "none".to_owned()
            } else {
                channels.join(", ")
            },
            s["tools"],
            s["queue"],
            self.floor
        )
    }

    /// Each channel plugin's last reported health.
    fn channel_health(&self) -> Vec<serde_json::Value> {
        self.channels
            .iter()
            .map(|p| {
                let health = p.channel_status();
                serde_json::json!({
                    "plugin": p.name,
                    "channel": p.description().channel.as_ref().map(|c| c.name.clone()),
                    "state": health.as_ref().map(|h| state_name(h.state)),
                    "detail": health.map(|h| h.detail),
                })
            })
            .collect()
    }

    /// `(name, description)` of every skill.
    pub fn skills(&self) -> Vec<(String, String)> {
        self.tools
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

fn state_name(state: ChannelState) -> &'static str {
    match state {
        ChannelState::Up => "up",
        ChannelState::Degraded => "degraded",
        ChannelState::Down => "down",
    }
}
