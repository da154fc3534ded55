//! Hot reload: watch the script folders and reload what changed.
//!
//! The folders are watched, not the files: editors save by writing a
//! temporary file and renaming it over the old one, which a watch on the
//! file itself would lose. Events are debounced (a save is often several
//! events) and editors' temporary files are ignored; what is left is handed
//! to `Scripts::reload_paths`, which keeps the last good version of anything
//! that fails to load.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::{Scripts, is_temporary};

/// How long events for one file are gathered before a reload.
const DEBOUNCE: Duration = Duration::from_millis(40);

/// A running watcher; dropping it stops watching.
pub struct Watcher {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
}

/// Starts watching every script root of `scripts`.
pub fn start(scripts: Arc<Scripts>) -> Result<Watcher, notify::Error> {
    let target = Arc::clone(&scripts);
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
        let events = match result {
            Ok(events) => events,
            Err(errors) => {
                for e in errors {
                    tracing::warn!("script watcher: {e}");
                }
                return;
            }
        };
        let mut paths: Vec<PathBuf> = events
            .into_iter()
            .flat_map(|e| e.event.paths)
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !is_temporary(n))
            })
            .collect();
        paths.sort();
        paths.dedup();
        if !paths.is_empty() {
            target.reload_paths(&paths);
        }
    })?;
    for root in scripts.roots() {
        for (dir, mode) in [
            ("tools", RecursiveMode::NonRecursive),
            ("skills", RecursiveMode::Recursive),
        ] {
            let path = root.join(dir);
            if path.is_dir() {
                debouncer.watch(&path, mode)?;
            }
        }
    }
    Ok(Watcher {
        _debouncer: debouncer,
    })
}
