//! The browser plugin: one `browser` tool that drives a headless Chromium
//! through the DevTools protocol, for pages `web_fetch` cannot read (those
//! that render with JavaScript), logins and forms.
//!
//! - `cdp`: the protocol over Chromium's two pipes;
//! - `launch`: Chromium's flags, its sandbox, starting and stopping it;
//! - `proxy`: the browser's only way out, judging every connection by the
//!   web plugin's rules;
//! - `session`: the browser's life (started on first use, stopped when
//!   idle, started again after a crash) and its tabs;
//! - `page`: the actions, and `snapshot.js`, the page as numbered text;
//! - `live`: the current tab shown to the owner as it works, and the
//!   owner's clicks and keys on it;
//! - `keys`: key presses as the protocol wants them; `tab`: what a tab is;
//! - `downloads`: files a page downloads, capped and never misplaced;
//! - `config`: `[plugins.browser]`.
//!
//! Architecture invariant: an unused browser costs nothing. No process,
//! thread or proxy exists until the first call, and all of them go after
//! `idle_timeout` without one.

pub mod cdp;
pub mod config;
pub mod downloads;
pub mod keys;
pub mod launch;
pub mod live;
pub mod page;
pub mod proxy;
pub mod session;
pub mod tab;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hearth_sdk::protocol::{
    Description, PartState, PartStatus, PluginStatus, Risk, Targets, ToolCall, ToolSpec, ViewInput,
};
use hearth_sdk::{Host, Plugin, PluginError, parse_args};
use serde::Deserialize;
use serde_json::{Value, json};

use config::Settings;
use downloads::Finished;
use page::{Typing, Window};
use session::{Running, Session, SessionError};

/// The actions that only read or move around: judged as reads, so they
/// never ask. Clicking, typing, choosing and pressing keys can submit
/// forms, and are judged as the tool's own tier.
pub const READ_ACTIONS: [&str; 8] = [
    "open",
    "snapshot",
    "tabs",
    "switch",
    "close",
    "screenshot",
    "wait",
    "scroll",
];

/// Every action, in the order the schema lists them.
pub const ACTIONS: [&str; 15] = [
    "open",
    "snapshot",
    "click",
    "type",
    "select",
    "press",
    "scroll",
    "wait",
    "screenshot",
    "tabs",
    "switch",
    "close",
    "download",
    "upload",
    "eval",
];

/// The running plugin.
pub struct Browser {
    session: Arc<Session>,
    /// Where a file to upload may come from: the writable roots.
    roots: Vec<PathBuf>,
    /// The owner's credentials, which are never uploaded.
    hidden: Vec<String>,
    /// The Chromium found at start, or why none was: without one the
    /// tool is not offered (it would cost every prompt its description
    /// and fail every call).
    executable: Result<PathBuf, String>,
}

/// A call's arguments; which are needed depends on the action.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    new_tab: bool,
    #[serde(default, rename = "ref")]
    reference: Option<u64>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    submit: bool,
    #[serde(default)]
    values: Vec<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    up: bool,
    #[serde(default)]
    tab: Option<usize>,
    #[serde(default)]
    from: Option<usize>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    js: Option<String>,
}

impl Browser {
    /// A plugin whose browser keeps its files under `home/browser` and may
    /// not read `hidden` (as `init` builds it from the host's info).
    pub fn new(settings: Settings, home: PathBuf, hidden: Vec<String>) -> Browser {
        let executable = launch::find_executable(settings.executable.as_deref());
        Browser {
            roots: vec![home.clone()],
            session: Session::new(settings, home, hidden.clone()),
            hidden,
            executable,
        }
    }

    /// The same, with `roots` as the places files may be uploaded from.
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Browser {
        if !roots.is_empty() {
            self.roots = roots;
        }
        self
    }

    /// The browser's health for `/status` and `hearth doctor`: idle until
    /// first use, up while it runs, degraded with the fix when there is
    /// no Chromium.
    pub fn health(&self) -> PartStatus {
        let (state, detail) = match (&self.executable, self.session.pid()) {
            (Err(why), _) => (
                PartState::Degraded,
                format!("{why}; the browser tool is not offered until hearth restarts with one"),
            ),
            (Ok(path), None) => (
                PartState::Idle,
                format!(
                    "{}; starts on first use, stops after {} s unused",
                    path.display(),
                    self.session.settings().idle_timeout.as_secs()
                ),
            ),
            (Ok(path), Some(_)) => (
                PartState::Up,
                format!("{}: {}", path.display(), self.session.activity()),
            ),
        };
        PartStatus {
            name: "chromium".into(),
            state,
            detail,
            tools: usize::from(self.executable.is_ok()),
        }
    }

