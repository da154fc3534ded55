//! Hot reload: watch the script folders and reload what changed.
//!
//! The folders are watched, not the files: editors save by writing a
//! temporary file and renaming it over the old one, which a watch on the
//! file itself would lose. A save is often several events, so they are
//! gathered until the folder has been quiet for a moment; editors'
//! temporary files are ignored; what is left is handed to
//! `Scripts::reload_paths`, which keeps the last good version of anything
//! that fails to load.
//!
//! The debounce thread blocks on the event channel, so an idle daemon has
//! no timer waking it up.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use notify::event::ModifyKind;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

use super::{Scripts, is_temporary};

/// How long a folder must be quiet before a reload.
const QUIET: Duration = Duration::from_millis(40);

/// A running watcher; dropping it stops watching (and ends its thread).
pub struct Watcher {
    _watcher: RecommendedWatcher,
}

/// Starts watching every script root of `scripts`.
pub fn start(scripts: Arc<Scripts>) -> Result<Watcher, notify::Error> {
    let (tx, rx) = channel();
    let mut watcher = notify::recommended_watcher(tx)?;
    for root in scripts.roots() {
        for (dir, mode) in [
            ("tools", RecursiveMode::NonRecursive),
            ("skills", RecursiveMode::Recursive),
        ] {
            let path = root.join(dir);
            if path.is_dir() {
                watcher.watch(&path, mode)?;
            }
        }
    }
    std::thread::Builder::new()
        .name("hearth-script-watch".into())
        .spawn(move || debounce(&rx, &scripts))?;
    Ok(Watcher { _watcher: watcher })
}

/// Whether an event can change what a script says: not reads, not
/// metadata.
fn changes_content(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Any
            | EventKind::Create(_)
            | EventKind::Remove(_)
            | EventKind::Modify(
                ModifyKind::Any | ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Other
            )
    )
}

/// Gathers events until a quiet spell, then reloads; ends when the watcher
/// is dropped (the channel closes).
fn debounce(events: &Receiver<notify::Result<notify::Event>>, scripts: &Scripts) {
    let mut paths: Vec<PathBuf> = Vec::new();
    loop {
        let next = if paths.is_empty() {
            events.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            events.recv_timeout(QUIET)
        };
        match next {
            Ok(Ok(event)) if changes_content(&event.kind) => {
                paths.extend(event.paths.into_iter().filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !is_temporary(n))
                }));
            }
            // Opening and reading a file (as a reload does) is an event too:
            // reacting to it would reload forever.
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!("script watcher: {e}"),
            Err(RecvTimeoutError::Timeout) => {
                paths.sort();
                paths.dedup();
                scripts.reload_paths(&std::mem::take(&mut paths));
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
