//! Summaries of long output by a cheap model (`[llm.cheap]`).
//!
//! A command that prints ten thousand lines is capped for the model: it
//! gets the head, the tail and the path of the full log. With a cheap
//! model configured it also gets a summary of the whole, focused on what
//! the command was for, its errors and its results. The same serves the
//! last stderr lines of a background process that failed and a worker's
//! result over its size bound.
//!
//! A summary is a help, never a wait: each has the deadline of
//! `[llm.cheap] timeout_ms`, and when it runs out (or the model fails, or
//! the day's token budget is spent) the caller goes on without one. Every
//! summary the model answers is recorded in the usage table as `summary`.
//! The host asks the same model its own questions the same way
//! ([`Summaries::ask`]): automatic memory capture's, recorded as
//! `capture`.
//!
//! - `excerpt`: what of a long text the model reads (head and tail);
//! - `service`: `model.summarize`, the host service plugins call.
//!
//! [`Summaries`] is built with the runtime (so the bridge can answer the
//! service) and connected to the daemon's async runtime when the services
//! start; until then, and in one-shot commands, there are none.

mod excerpt;
pub mod service;

use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::llm::{ChatRequest, Llm, LlmError, Message, Usage};
use crate::usage::{Call, Kind, Meter};
use hearth_base::config::CheapConfig;

/// The system prompt of every summary.
const PROMPT: &str = "You summarize long output for an AI agent that asked for it and \
cannot read it all. Say, in at most 15 short lines of plain text: what the output shows was \
being done; whether it worked; every error and warning that matters, with the file, line, \
code or message as written; and the results (numbers, names, paths, versions). Leave out \
progress noise. Never invent what the output does not show; if the middle was left out, do \
not guess what it held.";

/// A question of the host's own for the cheap model.
pub struct Question<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// The one user message.
    pub text: String,
    /// What its tokens are recorded as.
    pub kind: Kind,
    /// The agent whose work it is.
    pub agent: i64,
    /// The session it is about, if any.
    pub session: Option<i64>,
}

/// The cheap model's answer, and what it cost.
#[derive(Clone, Debug)]
pub struct Answer {
    /// Its text, trimmed, never empty.
    pub text: String,
    /// Its tokens.
    pub usage: Usage,
}

/// The daemon's summarizer, once connected.
pub struct Summaries {
    config: Option<CheapConfig>,
    meter: Arc<Meter>,
    connected: OnceLock<Connected>,
}

struct Connected {
    llm: Llm,
    handle: tokio::runtime::Handle,
}

/// Why there is no summary.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// No `[llm.cheap]` in the config, or not in a daemon.
    #[error("no cheap model is configured ([llm.cheap])")]
    Off,
    /// The model did not answer within the deadline.
    #[error("the summary took longer than {} s ([llm.cheap] timeout_ms)", .0.as_secs())]
    TimedOut(Duration),
    /// The model failed.
    #[error("the cheap model failed: {0}")]
    Model(#[from] LlmError),
    /// The day's token budget is spent.
    #[error("no summary: {0}")]
    Budget(String),
    /// The model answered nothing.
    #[error("the cheap model answered nothing")]
    Empty,
}

impl Summaries {
    /// Summaries by `config`'s model, recorded in `meter`; off without it.
    pub fn new(config: Option<CheapConfig>, meter: Arc<Meter>) -> Summaries {
        Summaries {
            config,
            meter,
            connected: OnceLock::new(),
        }
    }

    /// Whether a cheap model is configured (summaries start once
    /// connected).
    pub fn configured(&self) -> bool {
        self.config.is_some()
    }

    /// Builds the cheap model's client and gives it the daemon's runtime.
    /// A client that cannot be built is logged and leaves summaries off.
    pub fn connect(&self, handle: tokio::runtime::Handle) {
        let Some(config) = &self.config else { return };
        match Llm::new(&config.llm) {
            Ok(llm) => {
                tracing::info!(model = llm.model(), "summaries by the cheap model are on");
                let _ = self.connected.set(Connected { llm, handle });
            }
            Err(e) => tracing::warn!("summaries are off: the cheap model cannot be used: {e}"),
        }
    }

