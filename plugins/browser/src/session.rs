//! The browser's life: started on the first call, stopped after
//! `idle_timeout`, started again after a crash, and its tabs.
//!
//! One call at a time holds the session (a personal agent drives one
//! browser; the model waits for each action anyway). A call that finds the
//! browser gone starts a new one; a call the browser dies under fails with
//! a message that says so, and the next call starts afresh. While a
//! browser runs, a reaper thread watches the clock and stops it once
//! nobody has used it for `idle_timeout`; with no browser there is no
//! thread, no process and no proxy.

use std::path::PathBuf;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread;
use std::time::{Duration, Instant};

use hearth_sdk::floor::Cache;
use serde_json::{Value, json};

use crate::cdp::{CdpError, Connection, Event};
use crate::config::Settings;
use crate::downloads::{Downloads, Finished};
use crate::launch::{self, Launch, Process};
use crate::live::{self, Frame, Live};
use crate::proxy::Proxy;
pub use crate::tab::Tab;

/// How long the browser itself may take to answer before it counts as
/// hung.
const HUNG_AFTER: Duration = Duration::from_secs(3);

/// What the browser did between calls that the next result should say:
/// dialogs it answered, tabs pages opened or closed, downloads.
struct Happenings {
    downloads: Downloads,
    notes: Vec<String>,
    opened: Vec<String>,
    closed: Vec<String>,
}

/// A running browser with its proxy and tabs.
pub struct Running {
    process: Process,
    proxy: Proxy,
    happenings: Arc<Mutex<Happenings>>,
    /// Open tabs, in the order they opened.
    pub tabs: Vec<Tab>,
    /// The tab actions go to.
    pub current: usize,
    /// How long one protocol call may wait.
    pub timeout: Duration,
    /// The title and address of the page the last snapshot showed.
    pub showing: Option<(String, String)>,
    /// Tabs this session closed, never to be attached again.
    closed_here: Vec<String>,
}

/// The browser, if one runs, and when it was last used.
pub struct Session {
    settings: Settings,
    home: PathBuf,
    hidden: Vec<String>,
    floors: Cache,
    state: Mutex<State>,
    activity: Mutex<Activity>,
    live: Arc<Live>,
    me: Weak<Session>,
}

/// What `/browser` and the status say, kept apart from [`State`] so that
/// reading it never waits for a running call.
#[derive(Default)]
struct Activity {
    pid: Option<u32>,
    tabs: usize,
    showing: Option<(String, String)>,
    last: Option<(String, Instant)>,
}

struct State {
    running: Option<Running>,
    last_used: Instant,
    /// Bumped at every start, so an old reaper knows to stop watching.
    generation: u64,
}

/// Why a call could not use the browser.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No Chromium to start.
    #[error("{0}")]
    NoBrowser(String),
    /// It would not start.
    #[error("the browser did not start: {0}")]
    Launch(String),
    /// It died or hung during the call.
    #[error("the browser {0} during this call; the next call starts a new one")]
    Lost(&'static str),
    /// The protocol refused what the call asked.
    #[error("{0}")]
    Protocol(String),
    /// A protocol call got no answer in time: the page is busy, or the
    /// browser hung ([`Session::with`] tells which).
    #[error("{0} (the page may be busy)")]
    Unanswered(String),
}

impl From<CdpError> for SessionError {
    fn from(e: CdpError) -> SessionError {
        match e {
            CdpError::Closed => SessionError::Lost("exited"),
            CdpError::Timeout { .. } => SessionError::Unanswered(e.to_string()),
            CdpError::Protocol { .. } => SessionError::Protocol(e.to_string()),
        }
    }
}

impl Session {
    /// A session that starts its browser on first use, keeping its files
    /// under `home/browser`, hiding `hidden` from it.
    pub fn new(settings: Settings, home: PathBuf, hidden: Vec<String>) -> Arc<Session> {
        Arc::new_cyclic(|me| Session {
            settings,
            home,
            hidden,
            floors: Cache::default(),
            state: Mutex::new(State {
                running: None,
                last_used: Instant::now(),
                generation: 0,
            }),
            activity: Mutex::default(),
            live: Live::new(),
            me: me.clone(),
        })
    }

    /// The live view of the current tab.
    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    /// The plugin's settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Where the browser keeps its profile, downloads and screenshots.
    pub fn folder(&self) -> PathBuf {
        self.home.join("browser")
    }

    /// What the browser is doing, in a sentence: idle, or the page it
    /// shows and the last action, for `/browser` and the status. Never
    /// waits for a call that is running.
    pub fn activity(&self) -> String {
        let activity = self.activity.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = match activity.pid {
            None => "not running (it starts on the next call)".to_owned(),
            Some(pid) => format!(
                "running (pid {pid}), {} tab{}",
                activity.tabs,
                if activity.tabs == 1 { "" } else { "s" }
            ),
        };
        if let (Some(_), Some((title, url))) = (activity.pid, &activity.showing) {
            out.push_str(&format!(", showing {title:?} {url}"));
        }
        if let Some((action, at)) = &activity.last {
            out.push_str(&format!(
                "; last: {action}, {} s ago",
                at.elapsed().as_secs()
            ));
        }
        out
    }

