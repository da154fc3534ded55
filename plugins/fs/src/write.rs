//! `write_file` and `delete_path`, and the atomic replace both the writer
//! and the patcher use.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use hearth_sdk::PluginError;
use serde_json::{Value, json};

use crate::Fs;
use crate::args::{Args, Encoding, encoding, invalid};
use crate::paths::io_error;

/// Runs `write_file`.
pub fn write_file(fs: &Fs, args: &Value) -> Result<Value, PluginError> {
    let args = Args::new(args, &["path", "content", "encoding", "create_dirs"])?;
    let path = fs.roots.resolve("path", args.string("path")?)?;
    fs.roots.check_writable("path", &path)?;
    let content = args.string("content")?;
    let bytes = match encoding(&args)? {
        Encoding::Text => content.as_bytes().to_vec(),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|e| invalid("content", &format!("is not valid base64: {e}")))?,
    };
    let create_dirs = args.bool("create_dirs", false)?;
    if path.is_dir() {
        return Err(PluginError::failed(format!(
            "{} is a directory; give a file path",
            path.display()
        )));
    }
    let parent = parent_of(&path)?;
    if !parent.is_dir() {
        if parent.exists() {
            return Err(PluginError::failed(format!(
                "{} is not a directory",
                parent.display()
            )));
        }
        if !create_dirs {
            return Err(invalid(
                "create_dirs",
                &format!(
                    "the folder {} does not exist; pass create_dirs: true to create it",
                    parent.display()
                ),
            ));
        }
        std::fs::create_dir_all(&parent)
            .map_err(|e| io_error("cannot create the folder", &parent, &e))?;
    }
    let created = !path.exists();
    atomic_write(&path, &bytes)?;
    Ok(json!({
        "path": path.display().to_string(),
        "bytes_written": bytes.len(),
        "created": created,
    }))
}

/// Runs `delete_path`.
pub fn delete_path(fs: &Fs, args: &Value) -> Result<Value, PluginError> {
    let args = Args::new(args, &["path", "recursive"])?;
    let raw = args.string("path")?;
    let recursive = args.bool("recursive", false)?;
    // The link itself is deleted, never what it points to.
    let path = fs.roots.resolve_parent("path", raw)?;
    refuse_precious(fs, raw, &path)?;
    fs.roots.check_writable("path", &path)?;
    let meta =
        std::fs::symlink_metadata(&path).map_err(|e| io_error("cannot delete", &path, &e))?;
    let kind = if meta.file_type().is_symlink() {
        std::fs::remove_file(&path).map_err(|e| io_error("cannot delete", &path, &e))?;
        "symlink"
    } else if meta.is_dir() {
        let empty = std::fs::read_dir(&path)
            .map_err(|e| io_error("cannot read", &path, &e))?
            .next()
            .is_none();
        if empty {
            std::fs::remove_dir(&path).map_err(|e| io_error("cannot delete", &path, &e))?;
        } else if recursive {
            std::fs::remove_dir_all(&path).map_err(|e| io_error("cannot delete", &path, &e))?;
        } else {
            return Err(invalid(
                "recursive",
                &format!(
                    "{} is a non-empty directory; pass recursive: true to delete it and everything in it",
                    path.display()
                ),
            ));
        }
        "dir"
    } else {
        std::fs::remove_file(&path).map_err(|e| io_error("cannot delete", &path, &e))?;
        "file"
    };
    Ok(json!({ "path": path.display().to_string(), "deleted": kind }))
}

/// Replaces `path` with `bytes` all at once: a temp file in the same folder,
/// flushed to disk, then renamed over the target, so a reader sees the old
/// content or the new, never a half-written file. An existing file keeps its
/// permissions.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), PluginError> {
    let parent = parent_of(path)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".hearth-fs-")
        .suffix(".tmp")
        .tempfile_in(&parent)
        .map_err(|e| io_error("cannot create a temp file in", &parent, &e))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| io_error("cannot write", temp.path(), &e))?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(temp.path(), meta.permissions())
            .map_err(|e| io_error("cannot copy permissions to", temp.path(), &e))?;
    }
    temp.persist(path)
        .map_err(|e| io_error("cannot replace", path, &e.error))?;
    // The rename is durable only once the folder itself is flushed; a
    // failure here leaves the new content in place, so it is not an error.
    if let Ok(dir) = std::fs::File::open(&parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn parent_of(path: &Path) -> Result<PathBuf, PluginError> {
    path.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| PluginError::failed(format!("{} has no parent folder", path.display())))
}

/// Refuses to delete `/`, the home folders, or any folder holding them.
fn refuse_precious(fs: &Fs, raw: &str, path: &Path) -> Result<(), PluginError> {
    let precious: Vec<PathBuf> = [Some(&fs.roots.hearth_home), fs.roots.user_home.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let is_root = raw.trim() == "/" || path.parent().is_none();
    if is_root || precious.iter().any(|p| p.starts_with(path)) {
        return Err(invalid(
            "path",
            &format!(
                "refusing to delete {}: it is the filesystem root, a home folder, or holds one",
                path.display()
            ),
        ));
    }
    Ok(())
}
