//! The daemon's configuration: `hearth.toml`, parsed strictly.
//!
//! Every key is known: an unknown key, a wrong type or a syntax error is an
//! error that names the file, the line and the key, because a typo that is
//! silently ignored (`requried = true`) is worse than a refusal. Relative
//! paths are taken relative to the config file, so a config works from any
//! working directory. The environment overrides a few keys
//! (`HEARTH_HOME`, `HEARTH_MODE`) so the same file serves several setups.

mod agent;
mod backup;
mod capture;
mod documents;
#[cfg(test)]
mod fuzz;
mod groups;
mod heartbeat;
mod housekeeping;
mod memory;
mod plugins;
mod policy;
mod prices;
mod scheduler;
mod scripts;
mod speech;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use agent::{
    AgentConfig, CacheTtl, CheapConfig, Effort, LlmConfig, OwnerConfig, PromptCache, ProviderKind,
    Thinking,
};
pub use backup::{BackupConfig, DEFAULT_SCHEDULE as DEFAULT_BACKUP_SCHEDULE};
pub use documents::DocumentsConfig;
pub use groups::GroupsConfig;
pub use heartbeat::{
    CHECKLIST_FILE as HEARTBEAT_CHECKLIST_FILE, DEFAULT_SCHEDULE as DEFAULT_HEARTBEAT_SCHEDULE,
    HeartbeatConfig,
};
pub use housekeeping::{HousekeepingConfig, Retention};
pub use memory::{CaptureConfig, EmbeddingsConfig, MAX_DIMENSIONS, MemoryConfig};
pub use plugins::{PluginEntry, PluginsConfig, closest, line_of};
pub use policy::PolicyConfig;
pub use scheduler::SchedulerConfig;
pub use scripts::{HttpConfig, ScriptsConfig};
pub use speech::{KNOWN_STT_FORMATS, OPENAI_STT_FORMATS, SttConfig, TtsConfig};

/// The default config file name inside `$HEARTH_HOME`.
pub const FILE_NAME: &str = "hearth.toml";

/// A loaded, validated configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The file it was read from; `None` for built-in defaults.
    pub source: Option<PathBuf>,
    /// `$HEARTH_HOME`: the data directory.
    pub home: PathBuf,
    /// Development or production.
    pub mode: Mode,
    /// Offer the example tools: the example plugins beside the binary and
    /// the bundled Lua examples. Off by default: they show the plugin and
    /// script interfaces, and every tool offered is sent, and paid for, on
    /// every model call.
    pub examples: bool,
    /// `[log]`.
    pub log: LogConfig,
    /// `[daemon]`.
    pub daemon: DaemonConfig,
    /// `[plugins]`.
    pub plugins: PluginsConfig,
    /// `[scripts]`.
    pub scripts: ScriptsConfig,
    /// `[llm]`; `None` runs without a model.
    pub llm: Option<LlmConfig>,
    /// `[agent]`.
    pub agent: AgentConfig,
    /// `[owner]`.
    pub owner: OwnerConfig,
    /// `[policy]`.
    pub policy: PolicyConfig,
    /// `[scheduler]`.
    pub scheduler: SchedulerConfig,
    /// `[stt]`; `None`: voice messages are not transcribed.
    pub stt: Option<SttConfig>,
    /// `[tts]`; `None`: the agent cannot reply with voice.
    pub tts: Option<TtsConfig>,
    /// `[prices."MODEL"]`: US dollars per million tokens, over the
    /// built-in estimates.
    pub prices: std::collections::BTreeMap<String, crate::tokens::Price>,
    /// `[backup]`.
    pub backup: BackupConfig,
    /// `[groups]`.
    pub groups: GroupsConfig,
    /// `[documents]`.
    pub documents: DocumentsConfig,
    /// `[heartbeat]`.
    pub heartbeat: HeartbeatConfig,
    /// `[housekeeping]`: how long each kind of file is kept.
    pub housekeeping: HousekeepingConfig,
    /// `[memory]`: recall by meaning, when an embeddings endpoint is named.
    pub memory: MemoryConfig,
}

/// How much the agent may do without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Writes confined to `$HEARTH_HOME` and `/tmp`; every write/exec asks.
    #[default]
    Development,
    /// Full host access; only guarded actions ask.
    Production,
}

/// `[log]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// The most verbose level shown.
    #[serde(default)]
    pub level: LogLevel,
    /// Human-readable text or one JSON object per line.
    #[serde(default)]
    pub format: LogFormat,
}

/// Log verbosity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// The normal level.
    #[default]
    Info,
    /// Debugging detail.
    Debug,
    /// Everything.
    Trace,
}

/// Log output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// `[daemon]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// How long a graceful stop may take before hearth exits anyway.
    pub shutdown_timeout_ms: u64,
    /// Capacity of the queues behind the plugin callbacks (`submit`, `log`).
    pub queue_capacity: usize,
    /// How long a plugin callback may wait for room in a full queue, and for
    /// a submitted message to be stored, before it is told to retry.
    pub queue_wait_ms: u64,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            shutdown_timeout_ms: 4_000,
            queue_capacity: 4_096,
            queue_wait_ms: 2_000,
        }
    }
}

