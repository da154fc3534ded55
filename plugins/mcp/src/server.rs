//! One configured server's life: idle, starting, up, down and restarted.
//!
//! A server is started on a thread of its own (never on `init`'s, and a
//! call only waits for it), at the first call of a lazy server, at once for
//! an eager one, and once in the background for a lazy server whose tools
//! are not cached. A server that exits or whose connection breaks is marked
//! down and restarted by the next call: at once the first time, then after
//! 1, 2, 4 ... 60 seconds ([`Backoff`]); five failures in a minute make it
//! "crash-looping", and calls are refused until the backoff has passed.
//! Eager servers are restarted in the background once the backoff allows.
//!
//! Every connection is tagged with a generation, so that a late event from
//! a connection already replaced changes nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hearth_sdk::calls::Stop;
use hearth_sdk::protocol::{PartState, PartStatus};
use hearth_sdk::{Level, PluginError};
use serde_json::Value;

use crate::cache;
use crate::config::{ServerConfig, Start, Transport};
use crate::context::Context;
use crate::http::{self, HttpLink};
use crate::jsonrpc::{STOP_POLL, lock};
use crate::link::{Events, Link, RequestError};
use crate::progress::Progress;
use crate::results::{self, Store};
use crate::session::{OpenError, Session};
use crate::stdio::StdioLink;
use crate::tools::{ServerTool, Table};

/// Failures within this window count towards crash-looping.
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// This many failures within [`CRASH_WINDOW`] is crash-looping.
const CRASH_LOOP: usize = 5;
/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A connection that lasted this long resets the backoff when it fails.
const HEALTHY: Duration = Duration::from_secs(60);
/// How long shutdown waits for a starting or re-listing thread.
const JOIN_WAIT: Duration = Duration::from_secs(3);

/// Told when a server's tool list changes: the registry, which then
/// publishes the plugin's whole list. A trait so the server does not
/// import the registry that holds it.
pub trait ToolsChanged: Send + Sync {
    /// Some server's tools changed.
    fn tools_changed(&self);
}

/// One configured server.
pub struct Server {
    /// Its settings.
    pub config: ServerConfig,
    ctx: Arc<Context>,
    registry: Weak<dyn ToolsChanged>,
    me: Weak<Server>,
    state: Mutex<State>,
    changed: Condvar,
    table: Mutex<Arc<Table>>,
    store: Store,
    progress: Arc<Progress>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Off,
    Idle,
    Starting,
    Up,
    Down,
    Stopped,
}

struct State {
    phase: Phase,
    session: Option<Arc<Session>>,
    /// The connection being opened, so shutdown can end it.
    starting: Option<Link>,
    /// Connections that ended, to be stopped (their threads joined) later
    /// by a thread that is none of theirs.
    retired: Vec<Link>,
    generation: u64,
    up_since: Option<Instant>,
    last_error: Option<String>,
    backoff: Backoff,
    next_attempt: Instant,
    starter: Option<JoinHandle<()>>,
    relister: Option<JoinHandle<()>>,
    relist_again: bool,
    relist_error: Option<String>,
    /// Whether the tools were ever learned from the server (else they are
    /// the cache's, or none).
    learned: bool,
}

impl Server {
    /// A server that tells `registry` when its tools change, with its
    /// cached tools if any; nothing starts.
    pub fn new(
        config: ServerConfig,
        ctx: &Arc<Context>,
        registry: Weak<dyn ToolsChanged>,
        cached: Option<Vec<ServerTool>>,
    ) -> Arc<Server> {
        let table = cached
            .as_deref()
            .map(|tools| Table::build(&config, tools))
            .unwrap_or_default();
        let phase = if config.enabled {
            Phase::Idle
        } else {
            Phase::Off
        };
        Arc::new_cyclic(|me| Server {
            store: Store::new(&ctx.home, &config.name),
            config,
            ctx: Arc::clone(ctx),
            registry,
            me: me.clone(),
            state: Mutex::new(State {
                phase,
                session: None,
                starting: None,
                retired: Vec::new(),
                generation: 0,
                up_since: None,
                last_error: None,
                backoff: Backoff::default(),
                next_attempt: Instant::now(),
                starter: None,
                relister: None,
                relist_again: false,
                relist_error: None,
                learned: false,
            }),
            changed: Condvar::new(),
            table: Mutex::new(Arc::new(table)),
            progress: Arc::default(),
        })
    }

