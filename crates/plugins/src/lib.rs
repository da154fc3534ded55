//! Native plugins: finding, loading, initialising, calling and stopping them.
//!
//! `discovery` lists the candidates, `built_in` holds the plugins linked
//! into the binary, `loader` opens a file and checks its header,
//! `instance` wraps an initialised plugin, `bridge` implements the callbacks
//! the host offers, `activity` what each channel did last (how long its
//! health has been what it is, its last message in and reply out),
//! `running` the calls a plugin runs in a turn (stopped by
//! `tool.cancel`, their output routed by `tool.output`), `views` the
//! live views plugins show the owner (`view.show`, `view.input`), and
//! `sink` the buffers plugins write answers into. This
//! file ties them together as a [`PluginSet`]: every plugin that was found,
//! with a report for each (loaded, disabled or failed and why).
//!
//! A plugin that fails is reported and skipped; the daemon goes on, unless
//! its config table says `required = true`.

mod activity;
mod bridge;
mod built_in;
mod discovery;
mod instance;
mod loader;
pub mod running;
mod secret_settings;
mod services;
mod sink;
pub mod views;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use activity::{Activity, state_word};
pub use bridge::{Bridge, BridgeError, MAX_SUBMISSION_BYTES, Served};
pub use discovery::FILE_PREFIX;
pub use instance::{ActivePlugin, InvokeError};
pub use loader::LoadError;

use hearth_base::config::PluginsConfig;

/// Every plugin found, in load order.
pub struct PluginSet {
    active: Vec<Arc<ActivePlugin>>,
    reports: Vec<Report>,
    warnings: Vec<String>,
    /// Bumped when a plugin's tools change at run time (`tools.set`).
    tools_generation: Arc<AtomicU64>,
    /// `$HEARTH_HOME`, whose secrets a plugin table may name.
    home: PathBuf,
}

/// One plugin file and what became of it.
#[derive(Clone, Debug)]
pub struct Report {
    /// The file.
    pub path: PathBuf,
    /// The name from its header, once read.
    pub name: Option<String>,
    /// The version from its header, once read.
    pub version: Option<String>,
    /// Where it stands.
    pub state: PluginState,
    /// Its tools' names.
    pub tools: Vec<String>,
    /// The channel it serves.
    pub channel: Option<String>,
}

/// Where a plugin stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginState {
    /// Loaded and serving.
    Active,
    /// Found but not started, and never loaded; the text says why
    /// (`enabled = false`, or a channel with no settings).
    Off(String),
    /// Not loaded, or disabled at run time; the text says why.
    Failed(String),
}

/// Why a plugin switched off in config is off.
const DISABLED: &str = "enabled = false in its config table";

/// Why an example plugin beside the binary is not loaded.
const EXAMPLES_OFF: &str = "an example plugin: `examples = true` in the config loads it";

impl Report {
    fn new(path: PathBuf) -> Report {
        Report {
            path,
            name: None,
            version: None,
            state: PluginState::Active,
            tools: Vec::new(),
            channel: None,
        }
    }
}

/// One part a plugin runs (an MCP server) and its health.
pub struct Part {
    /// The plugin that runs it.
    pub plugin: String,
    /// What the plugin said of it.
    pub status: hearth_sdk::protocol::PartStatus,
}

/// The parts every plugin in `plugins` runs, asked now (`plugin.status`):
/// a plugin that reports none adds nothing, one that fails to answer is
/// shown down with the reason.
pub fn parts(plugins: &[Arc<ActivePlugin>]) -> Vec<Part> {
    use hearth_sdk::protocol::{PartState, PartStatus};
    plugins
        .iter()
        .flat_map(|plugin| {
            let parts = match plugin.status() {
                Ok(Some(status)) => status.parts,
                Ok(None) => Vec::new(),
                Err(e) => vec![PartStatus {
                    name: plugin.name.clone(),
                    state: PartState::Down,
                    detail: format!("its status could not be read: {e}"),
                    tools: 0,
                }],
            };
            parts.into_iter().map(|status| Part {
                plugin: plugin.name.clone(),
                status,
            })
        })
        .collect()
}

/// A plugin marked `required = true` did not load.
#[derive(Debug, thiserror::Error)]
#[error("required plugin {name} did not load: {why}")]
pub struct RequiredPluginError {
    /// The plugin.
    pub name: String,
    /// Why.
    pub why: String,
}

