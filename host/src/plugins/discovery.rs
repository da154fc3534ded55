//! Which files to try as plugins, in which order.
//!
//! Order matters: plugins start in this order and shut down in reverse.
//! Explicit `paths` come first, as written; then each directory, its files
//! sorted by name; the directory of the `hearth` binary comes last. A file
//! reached twice (a path that is also in a directory) is tried once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::config::PluginsConfig;

/// File names a directory scan picks up: `libhearth_plugin_<name>.so`.
pub const FILE_PREFIX: &str = "libhearth_plugin_";

/// The files to try, and problems with configured directories.
pub fn candidates(config: &PluginsConfig, exe_dir: Option<&Path>) -> (Vec<PathBuf>, Vec<String>) {
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let mut add = |path: PathBuf, files: &mut Vec<PathBuf>| {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.insert(key) {
            files.push(path);
        }
    };
    for path in &config.paths {
        add(path.clone(), &mut files);
    }
    let exe_dir = exe_dir.filter(|_| config.exe_dir);
    for (dir, explicit) in config
        .dirs
        .iter()
        .map(|d| (d.as_path(), true))
        .chain(exe_dir.map(|d| (d, false)))
    {
        match scan(dir) {
            Ok(found) => found.into_iter().for_each(|p| add(p, &mut files)),
            Err(e) if explicit => problems.push(format!("plugin directory {}: {e}", dir.display())),
            Err(_) => {}
        }
    }
    (files, problems)
}

fn scan(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(FILE_PREFIX) && n.ends_with(std::env::consts::DLL_SUFFIX)
            })
        })
        .collect();
    found.sort();
    Ok(found)
}
