//! Which plugins to try, and in which order.
//!
//! Order matters: plugins start in this order and shut down in reverse.
//! Explicit `paths` come first, as written; then each directory, its files
//! sorted by name; then, when `exe_dir` is on, the plugins that ship with
//! hearth: the built-in ones, and the files in the directory of the
//! `hearth` binary. Those files are the example plugins (everything else
//! that ships is built in): with `examples` off, the default, they are
//! listed but never opened, since every tool they offer would be sent to
//! the model on every call. A file reached twice (a path that is also in a
//! directory) is tried once, and a file beside the binary that is the twin
//! of a built-in plugin (`libhearth_plugin_shell.so`) is not tried at all.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::built_in::{self, BuiltIn};
use hearth_base::config::PluginsConfig;

/// File names a directory scan picks up: `libhearth_plugin_<name>.so`.
pub const FILE_PREFIX: &str = "libhearth_plugin_";

/// One plugin to try.
pub enum Candidate {
    /// A shared library, opened with `dlopen` unless config switches it off.
    File(PathBuf),
    /// A plugin linked into the binary.
    BuiltIn(&'static BuiltIn),
    /// An example plugin file beside the binary, with `examples` off:
    /// reported as off, never opened.
    Example(PathBuf),
}

/// The plugins to try, and problems with configured directories;
/// `examples` opens the example plugin files beside the binary.
pub fn candidates(
    config: &PluginsConfig,
    exe_dir: Option<&Path>,
    examples: bool,
) -> (Vec<Candidate>, Vec<String>) {
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let mut add = |path: PathBuf, files: &mut Vec<Candidate>, open: bool| {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.insert(key) {
            files.push(if open {
                Candidate::File(path)
            } else {
                Candidate::Example(path)
            });
        }
    };
    // A file named in `paths` or found in `dirs` is the owner's choice,
    // example or not.
    for path in &config.paths {
        add(path.clone(), &mut files, true);
    }
    for dir in &config.dirs {
        match scan(dir) {
            Ok(found) => found.into_iter().for_each(|p| add(p, &mut files, true)),
            Err(e) => problems.push(format!("plugin directory {}: {e}", dir.display())),
        }
    }
    if config.exe_dir {
        files.extend(built_in::all().iter().map(Candidate::BuiltIn));
        let beside = exe_dir.and_then(|d| scan(d).ok()).unwrap_or_default();
        beside
            .into_iter()
            .filter(|p| {
                name_from_file(p).is_none_or(|n| built_in::all().iter().all(|b| b.name != n))
            })
            .for_each(|p| add(p, &mut files, examples));
    }
    (files, problems)
}

/// The plugin name a file's name promises: `libhearth_plugin_web.so` is
/// `web`. Lets config switch a plugin off without loading its code; the
/// name in the header, read once loaded, stays the authority.
pub fn name_from_file(path: &Path) -> Option<&str> {
    path.file_name()?
        .to_str()?
        .strip_prefix(FILE_PREFIX)?
        .strip_suffix(std::env::consts::DLL_SUFFIX)
        .filter(|n| !n.is_empty())
}

fn scan(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| name_from_file(p).is_some())
        .collect();
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_files_beside_the_binary_open_only_when_turned_on() {
        let beside = tempfile::tempdir().unwrap();
        let echo = beside.path().join("libhearth_plugin_echo.so");
        std::fs::write(&echo, b"").unwrap();
        let opened = |config: &PluginsConfig, examples: bool| {
            let (found, _) = candidates(config, Some(beside.path()), examples);
            found
                .iter()
                .filter_map(|c| match c {
                    Candidate::File(p) => Some((p.clone(), true)),
                    Candidate::Example(p) => Some((p.clone(), false)),
                    Candidate::BuiltIn(_) => None,
                })
                .collect::<Vec<_>>()
        };
        let config = PluginsConfig::default();
        assert_eq!(opened(&config, false), [(echo.clone(), false)]);
        assert_eq!(opened(&config, true), [(echo.clone(), true)]);
        // A file the config names is the owner's choice.
        let named = PluginsConfig {
            paths: vec![echo.clone()],
            ..PluginsConfig::default()
        };
        assert_eq!(opened(&named, false), [(echo, true)]);
    }

    #[test]
    fn names_come_from_the_file_name() {
        let cases = [
            ("/x/libhearth_plugin_web.so", Some("web")),
            ("libhearth_plugin_hello_c.so", Some("hello_c")),
            ("/x/libhearth_plugin_.so", None),
            ("/x/libother.so", None),
            ("/x/libhearth_plugin_web.so.1", None),
        ];
        for (path, name) in cases {
            assert_eq!(name_from_file(Path::new(path)), name, "{path}");
        }
    }
}
