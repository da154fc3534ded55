//! `list_directory`: a folder's entries, optionally recursive within bounds
//! (depth and count) so one call cannot walk a whole disk.

use std::path::Path;
use std::time::UNIX_EPOCH;

use hearth_sdk::PluginError;
use serde_json::{Value, json};

use crate::Fs;
use crate::args::Args;
use crate::paths::io_error;

/// How deep a recursive listing goes; the top level is depth 1.
pub const MAX_DEPTH: usize = 5;
/// The most entries one listing returns.
pub const MAX_ENTRIES: usize = 1000;

/// Runs `list_directory`.
pub fn list_directory(fs: &Fs, args: &Value) -> Result<Value, PluginError> {
    let args = Args::new(args, &["path", "recursive"])?;
    let path = fs.roots.resolve("path", args.string("path")?)?;
    // A hidden folder (the backups) is not listed; a credential's name in
    // a listing is no secret, its contents never leave through this tool.
    fs.roots.check_readable("path", &path)?;
    let recursive = args.bool("recursive", false)?;
    let meta = std::fs::metadata(&path).map_err(|e| io_error("cannot list", &path, &e))?;
    if !meta.is_dir() {
        return Err(PluginError::failed(format!(
            "{} is not a directory; use read_file",
            path.display()
        )));
    }
    let mut listing = Listing {
        entries: Vec::new(),
        depth_cut: false,
        count_cut: false,
    };
    let max_depth = if recursive { MAX_DEPTH } else { 1 };
    walk(&path, "", 1, max_depth, &mut listing).map_err(|e| io_error("cannot list", &path, &e))?;
    let mut out = json!({
        "path": path.display().to_string(),
        "entries": listing.entries,
        "truncated": listing.count_cut || (recursive && listing.depth_cut),
    });
    if listing.count_cut {
        out["note"] = json!(format!(
            "stopped at {MAX_ENTRIES} entries; list a subfolder to see more"
        ));
    } else if recursive && listing.depth_cut {
        out["note"] = json!(format!(
            "folders deeper than {MAX_DEPTH} levels were not opened; list them directly"
        ));
    }
    Ok(out)
}

struct Listing {
    entries: Vec<Value>,
    depth_cut: bool,
    count_cut: bool,
}

/// Lists `dir` (shown as `prefix`) in name order, descending into real
/// folders (never symlinks) while `depth < max_depth`.
fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    max_depth: usize,
    listing: &mut Listing,
) -> std::io::Result<()> {
    let mut children: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
    children.sort_by_key(|e| e.file_name());
    for child in children {
        if listing.entries.len() >= MAX_ENTRIES {
            listing.count_cut = true;
            return Ok(());
        }
        let name = format!("{prefix}{}", child.file_name().to_string_lossy());
        let Ok(meta) = child.path().symlink_metadata() else {
            continue;
        };
        let file_type = meta.file_type();
        let kind = if file_type.is_symlink() {
            "symlink"
        } else if file_type.is_dir() {
            "dir"
        } else if file_type.is_file() {
            "file"
        } else {
            "other"
        };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64);
        // A folder comes before its contents in the output.
        let index = listing.entries.len();
        listing.entries.push(json!({
            "name": name,
            "type": kind,
            "size": meta.len(),
            "modified": modified,
        }));
        if kind == "dir" {
            if depth >= max_depth {
                listing.depth_cut = true;
            } else if let Err(e) = walk(
                &child.path(),
                &format!("{name}/"),
                depth + 1,
                max_depth,
                listing,
            ) {
                listing.entries[index]["error"] = json!(format!("cannot list: {e}"));
            }
        }
    }
    Ok(())
}