    /// The browser session, for tests and `hearth doctor`.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Runs one call of the `browser` tool; `secret` says its `text` is
    /// one of the owner's secrets, filled in by the host.
    pub fn call(&self, args: Value, secret: bool) -> Result<Value, PluginError> {
        let args: Args = parse_args(args)?;
        let timeout = self.session.settings().call_timeout;
        let wait = match args.timeout_ms {
            Some(ms) if (1..=timeout.as_millis() as u64).contains(&ms) => Duration::from_millis(ms),
            Some(ms) => {
                return Err(PluginError::InvalidArguments(format!(
                    "timeout_ms must be 1-{}, not {ms}",
                    timeout.as_millis()
                )));
            }
            None => timeout,
        };
        let need_ref = || {
            args.reference.ok_or_else(|| {
                PluginError::InvalidArguments(format!(
                    "{} needs ref: an element's number from the snapshot",
                    args.action
                ))
            })
        };
        let window = Window {
            from: args.from.unwrap_or(0),
            ..Window::default()
        };
        let folder = self.session.folder();
        let action = args.action.as_str();
        let upload = match action {
            "upload" => Some(self.upload_path(args.path.as_deref())?),
            _ => None,
        };
        let reference = match action {
            "click" | "type" | "select" | "upload" => Some(need_ref()?),
            _ => args.reference,
        };
        self.session.note_action(action);
        let outcome = self.session.with(|running| -> Result<Value, SessionError> {
            match action {
                "open" => {
                    let url = args.url.as_deref().ok_or_else(|| bad("open needs url"))?;
                    page::check_url(url)?;
                    if args.new_tab || running.tabs.is_empty() {
                        running.open_tab("about:blank")?;
                    }
                    page::navigate(running, url, wait)?;
                    shown(running, window)
                }
                "snapshot" => shown(running, window),
                "click" => {
                    page::click(running, reference.unwrap_or_default())?;
                    after_action(running, window)
                }
                "type" => {
                    let text = args.text.as_deref().ok_or_else(|| bad("type needs text"))?;
                    let typing = Typing {
                        submit: args.submit,
                        secret,
                    };
                    page::type_text(running, reference.unwrap_or_default(), text, typing)?;
                    after_action(running, window)
                }
                "select" => {
                    if args.values.is_empty() {
                        return Err(bad("select needs values: the options' values or texts"));
                    }
                    page::select(running, reference.unwrap_or_default(), &args.values)?;
                    after_action(running, window)
                }
                "press" => {
                    let key = args.key.as_deref().ok_or_else(|| bad("press needs key"))?;
                    page::press(running, key)?;
                    after_action(running, window)
                }
                "scroll" => {
                    page::scroll(running, reference, !args.up)?;
                    after_action(running, window)
                }
                "wait" => {
                    let text = args.text.as_deref().ok_or_else(|| bad("wait needs text"))?;
                    page::wait_for_text(running, text, wait)?;
                    shown(running, window)
                }
                "screenshot" => {
                    let path = page::screenshot(running, &folder.join("screenshots"))?;
                    let notes = running.take_notes();
                    Ok(json!({ "image": { "path": path.display().to_string() }, "notes": notes }))
                }
                "tabs" => Ok(Value::String(tabs(running)?)),
                "switch" => {
                    let tab = args
                        .tab
                        .ok_or_else(|| bad("switch needs tab: its number from tabs"))?;
                    if tab >= running.tabs.len() {
                        return Err(bad(&format!("there is no tab {tab}; tabs lists them")));
                    }
                    running.current = tab;
                    let target = running.tabs[tab].target.clone();
                    running.call_browser("Target.activateTarget", json!({ "targetId": target }))?;
                    shown(running, window)
                }
                "close" => {
                    let tab = args.tab.unwrap_or(running.current);
                    running.close_tab(tab)?;
                    Ok(Value::String(tabs(running)?))
                }
                "download" => download(running, reference, args.url.as_deref(), wait),
                "upload" => {
                    let path = upload.clone().unwrap_or_default();
                    page::upload(running, reference.unwrap_or_default(), &path)?;
                    after_action(running, window)
                }
                "eval" => {
                    let js = args.js.as_deref().ok_or_else(|| bad("eval needs js"))?;
                    let value = page::evaluate(running, js)?;
                    Ok(json!({ "value": value, "notes": running.take_notes() }))
                }
                other => Err(bad(&format!(
                    "unknown action {other:?} ({})",
                    ACTIONS.join(", ")
                ))),
            }
        });
        outcome.map_err(|e| match e {
            SessionError::Protocol(why) if why.starts_with("invalid arguments: ") => {
                PluginError::InvalidArguments(
                    why.trim_start_matches("invalid arguments: ").to_owned(),
                )
            }
            other => PluginError::Failed(other.to_string()),
        })
    }
}

