//! Making one archive: everything is first copied into a staging folder
//! beside the archive (the databases through the online backup API, the
//! other files as they are), hashed there, and only then written into
//! `hearth-backup-<time>.tar.gz` with the manifest first. The archive is
//! written under a temporary name with mode 0600 and linked to its final
//! name only when complete, so a crash or a full disk never leaves a
//! half-written file that looks like a backup.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use jiff::Timestamp;

use super::manifest::{self, FileEntry, Manifest};
use super::{BackupError, DB_FILES, MEDIA_TREES, Made, SECRETS, Sources, TREES, names, snapshot};

/// Makes an archive of `sources` in `dir`, named for `at`.
pub fn make(sources: &Sources, dir: &Path, at: Timestamp) -> Result<Made, BackupError> {
    let io = |what: &str, path: &Path| {
        let (what, path) = (what.to_owned(), path.to_owned());
        move |source| BackupError::Io { what, path, source }
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io("create the backup folder", dir))?;
    sweep(dir);
    let name = names::name(at);
    let path = dir.join(&name);
    if path.exists() {
        return Err(BackupError::Exists { path });
    }
    let db = sources.home.join(DB_FILES[0]);
    if !db.is_file() {
        return Err(BackupError::NoDatabase { path: db });
    }
    let mut partial = Partial {
        staging: dir.join(format!(".{name}.staging")),
        archive: dir.join(format!(".{name}.partial")),
    };
    partial.clean();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&partial.staging)
        .map_err(io("create a staging folder", &partial.staging))?;
    let mut staged: Vec<String> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut schema_version = 0;
    for (index, file) in DB_FILES.iter().enumerate() {
        let source = sources.home.join(file);
        if index > 0 && !source.exists() {
            continue;
        }
        let version = snapshot::copy(&source, &partial.staging.join(file)).map_err(|source| {
            BackupError::Snapshot {
                path: sources.home.join(file),
                source,
            }
        })?;
        if index == 0 {
            schema_version = version;
        }
        staged.push((*file).to_owned());
    }
    if let Some(config) = &sources.config_file {
        stage_file(config, &partial.staging, "hearth.toml")?;
        staged.push("hearth.toml".to_owned());
    }
    let secrets = sources.include_secrets && sources.home.join(SECRETS).is_file();
    if secrets {
        stage_file(&sources.home.join(SECRETS), &partial.staging, SECRETS)?;
        staged.push(SECRETS.to_owned());
    }
    let media: &[&str] = if sources.include_media {
        &MEDIA_TREES
    } else {
        &[]
    };
    for tree in TREES.iter().chain(media) {
        stage_tree(
            &sources.home,
            tree,
            &partial.staging,
            &mut staged,
            &mut skipped,
        )?;
    }
    staged.sort();
    let mut files = Vec::with_capacity(staged.len());
    for relative in &staged {
        let file = partial.staging.join(relative);
        let reader = File::open(&file).map_err(io("read a staged file", &file))?;
        let (size, sha256) = manifest::hash_copy(reader, std::io::sink())
            .map_err(io("read a staged file", &file))?;
        files.push(FileEntry {
            path: relative.clone(),
            size,
            sha256,
        });
    }
    let manifest = Manifest {
        format: manifest::FORMAT,
        hearth: env!("CARGO_PKG_VERSION").to_owned(),
        schema_version,
        created: at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        home: sources.home.display().to_string(),
        config: sources
            .config_file
            .as_ref()
            .map(|p| p.display().to_string()),
        secrets,
        files,
    };
    write_archive(&partial, &manifest, at).map_err(io("write the archive", &partial.archive))?;
    // A hard link fails when the name is taken, where a rename would
    // replace an archive made in the same second.
    std::fs::hard_link(&partial.archive, &path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            BackupError::Exists { path: path.clone() }
        } else {
            BackupError::Io {
                what: "name the archive".into(),
                path: path.clone(),
                source,
            }
        }
    })?;
    partial.clean();
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    let size = std::fs::metadata(&path)
        .map_err(io("read the archive", &path))?
        .len();
    Ok(Made {
        path,
        size,
        manifest,
        skipped,
        pruned: Vec::new(),
    })
}

/// How long a staging folder or partial archive may go unchanged before
/// it counts as left behind by a backup that was killed.
const ABANDONED: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes what a killed backup left in `dir`: the dot-named staging
/// folders and partial archives untouched for an hour (a running backup
/// keeps writing to its own).
fn sweep(dir: &Path) {
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in list.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name.starts_with(&format!(".{}", names::PREFIX))
            && (name.ends_with(".staging") || name.ends_with(".partial"));
        let idle = || {
            let path = entry.path();
            // The folder and what is directly in it (a database being
            // copied changes its file, not the folder).
            let children = std::fs::read_dir(&path)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path());
            std::iter::once(path.clone()).chain(children).all(|p| {
                std::fs::metadata(&p)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > ABANDONED)
            })
        };
        if ours && idle() {
            let path = entry.path();
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
            tracing::info!(path = %path.display(), "removed what an interrupted backup left");
        }
    }
}

