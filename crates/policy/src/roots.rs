//! The two lists the kernel enforces for every program and tool the owner
//! did not approve: the writable roots (where it may create, change,
//! rename and remove) and the credentials (what it may neither read nor
//! write).
//!
//! The roots are the mode's own (development `$HEARTH_HOME` and `/tmp`;
//! production the owner's home as well) plus `[policy] writable_roots`.
//! The credentials are whatever would let a program act as the owner or
//! learn a secret: the secret store, the canvas's token (its sessions are
//! derived from it) and the control socket's, the store's files, the
//! config and guards files, the backups (each archive holds the
//! secrets, and one in progress is being written), and the browser's
//! profile (its cookies are the sites the owner logged into).

use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use hearth_sdk::sandbox::Helpers;

use hearth_base::config::{Config, Mode};

/// The files in `$HEARTH_HOME` that are credentials, by name.
pub const HOME_CREDENTIALS: [&str; 7] = [
    hearth_base::secrets::FILE_NAME,
    "canvas.token",
    "control.token",
    hearth_base::store::FILE_NAME,
    "hearth.db-wal",
    "hearth.db-shm",
    hearth_base::config::FILE_NAME,
];

/// The browser's profile in `$HEARTH_HOME`: a credential to everything
/// but the browser.
pub const BROWSER_PROFILE: &str = "browser/profile";

/// Where unapproved programs may write, and what they may not touch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Confinement {
    /// The writable roots, absolute (canonical where they exist).
    pub roots: Vec<PathBuf>,
    /// The credentials: neither read nor written.
    pub hidden: Vec<PathBuf>,
}

impl Confinement {
    /// The confinement `config` describes, with the guards file at
    /// `guards_file` and `$HOME` at `user_home`.
    pub fn new(config: &Config, user_home: Option<&Path>, guards_file: &Path) -> Confinement {
        let home = canonical(&config.home);
        let mut roots = vec![home.clone(), PathBuf::from("/tmp")];
        if config.mode == Mode::Production
            && let Some(user) = user_home
        {
            roots.push(user.to_owned());
        }
        roots.extend(
            config
                .policy
                .writable_roots
                .iter()
                .filter_map(|root| expand(root, user_home)),
        );
        let mut roots: Vec<PathBuf> = roots.iter().map(|r| canonical(r)).collect();
        roots.sort();
        roots.dedup();
        let mut hidden: Vec<PathBuf> = HOME_CREDENTIALS.iter().map(|n| home.join(n)).collect();
        hidden.push(guards_file.to_owned());
        hidden.extend(config.source.as_deref().map(canonical_file));
        hidden.push(config.backup.dir_in(&config.home));
        hidden.push(home.join(hearth_base::store::PRE_UPGRADE_DIR));
        // The browser's cookies are the owner's logins; only the browser,
        // which leaves its own profile out of this list, uses them.
        hidden.push(home.join(BROWSER_PROFILE));
        let mut hidden: Vec<PathBuf> = hidden
            .into_iter()
            .filter_map(|p| std::path::absolute(p).ok())
            .collect();
        hidden.sort();
        hidden.dedup();
        Confinement { roots, hidden }
    }

    /// Whether `path` (resolved) is, or lies in, one of the credentials.
    pub fn hides(&self, path: &Path) -> bool {
        self.hidden.iter().any(|h| path.starts_with(h))
    }

    /// Whether `path` (resolved) lies in a writable root.
    pub fn writable(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }

    /// The roots as one readable list.
    pub fn roots_list(&self) -> String {
        let shown: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        shown.join(", ")
    }
}

