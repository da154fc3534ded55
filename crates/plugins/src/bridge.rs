//! The host side of the plugin callbacks: `log`, `submit`, `call` and
//! `write_result`, as `extern "C"` functions over bounded queues.
//!
//! Architecture invariant: host callbacks only enqueue. A plugin may call
//! them from any thread, as often as it likes; each call puts one item on a
//! bounded queue and returns. A full queue makes the caller wait at most
//! `daemon.queue_wait_ms`, then answers `BUSY`, so a flood from one plugin
//! slows that plugin down instead of the daemon. The waits beyond that are
//! `submit` of a message, which returns once the message is stored (see
//! `router::inbox`), bounded by the same wait (a store that fails, as on a
//! full disk, answers `BUSY` too: the channel keeps the message and
//! submits it again), and `model.summarize`, which
//! a plugin calls to wait for a summary, bounded by `[llm.cheap]
//! timeout_ms` (see `summary::service`).

#[cfg(test)]
mod fuzz;

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded, select};
use hearth_sdk::abi::{self, HearthStr, HostApi, status};
use hearth_sdk::protocol::{
    ChannelSpec, ChannelState, ChannelStatus, ConfirmationAnswer, HostInfo, InboundMessage,
    Submission, ToolSpec, service,
};

use super::activity::{Activity, Change, Health};
use super::running::Running;
use super::services;
use super::views::Views;
use hearth_base::queue::{self, BoundedSender, SendTimeoutError};
use hearth_base::store::{Cold, now_ms};
use hearth_data::router::Admission;
use hearth_data::router::Router;
use hearth_data::router::inbox::{self, Inbox, Route, StoreJob, Stored};
use hearth_data::workshop::Workshop;
use hearth_model::summary::{self, Summaries};

/// The largest submission accepted, in bytes. Attachments travel as files,
/// so a message body has no business being larger.
pub const MAX_SUBMISSION_BYTES: usize = 1 << 20;

/// The queues and threads behind every plugin's callbacks.
pub struct Bridge {
    router: Arc<Router>,
    /// The owner's local messages are stored here directly: they come one
    /// at a time, and the writer thread's hand-offs would be pure latency.
    /// The plugins' host services use it too.
    local: Cold,
    /// The agent's pages, which channels serve (`page.get`, `page.query`).
    workshop: Arc<Workshop>,
    /// The cheap model's summaries (`model.summarize`).
    summaries: Arc<Summaries>,
    logs: BoundedSender<LogRecord>,
    jobs: BoundedSender<StoreJob>,
    /// Stores a lone submission on the submitter's thread.
    inbox: Inbox,
    wait: Duration,
    closed: AtomicBool,
    finishing: AtomicBool,
    stop: Mutex<Option<Sender<()>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    dropped_logs: AtomicU64,
    info: String,
    /// Bumped whenever a plugin replaces its tool list (`tools.set`): the
    /// registry rebuilds its plugin tools when it sees a new value.
    tools_generation: Arc<AtomicU64>,
    /// The live views (`view.show`, `view.input`), once the daemon's
    /// channels run.
    views: OnceLock<Views>,
}

/// The parts of the host whose services plugins call besides the store.
pub struct Served {
    /// The agent's pages (`page.get`, `page.query`).
    pub workshop: Arc<Workshop>,
    /// The cheap model's summaries (`model.summarize`).
    pub summaries: Arc<Summaries>,
}

/// What a plugin's `ctx` pointer refers to: the bridge plus who is calling.
pub struct PluginContext {
    plugin: Arc<str>,
    bridge: Arc<Bridge>,
    /// Set once `describe` has answered: the channel it serves, if any.
    channel: OnceLock<Option<ChannelSpec>>,
    /// The channel's last reported health and what it did last.
    health: Mutex<Health>,
    /// The calls the plugin runs in turns now (`tool.output` finds them).
    running: Running,
    /// The tool list the plugin set at run time (`tools.set`), replacing
    /// the one `describe` gave; `None` until it sets one.
    tools: Mutex<Option<Arc<Vec<ToolSpec>>>>,
}

/// Why the bridge could not start.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// A worker thread could not be spawned.
    #[error("cannot start the {0} thread: {1}")]
    Thread(&'static str, std::io::Error),
}