/// The staging folder and the archive being written, removed when
/// dropped (on success they are already gone).
struct Partial {
    staging: PathBuf,
    archive: PathBuf,
}

impl Partial {
    fn clean(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
        let _ = std::fs::remove_file(&self.archive);
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        self.clean();
    }
}

/// Copies one file into the staging folder as `relative`.
fn stage_file(source: &Path, staging: &Path, relative: &str) -> Result<(), BackupError> {
    let target = staging.join(relative);
    if let Some(parent) = target.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| BackupError::Io {
                what: "create a staging folder".into(),
                path: parent.to_owned(),
                source: e,
            })?;
    }
    std::fs::copy(source, &target).map_err(|e| BackupError::Io {
        what: "copy".into(),
        path: source.to_owned(),
        source: e,
    })?;
    Ok(())
}

/// Copies the regular files under `home/tree` into the staging folder.
/// Links and special files are left out (named in `skipped`): a link in
/// the agent's folders may point anywhere, and a restore writes only
/// plain files.
fn stage_tree(
    home: &Path,
    tree: &str,
    staging: &Path,
    staged: &mut Vec<String>,
    skipped: &mut Vec<String>,
) -> Result<(), BackupError> {
    let mut pending = vec![tree.to_owned()];
    while let Some(relative) = pending.pop() {
        let dir = home.join(&relative);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(BackupError::Io {
                    what: "list".into(),
                    path: dir,
                    source,
                });
            }
        };
        for entry in entries.filter_map(Result::ok) {
            let Ok(name) = entry.file_name().into_string() else {
                skipped.push(format!("{relative}/{:?} (not UTF-8)", entry.file_name()));
                continue;
            };
            let child = format!("{relative}/{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(child),
                Ok(t) if t.is_file() => {
                    stage_file(&entry.path(), staging, &child)?;
                    staged.push(child);
                }
                Ok(t) if t.is_symlink() => skipped.push(format!("{child} (a symbolic link)")),
                _ => skipped.push(format!("{child} (not a regular file)")),
            }
        }
    }
    Ok(())
}

/// Writes the tar.gz: the manifest first, then every file it lists.
fn write_archive(partial: &Partial, manifest: &Manifest, at: Timestamp) -> std::io::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial.archive)?;
    // The fastest level: most of an archive's bytes are photos and voice
    // notes, already compressed, which a higher level only spends time on
    // (docs/benchmarks.md, "Backups").
    let gz = GzEncoder::new(BufWriter::new(file), Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let mtime = at.as_second().max(0) as u64;
    let header = |size: u64| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o600);
        h.set_mtime(mtime);
        h.set_size(size);
        h
    };
    let json = serde_json::to_vec_pretty(manifest).map_err(std::io::Error::other)?;
    tar.append_data(
        &mut header(json.len() as u64),
        manifest::NAME,
        json.as_slice(),
    )?;
    for entry in &manifest.files {
        let reader = BufReader::new(File::open(partial.staging.join(&entry.path))?);
        tar.append_data(&mut header(entry.size), &entry.path, reader)?;
    }
    let mut writer = tar.into_inner()?.finish()?;
    writer.flush()?;
    writer.into_inner().map_err(|e| e.into_error())?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_killed_backup_left_is_swept_once_idle_for_an_hour() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir
            .path()
            .join(".hearth-backup-2020-01-01T000000Z.tar.gz.partial");
        let staging = dir
            .path()
            .join(".hearth-backup-2020-01-01T000000Z.tar.gz.staging");
        let fresh = dir
            .path()
            .join(".hearth-backup-2026-01-01T000000Z.tar.gz.partial");
        let other = dir.path().join(".notes.partial");
        std::fs::create_dir(&staging).unwrap();
        for file in [&old, &fresh, &other, &staging.join("hearth.db")] {
            std::fs::write(file, "x").unwrap();
        }
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        for path in [&old, &other, &staging.join("hearth.db"), &staging] {
            File::open(path)
                .unwrap()
                .set_modified(two_hours_ago)
                .unwrap();
        }
        sweep(dir.path());
        assert!(!old.exists());
        assert!(!staging.exists());
        assert!(fresh.exists(), "a backup still writing is left alone");
        assert!(other.exists(), "not ours");
    }
}