    /// Notes `action` as the last thing the browser was asked to do.
    pub fn note_action(&self, action: &str) {
        self.activity.lock().unwrap_or_else(|p| p.into_inner()).last =
            Some((action.to_owned(), Instant::now()));
    }

    /// Keeps what `/browser` says in step with `running`.
    fn show_activity(&self, running: Option<&Running>) {
        let mut activity = self.activity.lock().unwrap_or_else(|p| p.into_inner());
        activity.pid = running.map(|r| r.process.pid());
        activity.tabs = running.map_or(0, |r| r.tabs.len());
        activity.showing = running.and_then(|r| r.showing.clone());
    }

    /// The browser process's id, if one runs (as of the last call's end).
    pub fn pid(&self) -> Option<u32> {
        self.activity.lock().unwrap_or_else(|p| p.into_inner()).pid
    }

    /// Runs `f` on the running browser, starting one if none runs (or the
    /// last one died). A call the browser dies under fails with
    /// [`SessionError::Lost`] and leaves no browser behind.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut Running) -> Result<T, SessionError>,
    ) -> Result<T, SessionError> {
        let mut state = self.lock();
        state.last_used = Instant::now();
        if let Some(running) = state.running.as_mut()
            && !running.process.is_alive()
        {
            tracing::warn!("browser: the browser had exited; starting a new one");
            state.running = None;
        }
        if state.running.is_none() {
            let running = self.start().inspect_err(|_| self.show_activity(None))?;
            state.generation += 1;
            state.running = Some(running);
            self.watch(state.generation);
        }
        let Some(running) = state.running.as_mut() else {
            return Err(SessionError::Lost("exited"));
        };
        running.sync_tabs()?;
        self.live.follow(running.tab().ok());
        let mut result = f(running);
        // A call that got no answer: if the browser itself no longer
        // answers, it hung, and the next call starts a new one.
        if matches!(result, Err(SessionError::Unanswered(_)))
            && running
                .connection()
                .call(None, "Browser.getVersion", json!({}), HUNG_AFTER)
                .is_err()
        {
            tracing::warn!(
                "browser: it stopped answering; it is stopped, and the next call starts a new one"
            );
            running.process.stop(Duration::ZERO);
            result = Err(SessionError::Lost("stopped answering"));
        }
        let dead = !running.process.is_alive();
        if dead {
            state.running = None;
        } else {
            self.live.follow(running.tab().ok());
        }
        self.show_activity(state.running.as_ref());
        if dead && result.is_ok() {
            return Err(SessionError::Lost("exited"));
        }
        state.last_used = Instant::now();
        result
    }

    /// Stops the browser if one runs.
    pub fn stop(&self) {
        let running = self.lock().running.take();
        self.show_activity(None);
        if let Some(mut running) = running {
            running.process.stop(Duration::from_secs(2));
        }
    }

    fn start(&self) -> Result<Running, SessionError> {
        let executable = launch::find_executable(self.settings.executable.as_deref())
            .map_err(SessionError::NoBrowser)?;
        let proxy = Proxy::start(self.settings.policy.clone())
            .map_err(|e| SessionError::Launch(format!("cannot start its proxy: {e}")))?;
        let folder = self.folder();
        let launch = Launch {
            executable,
            profile: folder.join("profile"),
            downloads: self.home.join("downloads"),
            proxy: proxy.address(),
            headless: true,
            hidden: self.hidden.clone(),
            url: "about:blank".into(),
        };
        let happenings = Arc::new(Mutex::new(Happenings {
            downloads: Downloads::new(launch.downloads.clone(), self.settings.max_download_bytes),
            notes: Vec::new(),
            opened: Vec::new(),
            closed: Vec::new(),
        }));
        let seen = happenings.clone();
        let (frames, viewer) = self.live.channel().unzip();
        let cast = frames.map(|frames| (frames, Arc::clone(&self.live)));
        let started = Instant::now();
        let process = launch
            .start(&self.floors, move |connection, event| {
                on_event(connection, event, &seen, cast.as_ref())
            })
            .map_err(|e| SessionError::Launch(e.to_string()))?;
        if let Some(viewer) = viewer {
            self.live.begin(process.connection.clone(), viewer);
        }
        let timeout = self.settings.call_timeout;
        let connection = process.connection.clone();
        connection.call(
            None,
            "Target.setDiscoverTargets",
            json!({ "discover": true }),
            timeout,
        )?;
        let downloads = launch.downloads.display().to_string();
        connection.call(
            None,
            "Browser.setDownloadBehavior",
            json!({ "behavior": "allowAndName", "downloadPath": downloads, "eventsEnabled": true }),
            timeout,
        )?;
        tracing::info!(
            pid = process.pid(),
            ms = started.elapsed().as_millis() as u64,
            "browser started"
        );
        let mut running = Running {
            process,
            proxy,
            happenings,
            tabs: Vec::new(),
            current: 0,
            timeout,
            showing: None,
            closed_here: Vec::new(),
        };
        running.sync_tabs()?;
        Ok(running)
    }

    /// Starts the reaper for the browser of `generation`.
    fn watch(&self, generation: u64) {
        let me = self.me.clone();
        let idle = self.settings.idle_timeout;
        let _ = thread::Builder::new()
            .name("hearth-browser-idle".into())
            .stack_size(64 << 10)
            .spawn(move || {
                loop {
                    let Some(session) = me.upgrade() else { return };
                    let wait = {
                        let mut state = session.lock();
                        if state.generation != generation || state.running.is_none() {
                            return;
                        }
                        // The owner at work on the live view counts as use.
                        let unused = state
                            .last_used
                            .elapsed()
                            .min(session.live.touched_ago().unwrap_or(Duration::MAX));
                        if unused >= idle {
                            if let Some(mut running) = state.running.take() {
                                drop(state);
                                session.show_activity(None);
                                tracing::info!(
                                    idle_secs = idle.as_secs(),
                                    "browser: stopped after its idle timeout"
                                );
                                running.process.stop(Duration::from_secs(2));
                            }
                            return;
                        }
                        idle - unused
                    };
                    drop(session);
                    thread::sleep(wait.min(Duration::from_secs(5)));
                }
            });
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(mut running) = self.lock().running.take() {
            running.process.stop(Duration::from_millis(500));
        }
    }
}

