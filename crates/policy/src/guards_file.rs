//! `$HEARTH_HOME/config/guards.toml`: seeded from the bundled defaults,
//! read again whenever it changes.
//!
//! The owner edits the copy in `$HEARTH_HOME`; the next guarded call sees
//! the edit, with no restart. A copy that does not parse fails closed:
//! until it is fixed, every shell command asks, and the card says why.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::guard::rules::{DEFAULT, Rules};
use super::guard::{Guard, Reading, Verdict};

/// The guards file, relative to `$HEARTH_HOME`.
pub const RELATIVE_PATH: &str = "config/guards.toml";

/// The guard built from the file as it is now.
pub struct GuardsFile {
    path: PathBuf,
    user_home: PathBuf,
    hearth_home: PathBuf,
    loaded: Mutex<Loaded>,
}

/// Why the guards file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GuardsFileError {
    /// It could not be created or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not valid TOML, or has an unknown key.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line and key.
        message: String,
    },
}

struct Loaded {
    modified: Option<SystemTime>,
    guard: Result<Arc<Guard>, String>,
    /// `protected_paths` and `writable_devices` as written, for the floor;
    /// the defaults' while the file is invalid.
    paths: Arc<PathLists>,
}

/// The path lists of the guards file, as written (`~` and `$HEARTH_HOME`
/// not yet expanded).
#[derive(Debug)]
pub struct PathLists {
    /// `protected_paths`.
    pub protected: Vec<String>,
    /// `writable_devices`.
    pub writable: Vec<String>,
}

impl PathLists {
    fn of(rules: &Rules) -> PathLists {
        PathLists {
            protected: rules.protected_paths.clone(),
            writable: rules.writable_devices.clone(),
        }
    }
}

impl GuardsFile {
    /// Seeds `$HEARTH_HOME/config/guards.toml` if it is missing, and loads
    /// it. `user_home` is `$HOME`, for `~` in rules and commands.
    pub fn open(hearth_home: &Path, user_home: &Path) -> Result<GuardsFile, GuardsFileError> {
        let path = hearth_home.join(RELATIVE_PATH);
        seed(&path)?;
        let file = GuardsFile {
            path,
            user_home: user_home.to_owned(),
            hearth_home: hearth_home.to_owned(),
            loaded: Mutex::new(Loaded {
                modified: None,
                guard: Err("not loaded yet".into()),
                paths: Arc::new(PathLists::of(&Rules::defaults())),
            }),
        };
        file.reload_if_changed();
        let invalid = super::lock(&file.loaded).guard.clone().err();
        match invalid {
            Some(message) => Err(GuardsFileError::Invalid {
                path: file.path,
                message,
            }),
            None => Ok(file),
        }
    }

    /// Checks `command` as it would run in `cwd` with the variables `env`
    /// set, against the file as it is now.
    pub fn check(&self, command: &str, cwd: &Path, env: &[(String, String)]) -> Verdict {
        self.check_as(command, cwd, env, Reading::Strict)
    }

    /// [`GuardsFile::check`], read as `reading` says (a command that will
    /// run confined is read as a seatbelt).
    pub fn check_as(
        &self,
        command: &str,
        cwd: &Path,
        env: &[(String, String)],
        reading: Reading,
    ) -> Verdict {
        match self.current() {
            Ok(guard) => guard.check_as(command, cwd, env, reading),
            Err(why) => Verdict::Ask(format!("{} is invalid ({why})", self.path.display())),
        }
    }

    /// Whether writing `path` (from `cwd`) touches a protected path.
    pub fn check_write(&self, path: &str, cwd: &Path) -> Verdict {
        match self.current() {
            Ok(guard) => guard.check_write(path, cwd),
            Err(why) => Verdict::Ask(format!("{} is invalid ({why})", self.path.display())),
        }
    }

    /// The file's path lists as it is now (the defaults' while it is
    /// invalid), for the kernel floor.
    pub fn path_lists(&self) -> Arc<PathLists> {
        self.reload_if_changed();
        Arc::clone(&super::lock(&self.loaded).paths)
    }

    /// The guards file itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn current(&self) -> Result<Arc<Guard>, String> {
        self.reload_if_changed();
        super::lock(&self.loaded).guard.clone()
    }

    fn reload_if_changed(&self) {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        let mut loaded = super::lock(&self.loaded);
        if loaded.modified.is_some() && loaded.modified == modified {
            return;
        }
        loaded.modified = modified;
        let rules = std::fs::read_to_string(&self.path)
            .map_err(|e| e.to_string())
            .and_then(|text| Rules::parse(&text));
        loaded.paths = Arc::new(PathLists::of(rules.as_ref().unwrap_or(&Rules::defaults())));
        loaded.guard =
            rules.map(|rules| Arc::new(Guard::new(rules, &self.user_home, &self.hearth_home)));
        match &loaded.guard {
            Ok(_) => tracing::debug!(path = %self.path.display(), "guards loaded"),
            Err(why) => tracing::error!(
                path = %self.path.display(),
                "the guards file is invalid, so every shell command asks until it is fixed: {why}"
            ),
        }
    }
}

/// Writes the bundled defaults to `path` unless a file is there.
fn seed(path: &Path) -> Result<(), GuardsFileError> {
    if path.exists() {
        return Ok(());
    }
    let io = |source| GuardsFileError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, DEFAULT).map_err(io)
}