struct LogRecord {
    plugin: Arc<str>,
    level: u32,
    target: String,
    message: String,
}

impl Bridge {
    /// Starts the log drainer and the inbox writer (which takes `conn`).
    /// `conn` feeds the inbox writer; `local` (the shared cold connection)
    /// stores control-socket messages and serves the host services.
    pub fn start(
        conn: rusqlite::Connection,
        local: Cold,
        served: Served,
        router: Arc<Router>,
        capacity: usize,
        wait: Duration,
        info: &HostInfo,
    ) -> Result<Arc<Bridge>, BridgeError> {
        let (logs, log_rx) = queue::bounded(capacity);
        let (jobs, job_rx) = queue::bounded(capacity);
        let (stop, stop_rx) = bounded::<()>(0);
        let drainer = spawn_log_drainer(log_rx, stop_rx.clone())
            .map_err(|e| BridgeError::Thread("plugin log", e))?;
        let (writer, inbox) = inbox::spawn_writer(conn, job_rx, stop_rx, Arc::clone(&router))
            .map_err(|e| BridgeError::Thread("inbox writer", e))?;
        Ok(Arc::new(Bridge {
            router,
            local,
            workshop: served.workshop,
            summaries: served.summaries,
            logs,
            jobs,
            inbox,
            wait,
            closed: AtomicBool::new(false),
            finishing: AtomicBool::new(false),
            stop: Mutex::new(Some(stop)),
            threads: Mutex::new(vec![drainer, writer]),
            dropped_logs: AtomicU64::new(0),
            info: serde_json::to_string(info).unwrap_or_else(|_| "{}".into()),
            tools_generation: Arc::default(),
            views: OnceLock::new(),
        }))
    }

    /// From now on, frames plugins show go to the channels of `events`
    /// that show views, and the owner's actions on them to the plugin
    /// among `plugins` that showed it. Set once; before, no view is shown.
    pub fn serve_views(&self, views: Views) {
        if self.views.set(views).is_err() {
            tracing::warn!("the live views were set twice; the first stays");
        }
    }

    /// Builds the per-plugin context and the API table handed to its `init`.
    ///
    /// Both are leaked on purpose: the plugin may keep the pointers until its
    /// `shutdown` returns, and native plugins are never unloaded, so there is
    /// no later moment at which freeing them would be safe.
    pub fn api_for(self: &Arc<Self>, plugin: &str) -> (&'static PluginContext, *const HostApi) {
        let ctx: &'static PluginContext = Box::leak(Box::new(PluginContext {
            plugin: plugin.into(),
            bridge: Arc::clone(self),
            channel: OnceLock::new(),
            health: Mutex::default(),
            running: Running::default(),
            tools: Mutex::new(None),
        }));
        let api: &'static HostApi = Box::leak(Box::new(HostApi {
            struct_size: std::mem::size_of::<HostApi>() as u32,
            abi_major: abi::ABI_MAJOR,
            abi_minor: abi::ABI_MINOR,
            ctx: (ctx as *const PluginContext).cast_mut().cast(),
            log: Some(host_log),
            submit: Some(host_submit),
            call: Some(host_call),
            write_result: Some(super::sink::host_write_result),
        }));
        (ctx, api)
    }

    /// The counter `tools.set` bumps, shared with the tool registry.
    pub fn tools_generation(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.tools_generation)
    }

    /// Stores a message from the local control socket (always the owner);
    /// returns once it is stored.
    pub fn submit_local(&self, message: InboundMessage) -> Result<(), String> {
        if self.closed.load(Ordering::SeqCst) {
            return Err("the daemon is shutting down".into());
        }
        let stored = inbox::insert(&self.local.lock(), &message, &Route::OWNER)
            .map_err(|e| format!("the message could not be stored: {e}"))?;
        if stored == Stored::New {
            self.router.stored(&message, Route::OWNER.agent_id);
        }
        Ok(())
    }

    /// Stores a message now if the inbox is free, else queues it for the
    /// inbox writer; returns after the commit.
    fn store(&self, message: InboundMessage, route: Route) -> i32 {
        if self.closed.load(Ordering::SeqCst) {
            return status::CLOSED;
        }
        match self.inbox.try_store_now(&message, route) {
            Some(Ok(_)) => return status::OK,
            // As for a failed commit below: keep it and submit it again.
            Some(Err(_)) => return status::BUSY,
            None => {}
        }
        let (reply, answer) = bounded(1);
        let job = StoreJob {
            message,
            route,
            reply,
        };
        match self.jobs.send_timeout(job, self.wait) {
            Ok(()) => {}
            Err(SendTimeoutError::Timeout(_)) => return status::BUSY,
            Err(SendTimeoutError::Disconnected(_)) => return status::CLOSED,
        }
        match answer.recv_timeout(self.wait) {
            // The writer has woken the agent of a new message.
            Ok(Ok(Stored::New | Stored::Duplicate)) => status::OK,
            // The store failed (a full disk, an I/O error): the message is
            // not stored, so the channel must keep it and submit it again.
            // `ERROR` would read as a refusal of its shape, which a channel
            // acknowledges upstream to get past it: the message lost.
            Ok(Err(_)) => status::BUSY,
            // Still queued or committing: the plugin submits again later and
            // the idempotency key makes that harmless.
            Err(_) => status::BUSY,
        }
    }

    /// Queues the one reply a stranger on a pairing channel gets: their
    /// code, from the host (no model sees their message).
    fn send_pairing_code(&self, message: &InboundMessage, code: &str) {
        let chat = message.chat.as_deref().unwrap_or(&message.sender);
        let text = hearth_data::people::pairing::reply_text(code);
        match hearth_data::router::outbox::enqueue(
            &self.local.lock(),
            &message.channel,
            chat,
            &text,
            &[],
        ) {
            Ok(_) => self.router.outbox_wake.notify_one(),
            Err(e) => tracing::error!("cannot queue a pairing code: {e}"),
        }
    }

    /// Stops intake: from now on `submit` answers `CLOSED`.
    pub fn close_intake(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Stops the worker threads after they have drained their queues: every
    /// log line already queued is written and every message stored.
    pub fn finish(&self) {
        self.close_intake();
        self.finishing.store(true, Ordering::SeqCst);
        drop(lock(&self.stop).take());
        for thread in lock(&self.threads).drain(..) {
            let _ = thread.join();
        }
        let dropped = self.dropped_logs.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "plugin log lines were dropped because the queue stayed full"
            );
        }
    }
}

