//! The confinement the policy sends with a call the owner did not approve
//! (`hearth_sdk::protocol::Floor`), in either mode. The plugin that runs
//! the call applies it with Landlock to the programs it starts
//! (`hearth_sdk::floor`), and with path checks to the files it opens
//! itself.
//!
//! It says three things:
//! - outside the writable roots nothing is written: `/` is protected and
//!   each root is a writable place inside it;
//! - inside the roots, the protected paths stay read-only: the guards
//!   file's `protected_paths` (`~` and `$HEARTH_HOME` expanded) that lie in
//!   a root, and the background processes' records;
//! - the credentials are hidden: neither read nor written.
//!
//! A few device files every program writes (`/dev/null`, terminals,
//! shared memory) stay writable, with the guards file's
//! `writable_devices`.

use std::path::{Path, PathBuf};

use hearth_sdk::protocol::Floor;

use super::guards_file::PathLists;
use super::roots::{Confinement, texts};

/// Device paths programs need to write: shared memory, pseudo-terminals
/// and the null devices.
pub const PROGRAM_DEVICES: [&str; 6] = [
    "/dev/shm",
    "/dev/pts",
    "/dev/ptmx",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
];

/// The folder in `$HEARTH_HOME` where the shell plugin keeps its
/// background processes' records.
pub const PROCESS_RECORDS: &str = "processes";

/// The floor for `confinement`, with the guards file's `lists` as they
/// are now; `hearth_home` and `user_home` expand `$HEARTH_HOME` and `~`.
pub fn build(
    lists: &PathLists,
    confinement: &Confinement,
    hearth_home: &Path,
    user_home: Option<&Path>,
) -> Floor {
    let expand = |text: &String| -> Option<PathBuf> {
        let text = text.replace("$HEARTH_HOME", &hearth_home.to_string_lossy());
        let path = match text.strip_prefix('~') {
            Some("") => user_home?.to_owned(),
            Some(rest) if rest.starts_with('/') => user_home?.join(rest.trim_start_matches('/')),
            _ => PathBuf::from(text),
        };
        // A relative entry names no place; the guard ignores it too.
        path.is_absolute().then_some(path)
    };
    // Outside the roots everything is read-only already; only the
    // protected paths inside a root need a mark of their own. A protected
    // path that holds a root (`/root` holding the owner's home) guards
    // what lies around the root, which `/` already does.
    let mut protect: Vec<PathBuf> = vec![PathBuf::from("/")];
    protect.extend(
        lists
            .protected
            .iter()
            .filter_map(expand)
            .filter(|p| confinement.writable(p) && !confinement.roots.contains(p)),
    );
    // The background processes' records: `process_stop` signals the pid a
    // record names, so no confined program may rewrite one.
    protect.push(hearth_home.join(PROCESS_RECORDS));
    protect.sort();
    protect.dedup();
    let mut writable: Vec<PathBuf> = confinement.roots.clone();
    writable.extend(lists.writable.iter().filter_map(expand));
    writable.extend(PROGRAM_DEVICES.iter().map(PathBuf::from));
    let mut seen = std::collections::HashSet::new();
    writable.retain(|p| seen.insert(p.clone()));
    Floor {
        protect: texts(&protect),
        writable: texts(&writable),
        hidden: texts(&confinement.hidden),
    }
}

/// The floor of a program that needs to write nothing at all (a Lua
/// worker): everything read-only but the null devices, the credentials
/// hidden.
pub fn sealed(confinement: &Confinement) -> Floor {
    Floor {
        protect: vec!["/".into()],
        writable: PROGRAM_DEVICES.iter().map(|d| (*d).to_owned()).collect(),
        hidden: texts(&confinement.hidden),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_writable_protected_paths_inside_them_are_not_and_credentials_are_hidden() {
        let lists = PathLists {
            protected: vec![
                "/etc".into(),
                "/root".into(),
                "~/.ssh".into(),
                "$HEARTH_HOME/hearth.toml".into(),
                "relative".into(),
            ],
            writable: vec!["/dev/stdout".into()],
        };
        let confinement = Confinement {
            roots: vec!["/root".into(), "/root/.hearth".into(), "/tmp".into()],
            hidden: vec!["/root/.hearth/secrets.json".into()],
        };
        let floor = build(
            &lists,
            &confinement,
            Path::new("/root/.hearth"),
            Some(Path::new("/root")),
        );
        assert_eq!(
            floor.protect,
            [
                "/",
                "/root/.hearth/hearth.toml",
                "/root/.hearth/processes",
                "/root/.ssh"
            ]
        );
        assert_eq!(
            &floor.writable[..4],
            ["/root", "/root/.hearth", "/tmp", "/dev/stdout"]
        );
        assert_eq!(floor.hidden, ["/root/.hearth/secrets.json"]);
    }

    #[test]
    fn a_sealed_floor_writes_only_the_null_devices_and_hides_the_credentials() {
        let confinement = Confinement {
            roots: vec!["/tmp".into()],
            hidden: vec!["/h/secrets.json".into()],
        };
        let floor = sealed(&confinement);
        assert_eq!(floor.protect, ["/"]);
        assert_eq!(floor.writable, PROGRAM_DEVICES);
        assert!(!floor.writable.is_empty() && !floor.writable.iter().any(|w| w == "/tmp"));
        assert_eq!(floor.hidden, ["/h/secrets.json"]);
    }

    #[test]
    fn a_tilde_alone_is_the_owners_home_and_another_users_is_no_path() {
        let lists = PathLists {
            protected: vec!["~".into(), "~bob/notes".into()],
            writable: Vec::new(),
        };
        let confinement = Confinement {
            roots: vec!["/home".into(), "/tmp".into()],
            hidden: Vec::new(),
        };
        let floor = build(
            &lists,
            &confinement,
            Path::new("/home/ann/.hearth"),
            Some(Path::new("/home/ann")),
        );
        assert_eq!(
            floor.protect,
            ["/", "/home/ann", "/home/ann/.hearth/processes"]
        );
    }
}
