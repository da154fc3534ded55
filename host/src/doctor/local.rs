//! The doctor's checks that need only the disk: the config file, the
//! home's permissions, the databases' integrity and schema, free space,
//! Landlock, automatic memory capture's state and the systemd unit. They run in the CLI, daemon or not.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::{Connection, OpenFlags};

use super::Finding;
use hearth_base::config::{Config, ConfigError, Mode};
use hearth_base::store;

/// Free space below this fails: SQLite cannot be trusted to commit.
const DISK_FAIL_BYTES: u64 = 64 << 20;
/// Free space below this warns.
const DISK_WARN_BYTES: u64 = 1 << 30;

/// Files in the home only the owner should read: behind a private home
/// their own mode matters little, in an open one it decides.
const PRIVATE_FILES: [&str; 3] = [store::FILE_NAME, "agent_data.db", "canvas.token"];

/// The secrets file, which hearth refuses to read while others can.
const SECRETS_FILE: &str = "secrets.json";

/// The config: which file, and whether it is valid.
pub fn config(path: Option<&Path>, loaded: Result<(), &ConfigError>) -> Finding {
    let shown = path.map_or("built-in defaults (no config file)".to_owned(), |p| {
        p.display().to_string()
    });
    match loaded {
        Ok(()) => Finding::ok("config", format!("{shown} is valid")),
        Err(e) => Finding::fail(
            "config",
            e.to_string(),
            "edit the file where the message points, then run `hearth doctor` again",
        ),
    }
}

/// The home directory and the private files in it: present, the user's
/// own, and closed to everyone else.
pub fn home(home: &Path) -> Vec<Finding> {
    let meta = match std::fs::metadata(home) {
        Ok(meta) if meta.is_dir() => meta,
        Ok(_) => {
            return vec![Finding::fail(
                "home",
                format!("{} is not a directory", home.display()),
                "move the file away, or point HEARTH_HOME (or `home` in the config) elsewhere",
            )];
        }
        Err(e) => {
            return vec![Finding::warn(
                "home",
                format!("{}: {e}", home.display()),
                "`hearth run` creates it on its first start",
            )];
        }
    };
    let me = current_uid();
    let open = meta.permissions().mode() & 0o077 != 0;
    let mut findings = Vec::new();
    if meta.uid() != me {
        findings.push(Finding::fail(
            "home",
            format!(
                "{} belongs to uid {}, not to you (uid {me})",
                home.display(),
                meta.uid()
            ),
            format!("chown -R {me} {}", home.display()),
        ));
    } else if open {
        findings.push(Finding::warn(
            "home",
            format!(
                "{} has mode {:o}: others may look inside",
                home.display(),
                meta.permissions().mode() & 0o777
            ),
            format!("chmod 700 {}", home.display()),
        ));
    } else {
        findings.push(Finding::ok(
            "home",
            format!("{} (yours, mode 700)", home.display()),
        ));
    }
    let secrets = home.join(SECRETS_FILE);
    if let Some(mode) = readable_by_others(&secrets) {
        findings.push(Finding::fail(
            "secrets",
            format!(
                "{} has mode {mode:o}: hearth refuses secrets others can read, so tools \
                 that name one fail",
                secrets.display()
            ),
            format!("chmod 600 {}", secrets.display()),
        ));
    }
    for path in PRIVATE_FILES
        .iter()
        .map(|name| home.join(name))
        .filter(|_| open)
    {
        if let Some(mode) = readable_by_others(&path) {
            findings.push(Finding::warn(
                "home",
                format!("{} has mode {mode:o}: others may read it", path.display()),
                format!("chmod 600 {}", path.display()),
            ));
        }
    }
    findings
}