/// Why the plugins could not start.
#[derive(Debug, thiserror::Error)]
pub enum PluginsError {
    /// A plugin marked `required = true` did not load.
    #[error(transparent)]
    Required(#[from] RequiredPluginError),
    /// The config names a plugin that does not exist, or a plugin refused
    /// its table: a mistake in the file, so the start stops, as for a
    /// misspelt top-level key.
    #[error("invalid config {where_}: [plugins.{name}]: {detail}")]
    Config {
        /// The file and line, as `path, line N`.
        where_: String,
        /// The plugin table.
        name: String,
        /// What is wrong, with a "did you mean" where one fits.
        detail: String,
    },
}

/// Shutdown did not finish within its deadline.
#[derive(Debug, thiserror::Error)]
#[error("plugin {plugin} did not finish shutting down within {waited:?}")]
pub struct ShutdownTimeout {
    /// The plugin whose shutdown was running.
    pub plugin: String,
    /// The deadline.
    pub waited: Duration,
}

impl PluginSet {
    /// Finds, loads and initialises every plugin the config names.
    /// `source` is the config file, to point a mistake at its line; `home`
    /// holds the secrets a table names (`token_secret`); `examples` opens
    /// the example plugins beside the binary.
    pub fn load(
        config: &PluginsConfig,
        source: Option<&Path>,
        home: &Path,
        exe_dir: Option<&Path>,
        examples: bool,
        bridge: &Arc<Bridge>,
    ) -> Result<PluginSet, PluginsError> {
        let (files, warnings) = discovery::candidates(config, exe_dir, examples);
        let mut set = PluginSet {
            active: Vec::new(),
            reports: Vec::new(),
            warnings,
            tools_generation: bridge.tools_generation(),
            home: home.to_owned(),
        };
        for candidate in files {
            match candidate {
                discovery::Candidate::File(path) => set.load_file(path, config, bridge),
                discovery::Candidate::Example(path) => set.example_off(path, config),
                discovery::Candidate::BuiltIn(plugin) => {
                    set.load_built_in(plugin, exe_dir, config, bridge)
                }
            }
        }
        for (name, entry) in &config.entries {
            let report = set.reports.iter().find(|r| r.name.as_deref() == Some(name));
            match (report, entry.required) {
                (
                    Some(Report {
                        state: PluginState::Failed(why) | PluginState::Off(why),
                        ..
                    }),
                    true,
                ) => {
                    let why = why.clone();
                    set.shutdown(Duration::from_secs(5)).ok();
                    return Err(RequiredPluginError {
                        name: name.clone(),
                        why,
                    }
                    .into());
                }
                // A table one slip away from a plugin's name is a typo:
                // the start stops. Any other is kept for a plugin not
                // installed now (its file removed, or switched off).
                (None, required) if entry.enabled || required => {
                    let known: Vec<&str> = built_in::all()
                        .iter()
                        .map(|p| p.name)
                        .chain(set.reports.iter().filter_map(|r| r.name.as_deref()))
                        .collect();
                    let built_in = built_in::all().iter().any(|p| p.name == name);
                    match hearth_base::config::closest(name, known) {
                        // Built in, but `exe_dir = false` loads only the
                        // files `paths` names.
                        Some(_) if built_in => {
                            let detail = "a built-in plugin, but `[plugins] exe_dir = false` \
                                          loads only the plugin files `paths` names; set \
                                          `exe_dir = true` or add its file to `paths`"
                                .to_owned();
                            set.shutdown(Duration::from_secs(5)).ok();
                            return Err(config_error(source, name, None, detail));
                        }
                        Some(near) => {
                            let detail =
                                format!("no plugin has this name; did you mean [plugins.{near}]?");
                            set.shutdown(Duration::from_secs(5)).ok();
                            return Err(config_error(source, name, None, detail));
                        }
                        None if required => {
                            set.shutdown(Duration::from_secs(5)).ok();
                            return Err(RequiredPluginError {
                                name: name.clone(),
                                why: "no plugin with that name was found".into(),
                            }
                            .into());
                        }
                        None => set.warnings.push(format!(
                            "config has [plugins.{name}], but no plugin named {name} was found"
                        )),
                    }
                }
                (
                    Some(Report {
                        state: PluginState::Failed(why),
                        ..
                    }),
                    false,
                ) if why.contains("invalid arguments: ") => {
                    let (key, detail) = settings_mistake(why);
                    set.shutdown(Duration::from_secs(5)).ok();
                    return Err(config_error(source, name, key.as_deref(), detail));
                }
                _ => {}
            }
        }
        for warning in &set.warnings {
            tracing::warn!("{warning}");
        }
        Ok(set)
    }

    /// The plugins that are serving, in load order.
    pub fn active(&self) -> &[Arc<ActivePlugin>] {
        &self.active
    }

    /// The counter bumped whenever a plugin's tools change at run time.
    pub fn tools_generation(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.tools_generation)
    }