impl Running {
    /// The protocol connection.
    pub fn connection(&self) -> &Connection {
        &self.process.connection
    }

    /// The tab actions go to.
    pub fn tab(&self) -> Result<&Tab, SessionError> {
        self.tabs
            .get(self.current)
            .ok_or_else(|| SessionError::Protocol("no tab is open; open a page first".into()))
    }

    /// Calls `method` on the current tab.
    pub fn call(&self, method: &str, params: Value) -> Result<Value, SessionError> {
        self.call_within(method, params, self.timeout)
    }

    /// Calls `method` on the current tab, waiting at most `timeout`.
    pub fn call_within(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, SessionError> {
        let session = self.tab()?.session.clone();
        Ok(self
            .connection()
            .call(Some(&session), method, params, timeout)?)
    }

    /// Why the proxy did not connect to `host` lately, if it did not.
    pub fn failure_for(&self, host: &str) -> Option<String> {
        self.proxy.failure_for(host)
    }

    /// Calls `method` on the browser itself.
    pub fn call_browser(&self, method: &str, params: Value) -> Result<Value, SessionError> {
        Ok(self.connection().call(None, method, params, self.timeout)?)
    }

    /// What happened since the last call (dialogs answered, tabs opened
    /// or closed by pages, requests refused), one sentence each.
    pub fn take_notes(&mut self) -> Vec<String> {
        let mut notes = std::mem::take(&mut lock(&self.happenings).notes);
        notes.extend(self.proxy.take_refusals());
        notes
    }

    /// Adds a sentence to what the next result says happened.
    pub fn note(&self, note: String) {
        lock(&self.happenings).notes.push(note);
    }

    /// How many downloads have ended so far.
    pub fn downloads_ended(&self) -> usize {
        lock(&self.happenings).downloads.finished.len()
    }

    /// The download that ended after the first `seen`, waiting up to
    /// `timeout` for it; `None` if none ended by then.
    pub fn download_after(&mut self, seen: usize, timeout: Duration) -> Option<Finished> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(ended) = lock(&self.happenings).downloads.finished.get(seen) {
                return Some(ended.clone());
            }
            if Instant::now() >= deadline || !self.process.is_alive() {
                return None;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens a new tab on `url` and makes it current.
    pub fn open_tab(&mut self, url: &str) -> Result<(), SessionError> {
        let created = self.call_browser("Target.createTarget", json!({ "url": "about:blank" }))?;
        let target = created["targetId"].as_str().unwrap_or_default().to_owned();
        self.attach(&target)?;
        self.current = self.tabs.len() - 1;
        if url != "about:blank" {
            self.call("Page.navigate", json!({ "url": url }))?;
        }
        Ok(())
    }

    /// Closes tab `index`.
    pub fn close_tab(&mut self, index: usize) -> Result<(), SessionError> {
        let Some(tab) = self.tabs.get(index).cloned() else {
            return Err(SessionError::Protocol(format!(
                "there is no tab {index}; the open tabs are 0-{}",
                self.tabs.len().saturating_sub(1)
            )));
        };
        self.call_browser("Target.closeTarget", json!({ "targetId": tab.target }))?;
        self.tabs.remove(index);
        // Chromium may list it a moment longer.
        self.closed_here.push(tab.target);
        if self.current >= self.tabs.len() {
            self.current = self.tabs.len().saturating_sub(1);
        }
        Ok(())
    }

    /// Attaches to tabs pages opened and forgets tabs that closed.
    fn sync_tabs(&mut self) -> Result<(), SessionError> {
        let (opened, closed) = {
            let mut h = lock(&self.happenings);
            (std::mem::take(&mut h.opened), std::mem::take(&mut h.closed))
        };
        for target in closed {
            if let Some(at) = self.tabs.iter().position(|t| t.target == target) {
                self.tabs.remove(at);
                if self.current >= at && self.current > 0 {
                    self.current -= 1;
                }
            }
        }
        if self.tabs.is_empty() {
            // The first start's page, or every tab closed: the browser's
            // own list says what is there.
            let targets = self.call_browser("Target.getTargets", json!({}))?;
            for info in targets["targetInfos"].as_array().into_iter().flatten() {
                if info["type"] == "page"
                    && let Some(id) = info["targetId"].as_str()
                    && !self.closed_here.iter().any(|c| c == id)
                {
                    // A page closing as it is listed is gone by the time
                    // it is attached: it is no tab.
                    if let Err(e) = self.attach(id) {
                        tracing::debug!("browser: a listed page could not be attached: {e}");
                        self.tabs.retain(|t| t.target != id);
                    }
                }
            }
        }
        for target in opened {
            if !self.tabs.iter().any(|t| t.target == target) {
                self.attach(&target)?;
                // A page opened it (a popup, a link to a new window): the
                // agent is shown it, as a person would be.
                self.current = self.tabs.len() - 1;
                lock(&self.happenings).notes.push(format!(
                    "the page opened a new tab ({}); it is now the current tab",
                    self.tabs.len() - 1
                ));
            }
        }
        Ok(())
    }

    fn attach(&mut self, target: &str) -> Result<(), SessionError> {
        if self.tabs.iter().any(|t| t.target == target) {
            return Ok(());
        }
        let attached = self.call_browser(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        )?;
        let session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let tab = Tab {
            target: target.to_owned(),
            session: session.clone(),
        };
        self.tabs.push(tab);
        let connection = self.connection().clone();
        connection.call(Some(&session), "Page.enable", json!({}), self.timeout)?;
        Ok(())
    }
}

fn lock(h: &Mutex<Happenings>) -> MutexGuard<'_, Happenings> {
    h.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs on the reader thread for every event: answers dialogs at once (a
/// page waiting on `confirm` blocks every call to it), notes tabs that
/// pages open and close, and passes the live view's frames on.
fn on_event(
    connection: &Connection,
    event: Event,
    happenings: &Mutex<Happenings>,
    cast: Option<&(SyncSender<Frame>, Arc<Live>)>,
) {
    match event.method.as_str() {
        "Page.screencastFrame" => {
            if let Some((frames, _)) = cast {
                live::on_frame(connection, &event, frames);
            }
        }
        // A page that loads in a new renderer ends its tab's screencast.
        "Page.loadEventFired" => {
            if let Some((_, live)) = cast {
                live.loaded(connection, event.session.as_deref());
            }
        }
        "Page.javascriptDialogOpening" => {
            let kind = event.params["type"].as_str().unwrap_or("dialog").to_owned();
            let message: String = event.params["message"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            // A prompt gets no answer the agent did not give; an alert,
            // confirm or beforeunload is accepted, as the agent asked for
            // what led to it.
            let accept = kind != "prompt";
            connection.notify(
                event.session.as_deref(),
                "Page.handleJavaScriptDialog",
                json!({ "accept": accept }),
            );
            let answered = if accept { "accepted" } else { "dismissed" };
            lock(happenings).notes.push(format!(
                "the page showed a {kind} dialog ({message:?}); it was {answered}"
            ));
        }
        "Target.targetCreated" => {
            let info = &event.params["targetInfo"];
            if info["type"] == "page"
                && info["openerId"].is_string()
                && let Some(id) = info["targetId"].as_str()
            {
                lock(happenings).opened.push(id.to_owned());
            }
        }
        "Browser.downloadWillBegin" | "Browser.downloadProgress" => {
            let mut happenings = lock(happenings);
            if let Some(note) = happenings.downloads.on_event(connection, &event) {
                happenings.notes.push(note);
            }
        }
        "Target.targetDestroyed" => {
            if let Some(id) = event.params["targetId"].as_str() {
                lock(happenings).closed.push(id.to_owned());
            }
        }
        _ => {}
    }
}
