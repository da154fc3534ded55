//! Files that come with a message, saved where the agent can read them.
//!
//! signal-cli downloads attachments itself, but its JSON names them only
//! by id (the file in its own data directory, whose location depends on
//! how it was installed), so each one is fetched with the `getAttachment`
//! call, which answers the bytes base64-encoded. A file over
//! `max_attachment_bytes` is not fetched (or not kept, when signal-cli did
//! not say its size); the message still goes through, with a note saying
//! which file was left out, so the owner learns why the agent cannot see it.

use std::path::{Path, PathBuf};

use base64::Engine;
use hearth_sdk::files::safe_file_name;
use hearth_sdk::protocol::Attachment;
use serde_json::{Value, json};

use crate::Core;

/// What became of a message's attachments.
#[derive(Debug, Default)]
pub struct Saved {
    /// The files saved.
    pub files: Vec<Attachment>,
    /// One line per file left out, for the message text.
    pub notes: Vec<String>,
}

/// Why one attachment was not saved.
#[derive(Debug, thiserror::Error)]
pub enum AttachmentError {
    /// Larger than the configured cap.
    #[error("{size} bytes, over the {cap}-byte limit")]
    TooLarge {
        /// Its size.
        size: u64,
        /// `max_attachment_bytes`.
        cap: u64,
    },
    /// signal-cli has no id for it (it was not downloaded, e.g. with
    /// `--ignore-attachments`).
    #[error("signal-cli did not download it")]
    NotDownloaded,
    /// `getAttachment` failed or answered something other than base64.
    #[error("signal-cli could not hand it over: {0}")]
    Fetch(String),
    /// Writing the file failed.
    #[error("cannot save it: {0}")]
    Write(#[from] std::io::Error),
}

/// Saves each attachment in `list` (the envelope's `attachments`) of the
/// message `timestamp` from `sender` (in `group`, if any).
pub fn save_all(
    core: &Core,
    list: &[Value],
    sender: &str,
    group: Option<&str>,
    timestamp: i64,
) -> Saved {
    let mut saved = Saved::default();
    for (index, item) in list.iter().enumerate() {
        let name = display_name(item, index);
        match save_one(core, item, sender, group, &name, timestamp, index) {
            Ok(file) => saved.files.push(file),
            Err(e) => {
                tracing::warn!(sender, timestamp, file = %name, "attachment not saved: {e}");
                saved
                    .notes
                    .push(format!("[attachment {name} not saved: {e}]"));
            }
        }
    }
    saved
}

fn save_one(
    core: &Core,
    item: &Value,
    sender: &str,
    group: Option<&str>,
    name: &str,
    timestamp: i64,
    index: usize,
) -> Result<Attachment, AttachmentError> {
    let cap = core.settings.max_attachment_bytes;
    let id = item["id"].as_str().ok_or(AttachmentError::NotDownloaded)?;
    if let Some(size) = item["size"].as_u64().filter(|&size| size > cap) {
        return Err(AttachmentError::TooLarge { size, cap });
    }
    let params = match group {
        Some(group) => json!({ "id": id, "groupId": group }),
        None => json!({ "id": id, "recipient": sender }),
    };
    let answer = core
        .rpc
        .call("getAttachment", params)
        .map_err(|e| AttachmentError::Fetch(e.to_string()))?;
    let data = answer["data"]
        .as_str()
        .ok_or_else(|| AttachmentError::Fetch("no `data` in the answer".into()))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| AttachmentError::Fetch(format!("bad base64: {e}")))?;
    let size = bytes.len() as u64;
    if size > cap {
        return Err(AttachmentError::TooLarge { size, cap });
    }
    let path = core
        .attachment_dir
        .join(format!("{timestamp}-{index}-{}", safe_file_name(name)));
    write_atomically(&path, &bytes)?;
    let mime = item["contentType"]
        .as_str()
        .unwrap_or("application/octet-stream")
        .to_owned();
    Ok(Attachment {
        id: id.to_owned(),
        name: name.to_owned(),
        // signal-cli does not pass on Signal's voice-note flag; a voice
        // note is the audio the app recorded, which has no file name.
        voice: mime.starts_with("audio/") && item["filename"].as_str().is_none(),
        mime,
        size,
        path: path.display().to_string(),
        url: None,
        transcript: None,
    })
}

/// The name the sender gave, else signal-cli's id, else a placeholder.
fn display_name(item: &Value, index: usize) -> String {
    item["filename"]
        .as_str()
        .or_else(|| item["id"].as_str())
        .filter(|n| !n.trim().is_empty())
        .map_or_else(|| format!("attachment-{index}"), str::to_owned)
}

/// Writes through a temporary file and a rename, so the agent never reads
/// half a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temporary = PathBuf::from(format!("{}.part", path.display()));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fall_back_to_the_id() {
        assert_eq!(
            display_name(&json!({"filename": "a.png", "id": "x"}), 0),
            "a.png"
        );
        assert_eq!(display_name(&json!({"id": "x1.png"}), 0), "x1.png");
        assert_eq!(display_name(&json!({}), 2), "attachment-2");
    }
}