/// The mode of `path` when a group or others may do anything with it.
fn readable_by_others(path: &Path) -> Option<u32> {
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

/// `hearth.db` and `agent_data.db`: SQLite's `quick_check` on a read-only
/// connection (beside a running daemon too: in WAL mode a reader blocks no
/// one), and the schema version against this build's.
pub fn store(home: &Path) -> Vec<Finding> {
    let mut findings = vec![database(
        "store",
        &home.join(store::FILE_NAME),
        Some(store::SCHEMA_VERSION),
    )];
    let data = home.join("agent_data.db");
    if data.exists() {
        findings.push(database("agent data", &data, None));
    }
    findings
}

/// Free space where the home lives.
pub fn disk(home: &Path) -> Finding {
    let probe = existing_ancestor(home);
    let free = match free_bytes(&probe) {
        Ok(free) => free,
        Err(e) => {
            return Finding::warn(
                "disk",
                format!("cannot read the free space of {}: {e}", probe.display()),
                "check the file system with `df -h`",
            );
        }
    };
    let shown = format!("{} free on {}", human_bytes(free), probe.display());
    if free < DISK_FAIL_BYTES {
        Finding::fail(
            "disk",
            shown,
            "free some space: inbound messages are refused (not lost) while the disk is full",
        )
    } else if free < DISK_WARN_BYTES {
        Finding::warn(
            "disk",
            shown,
            "free some space before the disk fills (old backups, `logs/`, `media/`)",
        )
    } else {
        Finding::ok("disk", shown)
    }
}

/// What the kernel's Landlock gives this mode.
pub fn landlock(mode: Mode) -> Finding {
    match (hearth_sdk::landlock::abi_version(), mode) {
        (Ok(v), _) => Finding::ok("landlock", format!("available (ABI {v})")),
        (Err(why), Mode::Development) => Finding::warn(
            "landlock",
            format!("unavailable: {why}"),
            "development mode then confines writes by checking paths only; a kernel with \
             Landlock (Linux 5.13+, `lsm=landlock` on the kernel command line) enforces them",
        ),
        (Err(why), Mode::Production) => Finding::warn(
            "landlock",
            format!("unavailable: {why}"),
            "production mode's kernel floor is missing: commands the guard lets through run \
             unconfined; boot a kernel with Landlock (Linux 5.13+, `lsm=landlock`)",
        ),
    }
}

/// Automatic memory capture: on (and how), or why it is off; a warning
/// when the owner turned it on and no cheap model is there to run it.
pub fn capture(config: &Config) -> Finding {
    let cheap = config.llm.as_ref().is_some_and(|l| l.cheap.is_some());
    let capture = &config.memory.capture;
    let status = capture.status(cheap);
    match (capture.enabled, cheap) {
        (Some(true), false) => Finding::warn(
            "memory capture",
            status,
            "add an [llm.cheap] table (a small, cheap model) for capture to run, or remove \
             [memory.capture] enabled = true",
        ),
        _ => Finding::ok("memory capture", status),
    }
}

/// Whether hearth is installed as a systemd service, and its state.
pub fn service() -> Finding {
    let units = unit_files();
    let Some((unit, user)) = units.into_iter().next() else {
        return Finding::warn(
            "service",
            "not installed as a systemd service",
            "`hearth service install --user` runs it at boot and restarts it on failure \
             (docs/operations.md)",
        );
    };
    let mut systemctl = Command::new("systemctl");
    if user {
        systemctl.arg("--user");
    }
    let scope = if user { "--user " } else { "" };
    let answer = systemctl.args(["is-active", UNIT]).output();
    match answer {
        Err(e) => Finding::warn(
            "service",
            format!(
                "{} is installed, but systemctl cannot run: {e}",
                unit.display()
            ),
            "run `hearth doctor` on the machine's own session, where systemd runs",
        ),
        Ok(out) => {
            let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            let shown = format!("{} is {state}", unit.display());
            match state.as_str() {
                "active" | "reloading" | "activating" => Finding::ok("service", shown),
                "failed" => Finding::fail(
                    "service",
                    shown,
                    format!(
                        "read why with `journalctl {scope}-u {UNIT} -e`, then `systemctl \
                         {scope}restart {UNIT}`"
                    ),
                ),
                _ => Finding::warn(
                    "service",
                    shown,
                    format!("start it with `systemctl {scope}enable --now {UNIT}`"),
                ),
            }
        }
    }
}

/// The unit's name.
const UNIT: &str = "hearth.service";

/// The installed unit files, user units first, each with whether it is a
/// user unit.
fn unit_files() -> Vec<(PathBuf, bool)> {
    let user_dir = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("systemd/user"));
    let candidates = user_dir
        .into_iter()
        .map(|d| (d, true))
        .chain([(PathBuf::from("/etc/systemd/system"), false)]);
    candidates
        .map(|(dir, user)| (dir.join(UNIT), user))
        .filter(|(path, _)| path.is_file())
        .collect()
}