    /// Configuration problems found while loading (missing directories,
    /// tables for plugins that do not exist).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// A report per plugin file, with run-time faults folded in.
    pub fn reports(&self) -> Vec<Report> {
        self.reports
            .iter()
            .map(|r| {
                let mut r = r.clone();
                let plugin = self
                    .active
                    .iter()
                    .find(|p| Some(&p.name) == r.name.as_ref());
                if let Some(plugin) = plugin {
                    // Tools set at run time (an MCP server's) count too.
                    r.tools = plugin.tools().iter().map(|t| t.name.clone()).collect();
                }
                if let (PluginState::Active, Some(fault)) =
                    (&r.state, plugin.and_then(|p| p.fault()))
                {
                    r.state = PluginState::Failed(fault);
                }
                r
            })
            .collect()
    }

    /// Calls every plugin's `shutdown`, in reverse load order, on a helper
    /// thread, and gives up waiting after `deadline`.
    pub fn shutdown(&self, deadline: Duration) -> Result<(), ShutdownTimeout> {
        let plugins: Vec<Arc<ActivePlugin>> = self.active.iter().rev().cloned().collect();
        let current = Arc::new(Mutex::new(String::new()));
        let (done, finished) = crossbeam_channel::bounded::<()>(1);
        let running = Arc::clone(&current);
        let worker = std::thread::Builder::new()
            .name("hearth-plugin-shutdown".into())
            .spawn(move || {
                for plugin in plugins {
                    *running.lock().unwrap_or_else(|p| p.into_inner()) = plugin.name.clone();
                    tracing::debug!(plugin = %plugin.name, "shutting down plugin");
                    plugin.shutdown();
                }
                let _ = done.send(());
            });
        if worker.is_err() {
            // No thread to spare: shut down inline rather than not at all.
            self.active.iter().rev().for_each(|p| p.shutdown());
            return Ok(());
        }
        finished
            .recv_timeout(deadline)
            .map_err(|_| ShutdownTimeout {
                plugin: current.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                waited: deadline,
            })
    }

    fn load_file(&mut self, path: PathBuf, config: &PluginsConfig, bridge: &Arc<Bridge>) {
        let report = Report::new(path.clone());
        // A plugin switched off is never mapped: loading a library relocates
        // and touches its pages, which is most of what it costs.
        if let Some(name) = discovery::name_from_file(&path)
            && [name.to_owned(), name.replace('_', "-")]
                .iter()
                .any(|n| config.entries.get(n).is_some_and(|e| !e.enabled))
        {
            return self.off(
                Report {
                    name: Some(name.to_owned()),
                    ..report
                },
                DISABLED.into(),
            );
        }
        match loader::open(&path) {
            Ok(library) => self.start(library, report, config, bridge),
            Err(e) => self.fail(report, e.to_string()),
        }
    }

    /// Reports an example plugin file as off without opening it, under the
    /// name its config table uses (`hello-c` for `libhearth_plugin_hello_c.so`),
    /// so the table reads as a plugin's, not a misspelt one.
    fn example_off(&mut self, path: PathBuf, config: &PluginsConfig) {
        let name = discovery::name_from_file(&path).map(|name| {
            let dashed = name.replace('_', "-");
            if config.entries.contains_key(&dashed) {
                dashed
            } else {
                name.to_owned()
            }
        });
        self.off(
            Report {
                name,
                ..Report::new(path)
            },
            EXAMPLES_OFF.into(),
        );
    }

    fn load_built_in(
        &mut self,
        plugin: &'static built_in::BuiltIn,
        exe_dir: Option<&Path>,
        config: &PluginsConfig,
        bridge: &Arc<Bridge>,
    ) {
        let path = exe_dir.map_or_else(|| PathBuf::from("hearth"), |d| d.join("hearth"));
        let report = Report {
            name: Some(plugin.name.to_owned()),
            ..Report::new(path.clone())
        };
        if let Some(other) = self.named(plugin.name) {
            let why = format!(
                "built in, but the plugin file {} replaces it",
                other.path.display()
            );
            return self.off(report, why);
        }
        let entry = config.entries.get(plugin.name);
        if entry.is_some_and(|e| !e.enabled) {
            return self.off(report, DISABLED.into());
        }
        if let Some(why) = plugin.off_reason(entry) {
            return self.off(report, why);
        }
        match loader::check_header(&path, plugin.header()) {
            Ok(library) => self.start(library, report, config, bridge),
            Err(e) => self.fail(report, e.to_string()),
        }
    }

