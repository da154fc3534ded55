//! `[plugins]`: where to find plugins, and each plugin's own table.
//!
//! `[plugins]` mixes host keys (`dirs`, `paths`, `exe_dir`) with one table
//! per plugin (`[plugins.<name>]`). A plugin table is passed to the plugin's
//! `init` as JSON, minus the host's own keys `required` and `enabled`. Any
//! other non-table key under `[plugins]` is an error, so a misspelt `dirz`
//! is reported rather than ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[plugins]`, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginsConfig {
    /// Plugin files named explicitly, loaded first, in order.
    pub paths: Vec<PathBuf>,
    /// Directories scanned for `libhearth_plugin_*.so`, in order.
    pub dirs: Vec<PathBuf>,
    /// Load the plugins that ship with hearth (the default): the built-in
    /// ones, and the plugin files in the directory of the `hearth`
    /// executable.
    pub exe_dir: bool,
    /// `[plugins.<name>]` tables by plugin name.
    pub entries: BTreeMap<String, PluginEntry>,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            paths: Vec::new(),
            dirs: Vec::new(),
            exe_dir: true,
            entries: BTreeMap::new(),
        }
    }
}

/// One `[plugins.<name>]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginEntry {
    /// The daemon refuses to start when this plugin fails to load.
    pub required: bool,
    /// `false` skips the plugin: it is found and listed, never initialised.
    pub enabled: bool,
    /// The rest of the table, handed to the plugin's `init` as JSON.
    pub settings: serde_json::Value,
}

impl Default for PluginEntry {
    fn default() -> Self {
        PluginEntry {
            required: false,
            enabled: true,
            settings: serde_json::Value::Object(Default::default()),
        }
    }
}

/// `[plugins]` as written.
#[derive(Default, Deserialize)]
pub(super) struct RawPlugins {
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    dirs: Vec<String>,
    exe_dir: Option<bool>,
    #[serde(flatten)]
    rest: BTreeMap<String, toml::Value>,
}

/// Validates `[plugins]`; an error is `(dotted key, message)`.
pub(super) fn build(raw: RawPlugins, base: &Path) -> Result<PluginsConfig, (String, String)> {
    let resolve_all = |key: &str, values: Vec<String>| {
        values
            .iter()
            .map(|v| super::resolve(base, v).map_err(|e| (key.to_owned(), e.to_string())))
            .collect::<Result<Vec<_>, _>>()
    };
    let mut entries = BTreeMap::new();
    for (name, value) in raw.rest {
        let key = format!("plugins.{name}");
        let toml::Value::Table(mut table) = value else {
            return Err((
                key,
                "unknown key; known keys are `paths`, `dirs` and `exe_dir`, \
                 and plugin settings go in a `[plugins.<name>]` table"
                    .into(),
            ));
        };
        let mut entry = PluginEntry::default();
        for (flag, slot) in [
            ("required", &mut entry.required),
            ("enabled", &mut entry.enabled),
        ] {
            match table.remove(flag) {
                None => {}
                Some(toml::Value::Boolean(b)) => *slot = b,
                Some(other) => {
                    return Err((
                        format!("{key}.{flag}"),
                        format!("expected true or false, found {}", other.type_str()),
                    ));
                }
            }
        }
        entry.settings = serde_json::to_value(table).map_err(|e| (key.clone(), e.to_string()))?;
        entries.insert(name, entry);
    }
    Ok(PluginsConfig {
        paths: resolve_all("plugins.paths", raw.paths)?,
        dirs: resolve_all("plugins.dirs", raw.dirs)?,
        exe_dir: raw.exe_dir.unwrap_or(true),
        entries,
    })
}