impl Browser {
    /// The owner opens `url` from the live view (to log in by hand): a new
    /// tab, which becomes the current one. Answers at once; the page
    /// loads behind, and the view shows it.
    fn open_for_owner(&self, url: String) -> Result<Value, PluginError> {
        page::check_url(&url).map_err(|e| PluginError::InvalidArguments(e.to_string()))?;
        let session = Arc::clone(&self.session);
        let wait = session.settings().call_timeout;
        let opened = url.clone();
        std::thread::Builder::new()
            .name("hearth-browser-open".into())
            .spawn(move || {
                session.note_action("open (the owner)");
                let outcome = session.with(|running| {
                    running.open_tab("about:blank")?;
                    session.live().follow(running.tab().ok());
                    running.note(format!(
                        "the owner opened {opened} in a new tab ({}); it is the current tab",
                        running.tabs.len() - 1
                    ));
                    page::navigate(running, &opened, wait)
                });
                if let Err(e) = outcome {
                    tracing::info!("browser: the page the owner opened did not load: {e}");
                }
            })
            .map_err(|e| PluginError::failed(format!("cannot open the page: {e}")))?;
        Ok(json!({ "opening": url }))
    }

    /// The file `raw` names for `upload`: absolute, `~/...` or relative to
    /// `$HEARTH_HOME`; it must exist inside the writable roots and be none
    /// of the owner's credentials (nor a link to one).
    fn upload_path(&self, raw: Option<&str>) -> Result<PathBuf, PluginError> {
        let raw = raw.ok_or_else(|| {
            PluginError::InvalidArguments("upload needs path: the file to give the page".into())
        })?;
        let home = self.roots.first().cloned().unwrap_or_default();
        let given = match raw.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(rest))
                .unwrap_or_else(|| home.join(rest)),
            None => home.join(raw),
        };
        let path = std::fs::canonicalize(&given)
            .map_err(|e| PluginError::InvalidArguments(format!("path {}: {e}", given.display())))?;
        if !path.is_file() {
            return Err(PluginError::InvalidArguments(format!(
                "path {} is not a file",
                path.display()
            )));
        }
        let inside = self
            .roots
            .iter()
            .filter_map(|root| std::fs::canonicalize(root).ok())
            .any(|root| path.starts_with(root));
        if !inside {
            return Err(PluginError::InvalidArguments(format!(
                "path {} is outside the writable roots; only files there may be uploaded",
                path.display()
            )));
        }
        let floor = hearth_sdk::floor::helper(&self.hidden);
        if hearth_sdk::floor::is_hidden(&floor, &path) {
            return Err(PluginError::InvalidArguments(format!(
                "path {} is one of hearth's credentials, which are never uploaded",
                path.display()
            )));
        }
        Ok(path)
    }
}

/// Starts a download by clicking `reference` or following `url`, and
/// waits for it to end.
fn download(
    running: &mut Running,
    reference: Option<u64>,
    url: Option<&str>,
    wait: Duration,
) -> Result<Value, SessionError> {
    let seen = running.downloads_ended();
    match (reference, url) {
        (Some(reference), None) => page::click(running, reference)?,
        (None, Some(url)) => {
            page::check_url(url)?;
            // A link with `download`, clicked: the page stays, and the file
            // goes through the proxy like every request.
            let script = format!(
                "(() => {{ const a = document.createElement('a'); a.href = {}; a.download = ''; \
                 document.body.appendChild(a); a.click(); a.remove(); return true; }})()",
                serde_json::to_string(url).unwrap_or_default()
            );
            page::evaluate(running, &script)?;
        }
        _ => {
            return Err(bad(
                "download needs ref (a link or button) or url, not both",
            ));
        }
    }
    let notes = running.take_notes();
    match running.download_after(seen, wait) {
        Some(Finished::Saved { path, bytes }) => Ok(json!({
            "saved": path.display().to_string(),
            "bytes": bytes,
            "notes": notes,
        })),
        Some(Finished::Stopped(why)) => Err(SessionError::Protocol(why)),
        None => Err(SessionError::Protocol(format!(
            "no download started within {} ms{}",
            wait.as_millis(),
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        ))),
    }
}

fn bad(why: &str) -> SessionError {
    SessionError::Protocol(format!("invalid arguments: {why}"))
}