    /// Starts it in the background when it should run from the start:
    /// eager servers, and lazy ones whose tools are not known.
    pub fn start_if_due(&self, cached: bool) {
        if !self.ctx.serving {
            return;
        }
        let due = self.config.start == Start::Eager || !cached;
        if due {
            let mut st = self.lock();
            if st.phase == Phase::Idle {
                self.begin_start(&mut st, Instant::now());
            }
        }
    }

    /// The tools it offers now.
    pub fn table(&self) -> Arc<Table> {
        Arc::clone(&lock(&self.table))
    }

    /// Its process id, while a stdio server runs.
    pub fn pid(&self) -> Option<u32> {
        self.lock().session.as_ref().and_then(|s| s.link.pid())
    }

    /// Runs its tool `hearth_name` (`mcp.NAME.tool`): starts the server if
    /// needed, calls, and maps the result.
    pub fn call(
        &self,
        hearth_name: &str,
        args: Value,
        call_id: Option<&str>,
        stop: Option<&Stop>,
    ) -> Result<Value, PluginError> {
        let name = &self.config.name;
        let deadline = Instant::now() + self.config.timeout;
        let Some(entry) = self.table().find(hearth_name).cloned() else {
            return Err(PluginError::Unsupported(format!(
                "{hearth_name}: server {name:?} offers no such tool now"
            )));
        };
        // A call the owner watches gets the server's progress shown live.
        let progress = call_id.map(|id| self.progress.watch(id));
        let call = |session: &Session| {
            session.call_tool(
                &entry.original,
                &entry.schema,
                args.clone(),
                progress.as_ref().map(|p| p.token()),
                deadline,
                stop,
            )
        };
        let up = || {
            self.ensure_up(deadline, stop)
                .map_err(|e| PluginError::Failed(format!("{hearth_name}: {e}")))
        };
        let mut session = up()?;
        let mut answer = call(&session);
        // The server died before the request was written (killed a moment
        // ago, and not yet seen gone): it never saw the call, so the call
        // starts it again and is sent once more. A request that was
        // written is never sent twice: the tool may have run.
        if let Err(RequestError::NotSent(why)) = &answer {
            self.lost(&session, why);
            session = up()?;
            answer = call(&session);
        }
        drop(progress);
        let fail = |text: String| Err(PluginError::Failed(format!("{hearth_name}: {text}")));
        match answer {
            Ok(result) => {
                let mut mapped = results::map(&result, &self.store)?;
                // Bounded for the model: the cheap model, when the host has
                // one, reads the whole for it.
                if mapped["truncated"] == true && self.ctx.summaries {
                    let about = format!(
                        "the answer of the tool {:?} of the MCP server {name:?}",
                        entry.original
                    );
                    let summary = self.ctx.summarize(&about, &results::long_text(&result));
                    if let Value::Object(fields) = &mut mapped {
                        match summary {
                            Ok(summary) => fields.insert("summary".into(), summary.into()),
                            Err(why) => fields.insert("summary_error".into(), why.into()),
                        };
                    }
                }
                Ok(mapped)
            }
            Err(RequestError::TimedOut) => fail(format!(
                "server {name:?} did not answer within {} s; the call was cancelled",
                self.config.timeout.as_secs()
            )),
            Err(RequestError::Stopped) => fail(format!(
                "stopped by the owner; server {name:?} was told to cancel the call"
            )),
            Err(RequestError::Rpc(error)) => {
                fail(format!("server {name:?} answered with an error: {error}"))
            }
            Err(RequestError::Closed(why)) | Err(RequestError::NotSent(why)) => {
                fail(format!("the call failed: server {name:?} {why}"))
            }
            Err(RequestError::Unreachable(why)) => {
                self.lost(&session, &why);
                fail(format!("server {name:?} is unreachable: {why}"))
            }
            Err(other) => fail(format!("server {name:?}: {}", http::describe(&other))),
        }
    }

