//! Turning a path argument into the absolute path the tools act on, and
//! the confinement of a call the owner did not approve.
//!
//! A relative path is relative to `$HEARTH_HOME`, and a leading `~/` means
//! `$HOME`. Existing paths are canonicalized (symlinks resolved) so results
//! report the file really touched; for a path that does not exist yet, the
//! nearest existing ancestor is canonicalized and the rest appended.
//!
//! The host sends the confinement with every call the owner did not
//! approve ([`hearth_sdk::protocol::Floor`]); no kernel rule covers this
//! plugin's own process, so it checks the paths it really opens: writes
//! only inside the writable roots and outside the protected paths there,
//! and never a credential, read or written, by its resolved path or by
//! the identity of the file (a hard link is the same file).

use std::io;
use std::path::{Path, PathBuf};

use hearth_sdk::PluginError;
use hearth_sdk::floor::{self, Hidden};
use hearth_sdk::protocol::Floor;

use crate::args::invalid;

/// Where relative paths and `~` lead, and what this call may touch.
#[derive(Clone, Debug)]
pub struct Roots {
    /// `$HEARTH_HOME`: the base of relative paths.
    pub hearth_home: PathBuf,
    /// `$HOME`, when set: what `~` means.
    pub user_home: Option<PathBuf>,
    /// The confinement of this call; `None` when the owner approved it.
    pub floor: Option<Floor>,
    /// The floor's credentials, by path and identity.
    pub hidden: Hidden,
}

impl Roots {
    /// These roots for one call under `floor`.
    pub fn confined(&self, floor: Option<Floor>) -> Roots {
        Roots {
            hidden: floor
                .as_ref()
                .map(floor::hidden_identities)
                .unwrap_or_default(),
            floor,
            ..self.clone()
        }
    }

    /// Refuses to write the resolved `path` when the call is confined and
    /// `path` is outside the writable roots, protected, or a credential.
    pub fn check_writable(&self, field: &str, path: &Path) -> Result<(), PluginError> {
        let Some(floor) = &self.floor else {
            return Ok(());
        };
        if self.hidden.matches(path) {
            return Err(credential(field, path));
        }
        if floor::allows_write(floor, path) {
            return Ok(());
        }
        Err(invalid(
            field,
            &format!(
                "leads to {}, which this call may not change: outside the writable roots ({}), \
                 or protected. Ask the owner by calling again outside the roots, or work inside \
                 them",
                path.display(),
                floor.writable.first().map_or("none", String::as_str)
            ),
        ))
    }

    /// Refuses to read the resolved `path` when it is one of hearth's
    /// credentials (or a link to one).
    pub fn check_readable(&self, field: &str, path: &Path) -> Result<(), PluginError> {
        if self.floor.is_some() && self.hidden.matches(path) {
            return Err(credential(field, path));
        }
        Ok(())
    }

    /// Whether `path` is a credential this call may not see (for the
    /// entries of a listing or a search).
    pub fn is_hidden(&self, path: &Path) -> bool {
        self.floor.is_some() && self.hidden.matches(path)
    }

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

/// The refusal of a credential.
fn credential(field: &str, path: &Path) -> PluginError {
    invalid(
        field,
        &format!(
            "leads to {}, one of hearth's credentials (secrets, tokens, the store, the config), \
             which no tool or program the owner did not approve may read or change",
            path.display()
        ),
    )
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
    // The first round canonicalizes the whole path; a failure other than
    // "not found" there (a file used as a folder, a link loop) is final,
    // and the path resolves left to right, so no ancestor fails otherwise.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confined_call_writes_only_inside_the_roots_and_never_a_credential() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let secret = root.join("secrets.toml");
        std::fs::write(&secret, "x").unwrap();
        let text = |p: &Path| p.display().to_string();
        let floor = Floor {
            protect: vec!["/".into(), text(&root.join("kept"))],
            writable: vec![text(&root)],
            hidden: vec![text(&secret)],
        };
        let open = Roots {
            hearth_home: root.clone(),
            user_home: None,
            floor: None,
            hidden: Hidden::default(),
        };
        let confined = open.confined(Some(floor));
        assert!(
            confined
                .check_writable("path", &root.join("note.md"))
                .is_ok()
        );
        for path in [base.join("outside.md"), secret.clone(), root.join("kept/x")] {
            let refused = confined.check_writable("path", &path);
            assert!(refused.is_err(), "{} was writable", path.display());
        }
        assert!(
            open.check_writable("path", &base.join("outside.md"))
                .is_ok()
        );
    }

    #[test]
    fn errors_are_told_in_plain_words() {
        let denied = io::Error::from_raw_os_error(13);
        let missing = io::Error::from_raw_os_error(2);
        let e = io_error("reading", Path::new("/x"), &denied).to_string();
        assert!(e.ends_with("reading /x: permission denied"), "{e}");
        let e = io_error("reading", Path::new("/x"), &missing).to_string();
        assert!(e.ends_with("reading /x: no such file or directory"), "{e}");
    }

    #[test]
    fn a_path_is_planned_through_missing_folders_but_not_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::write(base.join("file"), "x").unwrap();
        let planned = canonical_or_planned(&base.join("new/./deeper/../leaf")).unwrap();
        assert_eq!(planned, base.join("new/leaf"));
        let through_a_file = canonical_or_planned(&base.join("file/child"));
        assert_eq!(
            through_a_file.unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
    }
}