/// The snapshot, after what happened since the last call.
fn shown(running: &mut Running, window: Window) -> Result<Value, SessionError> {
    let text = page::snapshot(running, window)?;
    let notes = running.take_notes();
    let mut out = String::new();
    for note in notes {
        out.push_str("Note: ");
        out.push_str(&note);
        out.push('\n');
    }
    out.push_str(&text);
    Ok(Value::String(out))
}

/// After an action: a moment for what it started (a navigation, a
/// script), then the page as it is.
fn after_action(running: &mut Running, window: Window) -> Result<Value, SessionError> {
    std::thread::sleep(Duration::from_millis(50));
    // A navigation the action started replaces the document; if it is
    // still loading, what loaded so far is shown.
    if page::wait_loaded(running, Duration::from_secs(10)).is_err() {
        tracing::debug!("browser: the page was still loading after the action");
    }
    shown(running, window)
}

fn tabs(running: &mut Running) -> Result<String, SessionError> {
    let targets = running.call_browser("Target.getTargets", json!({}))?;
    let infos = targets["targetInfos"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = String::new();
    for (i, tab) in running.tabs.iter().enumerate() {
        let info = infos.iter().find(|t| t["targetId"] == tab.target.as_str());
        let title = info.and_then(|t| t["title"].as_str()).unwrap_or_default();
        let url = info.and_then(|t| t["url"].as_str()).unwrap_or_default();
        let mark = if i == running.current { "*" } else { " " };
        out.push_str(&format!("{mark}{i} {title:?} {url}\n"));
    }
    if out.is_empty() {
        out.push_str("no tab is open\n");
    }
    Ok(out)
}

/// The `browser` tool's description and schema.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "browser".into(),
        description: "Drives a real browser for pages that need JavaScript, logins or forms. \
            Results show the page as text, its links, buttons and fields numbered [n] (ref). \
            type {{secret:NAME}} types a secret unseen; eval runs js in the page."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": { "enum": ACTIONS },
                "url": { "type": "string" },
                "new_tab": { "type": "boolean" },
                "ref": { "type": "integer", "minimum": 1 },
                "text": { "type": "string" },
                "submit": { "type": "boolean" },
                "values": { "type": "array", "items": { "type": "string" } },
                "key": { "type": "string" },
                "up": { "type": "boolean" },
                "tab": { "type": "integer", "minimum": 0 },
                "from": { "type": "integer", "minimum": 0 },
                "timeout_ms": { "type": "integer", "minimum": 1 },
                "path": { "type": "string" },
                "js": { "type": "string" }
            },
            "required": ["action"],
            "additionalProperties": false
        }),
        risk: Risk::Write,
        targets: Targets {
            read_actions: READ_ACTIONS.map(str::to_owned).into(),
            secrets: vec!["text".into()],
            ..Targets::default()
        },
    }
}

impl Plugin for Browser {
    const NAME: &'static str = "browser";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let settings = Settings::parse(config).map_err(PluginError::failed)?;
        let (home, hidden, roots) = match host.info() {
            Ok(info) => (
                PathBuf::from(info.home),
                info.hidden,
                info.confine_to.into_iter().map(PathBuf::from).collect(),
            ),
            Err(_) => (
                std::env::var_os("HEARTH_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| std::env::temp_dir().join("hearth-browser")),
                Vec::new(),
                Vec::new(),
            ),
        };
        let browser = Browser::new(settings, home, hidden).with_roots(roots);
        browser.session.live().set_host(host);
        match &browser.executable {
            Ok(path) => {
                tracing::debug!(executable = %path.display(), "browser plugin ready; the browser starts on first use")
            }
            Err(why) => tracing::info!("browser plugin: {why}; the browser tool is not offered"),
        }
        Ok(browser)
    }

    fn describe(&self) -> Description {
        Description {
            tools: if self.executable.is_ok() {
                vec![spec()]
            } else {
                Vec::new()
            },
            channel: None,
        }
    }

    fn status(&self) -> Result<PluginStatus, PluginError> {
        Ok(PluginStatus {
            parts: vec![self.health()],
        })
    }

    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError> {
        match tool {
            "browser" => self.call(args, false),
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }

    fn run_call(&self, call: ToolCall) -> Result<Value, PluginError> {
        match call.tool.as_str() {
            "browser" => self.call(call.args, call.secrets.iter().any(|k| k == "text")),
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }

    fn view_input(&self, input: ViewInput) -> Result<Value, PluginError> {
        match input {
            ViewInput::Open { url } => self.open_for_owner(url),
            other => self.session.live().act(&other).map_err(PluginError::Failed),
        }
    }

    fn shutdown(&self) {
        self.session.stop();
    }
}