/// Paths as the plugin protocol carries them.
pub fn texts(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// Adds `confinement`'s credentials to the process's: hidden from the
/// helpers' sandbox ([`hearth_base::helpers`]) and refused by
/// [`is_credential`]. A daemon has one
/// home; a process that opens several (the tests) refuses the credentials
/// of every one.
pub fn install(confinement: &Confinement) {
    let mut installed = lock(&INSTALLED);
    for text in texts(&confinement.hidden) {
        if !installed.hidden.contains(&text) {
            installed.hidden.push(text);
        }
    }
    let floor = hearth_sdk::floor::helper(&installed.hidden);
    installed.identities = hearth_sdk::floor::hidden_identities(&floor);
    hearth_base::helpers::install(Helpers::new(&installed.hidden));
}

/// Whether `path` leads to one of the installed credentials, by its
/// resolved path or by the identity of the file (a hard link is the same
/// file): for the host's own tools that read files the agent names
/// (`attach_file`, `send_message`'s attachments), which no kernel rule
/// covers.
pub fn is_credential(path: &Path) -> bool {
    lock(&INSTALLED).identities.matches(path)
}

/// The credentials installed in this process, and what is made of them.
struct Installed {
    hidden: Vec<String>,
    identities: hearth_sdk::floor::Hidden,
}

static INSTALLED: LazyLock<Mutex<Installed>> = LazyLock::new(|| {
    Mutex::new(Installed {
        hidden: Vec::new(),
        identities: hearth_sdk::floor::Hidden::default(),
    })
});

fn lock(m: &Mutex<Installed>) -> std::sync::MutexGuard<'_, Installed> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `~/x` under `user_home`; an absolute path as it is.
fn expand(root: &str, user_home: Option<&Path>) -> Option<PathBuf> {
    match root.strip_prefix('~') {
        Some("") => user_home.map(Path::to_owned),
        Some(rest) if rest.starts_with('/') => {
            user_home.map(|h| h.join(rest.trim_start_matches('/')))
        }
        _ => Some(PathBuf::from(root)),
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// A file's path with its directory resolved and its own name kept, so a
/// config file that is a link hides the link's name (what it leads to is
/// hidden by the same identity check in the tools).
fn canonical_file(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => canonical(dir).join(name),
        _ => canonical(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_follow_the_mode_and_the_config() {
        // Paths that do not exist, outside /tmp (itself a root).
        let user = PathBuf::from("/nonexistent-hearth-test/user");
        let text = "home = \"/nonexistent-hearth-test/hearth\"\n[policy]\n\
                    writable_roots = [\"~/projects\", \"/srv/app\"]\n";
        let mut config = hearth_base::config::parse(text, None).unwrap();
        config.mode = Mode::Development;
        let guards = config.home.join("config/guards.toml");
        let dev = Confinement::new(&config, Some(&user), &guards);
        assert!(dev.writable(&config.home.join("notes")));
        assert!(dev.writable(Path::new("/tmp/x")));
        assert!(dev.writable(&user.join("projects/a")));
        assert!(dev.writable(Path::new("/srv/app/b")));
        assert!(!dev.writable(&user.join("documents")));
        config.mode = Mode::Production;
        let prod = Confinement::new(&config, Some(&user), &guards);
        assert!(prod.writable(&user.join("documents")));
        assert!(!prod.writable(Path::new("/etc/passwd")));
        for name in HOME_CREDENTIALS {
            assert!(prod.hidden.contains(&config.home.join(name)), "{name}");
        }
        assert!(prod.hidden.contains(&guards));
    }

    #[test]
    fn a_credential_is_hidden_and_nothing_else_is() {
        let config =
            hearth_base::config::parse("home = \"/nonexistent-hearth-test/h\"\n", None).unwrap();
        let guards = config.home.join("config/guards.toml");
        let confinement = Confinement::new(&config, None, &guards);
        for name in HOME_CREDENTIALS {
            assert!(confinement.hides(&config.home.join(name)), "{name}");
        }
        assert!(confinement.hides(&guards));
        for path in ["notes/a.md", "config", "hearth.db-journal-not"] {
            assert!(!confinement.hides(&config.home.join(path)), "{path}");
        }
    }

    #[test]
    fn a_config_file_that_is_a_link_hides_the_link_s_name_in_its_real_folder() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("folder")).unwrap();
        std::fs::write(base.join("real/kept.toml"), "").unwrap();
        std::os::unix::fs::symlink("kept.toml", base.join("real/hearth.toml")).unwrap();
        let source = base.join("folder/hearth.toml");
        let config =
            hearth_base::config::parse("home = \"/nonexistent-hearth-test/h\"\n", Some(&source))
                .unwrap();
        let confinement = Confinement::new(&config, None, Path::new("/g"));
        assert!(
            confinement.hidden.contains(&base.join("real/hearth.toml")),
            "{:?}",
            confinement.hidden
        );
        assert!(!confinement.hidden.contains(&source));
        assert!(!confinement.hidden.contains(&base.join("real/kept.toml")));
    }

    #[test]
    fn the_roots_read_as_one_list_in_order() {
        let text = "home = \"/nonexistent-hearth-test/h\"\n[policy]\n\
                    writable_roots = [\"/srv/b\", \"/srv/a\", \"~\", \"~/x\"]\n";
        let mut config = hearth_base::config::parse(text, None).unwrap();
        config.mode = Mode::Development;
        let user = PathBuf::from("/nonexistent-hearth-test/user");
        let confinement = Confinement::new(&config, Some(&user), Path::new("/g"));
        assert_eq!(
            confinement.roots_list(),
            "/nonexistent-hearth-test/h, /nonexistent-hearth-test/user, \
             /nonexistent-hearth-test/user/x, /srv/a, /srv/b, /tmp"
        );
    }

    #[test]
    fn a_root_of_a_bare_tilde_is_the_owner_s_home() {
        let user = Path::new("/nonexistent-hearth-test/user");
        let cases = [
            ("~", Some(user), Some(user.to_owned())),
            ("~/a", Some(user), Some(user.join("a"))),
            ("~", None, None),
            ("/srv", None, Some(PathBuf::from("/srv"))),
            // Another user's home is no path of the owner's: kept as
            // written, never read as a folder in the owner's home.
            ("~anna/x", Some(user), Some(PathBuf::from("~anna/x"))),
        ];
        for (root, home, expected) in cases {
            assert_eq!(expand(root, home), expected, "{root}");
        }
    }

    #[test]
    fn an_installed_credential_is_refused_by_its_path_and_an_ordinary_file_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let text = format!("home = {:?}\n", home.display().to_string());
        let config = hearth_base::config::parse(&text, None).unwrap();
        let secrets = home.join(hearth_base::secrets::FILE_NAME);
        let note = home.join("note.md");
        std::fs::write(&secrets, "x").unwrap();
        std::fs::write(&note, "x").unwrap();
        install(&Confinement::new(&config, None, &home.join("guards.toml")));
        assert!(is_credential(&secrets));
        assert!(!is_credential(&note));
    }
}
