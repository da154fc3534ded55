//! Downloads: Chromium saves each file under its download id in
//! `$HEARTH_HOME/downloads` (`Browser.setDownloadBehavior` with
//! `allowAndName`); this module follows the protocol's download events,
//! stops a download the moment it passes `max_download_bytes`, and gives
//! a finished file its own name, never overwriting one already there.
//!
//! Why by id: a page chooses the suggested file name, and a name such as
//! `../../.bashrc` or `hearth.db` must never decide where bytes land. The
//! name is cleaned and made unique here, after the bytes are complete.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cdp::{Connection, Event};

/// One download that ended, as the `download` action and the next
/// result's notes tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// The file is complete at `path`.
    Saved {
        /// Where it is.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// It was stopped or failed; why, in a sentence.
    Stopped(String),
}

/// The downloads under way and those that ended.
#[derive(Debug)]
pub struct Downloads {
    folder: PathBuf,
    cap: u64,
    /// Download id -> the file name the page suggested.
    started: HashMap<String, String>,
    /// Downloads stopped here whose cancellation Chromium has yet to
    /// confirm: what they left is swept again when it does.
    stopping: Vec<String>,
    /// Every download that ended, in order.
    pub finished: Vec<Finished>,
}

impl Downloads {
    /// Downloads into `folder`, none larger than `cap` bytes.
    pub fn new(folder: PathBuf, cap: u64) -> Downloads {
        Downloads {
            folder,
            cap,
            started: HashMap::new(),
            stopping: Vec::new(),
            finished: Vec::new(),
        }
    }

    /// Follows one protocol event; a download that ended returns the
    /// sentence the next result notes.
    pub fn on_event(&mut self, connection: &Connection, event: &Event) -> Option<String> {
        let params = &event.params;
        let guid = params["guid"].as_str()?.to_owned();
        match event.method.as_str() {
            "Browser.downloadWillBegin" => {
                let name = params["suggestedFilename"].as_str().unwrap_or("download");
                self.started.insert(guid, name.to_owned());
                None
            }
            "Browser.downloadProgress" => self.progress(connection, &guid, params),
            _ => None,
        }
    }

    fn progress(&mut self, connection: &Connection, guid: &str, params: &Value) -> Option<String> {
        let received = params["receivedBytes"].as_u64().unwrap_or(0);
        let total = params["totalBytes"].as_u64().unwrap_or(0);
        if let Some(at) = self.stopping.iter().position(|g| g == guid) {
            if params["state"] != "inProgress" {
                self.stopping.remove(at);
                self.sweep(guid);
            }
            return None;
        }
        let name = self.started.get(guid)?.clone();
        let partial = self.folder.join(guid);
        let ended = match params["state"].as_str() {
            Some("inProgress") if received > self.cap || total > self.cap => {
                connection.notify(None, "Browser.cancelDownload", json!({ "guid": guid }));
                self.stopping.push(guid.to_owned());
                let _ = std::fs::remove_file(&partial);
                Finished::Stopped(format!(
                    "the download of {name:?} was stopped: it is larger than the {}-byte cap \
                     ([plugins.browser] max_download_bytes)",
                    self.cap
                ))
            }
            Some("completed") => match keep(&partial, &self.folder, &name) {
                Ok(path) => Finished::Saved {
                    path,
                    bytes: received,
                },
                Err(e) => {
                    Finished::Stopped(format!("the download of {name:?} could not be kept: {e}"))
                }
            },
            Some("canceled") => {
                let _ = std::fs::remove_file(&partial);
                Finished::Stopped(format!("the download of {name:?} was canceled"))
            }
            _ => return None,
        };
        self.started.remove(guid);
        if matches!(ended, Finished::Stopped(_)) {
            self.sweep(guid);
        }
        let note = match &ended {
            Finished::Saved { path, bytes } => {
                format!("downloaded {name:?} ({bytes} bytes) to {}", path.display())
            }
            Finished::Stopped(why) => why.clone(),
        };
        self.finished.push(ended);
        Some(note)
    }

    /// Removes what a stopped download left: its `.crdownload`, and, when
    /// no other download is under way, Chromium's first-bytes files
    /// (`.org.chromium.Chromium.*`, made before the download has an id's
    /// name).
    fn sweep(&self, guid: &str) {
        // Chromium's file thread may still be renaming the first bytes to
        // the id's name as the cancellation arrives: the id's files are
        // swept again for a few seconds, on a thread that then ends.
        let id_files = [
            self.folder.join(format!("{guid}.crdownload")),
            self.folder.join(guid),
        ];
        for file in &id_files {
            let _ = std::fs::remove_file(file);
        }
        let _ = std::thread::Builder::new()
            .name("hearth-browser-sweep".into())
            .stack_size(32 << 10)
            .spawn(move || {
                for _ in 0..25 {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    for file in &id_files {
                        let _ = std::fs::remove_file(file);
                    }
                }
            });
        if !self.started.is_empty() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&self.folder) else {
            return;
        };
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(".org.chromium.Chromium.")
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Moves the finished file `partial` to `folder` under a clean, unused
/// form of `name`.
fn keep(partial: &Path, folder: &Path, name: &str) -> std::io::Result<PathBuf> {
    let clean = clean_name(name);
    let (stem, extension) = match clean.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem.to_owned(), format!(".{ext}")),
        _ => (clean.clone(), String::new()),
    };
    for n in 0..1000 {
        let candidate = if n == 0 {
            folder.join(&clean)
        } else {
            folder.join(format!("{stem} ({n}){extension}"))
        };
        // A hard link fails if the name is taken, so no file is replaced,
        // even by a race.
        match std::fs::hard_link(partial, &candidate) {
            Ok(()) => {
                std::fs::remove_file(partial)?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "1000 files named like {clean:?} are already there"
    )))
}

/// `name` as one safe file name: no folders, no leading dot, no control
/// characters, at most 120 characters.
pub fn clean_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(120).collect();
    let cleaned = cleaned.trim().trim_start_matches('.').to_owned();
    if cleaned.is_empty() {
        "download".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_cannot_choose_where_a_file_lands() {
        let cases = [
            ("report.pdf", "report.pdf"),
            ("../../.bashrc", "bashrc"),
            ("a\\b\\c.txt", "c.txt"),
            ("..", "download"),
            ("", "download"),
            ("tab\tname\n.csv", "tabname.csv"),
        ];
        for (given, expected) in cases {
            assert_eq!(clean_name(given), expected, "{given:?}");
        }
        assert_eq!(clean_name(&"x".repeat(500)).len(), 120);
    }

    #[test]
    fn a_finished_file_never_replaces_another() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old").unwrap();
        std::fs::write(dir.path().join("guid-1"), "new").unwrap();
        let kept = keep(&dir.path().join("guid-1"), dir.path(), "a.txt").unwrap();
        assert_eq!(kept, dir.path().join("a (1).txt"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "new");
        assert!(!dir.path().join("guid-1").exists());
    }
}