/// Why a config could not be used. Each message names the file and, where
/// there is one, the line and key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// TOML syntax, an unknown key or a wrong type; `detail` has the line.
    #[error("invalid config {path}: {detail}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's report: line, column, key and what was expected.
        detail: String,
    },
    /// A value that parses but cannot be used.
    #[error("invalid config {path}: key `{key}`: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The dotted key.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// No home directory could be found for the default `~/.hearth`.
    #[error("cannot find a home directory: set HEARTH_HOME or `home` in the config")]
    NoHome,
}

impl Config {
    /// The secrets the host itself uses, by name: the model's key
    /// (`[llm] api_key_secret`, its cheap model's too) and every
    /// `<key>_secret` of a plugin table. Scripts may not use them.
    pub fn host_secrets(&self) -> Vec<String> {
        let llm = self.llm.iter().flat_map(|llm| {
            let cheap = llm
                .cheap
                .as_ref()
                .and_then(|c| c.llm.api_key_secret.clone());
            llm.api_key_secret.clone().into_iter().chain(cheap)
        });
        let plugins = self.plugins.entries.values().flat_map(|entry| {
            entry
                .settings
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(key, _)| key.ends_with("_secret"))
                .filter_map(|(_, value)| value.as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        });
        let embeddings = self
            .memory
            .embeddings
            .as_ref()
            .and_then(|e| e.api_key_secret.clone());
        llm.map(|key| key.name)
            .chain(embeddings)
            .chain(plugins)
            .collect()
    }
}

/// Where the config comes from, in order of precedence.
pub fn resolve_path(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_owned());
    }
    if let Some(p) = std::env::var_os("HEARTH_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let home = match env_home() {
        Some(h) => h,
        None => default_home().ok()?,
    };
    let default = home.join(FILE_NAME);
    default.is_file().then_some(default)
}

/// Loads the config from `path`, or built-in defaults when `None`.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
    match path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            parse(&text, Some(path))
        }
        None => parse("", None),
    }
}

/// Parses config text. `path` names the file in errors and anchors relative
/// paths; without it they are relative to the working directory.
pub fn parse(text: &str, path: Option<&Path>) -> Result<Config, ConfigError> {
    let shown = path.map_or_else(|| PathBuf::from("<defaults>"), Path::to_owned);
    let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: shown.clone(),
        detail: parse_detail(&e, text),
    })?;
    let base = path
        .and_then(Path::parent)
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(Path::new("."))
        .to_owned();
    let home = match env_home() {
        Some(h) => h,
        None => match raw.home {
            Some(h) => resolve(&base, &h)?,
            None => default_home()?,
        },
    };
    let mode = match std::env::var("HEARTH_MODE") {
        Ok(m) if !m.is_empty() => parse_mode(&m).ok_or_else(|| ConfigError::Invalid {
            path: shown.clone(),
            key: "HEARTH_MODE (environment)".into(),
            message: format!("{m:?} is not a mode; use \"development\" or \"production\""),
        })?,
        _ => raw.mode,
    };
    let invalid = |key: &str, message: &str| ConfigError::Invalid {
        path: shown.clone(),
        key: key.into(),
        message: message.into(),
    };
    if raw.daemon.queue_capacity == 0 {
        return Err(invalid("daemon.queue_capacity", "must be at least 1"));
    }
    if raw.policy.confirm_timeout_ms == 0 {
        return Err(invalid("policy.confirm_timeout_ms", "must be at least 1"));
    }
    for (i, root) in raw.policy.writable_roots.iter().enumerate() {
        let key = format!("policy.writable_roots[{i}]");
        if !(root.starts_with('/') || root == "~" || root.starts_with("~/")) {
            return Err(invalid(
                &key,
                &format!("{root:?} must be an absolute path or start with ~/"),
            ));
        }
        if root.contains('\0')
            || std::path::Path::new(root)
                .components()
                .any(|c| c.as_os_str() == "..")
        {
            return Err(invalid(
                &key,
                &format!("{root:?} must not contain `..` or NUL"),
            ));
        }
        if root.trim_end_matches('/').is_empty() {
            return Err(invalid(
                &key,
                "`/` cannot be a writable root: it would let unapproved programs change the whole machine",
            ));
        }
    }
    if raw.daemon.shutdown_timeout_ms == 0 {
        return Err(invalid("daemon.shutdown_timeout_ms", "must be at least 1"));
    }
    let invalid_at = |(key, message): (String, String)| ConfigError::Invalid {
        path: shown.clone(),
        key,
        message,
    };
    let documents = documents::build(raw.documents).map_err(invalid_at)?;
    let mut plugins = plugins::build(raw.plugins, &base).map_err(invalid_at)?;
    // read_file reads documents under the same caps as the agent does.
    plugins
        .add_host_setting("fs", "documents", documents.caps_settings())
        .map_err(invalid_at)?;
    let scripts = scripts::build(raw.scripts, &base).map_err(invalid_at)?;
    let llm = agent::build_llm(raw.llm, &home).map_err(invalid_at)?;
    let agent = agent::build_agent(raw.agent, &base).map_err(invalid_at)?;
    raw.scheduler.check().map_err(invalid_at)?;
    let stt = speech::build_stt(raw.stt).map_err(invalid_at)?;
    let tts = speech::build_tts(raw.tts).map_err(invalid_at)?;
    let prices = prices::build(raw.prices).map_err(invalid_at)?;
    if let Some(zone) = &raw.owner.timezone
        && let Err(e) = jiff::tz::TimeZone::get(zone)
    {
        return Err(invalid(
            "owner.timezone",
            &format!("{zone:?} is not a known IANA time zone ({e})"),
        ));
    }
    let zone = crate::schedule::owner_zone(raw.owner.timezone.as_deref());
    let backup = backup::build(raw.backup, &base, &zone).map_err(invalid_at)?;
    let groups = groups::build(raw.groups).map_err(invalid_at)?;
    let memory = memory::build(raw.memory, &home).map_err(invalid_at)?;
    let heartbeat = heartbeat::build(raw.heartbeat, &base, &zone).map_err(invalid_at)?;
    let housekeeping = housekeeping::build(raw.housekeeping).map_err(invalid_at)?;
    Ok(Config {
        source: path.map(Path::to_owned),
        home,
        mode,
        examples: raw.examples,
        log: raw.log,
        daemon: raw.daemon,
        plugins,
        scripts,
        llm,
        agent,
        owner: raw.owner,
        policy: raw.policy,
        scheduler: raw.scheduler,
        stt,
        tts,
        prices,
        backup,
        groups,
        documents,
        heartbeat,
        housekeeping,
        memory,
    })
}