impl PluginContext {
    /// Records the channel the plugin serves (from `describe`): only it may
    /// submit messages for that channel.
    pub fn set_channel(&self, channel: Option<&ChannelSpec>) {
        let _ = self.channel.set(channel.cloned());
    }

    /// The last health the plugin's channel reported.
    pub fn channel_status(&self) -> Option<ChannelStatus> {
        lock(&self.health).status.clone()
    }

    /// What the plugin's channel did last.
    pub fn channel_activity(&self) -> Activity {
        lock(&self.health).activity
    }

    /// Notes that the channel just took a reply (`channel.send` answered).
    pub fn sent(&self) {
        lock(&self.health).activity.last_out_ms = Some(now_ms());
    }

    /// Takes a health report: kept for `hearth status` and the doctor, and
    /// logged by what it means. A channel that goes down is an error in
    /// the log (a refused token at start is one), because the owner
    /// cannot be reached on it until someone acts or it recovers; a retry
    /// that only changes the detail is a warning, a repeat is debug.
    fn report(&self, status: ChannelStatus) {
        let change = lock(&self.health).report(status.clone(), now_ms());
        let (plugin, state, detail) = (&*self.plugin, status.state, &status.detail);
        let word = super::activity::state_word(state);
        // While the daemon stops, channels report themselves stopped:
        // that is no fault.
        let stopping = self.bridge.closed.load(Ordering::SeqCst);
        match (change, state) {
            (Change::Same, _) => {
                tracing::debug!(plugin, state = word, detail, "channel status (unchanged)")
            }
            (_, ChannelState::Up) => tracing::info!(plugin, state = word, detail, "channel up"),
            (_, ChannelState::Down) if stopping => {
                tracing::info!(plugin, state = word, detail, "channel down (stopping)")
            }
            (Change::State, ChannelState::Down) => {
                tracing::error!(plugin, state = word, detail, "channel down: {detail}")
            }
            (_, ChannelState::Down) => {
                tracing::warn!(plugin, state = word, detail, "channel still down: {detail}")
            }
            (_, ChannelState::Degraded) => {
                tracing::warn!(plugin, state = word, detail, "channel degraded: {detail}")
            }
        }
    }

