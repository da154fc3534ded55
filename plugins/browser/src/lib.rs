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
//! - `config`: `[plugins.browser]`.
//!
//! Architecture invariant: an unused browser costs nothing. No process,
//! thread or proxy exists until the first call, and all of them go after
//! `idle_timeout` without one.

pub mod cdp;
pub mod config;
pub mod launch;
pub mod page;
pub mod proxy;
pub mod session;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hearth_sdk::protocol::{
    Description, PartState, PartStatus, PluginStatus, Risk, Targets, ToolSpec,
};
use hearth_sdk::{Host, Plugin, PluginError, parse_args};
use serde::Deserialize;
use serde_json::{Value, json};

use config::Settings;
use page::Window;
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

/// The running plugin.
pub struct Browser {
    session: Arc<Session>,
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
}

impl Browser {
    /// A plugin whose browser keeps its files under `home/browser` and may
    /// not read `hidden` (as `init` builds it from the host's info).
    pub fn new(settings: Settings, home: PathBuf, hidden: Vec<String>) -> Browser {
        let executable = launch::find_executable(settings.executable.as_deref());
        Browser {
            session: Session::new(settings, home, hidden),
            executable,
        }
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
            (Ok(path), Some(pid)) => (
                PartState::Up,
                format!("{} running as pid {pid}", path.display()),
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

    /// Runs one call of the `browser` tool.
    pub fn call(&self, args: Value) -> Result<Value, PluginError> {
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
        let reference = match action {
            "click" | "type" | "select" => Some(need_ref()?),
            _ => args.reference,
        };
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
                    page::type_text(running, reference.unwrap_or_default(), text, args.submit)?;
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
                    let tab = args.tab.ok_or_else(|| bad("switch needs tab: its number from tabs"))?;
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
                other => Err(bad(&format!(
                    "unknown action {other:?} (open, snapshot, click, type, select, press, scroll, wait, screenshot, tabs, switch, close)"
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
        description: "Drives a real browser (Chromium) for pages that need JavaScript, logins or forms. \
            Actions: open {url, new_tab?}; snapshot {from?}: the page as text, its links, buttons and \
            fields numbered [n]; click/type/select on ref n (type: text, submit?; {{secret:NAME}} types a \
            secret; select: values); press {key}; scroll {ref? | up?}; wait {text}; screenshot; tabs; \
            switch {tab}; close {tab?}. Actions return the page as it is after them."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": { "enum": ["open", "snapshot", "click", "type", "select", "press", "scroll", "wait", "screenshot", "tabs", "switch", "close"] },
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
                "timeout_ms": { "type": "integer", "minimum": 1 }
            },
            "required": ["action"],
            "additionalProperties": false
        }),
        risk: Risk::Write,
        targets: Targets {
            read_actions: READ_ACTIONS.map(str::to_owned).into(),
            ..Targets::default()
        },
    }
}

impl Plugin for Browser {
    const NAME: &'static str = "browser";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let settings = Settings::parse(config).map_err(PluginError::failed)?;
        let (home, hidden) = match host.info() {
            Ok(info) => (PathBuf::from(info.home), info.hidden),
            Err(_) => (
                std::env::var_os("HEARTH_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| std::env::temp_dir().join("hearth-browser")),
                Vec::new(),
            ),
        };
        let browser = Browser::new(settings, home, hidden);
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
            "browser" => self.call(args),
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }

    fn shutdown(&self) {
        self.session.stop();
    }
}