/// The home when no config can say: `$HEARTH_HOME`, else `~/.hearth`.
pub fn fallback_home() -> Result<PathBuf, ConfigError> {
    env_home().map_or_else(default_home, Ok)
}

/// `~/.hearth`.
pub fn default_home() -> Result<PathBuf, ConfigError> {
    Ok(user_home()?.join(".hearth"))
}

/// `$HEARTH_HOME`, when set and not empty.
fn env_home() -> Option<PathBuf> {
    std::env::var_os("HEARTH_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn user_home() -> Result<PathBuf, ConfigError> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or(ConfigError::NoHome)
}

/// The file as written: every section optional, every key known.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    home: Option<String>,
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    examples: bool,
    #[serde(default)]
    log: LogConfig,
    #[serde(default)]
    daemon: DaemonConfig,
    #[serde(default)]
    plugins: plugins::RawPlugins,
    #[serde(default)]
    scripts: scripts::RawScripts,
    llm: Option<agent::RawLlm>,
    #[serde(default)]
    agent: agent::RawAgent,
    #[serde(default)]
    owner: OwnerConfig,
    #[serde(default)]
    policy: PolicyConfig,
    #[serde(default)]
    scheduler: SchedulerConfig,
    stt: Option<speech::RawStt>,
    tts: Option<speech::RawTts>,
    #[serde(default)]
    prices: std::collections::BTreeMap<String, prices::RawPrice>,
    #[serde(default)]
    backup: backup::RawBackup,
    #[serde(default)]
    groups: groups::RawGroups,
    #[serde(default)]
    documents: documents::RawDocuments,
    #[serde(default)]
    heartbeat: heartbeat::RawHeartbeat,
    #[serde(default)]
    housekeeping: housekeeping::RawHousekeeping,
    #[serde(default)]
    memory: memory::RawMemory,
}

impl Mode {
    /// The name used in config files and `HEARTH_MODE`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Development => "development",
            Mode::Production => "production",
        }
    }
}

fn parse_mode(s: &str) -> Option<Mode> {
    match s {
        "development" => Some(Mode::Development),
        "production" => Some(Mode::Production),
        _ => None,
    }
}

/// Expands a leading `~/` and anchors a relative path at `base`.
/// The TOML parser's report, which names the line, or the line found
/// here where it names none: it reports a key of 80 or more dotted parts
/// without a position (found by fuzzing).
fn parse_detail(error: &toml::de::Error, text: &str) -> String {
    let detail = error.to_string().trim_end().to_owned();
    if error.span().is_some() {
        return detail;
    }
    let dotted_parts = |line: &str| {
        let line = line.trim_start();
        let key = match line.strip_prefix('[') {
            Some(header) => header.split(']').next().unwrap_or(header),
            None => line.split('=').next().unwrap_or(line),
        };
        key.matches('.').count() + 1
    };
    match text.lines().position(|line| dotted_parts(line) >= 80) {
        Some(at) => format!(
            "line {}: {detail}: a key of {} dotted parts, more than the parser reads",
            at + 1,
            dotted_parts(text.lines().nth(at).unwrap_or_default())
        ),
        None => detail,
    }
}

fn resolve(base: &Path, value: &str) -> Result<PathBuf, ConfigError> {
    let path = match value.strip_prefix("~/") {
        Some(rest) => user_home()?.join(rest),
        None => PathBuf::from(value),
    };
    Ok(if path.is_absolute() {
        path
    } else {
        base.join(path)
    })
}