    /// The calls the plugin runs in turns now.
    pub fn running(&'static self) -> &'static Running {
        &self.running
    }

    /// The tool list the plugin set at run time, if it set one.
    pub fn tools(&self) -> Option<Arc<Vec<ToolSpec>>> {
        lock(&self.tools).clone()
    }

    /// `tools.set`: the plugin's whole tool list from now on. Swapped in
    /// memory and announced by the generation counter; the registry
    /// rebuilds its table the next time it is read, so this returns at once.
    fn set_tools(&self, request: &[u8]) -> (i32, String) {
        let (tools, skipped) = match services::tools_update(request) {
            Ok(update) => update,
            Err(why) => return (status::INVALID, why),
        };
        for why in &skipped {
            tracing::warn!(plugin = %self.plugin, "tools.set: {why}");
        }
        tracing::info!(plugin = %self.plugin, tools = tools.len(), "plugin tools changed");
        *lock(&self.tools) = Some(Arc::new(tools));
        self.bridge.tools_generation.fetch_add(1, Ordering::SeqCst);
        (
            status::OK,
            serde_json::json!({ "skipped": skipped }).to_string(),
        )
    }

    fn log(&self, level: u32, target: &str, message: &str) {
        // Logs are taken until the threads are told to finish, so a plugin's
        // shutdown messages still reach the log.
        if self.bridge.finishing.load(Ordering::Relaxed) {
            return;
        }
        let record = LogRecord {
            plugin: Arc::clone(&self.plugin),
            level,
            target: target.to_owned(),
            message: message.to_owned(),
        };
        if self
            .bridge
            .logs
            .send_timeout(record, self.bridge.wait)
            .is_err()
        {
            self.bridge.dropped_logs.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn submit(&self, json: &[u8]) -> i32 {
        let submission = match read_submission(json) {
            Ok(s) => s,
            Err(why) => {
                self.refuse(&why);
                return status::INVALID;
            }
        };
        match submission {
            Submission::ChannelStatus(s) => {
                self.report(s);
                status::OK
            }
            Submission::Message(m) => self.submit_message(m),
            Submission::Confirmation(answer) => self.submit_answer(&answer),
        }
    }

    /// An answer to a confirmation: handed to the waiting call if the owner
    /// sent it. Anyone else's answer is acknowledged and ignored.
    fn submit_answer(&self, answer: &ConfirmationAnswer) -> i32 {
        let Some(own_channel) = self.channel.get() else {
            return status::BUSY;
        };
        let Some(channel) = own_channel else {
            self.refuse("a plugin that serves no channel cannot answer confirmations");
            return status::INVALID;
        };
        let taken = self
            .bridge
            .router
            .answer_confirmation(&channel.name, answer, Some(channel));
        if !taken {
            tracing::debug!(plugin = %self.plugin, id = %answer.id, "a confirmation answer matched no waiting call");
        }
        status::OK
    }

    fn submit_message(&self, message: InboundMessage) -> i32 {
        // A thread the plugin starts in `init` may submit before `describe`
        // has said which channel it serves: ask it to try again shortly.
        let Some(own_channel) = self.channel.get() else {
            return status::BUSY;
        };
        if let Err(why) = check_message(&message, own_channel.as_ref().map(|c| &c.name)) {
            self.refuse(&why);
            return status::INVALID;
        }
        // A stranger's message is acknowledged (the channel may forget it)
        // and dropped: silence, not an error the sender could probe.
        let admission = self.bridge.router.admit(&message, own_channel.as_ref());
        let Some(agent_id) = admission.agent_id() else {
            if let Admission::Pair { code } = admission {
                self.bridge.send_pairing_code(&message, &code);
            }
            return status::OK;
        };
        let route = Route {
            agent_id,
            contact_id: admission.contact_id(),
            from_agent: None,
            hops: 0,
        };
        let code = self.bridge.store(message, route);
        if code == status::OK {
            // Stored (or stored before, and submitted again): either way
            // the channel brought it in. A stranger's message, dropped
            // above, does not count: "last in" is the last message an
            // agent got from this channel.
            lock(&self.health).activity.last_in_ms = Some(now_ms());
        }
        code
    }

    fn call(&self, service: &[u8], request: &[u8]) -> (i32, String) {
        let service = String::from_utf8_lossy(service);
        if service == service::HOST_INFO {
            return (status::OK, self.bridge.info.clone());
        }
        if service == service::TOOL_OUTPUT {
            // Bounded before it is parsed: a flood is refused cheaply.
            return self.running.output(&self.plugin, request);
        }
        if service == service::TOOLS_SET {
            return self.set_tools(request);
        }
        if service == service::VIEW_SHOW {
            // Bounded and checked before any channel sees it.
            return match self.bridge.views.get() {
                Some(views) => views.show(&self.plugin, request),
                None => (status::OK, r#"{"shown":false}"#.to_owned()),
            };
        }
        if service == service::VIEW_INPUT {
            let channel = self.channel.get().cloned().flatten();
            return match self.bridge.views.get() {
                Some(views) => views.input(channel.as_ref(), request),
                None => (
                    status::INVALID,
                    "view.input: no view is shown outside the daemon".to_owned(),
                ),
            };
        }
        if service == service::MODEL_SUMMARIZE {
            // Waits for the model (bounded): see `summary::service`.
            return summary::service::answer(&self.bridge.summaries, request);
        }
        let request: serde_json::Value = match serde_json::from_slice(request) {
            Ok(v) => v,
            Err(e) => {
                return (
                    status::INVALID,
                    format!("the request to {service} is not JSON: {e}"),
                );
            }
        };
        let channel = self.channel.get().cloned().flatten().map(|c| c.name);
        if matches!(&*service, service::PAGE_GET | service::PAGE_QUERY) {
            // Before the cold connection is taken: pages use it themselves.
            return match channel {
                Some(_) => services::page(&self.bridge.workshop, &service, request),
                None => (
                    status::INVALID,
                    format!("{service}: only a channel plugin serves pages"),
                ),
            };
        }
        let conn = self.bridge.local.lock();
        let answer = match &*service {
            service::CHANNEL_HISTORY => match channel {
                Some(channel) => services::history(&conn, &channel, request),
                None => Err("only a channel plugin has a history".to_owned()),
            },
            service::KV_GET => services::kv_get(&conn, &self.plugin, &request),
            service::KV_SET => services::kv_set(&conn, &self.plugin, &request),
            service::AGENT_NOTIFY => {
                let notice = services::notice(&conn, &self.plugin, request);
                // The inbox writer has its own connection: release ours first.
                drop(conn);
                return match notice {
                    Ok(message) => match self.bridge.store(message, Route::OWNER) {
                        status::OK => (status::OK, "{}".to_owned()),
                        code => (
                            code,
                            "agent.notify: the notice could not be stored yet; try again"
                                .to_owned(),
                        ),
                    },
                    Err(message) => (status::INVALID, message),
                };
            }
            other => {
                return (
                    status::UNSUPPORTED,
                    format!(
                        "unknown host service {other:?}; this host offers: {}",
                        services::OFFERED.join(", ")
                    ),
                );
            }
        };
        match answer {
            Ok(value) => (status::OK, value.to_string()),
            Err(message) => (status::INVALID, message),
        }
    }

    fn refuse(&self, why: &str) {
        tracing::warn!(plugin = %self.plugin, "submission refused: {why}");
    }
}

/// A submission's JSON read as `submit` reads it: bounded before it is
/// parsed; the error says what is wrong and where (the line and column of
/// a syntax error, the field of a wrong value).
fn read_submission(json: &[u8]) -> Result<Submission, String> {
    if json.len() > MAX_SUBMISSION_BYTES {
        return Err(format!(
            "submission of {} bytes is over the {MAX_SUBMISSION_BYTES}-byte limit",
            json.len()
        ));
    }
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("malformed submission: {e}"))?;
    // serde reads a tagged enum through a buffer that forgets which field
    // failed (found by fuzzing: "invalid type: sequence, expected a
    // string", and no more), so each kind is read as its own struct.
    let read = match value.get("type").and_then(serde_json::Value::as_str) {
        Some("message") => fields::<InboundMessage>(value).map(Submission::Message),
        Some("channel_status") => fields::<ChannelStatus>(value).map(Submission::ChannelStatus),
        Some("confirmation") => fields::<ConfirmationAnswer>(value).map(Submission::Confirmation),
        _ => serde_json::from_value(value).map_err(|e| format!("field `type`: {e}")),
    };
    read.map_err(|why| format!("malformed submission: {why}"))
}

/// `value` as a `T`, or the field it fails at and why.
fn fields<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| match e.path().to_string().as_str() {
        "." => format!("the document: {}", e.inner()),
        path => format!("field `{path}`: {}", e.inner()),
    })
}

/// Checks a message before it is queued; the error says which field is bad.
fn check_message(m: &InboundMessage, own_channel: Option<&String>) -> Result<(), String> {
    match own_channel {
        None => return Err("a plugin that serves no channel cannot submit messages".into()),
        Some(c) if *c != m.channel => {
            return Err(format!(
                "field `channel`: {:?} is not this plugin's channel {c:?}",
                m.channel
            ));
        }
        Some(_) => {}
    }
    for (field, value, max) in [
        ("idempotency_key", &m.idempotency_key, 256),
        ("sender", &m.sender, 256),
    ] {
        if value.is_empty() {
            return Err(format!("field `{field}` is empty"));
        }
        if value.len() > max {
            return Err(format!("field `{field}` is over {max} bytes"));
        }
    }
    Ok(())
}

fn spawn_log_drainer(
    records: Receiver<LogRecord>,
    stop: Receiver<()>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("hearth-plugin-log".into())
        .spawn(move || {
            loop {
                select! {
                    recv(records) -> r => match r { Ok(r) => emit(&r), Err(_) => return },
                    recv(stop) -> _ => {
                        records.try_iter().for_each(|r| emit(&r));
                        return;
                    }
                }
            }
        })
}

/// Re-emits a plugin's log record as a host `tracing` event.
fn emit(r: &LogRecord) {
    let (plugin, target, message) = (&*r.plugin, r.target.as_str(), r.message.as_str());
    match r.level {
        abi::level::ERROR => tracing::error!(target: "plugin", plugin, target, "{message}"),
        abi::level::WARN => tracing::warn!(target: "plugin", plugin, target, "{message}"),
        abi::level::INFO => tracing::info!(target: "plugin", plugin, target, "{message}"),
        abi::level::DEBUG => tracing::debug!(target: "plugin", plugin, target, "{message}"),
        _ => tracing::trace!(target: "plugin", plugin, target, "{message}"),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked while holding it;
    // the data (a sender, a status) is still valid.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// # Safety
/// `ctx` must be a pointer made by [`Bridge::api_for`].
unsafe fn context<'a>(ctx: *mut c_void) -> Option<&'a PluginContext> {
    // SAFETY: guaranteed by the caller; the context is leaked, so 'static.
    unsafe { ctx.cast::<PluginContext>().cast_const().as_ref() }
}

unsafe extern "C" fn host_log(ctx: *mut c_void, level: u32, target: HearthStr, message: HearthStr) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the plugin passes back our ctx and borrowed strings.
        let (Some(ctx), target, message) =
            (unsafe { (context(ctx), target.as_bytes(), message.as_bytes()) })
        else {
            return;
        };
        ctx.log(
            level,
            &String::from_utf8_lossy(target),
            &String::from_utf8_lossy(message),
        );
    }));
}

unsafe extern "C" fn host_submit(ctx: *mut c_void, event_json: HearthStr) -> i32 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `host_log`.
        match unsafe { (context(ctx), event_json.as_bytes()) } {
            (Some(ctx), json) => ctx.submit(json),
            (None, _) => status::INVALID,
        }
    }))
    .unwrap_or(status::ERROR)
}

unsafe extern "C" fn host_call(
    ctx: *mut c_void,
    service: HearthStr,
    request_json: HearthStr,
    user: *mut c_void,
    receive: Option<abi::ReceiveFn>,
) -> i32 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `host_log`.
        let Some(ctx) = (unsafe { context(ctx) }) else {
            return status::INVALID;
        };
        // SAFETY: as in `host_log`.
        let (code, answer) = ctx.call(unsafe { service.as_bytes() }, unsafe {
            request_json.as_bytes()
        });
        if let Some(receive) = receive {
            // SAFETY: `receive` and `user` come from the plugin for this
            // call; the answer is borrowed for the duration of `receive`.
            unsafe { receive(user, HearthStr::from_str(&answer)) };
        }
        code
    }))
    .unwrap_or(status::ERROR)
}
