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
    /// Settings the host adds to a plugin's table from elsewhere in the
    /// config, by plugin name: the fs plugin's `documents` is `[documents]`,
    /// so one section bounds every way a document is read.
    pub host_settings: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
}

impl PluginsConfig {
    /// Adds `key` to what plugin `plugin` is given; refused (with the key)
    /// when its own table sets `key` already, since the host's value
    /// would win unseen.
    pub fn add_host_setting(
        &mut self,
        plugin: &str,
        key: &str,
        value: serde_json::Value,
    ) -> Result<(), (String, String)> {
        if self
            .entries
            .get(plugin)
            .is_some_and(|e| e.settings.get(key).is_some())
        {
            return Err((
                format!("plugins.{plugin}.{key}"),
                format!("is set by the host from [{key}]; set it there"),
            ));
        }
        self.host_settings
            .entry(plugin.to_owned())
            .or_default()
            .insert(key.to_owned(), value);
        Ok(())
    }

    /// The settings plugin `name` is started with: its table, and what
    /// the host adds.
    pub fn settings_of(&self, name: &str, table: &serde_json::Value) -> serde_json::Value {
        let mut settings = table.clone();
        if let (Some(added), Some(object)) =
            (self.host_settings.get(name), settings.as_object_mut())
        {
            object.extend(added.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        settings
    }
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            paths: Vec::new(),
            dirs: Vec::new(),
            exe_dir: true,
            entries: BTreeMap::new(),
            host_settings: BTreeMap::new(),
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
        host_settings: BTreeMap::new(),
    })
}

/// The line (from 1) of `[plugins.<name>]` in the config text, or of `key`
/// inside that table when `key` is given and found there: how a plugin's
/// complaint about its settings is pointed at the file.
pub fn line_of(text: &str, name: &str, key: Option<&str>) -> Option<usize> {
    let header = format!("[plugins.{name}]");
    let mut lines = text.lines().enumerate();
    let (table, _) = lines.find(|(_, l)| l.trim() == header)?;
    let Some(key) = key else {
        return Some(table + 1);
    };
    let found = lines
        .take_while(|(_, l)| !l.trim_start().starts_with('['))
        .find(|(_, l)| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        });
    Some(found.map_or(table, |(line, _)| line) + 1)
}

/// The candidate closest to `name`, for a "did you mean": one a slip of
/// the keyboard away (a letter added, dropped, swapped or changed).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(distance, c)| *distance <= 2 && *distance < c.len())
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::{PluginEntry, PluginsConfig, closest, line_of};

    #[test]
    fn host_settings_join_a_plugins_table_and_never_hide_its_own() {
        let mut config = PluginsConfig::default();
        config
            .add_host_setting("fs", "documents", serde_json::json!({ "max_rows": 3 }))
            .unwrap();
        let table = serde_json::json!({ "max_read_bytes": 10 });
        assert_eq!(
            config.settings_of("fs", &table),
            serde_json::json!({ "max_read_bytes": 10, "documents": { "max_rows": 3 } })
        );
        assert_eq!(config.settings_of("web", &table), table);
        // A table that sets the key itself is refused, naming it.
        config.entries.insert(
            "fs".into(),
            PluginEntry {
                settings: serde_json::json!({ "documents": {} }),
                ..PluginEntry::default()
            },
        );
        let (key, message) = config
            .add_host_setting("fs", "documents", serde_json::json!({}))
            .unwrap_err();
        assert_eq!(key, "plugins.fs.documents");
        assert!(message.contains("[documents]"), "{message}");
    }

    #[test]
    fn lines_point_at_the_table_or_its_key() {
        let text = "mode = \"x\"\n\n[plugins.canvas]\nlisten = 8080\n\n[plugins.web]\nlisten = 1\n";
        assert_eq!(line_of(text, "canvas", None), Some(3));
        assert_eq!(line_of(text, "canvas", Some("listen")), Some(4));
        assert_eq!(line_of(text, "web", Some("listen")), Some(7));
        // A key the table lacks points at the table.
        assert_eq!(line_of(text, "canvas", Some("port")), Some(3));
        assert_eq!(line_of(text, "telegram", None), None);
    }

    #[test]
    fn suggestions_are_one_slip_away() {
        let known = ["telegram", "signal", "canvas"];
        assert_eq!(closest("telegramm", known), Some("telegram"));
        assert_eq!(closest("singal", known), Some("signal"));
        assert_eq!(closest("matrix", known), None);
    }
}