    /// Its health, for `/status`.
    pub fn status(&self) -> PartStatus {
        let tools = self.table().entries.len();
        let st = self.lock();
        let transport = self.config.transport_name();
        let (state, detail) = match st.phase {
            Phase::Off => (PartState::Off, "disabled in the config".to_owned()),
            Phase::Idle if st.learned || tools > 0 => (
                PartState::Idle,
                format!("{transport}; starts on first use ({tools} tools cached)"),
            ),
            Phase::Idle => (PartState::Idle, format!("{transport}; starts on first use")),
            Phase::Starting => (PartState::Starting, format!("starting ({transport})")),
            Phase::Up => {
                let described = st
                    .session
                    .as_ref()
                    .map(|s| s.describe())
                    .unwrap_or_default();
                match &st.relist_error {
                    Some(e) => (
                        PartState::Degraded,
                        format!("{described}; re-listing its tools failed: {e}"),
                    ),
                    None => (PartState::Up, described),
                }
            }
            Phase::Down => (PartState::Down, self.down_detail(&st, Instant::now())),
            Phase::Stopped => (PartState::Down, "stopped".to_owned()),
        };
        PartStatus {
            name: self.config.name.clone(),
            state,
            detail,
            tools,
        }
    }

    /// Stops it for good (shutdown): ends its connection and joins its
    /// threads.
    pub fn stop(&self) {
        let (links, threads) = {
            let mut st = self.lock();
            st.phase = Phase::Stopped;
            let mut links: Vec<Link> = st.retired.drain(..).collect();
            links.extend(st.starting.take());
            links.extend(st.session.take().map(|s| s.link.clone()));
            let threads: Vec<JoinHandle<()>> = [st.starter.take(), st.relister.take()]
                .into_iter()
                .flatten()
                .collect();
            self.changed.notify_all();
            (links, threads)
        };
        for link in links {
            link.stop();
        }
        for handle in threads {
            let until = Instant::now() + JOIN_WAIT;
            while !handle.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The session, starting the server and waiting for it as needed, until
    /// `deadline` or a stop.
    fn ensure_up(&self, deadline: Instant, stop: Option<&Stop>) -> Result<Arc<Session>, String> {
        let name = &self.config.name;
        let mut st = self.lock();
        // Each attempt to start bumps the generation: one that failed
        // since this call came is its answer (a call makes one attempt,
        // it does not retry a broken server until its deadline).
        let generation = st.generation;
        loop {
            let now = Instant::now();
            match st.phase {
                Phase::Up => {
                    if let Some(session) = &st.session {
                        return Ok(Arc::clone(session));
                    }
                }
                Phase::Off => return Err(format!("server {name:?} is disabled in the config")),
                Phase::Stopped => return Err("the MCP plugin is shutting down".into()),
                Phase::Starting => {}
                Phase::Idle => self.begin_start(&mut st, now),
                Phase::Down => {
                    let failed_meanwhile = st.generation != generation;
                    if failed_meanwhile
                        || (st.next_attempt > now
                            && (st.backoff.crash_looping(now) || st.next_attempt > deadline))
                    {
                        return Err(format!("server {name:?} is {}", self.down_detail(&st, now)));
                    }
                    let at = st.next_attempt.max(now);
                    self.begin_start(&mut st, at);
                }
            }
            if stop.is_some_and(Stop::is_set) {
                return Err(format!(
                    "stopped by the owner while server {name:?} was starting"
                ));
            }
            if now >= deadline {
                return Err(format!(
                    "server {name:?} did not start within {} s (the call's timeout); it keeps \
                     starting in the background",
                    self.config.timeout.as_secs()
                ));
            }
            let slice = (deadline - now).min(STOP_POLL);
            st = self
                .changed
                .wait_timeout(st, slice)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Starts the starting thread (unless one runs), which waits until
    /// `at`, then connects. For an eager server it keeps trying, with
    /// backoff, until the server is up or the plugin stops.
    fn begin_start(&self, st: &mut State, at: Instant) {
        if st.starter.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        if let Some(done) = st.starter.take() {
            let _ = done.join();
        }
        let Some(me) = self.me.upgrade() else { return };
        let retired: Vec<Link> = st.retired.drain(..).collect();
        st.starter = std::thread::Builder::new()
            .name(format!("mcp-{}-start", self.config.name))
            .spawn(move || {
                me.starting_loop(at);
                // The connections that ended are cleaned up after the new
                // one is tried: stopping an HTTP one can take a few
                // seconds, which no call should wait for.
                for link in retired {
                    link.stop();
                }
            })
            .map_err(|e| tracing::warn!(server = %self.config.name, "no thread to start it: {e}"))
            .ok();
    }

    fn starting_loop(&self, mut at: Instant) {
        loop {
            let generation = {
                let mut st = self.lock();
                while Instant::now() < at && st.phase != Phase::Stopped {
                    let wait = at.saturating_duration_since(Instant::now());
                    st = self
                        .changed
                        .wait_timeout(st, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                if !matches!(st.phase, Phase::Idle | Phase::Down) {
                    return;
                }
                st.phase = Phase::Starting;
                st.generation += 1;
                self.changed.notify_all();
                st.generation
            };
            let outcome = self.open(generation);
            let mut st = self.lock();
            if st.phase == Phase::Stopped || st.generation != generation {
                if let Ok((session, _)) = outcome {
                    drop(st);
                    session.link.stop();
                }
                return;
            }
            match outcome {
                Ok((session, tools)) => {
                    st.phase = Phase::Up;
                    st.up_since = Some(Instant::now());
                    st.last_error = None;
                    st.relist_error = None;
                    st.learned = true;
                    st.session = Some(Arc::clone(&session));
                    self.changed.notify_all();
                    drop(st);
                    self.ctx.log(
                        Level::Info,
                        &format!("mcp::{}", self.config.name),
                        &format!(
                            "MCP server {:?} up: {} ({}), {} tools",
                            self.config.name,
                            session.describe(),
                            session.server_info.as_deref().unwrap_or("unnamed"),
                            tools.len()
                        ),
                    );
                    self.install(&tools, session.version.as_str());
                    session.listen();
                    return;
                }
                Err(why) => {
                    self.ctx.log(
                        Level::Warn,
                        &format!("mcp::{}", self.config.name),
                        &format!("MCP server {:?} failed to start: {why}", self.config.name),
                    );
                    st.last_error = Some(why);
                    self.failed(&mut st, None);
                    self.changed.notify_all();
                    if self.config.start != Start::Eager {
                        return;
                    }
                    at = st.next_attempt;
                }
            }
        }
    }

    /// Connects, agrees on a revision and lists the tools, within
    /// `startup_timeout`; on failure, a clause saying why (`did not answer
    /// the handshake within 30 s; ...`).
    fn open(&self, generation: u64) -> Result<(Arc<Session>, Vec<ServerTool>), String> {
        let events: Arc<dyn Events> = Arc::new(ServerEvents {
            server: self.me.clone(),
            generation,
        });
        let name = &self.config.name;
        let link = match &self.config.transport {
            Transport::Stdio(c) => Link::Stdio(StdioLink::start(name, c, &self.ctx, events)?),
            Transport::Http(c) => Link::Http(HttpLink::new(name, c, events)?),
        };
        {
            let mut st = self.lock();
            if st.phase == Phase::Stopped {
                drop(st);
                link.stop();
                return Err("stopped".into());
            }
            st.starting = Some(link.clone());
        }
        let startup = self.config.startup_timeout;
        let deadline = Instant::now() + startup;
        let opened = Session::open(link.clone(), deadline)
            .map_err(|e| match e {
                OpenError::TimedOut => format!(
                    "did not answer the handshake within {} s{}",
                    startup.as_secs(),
                    link.clues()
                ),
                OpenError::NoCommonVersion(why) | OpenError::Failed(why) => why,
            })
            .and_then(|session| {
                let tools = session.list_tools(deadline).map_err(|e| match e {
                    RequestError::TimedOut => format!(
                        "did not list its tools within {} s{}",
                        startup.as_secs(),
                        link.clues()
                    ),
                    other => format!("listing its tools failed: {}", http::describe(&other)),
                })?;
                Ok((Arc::new(session), tools))
            });
        self.lock().starting = None;
        if opened.is_err() {
            link.stop();
        }
        opened
    }

    /// Takes a tool list just learned: the table, the cache, the host.
    fn install(&self, tools: &[ServerTool], protocol: &str) {
        let table = Table::build(&self.config, tools);
        for overridden in self.config.tools.keys() {
            if !tools.iter().any(|t| &t.name == overridden) {
                tracing::warn!(
                    server = %self.config.name,
                    "plugins.mcp.servers.{}.tools names {overridden:?}, which the server does not offer",
                    self.config.name
                );
            }
        }
        let changed = {
            let mut current = lock(&self.table);
            let changed = **current != table;
            *current = Arc::new(table);
            changed
        };
        cache::save(&self.ctx, &self.config, protocol, tools);
        if changed {
            if let Some(registry) = self.registry.upgrade() {
                registry.tools_changed();
            }
        }
    }

    /// Records a failure (a failed start or a lost connection) and when the
    /// next attempt may be.
    fn failed(&self, st: &mut State, lived: Option<Duration>) {
        let now = Instant::now();
        st.phase = Phase::Down;
        st.next_attempt = st.backoff.failed(now, lived);
    }

    /// The connection of `generation` ended on its own.
    fn connection_lost(&self, generation: u64, why: &str) {
        let mut st = self.lock();
        if st.generation != generation || st.phase != Phase::Up {
            return;
        }
        self.down(&mut st, why);
    }

    /// A call found the session's server gone (unreachable over HTTP, or
    /// dead before its request could be written).
    fn lost(&self, session: &Arc<Session>, why: &str) {
        let mut st = self.lock();
        if st.phase == Phase::Up && st.session.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            self.down(&mut st, why);
        }
    }

    fn down(&self, st: &mut State, why: &str) {
        let lived = st.up_since.take().map(|t| t.elapsed());
        if let Some(session) = st.session.take() {
            st.retired.push(session.link.clone());
        }
        st.last_error = Some(why.to_owned());
        self.failed(st, lived);
        self.ctx.log(
            Level::Warn,
            &format!("mcp::{}", self.config.name),
            &format!(
                "MCP server {:?} went down: {}",
                self.config.name,
                self.down_detail(st, Instant::now())
            ),
        );
        self.changed.notify_all();
        if self.config.start == Start::Eager && self.ctx.serving {
            let at = st.next_attempt;
            self.begin_start(st, at);
        }
    }

    /// `down: exited with status 1 (...); restarting on the next call`.
    fn down_detail(&self, st: &State, now: Instant) -> String {
        let why = st.last_error.as_deref().unwrap_or("it failed");
        let when = if st.next_attempt <= now {
            if self.config.start == Start::Eager {
                "restarting now".to_owned()
            } else {
                "restarting on the next call".to_owned()
            }
        } else {
            let secs = st.next_attempt.duration_since(now).as_secs_f64().ceil() as u64;
            if self.config.start == Start::Eager {
                format!("next attempt in {secs} s")
            } else {
                format!("restarting on a call in {secs} s or later")
            }
        };
        if st.backoff.crash_looping(now) {
            format!(
                "down: crash-looping ({} failures in the last minute); last: {why}; {when}",
                st.backoff.recent(now)
            )
        } else {
            format!("down: {why}; {when}")
        }
    }

    /// `notifications/tools/list_changed` from the connection of
    /// `generation`: list again on a thread of its own (the connection's
    /// reader must keep reading to receive the answer), coalescing a burst.
    fn relist(&self, generation: u64) {
        let mut st = self.lock();
        if st.generation != generation || st.phase != Phase::Up {
            return;
        }
        if st.relister.as_ref().is_some_and(|h| !h.is_finished()) {
            st.relist_again = true;
            return;
        }
        if let Some(done) = st.relister.take() {
            let _ = done.join();
        }
        let Some(me) = self.me.upgrade() else { return };
        st.relister = std::thread::Builder::new()
            .name(format!("mcp-{}-list", self.config.name))
            .spawn(move || me.relisting(generation))
            .ok();
    }

    fn relisting(&self, generation: u64) {
        loop {
            let session = {
                let mut st = self.lock();
                st.relist_again = false;
                match (&st.session, st.generation == generation) {
                    (Some(s), true) => Arc::clone(s),
                    _ => return,
                }
            };
            let deadline = Instant::now() + self.config.startup_timeout;
            match session.list_tools(deadline) {
                Ok(tools) => {
                    self.lock().relist_error = None;
                    self.install(&tools, session.version.as_str());
                }
                Err(e) => {
                    let why = http::describe(&e);
                    tracing::warn!(server = %self.config.name, "re-listing its tools failed: {why}");
                    self.lock().relist_error = Some(why);
                }
            }
            if !self.lock().relist_again {
                return;
            }
        }
    }
}

/// What a connection tells its server.
struct ServerEvents {
    server: Weak<Server>,
    generation: u64,
}

impl Events for ServerEvents {
    fn notification(&self, method: &str, params: &Value) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        match method {
            "notifications/tools/list_changed" => server.relist(self.generation),
            "notifications/message" => {
                let level = match params.get("level").and_then(Value::as_str) {
                    Some("debug") => Level::Debug,
                    Some("info" | "notice") => Level::Info,
                    Some("warning") => Level::Warn,
                    Some(_) => Level::Error,
                    None => Level::Info,
                };
                let data = params.get("data").cloned().unwrap_or(Value::Null);
                let text = match data {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                server.ctx.log(
                    level,
                    &format!("mcp::{}", server.config.name),
                    &crate::text::cut(&text, 2048),
                );
            }
            "notifications/progress" => server.progress.report(&server.ctx, params),
            other => tracing::debug!(server = %server.config.name, "notification {other}"),
        }
    }

    fn closed(&self, why: &str) {
        if let Some(server) = self.server.upgrade() {
            server.connection_lost(self.generation, why);
        }
    }
}

/// When to try again after failures: at once after the first, then after
/// 1, 2, 4 ... [`MAX_BACKOFF`]; and whether the failures come so often
/// that the server is crash-looping.
#[derive(Debug, Default, Clone)]
pub struct Backoff {
    /// Failures in a row (reset by a connection that stayed up a while).
    failures: u32,
    /// When the recent failures happened.
    recent: VecDeque<Instant>,
}

impl Backoff {
    /// Records a failure at `now`, of a connection that had lived `lived`
    /// (none for a failed start); returns when the next attempt may be.
    pub fn failed(&mut self, now: Instant, lived: Option<Duration>) -> Instant {
        if lived.is_some_and(|l| l >= HEALTHY) {
            self.failures = 0;
        }
        self.failures = self.failures.saturating_add(1);
        self.recent.push_back(now);
        while self.recent.len() > 16
            || self
                .recent
                .front()
                .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            self.recent.pop_front();
        }
        now + Backoff::delay(self.failures)
    }

    /// The wait before attempt `failures + 1`.
    pub fn delay(failures: u32) -> Duration {
        if failures <= 1 {
            return Duration::ZERO;
        }
        let secs = 1u64
            .checked_shl(failures - 2)
            .unwrap_or(u64::MAX)
            .min(MAX_BACKOFF.as_secs());
        Duration::from_secs(secs)
    }

    /// How many failures happened within the last minute.
    pub fn recent(&self, now: Instant) -> usize {
        self.recent
            .iter()
            .filter(|t| now.duration_since(**t) <= CRASH_WINDOW)
            .count()
    }

    /// Whether there were [`CRASH_LOOP`] failures within the last minute.
    pub fn crash_looping(&self, now: Instant) -> bool {
        self.recent(now) >= CRASH_LOOP
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_a_minute() {
        let delays: Vec<u64> = (1..=10).map(|f| Backoff::delay(f).as_secs()).collect();
        assert_eq!(delays, [0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(Backoff::delay(200), MAX_BACKOFF);
    }

    #[test]
    fn five_failures_in_a_minute_is_crash_looping() {
        let start = Instant::now();
        let mut b = Backoff::default();
        let mut at = start;
        for n in 1..=4 {
            let next = b.failed(at, Some(Duration::from_millis(100)));
            assert!(!b.crash_looping(at), "after {n}");
            at = next.max(at + Duration::from_millis(10));
        }
        b.failed(at, Some(Duration::from_millis(100)));
        assert!(b.crash_looping(at));
        assert_eq!(b.recent(at), 5);
        // A minute later the old failures no longer count.
        let later = at + Duration::from_secs(61);
        assert!(!b.crash_looping(later));
        // A connection that lived long resets the backoff: restart at once.
        assert_eq!(b.failed(later, Some(HEALTHY)), later);
    }

    #[test]
    fn the_first_failure_is_retried_at_once() {
        let now = Instant::now();
        let mut b = Backoff::default();
        assert_eq!(b.failed(now, None), now);
        assert_eq!(b.failed(now, None), now + Duration::from_secs(1));
        assert_eq!(b.failed(now, None), now + Duration::from_secs(2));
    }
}
