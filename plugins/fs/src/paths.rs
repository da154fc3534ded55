//! Turning a path argument into the absolute path the tools act on.
//!
//! A relative path is relative to `$HEARTH_HOME`, and a leading `~/` means
//! `$HOME`. Existing paths are canonicalized (symlinks resolved) so results
//! report the file really touched; for a path that does not exist yet, the
//! nearest existing ancestor is canonicalized and the rest appended. There is
//! no confinement here on purpose: the host's policy decides what may be
//! touched.

use std::io;
use std::path::{Path, PathBuf};

use hearth_sdk::PluginError;

use crate::args::invalid;

/// Where relative paths and `~` lead.
#[derive(Clone, Debug)]
pub struct Roots {
    /// `$HEARTH_HOME`: the base of relative paths.
    pub hearth_home: PathBuf,
    /// `$HOME`, when set: what `~` means.
    pub user_home: Option<PathBuf>,
    /// In development mode, the only folders writes may touch (canonical);
    /// empty means anywhere.
    pub confine_to: Vec<PathBuf>,
}

impl Roots {
    /// The absolute, not yet canonical, form of `raw` (argument `field`).
    pub fn absolute(&self, field: &str, raw: &str) -> Result<PathBuf, PluginError> {
        if raw.trim().is_empty() {
            return Err(invalid(field, "must not be empty"));
        }
        if raw.contains('\0') {
            return Err(invalid(field, "must not contain a NUL character"));
        }
        let path = if raw == "~" || raw.starts_with("~/") {
            let home = self.user_home.as_ref().ok_or_else(|| {
                invalid(
                    field,
                    &format!("{raw:?} starts with ~ but $HOME is not set"),
                )
            })?;
            home.join(raw.trim_start_matches('~').trim_start_matches('/'))
        } else {
            PathBuf::from(raw)
        };
        Ok(if path.is_absolute() {
            path
        } else {
            self.hearth_home.join(path)
        })
    }

    /// Refuses a write to the resolved `path` outside [`Roots::confine_to`].
    pub fn check_writable(&self, field: &str, path: &Path) -> Result<(), PluginError> {
        if self.confine_to.is_empty() || self.confine_to.iter().any(|r| path.starts_with(r)) {
            return Ok(());
        }
        let roots: Vec<String> = self
            .confine_to
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        Err(invalid(
            field,
            &format!(
                "leads to {}, outside {} (development mode writes only there)",
                path.display(),
                roots.join(" and ")
            ),
        ))
    }

    /// `raw` resolved through every symlink; the path may not exist yet.
    pub fn resolve(&self, field: &str, raw: &str) -> Result<PathBuf, PluginError> {
        let path = self.absolute(field, raw)?;
        canonical_or_planned(&path).map_err(|e| io_error("cannot resolve", &path, &e))
    }

    /// `raw` resolved except for its last component, so a symlink is
    /// named rather than followed (for deleting or listing the link itself).
    pub fn resolve_parent(&self, field: &str, raw: &str) -> Result<PathBuf, PluginError> {
        let path = self.absolute(field, raw)?;
        let resolved = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => {
                canonical_or_planned(parent).map(|parent| parent.join(name))
            }
            // Ends in `..`, `.` or is `/`: a directory, never a symlink name.
            _ => canonical_or_planned(&path),
        };
        resolved.map_err(|e| io_error("cannot resolve", &path, &e))
    }
}

/// An error about `path` that says what was being done.
pub fn io_error(doing: &str, path: &Path, error: &io::Error) -> PluginError {
    PluginError::failed(format!("{doing} {}: {}", path.display(), describe(error)))
}

/// A short, human description of an I/O error.
fn describe(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => error.to_string(),
    }
}

/// The canonical path if it exists; otherwise the canonical nearest
/// ancestor with the remaining components appended, `..` applied lexically
/// (the directories after the ancestor do not exist, so they hold no links).
fn canonical_or_planned(path: &Path) -> io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(p) => return Ok(p),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(&existing) {
            Ok(base) => {
                let mut out = base;
                for component in rest.iter().rev() {
                    if component == ".." {
                        out.pop();
                    } else if component != "." {
                        out.push(component);
                    }
                }
                return Ok(out);
            }
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            Err(e) => {
                let Some(last) = existing.components().next_back() else {
                    return Err(e);
                };
                rest.push(last.as_os_str().to_owned());
                if !existing.pop() {
                    return Err(e);
                }
            }
        }
    }
}
