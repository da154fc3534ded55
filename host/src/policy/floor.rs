//! The kernel floor the policy sends with a production-mode command that
//! the owner did not approve: which paths stay read-only, and which places
//! inside them stay writable (`hearth_sdk::protocol::Floor`). The plugin
//! that runs the command applies it with Landlock (`hearth_sdk::floor`).
//!
//! The protected paths are the guards file's `protected_paths`, `~` and
//! `$HEARTH_HOME` expanded, plus what the floor always protects whatever
//! the file says: the guards file itself, the config file the daemon runs
//! with, and `hearth.db` with its `-wal` and `-shm`. The writable places are the file's `writable_devices`, the
//! few device paths every program needs, and the owner's home and
//! `$HEARTH_HOME` when a protected path holds them (hearth running as root
//! under a protected `/root`): a protected path guards what lies around
//! them, not the homes themselves.

use std::path::{Path, PathBuf};

use hearth_sdk::protocol::Floor;

use super::guards_file::PathLists;

/// Device paths programs need to write even though `/dev` is protected:
/// shared memory, and pseudo-terminals.
pub const PROGRAM_DEVICES: [&str; 3] = ["/dev/shm", "/dev/pts", "/dev/ptmx"];

/// Where the floor's paths come from.
pub struct Homes<'a> {
    /// `$HEARTH_HOME`, canonical.
    pub hearth_home: &'a Path,
    /// `$HOME`, for `~`.
    pub user_home: Option<&'a Path>,
    /// The guards file.
    pub guards_file: &'a Path,
    /// The config file the daemon runs with, if any.
    pub config_file: Option<&'a Path>,
}

/// The floor for the guards file's `lists` as they are now.
pub fn build(lists: &PathLists, homes: &Homes) -> Floor {
    let expand = |text: &String| -> Option<PathBuf> {
        let text = text.replace("$HEARTH_HOME", &homes.hearth_home.to_string_lossy());
        let path = match text.strip_prefix('~') {
            Some("") => homes.user_home?.to_owned(),
            Some(rest) if rest.starts_with('/') => {
                homes.user_home?.join(rest.trim_start_matches('/'))
            }
            _ => PathBuf::from(text),
        };
        // A relative entry names no place; the guard ignores it too.
        path.is_absolute().then_some(path)
    };
    let db = homes.hearth_home.join(crate::store::FILE_NAME);
    let mut protect: Vec<PathBuf> = lists.protected.iter().filter_map(expand).collect();
    protect.extend(homes.config_file.map(Path::to_owned));
    protect.extend([
        homes.guards_file.to_owned(),
        db.clone(),
        suffixed(&db, "-wal"),
        suffixed(&db, "-shm"),
    ]);
    // The files hearth names itself may come relative from the command
    // line; the floor takes absolute paths only.
    let mut protect: Vec<PathBuf> = protect
        .into_iter()
        .filter_map(|p| std::path::absolute(p).ok())
        .collect();
    protect.sort();
    protect.dedup();
    let mut writable: Vec<PathBuf> = lists.writable.iter().filter_map(expand).collect();
    writable.extend(PROGRAM_DEVICES.iter().map(PathBuf::from));
    // As in the guard, a protected path that is or holds the owner's home
    // guards other users' files, not the owner's; `$HEARTH_HOME` is kept
    // writable only strictly inside one, so that the owner can still
    // protect it whole.
    if let Some(home) = homes.user_home
        && protect.iter().any(|p| home.starts_with(p))
    {
        writable.push(home.to_owned());
    }
    if protect
        .iter()
        .any(|p| homes.hearth_home.starts_with(p) && homes.hearth_home != p)
    {
        writable.push(homes.hearth_home.to_owned());
    }
    let text = |paths: Vec<PathBuf>| paths.iter().map(|p| p.display().to_string()).collect();
    Floor {
        protect: text(protect),
        writable: text(writable),
    }
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut text = path.as_os_str().to_owned();
    text.push(suffix);
    PathBuf::from(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_expanded_and_the_homes_stay_writable_inside_protected_ones() {
        let lists = PathLists {
            protected: vec![
                "/etc".into(),
                "/root".into(),
                "~/.ssh".into(),
                "$HEARTH_HOME/hearth.toml".into(),
                "relative".into(),
            ],
            writable: vec!["/dev/null".into()],
        };
        let floor = build(
            &lists,
            &Homes {
                hearth_home: Path::new("/root/.hearth"),
                user_home: Some(Path::new("/root")),
                guards_file: Path::new("/root/.hearth/config/guards.toml"),
                config_file: Some(Path::new("/srv/hearth.toml")),
            },
        );
        let expected = [
            "/etc",
            "/root",
            "/root/.hearth/config/guards.toml",
            "/root/.hearth/hearth.db",
            "/root/.hearth/hearth.db-shm",
            "/root/.hearth/hearth.db-wal",
            "/root/.hearth/hearth.toml",
            "/root/.ssh",
            "/srv/hearth.toml",
        ];
        assert_eq!(floor.protect, expected);
        assert_eq!(
            floor.writable,
            [
                "/dev/null",
                "/dev/shm",
                "/dev/pts",
                "/dev/ptmx",
                "/root",
                "/root/.hearth"
            ]
        );
    }
}