    /// How long a summary may take.
    pub fn timeout(&self) -> Duration {
        self.config
            .as_ref()
            .map_or(Duration::ZERO, |c| Duration::from_millis(c.llm.timeout_ms))
    }

    /// A summary of `text`, which `about` says what it is (`the output of
    /// \`cargo build\`, exit code 101`). Async: for the agent's tasks.
    pub async fn summarize(&self, about: &str, text: &str) -> Result<String, SummaryError> {
        let Some(config) = &self.config else {
            return Err(SummaryError::Off);
        };
        let question = Question {
            system: PROMPT,
            text: excerpt::prompt(about, text, config.input_chars),
            kind: Kind::Summary,
            agent: hearth_base::store::MAIN_AGENT,
            session: None,
        };
        Ok(self.ask(question).await?.text)
    }

    /// The most characters of input the cheap model reads
    /// (`[llm.cheap] input_chars`); 0 without one.
    pub fn input_chars(&self) -> usize {
        self.config.as_ref().map_or(0, |c| c.input_chars)
    }

    /// The cheap model's answer to one of the host's own questions, under
    /// the same deadline and budget as a summary, its tokens recorded as
    /// `question.kind`.
    pub async fn ask(&self, question: Question<'_>) -> Result<Answer, SummaryError> {
        let (Some(config), Some(connected)) = (&self.config, self.connected.get()) else {
            return Err(SummaryError::Off);
        };
        self.meter
            .check(None)
            .map_err(|spent| SummaryError::Budget(spent.reply(hearth_base::store::now_ms())))?;
        let request = ChatRequest::plain(
            question.system,
            vec![Message::user_text(question.text)],
            config.llm.max_tokens,
        );
        let timeout = self.timeout();
        let response = tokio::time::timeout(timeout, connected.llm.complete(&request))
            .await
            .map_err(|_| SummaryError::TimedOut(timeout))??;
        self.meter.record(
            &Call {
                agent: question.agent,
                session: question.session,
                turn: None,
                kind: question.kind,
                provider: connected.llm.provider(),
                model: &response.model,
            },
            &response.usage,
        );
        let text = Message {
            role: crate::llm::Role::Assistant,
            content: response.content,
        }
        .text();
        match text.trim() {
            "" => Err(SummaryError::Empty),
            text => Ok(Answer {
                text: text.to_owned(),
                usage: response.usage,
            }),
        }
    }

    /// [`Summaries::summarize`] from a thread that may block (a plugin's,
    /// or a tool call's), never from the async runtime itself. Returns by
    /// the deadline whatever the model does.
    pub fn summarize_blocking(
        self: &Arc<Self>,
        about: &str,
        text: &str,
    ) -> Result<String, SummaryError> {
        let Some(connected) = self.connected.get() else {
            return Err(SummaryError::Off);
        };
        let (done, answer) = std::sync::mpsc::sync_channel(1);
        let (about, text) = (about.to_owned(), text.to_owned());
        let this = Arc::clone(self);
        let task = connected.handle.spawn(async move {
            let _ = done.send(this.summarize(&about, &text).await);
        });
        // A little past the task's own deadline: it always answers first
        // unless the runtime is stopping.
        let timeout = self.timeout() + Duration::from_millis(500);
        match answer.recv_timeout(timeout) {
            Ok(result) => result,
            // The runtime dropped the task: the daemon is stopping.
            Err(RecvTimeoutError::Disconnected) => Err(SummaryError::Off),
            Err(RecvTimeoutError::Timeout) => {
                task.abort();
                Err(SummaryError::TimedOut(self.timeout()))
            }
        }
    }
}