    fn start(
        &mut self,
        library: loader::Library,
        mut report: Report,
        config: &PluginsConfig,
        bridge: &Arc<Bridge>,
    ) {
        let path = report.path.clone();
        report.name = Some(library.name.clone());
        report.version = Some(library.version.clone());
        if let Some(other) = self.named(&library.name) {
            let why = format!(
                "{}: another plugin named {} was already loaded from {}",
                path.display(),
                library.name,
                other.path.display()
            );
            return self.fail(report, why);
        }
        let entry = config
            .entries
            .get(&library.name)
            .cloned()
            .unwrap_or_default();
        if !entry.enabled {
            return self.off(report, DISABLED.into());
        }
        // A secret the table names that is not set is a mistake in the
        // config, like a bad value: "invalid arguments" stops the start.
        let settings = match secret_settings::resolve(&entry.settings, &self.home, &library.name) {
            Ok(settings) => config.settings_of(&library.name, &settings),
            Err(why) => return self.fail(report, format!("invalid arguments: {why}")),
        };
        match ActivePlugin::start(library, bridge, &settings) {
            Ok(plugin) => {
                let d = plugin.description();
                report.tools = d.tools.iter().map(|t| t.name.clone()).collect();
                report.channel = d.channel.as_ref().map(|c| c.name.clone());
                tracing::info!(
                    plugin = %plugin.name,
                    version = %plugin.version,
                    tools = report.tools.len(),
                    "plugin loaded"
                );
                self.active.push(Arc::new(plugin));
                self.reports.push(report);
            }
            Err(e) => self.fail(report, e.to_string()),
        }
    }

    /// The report of a plugin already loaded (or switched off) under
    /// `name`.
    fn named(&self, name: &str) -> Option<&Report> {
        self.reports
            .iter()
            .find(|r| r.name.as_deref() == Some(name) && r.state == PluginState::Active)
    }

    fn off(&mut self, mut report: Report, why: String) {
        let plugin = report.name.as_deref().unwrap_or("?");
        tracing::info!(plugin, "plugin not loaded: {why}");
        report.state = PluginState::Off(why);
        self.reports.push(report);
    }

    fn fail(&mut self, mut report: Report, why: String) {
        tracing::error!("plugin not loaded: {why}");
        report.state = PluginState::Failed(why);
        self.reports.push(report);
    }
}

/// A mistake in `[plugins.<name>]`, pointed at the file and line: of the
/// key when it is known, else of the table.
fn config_error(
    source: Option<&Path>,
    name: &str,
    key: Option<&str>,
    detail: String,
) -> PluginsError {
    let where_ = match source {
        Some(path) => {
            let line = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| hearth_base::config::line_of(&text, name, key));
            match line {
                Some(line) => format!("{}, line {line}", path.display()),
                None => path.display().to_string(),
            }
        }
        None => "(built-in defaults)".to_owned(),
    };
    PluginsError::Config {
        where_,
        name: name.to_owned(),
        detail,
    }
}

/// The key a plugin's "invalid arguments" complaint is about, and the
/// complaint in the owner's words: `` `listen`: invalid type... `` names
/// it first, serde's "unknown field `listenn`, expected one of `listen`,
/// ..." inside, where a "did you mean" is added.
fn settings_mistake(why: &str) -> (Option<String>, String) {
    let detail = why
        .split_once("invalid arguments: ")
        .map_or(why, |(_, rest)| rest);
    // The plugin's own prefix, `[plugins.x]`, says again what the error
    // says first.
    let detail = match detail
        .strip_prefix("[plugins.")
        .and_then(|d| d.split_once(']'))
    {
        Some((_, rest)) => rest.trim_start_matches(':').trim_start(),
        None => detail,
    }
    .to_owned();
    let quoted = |text: &str| text.split('`').nth(1).map(str::to_owned);
    // An unknown key, with the keys the plugin knows: serde's "unknown
    // field `x`, expected one of `a`, `b`" and the channels' own "unknown
    // key `x`; known keys are a, b" (or "(known keys: a, b)").
    let wordings = [
        ("unknown field `", &["expected one of "][..]),
        ("unknown key `", &["known keys are ", "known keys: "]),
    ];
    for (marker, lists) in wordings {
        let Some(at) = detail.find(marker) else {
            continue;
        };
        let key = quoted(&detail[at..]);
        let known: Vec<&str> = lists
            .iter()
            .find_map(|list| detail.split_once(list))
            .map(|(_, list)| {
                list.trim_end_matches(')')
                    .split(", ")
                    .map(|k| k.trim_matches('`'))
                    .collect()
            })
            .unwrap_or_default();
        let hint = key
            .as_deref()
            .and_then(|k| hearth_base::config::closest(k, known))
            .map(|near| format!(" (did you mean `{near}`?)"))
            .unwrap_or_default();
        return (key, format!("{detail}{hint}"));
    }
    if detail.starts_with('`') {
        return (quoted(&detail), detail);
    }
    // "listen: ... is not an address": a plugin's own check names its key.
    let key = detail
        .split_once(": ")
        .map(|(key, _)| key)
        .filter(|key| !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_owned);
    (key, detail)
}
