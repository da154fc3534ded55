//! `[scripts]`: where Lua tools and skills come from, and the limits every
//! script call runs under.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[scripts]`, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptsConfig {
    /// The bundled `scripts/` directory; `None` finds it next to the binary
    /// (`<exe dir>/scripts`, or the source tree's `scripts/` for a cargo
    /// build).
    pub bundled_dir: Option<PathBuf>,
    /// Worker processes at most (calls beyond that wait).
    pub workers: usize,
    /// A call's deadline unless the tool sets its own `deadline_ms`.
    pub deadline_ms: u64,
    /// The most a tool may ask for with `deadline_ms`.
    pub max_deadline_ms: u64,
    /// How long loading a script (its top level) may take.
    pub load_deadline_ms: u64,
    /// The Lua heap cap per worker, in MiB.
    pub memory_mb: u64,
    /// A worker unused this long is stopped (the next call starts one).
    pub worker_idle_ms: u64,
    /// Reload scripts when they change on disk (the daemon only).
    pub watch: bool,
    /// `hearth.http.request` limits.
    pub http: HttpConfig,
}

/// `[scripts.http]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Allow loopback, private, link-local and metadata addresses. Off: a
    /// script cannot reach the LAN, the host itself or cloud metadata.
    pub allow_private: bool,
    /// Per-request timeout.
    pub timeout_ms: u64,
    /// The largest response body read, in bytes.
    pub max_bytes: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allow_private: false,
            timeout_ms: 10_000,
            max_bytes: 1 << 20,
        }
    }
}

impl Default for ScriptsConfig {
    fn default() -> Self {
        ScriptsConfig {
            bundled_dir: None,
            workers: 4,
            deadline_ms: 5_000,
            max_deadline_ms: 60_000,
            load_deadline_ms: 2_000,
            memory_mb: 64,
            worker_idle_ms: 60_000,
            watch: true,
            http: HttpConfig::default(),
        }
    }
}

/// `[scripts]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScripts {
    bundled_dir: Option<String>,
    workers: Option<usize>,
    deadline_ms: Option<u64>,
    max_deadline_ms: Option<u64>,
    load_deadline_ms: Option<u64>,
    memory_mb: Option<u64>,
    worker_idle_ms: Option<u64>,
    watch: Option<bool>,
    #[serde(default)]
    http: HttpConfig,
}

/// Validates `[scripts]`; an error is `(dotted key, message)`.
pub(super) fn build(raw: RawScripts, base: &Path) -> Result<ScriptsConfig, (String, String)> {
    let d = ScriptsConfig::default();
    let config = ScriptsConfig {
        bundled_dir: raw
            .bundled_dir
            .map(|dir| super::resolve(base, &dir))
            .transpose()
            .map_err(|e| ("scripts.bundled_dir".to_owned(), e.to_string()))?,
        workers: raw.workers.unwrap_or(d.workers),
        deadline_ms: raw.deadline_ms.unwrap_or(d.deadline_ms),
        max_deadline_ms: raw.max_deadline_ms.unwrap_or(d.max_deadline_ms),
        load_deadline_ms: raw.load_deadline_ms.unwrap_or(d.load_deadline_ms),
        memory_mb: raw.memory_mb.unwrap_or(d.memory_mb),
        worker_idle_ms: raw.worker_idle_ms.unwrap_or(d.worker_idle_ms),
        watch: raw.watch.unwrap_or(d.watch),
        http: raw.http,
    };
    // A folder that is not there would load no bundled tool, silently.
    if let Some(dir) = &config.bundled_dir
        && !dir.is_dir()
    {
        return Err((
            "scripts.bundled_dir".to_owned(),
            format!(
                "{} is not a folder (a relative path is from the config file's folder; \
                 leave the key out to use the scripts beside the binary)",
                dir.display()
            ),
        ));
    }
    let positive = [
        ("scripts.workers", config.workers as u64),
        ("scripts.deadline_ms", config.deadline_ms),
        ("scripts.load_deadline_ms", config.load_deadline_ms),
        ("scripts.memory_mb", config.memory_mb),
        ("scripts.worker_idle_ms", config.worker_idle_ms),
        ("scripts.http.timeout_ms", config.http.timeout_ms),
    ];
    if let Some((key, _)) = positive.iter().find(|(_, v)| *v == 0) {
        return Err(((*key).to_owned(), "must be at least 1".into()));
    }
    if config.max_deadline_ms < config.deadline_ms {
        return Err((
            "scripts.max_deadline_ms".into(),
            format!("must be at least deadline_ms ({})", config.deadline_ms),
        ));
    }
    Ok(config)
}