/// One database: opened read-only, `quick_check`ed, its version compared.
fn database(check: &str, path: &Path, known: Option<i64>) -> Finding {
    if !path.exists() {
        return Finding::warn(
            check,
            format!("{} does not exist yet", path.display()),
            "`hearth run` creates it on its first start",
        );
    }
    let restore = format!(
        "stop the daemon, keep a copy of {}, and restore the newest backup \
         (`hearth restore ARCHIVE`, docs/operations.md)",
        path.display()
    );
    let conn = match Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY) {
        Ok(conn) => conn,
        Err(e) => return Finding::fail(check, format!("{}: {e}", path.display()), restore),
    };
    let quick: Result<Vec<String>, rusqlite::Error> = conn
        .prepare("PRAGMA quick_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect());
    let version: rusqlite::Result<i64> = conn.query_row("PRAGMA user_version", [], |r| r.get(0));
    match (quick, version) {
        (Err(e), _) | (_, Err(e)) => {
            Finding::fail(check, format!("{}: {e}", path.display()), restore)
        }
        (Ok(rows), _) if rows != ["ok"] => Finding::fail(
            check,
            format!(
                "{}: quick_check found damage: {}",
                path.display(),
                rows.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            ),
            restore,
        ),
        (Ok(_), Ok(version)) => match known {
            Some(known) if version > known => Finding::fail(
                check,
                format!(
                    "{} has schema version {version}, newer than this hearth knows ({known})",
                    path.display()
                ),
                "run the newer hearth that wrote it, or restore a backup made for this version",
            ),
            Some(known) if version < known => Finding::ok(
                check,
                format!(
                    "{}: intact; schema {version}, migrated to {known} at the next start",
                    path.display()
                ),
            ),
            _ => Finding::ok(check, format!("{}: intact", path.display())),
        },
    }
}

/// `path`, or its nearest ancestor that exists (a home not made yet).
fn existing_ancestor(path: &Path) -> PathBuf {
    path.ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"))
        .to_owned()
}

/// The bytes an unprivileged user may still write on `path`'s file system.
fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a valid NUL-terminated string and `stat` points
    // to writable memory of the right size; statvfs fills it on success.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it initialised the struct.
    let stat = unsafe { stat.assume_init() };
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// The effective user id.
fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// `n` bytes in a unit a person reads.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Level;

    #[test]
    fn sizes_read_as_a_person_reads_them() {
        for (n, shown) in [(512, "512 B"), (64 << 20, "64.0 MiB"), (3 << 30, "3.0 GiB")] {
            assert_eq!(human_bytes(n), shown);
        }
    }

    #[test]
    fn an_open_home_warns_and_a_readable_secrets_file_fails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let secrets = dir.path().join("secrets.json");
        std::fs::write(&secrets, "{}").unwrap();
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
        let db = dir.path().join("hearth.db");
        std::fs::write(&db, "").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        let levels = |findings: &[Finding]| -> Vec<(String, Level)> {
            findings
                .iter()
                .map(|f| (f.check.clone(), f.level))
                .collect()
        };
        let found = home(dir.path());
        assert_eq!(
            levels(&found),
            [
                ("home".into(), Level::Warn),
                ("secrets".into(), Level::Fail),
                ("home".into(), Level::Warn)
            ]
        );
        assert!(found[1].fix.as_deref().unwrap().starts_with("chmod 600"));
        // Behind a private home, only the secrets file's own mode counts.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            levels(&home(dir.path())),
            [("home".into(), Level::Ok), ("secrets".into(), Level::Fail)]
        );
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(levels(&home(dir.path())), [("home".into(), Level::Ok)]);
    }

    #[test]
    fn a_damaged_or_newer_database_fails_and_a_missing_one_warns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        assert_eq!(database("store", &path, Some(3)).level, Level::Warn);
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); PRAGMA user_version = 4;")
            .unwrap();
        drop(conn);
        let newer = database("store", &path, Some(3));
        assert_eq!(newer.level, Level::Fail);
        assert!(newer.detail.contains("schema version 4"), "{newer:?}");
        assert_eq!(database("store", &path, Some(4)).level, Level::Ok);
        std::fs::write(&path, b"this is not a database, not at all........").unwrap();
        assert_eq!(database("store", &path, Some(4)).level, Level::Fail);
    }
}
