//! Backups and restore (docs/operations.md, "Backups and restore").
//!
//! An archive, `hearth-backup-<UTC time>.tar.gz`, holds a consistent copy
//! of `hearth.db` and `agent_data.db` taken through SQLite's online backup
//! API while the daemon runs (`snapshot`), the agent's files (`tools/`,
//! `skills/`, `lib/`, `pages/`, `shared/`), the owner's `config/` folder
//! (the guards file), what people sent and the agent made (`media/`,
//! `attachments/`, `voice/`) unless `[backup] include_media = false`, the
//! config file, and `secrets.json` unless `[backup] include_secrets =
//! false`; `manifest.json`, its first entry,
//! lists each with its size and SHA-256 (`manifest`).
//!
//! - `create` makes one archive, atomically, mode 0600;
//! - `names` is the archive name and the time read back from it;
//! - `retention` decides which archives stay (a pure function) and prunes;
//! - `restore` checks an archive whole, then restores it into a stopped
//!   home;
//! - `scheduled` is the daemon's task that makes them on `[backup]
//!   schedule`.
//!
//! With a daemon running, `hearth backup` asks it over the control socket
//! (`backup`), and it makes the archive on a blocking thread; without one,
//! the CLI makes it itself. [`Backups`] is what both share.

mod create;
pub mod manifest;
pub mod names;
pub mod restore;
pub mod retention;
pub mod scheduled;
mod snapshot;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Serialize;

pub use manifest::{FileEntry, Manifest};
pub use restore::Restored;
pub use retention::Retention;

use hearth_agent::scheduler::Clock;
use hearth_base::config::Config;

/// The databases, `hearth.db` first (the one an archive must hold).
pub const DB_FILES: [&str; 2] = [hearth_base::store::FILE_NAME, "agent_data.db"];
/// The owner's secrets file.
pub const SECRETS: &str = hearth_base::secrets::FILE_NAME;
/// The folders under `$HEARTH_HOME` an archive holds.
pub const TREES: [&str; 6] = ["tools", "skills", "lib", "pages", "shared", "config"];
/// The folders of files people sent and the agent made, held unless
/// `[backup] include_media = false`: a restore without them loses every
/// photo and voice note.
pub const MEDIA_TREES: [&str; 3] = ["media", "attachments", "voice"];

/// What a backup is made of.
#[derive(Clone, Debug)]
pub struct Sources {
    /// `$HEARTH_HOME`.
    pub home: PathBuf,
    /// The config file in use, if any.
    pub config_file: Option<PathBuf>,
    /// Whether `secrets.json` goes in.
    pub include_secrets: bool,
    /// Whether [`MEDIA_TREES`] go in.
    pub include_media: bool,
}

/// An archive made.
#[derive(Clone, Debug, Serialize)]
pub struct Made {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// What it holds.
    pub manifest: Manifest,
    /// Files under the agent's folders left out (links, special files).
    pub skipped: Vec<String>,
    /// Older archives retention deleted after this one.
    pub pruned: Vec<PathBuf>,
}

/// Why a backup was not made.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// There is no `hearth.db` to back up.
    #[error("there is no database at {path}: nothing to back up (has hearth run with this home?)")]
    NoDatabase {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// An archive with this name exists (two backups in one second).
    #[error("{path} exists already: one backup a second at most; try again")]
    Exists {
        /// The archive.
        path: PathBuf,
    },
    /// The online copy of a database failed.
    #[error("cannot copy the database {path}: {source}")]
    Snapshot {
        /// The database.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A file could not be read or written.
    #[error("cannot {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Why an archive was not restored. Nothing was written in the home.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A daemon runs on the home.
    #[error(
        "a hearth daemon is running with home {home}: stop it first (`systemctl --user stop \
         hearth`, or Ctrl-C on `hearth run`), then restore"
    )]
    DaemonRuns {
        /// The home.
        home: PathBuf,
    },
    /// The home holds files and `--force` was not given.
    #[error(
        "{home} is not empty (it holds {found}, ...): restore into an empty folder with --home, \
         or add --force to move the files the restore replaces into {home}/before-restore-<time>/"
    )]
    NotEmpty {
        /// The home.
        home: PathBuf,
        /// A few of the names in it.
        found: String,
    },
    /// The file is not gzip-compressed.
    #[error("{archive} is not a hearth backup: it is not gzip-compressed (a .tar.gz)")]
    NotGzip {
        /// The archive.
        archive: PathBuf,
    },
    /// The file ends early.
    #[error("{archive} is truncated: it ends before the archive does (an interrupted copy?)")]
    Truncated {
        /// The archive.
        archive: PathBuf,
    },
    /// The first entry is not the manifest.
    #[error("{archive} is not a hearth backup: its first entry is {first}, not manifest.json")]
    NoManifest {
        /// The archive.
        archive: PathBuf,
        /// What came first.
        first: String,
    },
    /// The archive does not match its manifest, or does not read.
    #[error("{archive} is damaged: {why}")]
    Damaged {
        /// The archive.
        archive: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// An entry would be written outside the home, or is not one a backup
    /// holds.
    #[error("{archive} is refused: entry {entry:?} is {why}")]
    UnsafePath {
        /// The archive.
        archive: PathBuf,
        /// The entry's path.
        entry: String,
        /// What is wrong with it.
        why: String,
    },
    /// An entry is a link, a device or a folder.
    #[error("{archive} is refused: entry {entry:?} is {kind}; a hearth backup holds only files")]
    NotAFile {
        /// The archive.
        archive: PathBuf,
        /// The entry's path.
        entry: String,
        /// What it is.
        kind: String,
    },
    /// The archive comes from a newer hearth.
    #[error(
        "{archive} was made by hearth {hearth}, with {what}: upgrade hearth to at least that \
         version, then restore"
    )]
    TooNew {
        /// The archive.
        archive: PathBuf,
        /// What is newer.
        what: String,
        /// The version that made it.
        hearth: String,
    },
    /// A file could not be read or written.
    #[error("cannot {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Makes backups for one home: the daemon's control socket and scheduled
/// task share one, and one backup runs at a time.
pub struct Backups {
    sources: Sources,
    dir: PathBuf,
    retention: Retention,
    zone: TimeZone,
    clock: Clock,
    running: Mutex<()>,
}

impl Backups {
    /// The backups `config` describes, timed by `clock`.
    pub fn new(config: &Config, clock: Clock) -> Backups {
        let zone = hearth_base::schedule::owner_zone(config.owner.timezone.as_deref());
        Backups {
            sources: Sources {
                home: config.home.clone(),
                config_file: config
                    .source
                    .as_ref()
                    .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
                include_secrets: config.backup.include_secrets,
                include_media: config.backup.include_media,
            },
            dir: config.backup.dir_in(&config.home),
            retention: Retention::from_config(&config.backup),
            zone: TimeZone::get(&zone).unwrap_or(TimeZone::UTC),
            clock,
            running: Mutex::new(()),
        }
    }

    /// Where archives go by default (`[backup] dir`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The clock archives are named by.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Makes an archive now, in `to` or the default folder.
    pub fn run(&self, to: Option<&Path>) -> Result<Made, BackupError> {
        self.run_at(to, self.clock.now())
    }

    /// Makes an archive named for `at`. Retention runs after it only in
    /// the default folder: a folder given with `--to` is the owner's.
    pub fn run_at(&self, to: Option<&Path>, at: Timestamp) -> Result<Made, BackupError> {
        let _one_at_a_time = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let dir = to.unwrap_or(&self.dir);
        let mut made = create::make(&self.sources, dir, at)?;
        if same_dir(dir, &self.dir) {
            match retention::prune(dir, &self.retention, &self.zone) {
                Ok(pruned) => made.pruned = pruned,
                Err(e) => tracing::warn!(dir = %dir.display(), "cannot prune old backups: {e}"),
            }
        }
        Ok(made)
    }
}

/// Whether two paths name the same folder.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
