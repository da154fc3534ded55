//! Files the owner attaches in the browser.
//!
//! An upload is written to `$HEARTH_HOME/shared/uploads/<id>-<name>` (so
//! the owner can open it again at `/files/uploads/...`), first under a
//! temporary name and renamed once complete, with its description beside
//! it in `$HEARTH_HOME/canvas-uploads/<id>.json`. A message names its
//! attachments by id; the description turns an id back into a file, also
//! after a restart, when a browser resends a message it was not told was
//! stored.

use std::path::{Path, PathBuf};

use hearth_sdk::protocol::Attachment;
use serde_json::{Value, json};

use crate::auth::{hex, random};
use crate::elements::valid_id;

/// Where uploads are kept, and how big one may be.
pub struct Uploads {
    files: PathBuf,
    meta: PathBuf,
    /// The largest upload, in bytes.
    pub max_bytes: u64,
}

impl Uploads {
    /// Uploads under `home`.
    pub fn new(home: &Path, max_bytes: u64) -> Uploads {
        Uploads {
            files: home.join("shared").join("uploads"),
            meta: home.join("canvas-uploads"),
            max_bytes,
        }
    }

    /// A new upload's id, file path and final attachment, before any byte
    /// is written. `name` is the browser's file name; `mime` its type.
    pub fn plan(&self, name: &str, mime: &str) -> std::io::Result<(PathBuf, Attachment)> {
        std::fs::create_dir_all(&self.files)?;
        std::fs::create_dir_all(&self.meta)?;
        let id = hex(&random::<8>());
        let name = clean_name(name);
        let file = format!("{id}-{name}");
        let path = self.files.join(&file);
        let attachment = Attachment {
            id,
            name,
            mime: clean_mime(mime),
            size: 0,
            path: path.display().to_string(),
            url: Some(format!("/files/uploads/{file}")),
            transcript: None,
            voice: false,
        };
        Ok((path.with_extension("part"), attachment))
    }

    /// Marks the upload written to `partial` complete.
    pub fn complete(&self, partial: &Path, attachment: &Attachment) -> std::io::Result<()> {
        std::fs::rename(partial, &attachment.path)?;
        let meta = serde_json::to_vec(attachment).map_err(std::io::Error::other)?;
        std::fs::write(self.meta.join(format!("{}.json", attachment.id)), meta)
    }

    /// The attachment an id names.
    pub fn resolve(&self, id: &str) -> Result<Attachment, String> {
        if !valid_id(id) {
            return Err(format!("attachment id {id:?} is malformed"));
        }
        let text = std::fs::read(self.meta.join(format!("{id}.json")))
            .map_err(|_| format!("no upload has the id {id:?}"))?;
        serde_json::from_slice(&text).map_err(|e| format!("upload {id:?} is unreadable: {e}"))
    }
}

/// An attachment as the browser sees it: no paths of this machine; the
/// transcript of a voice message, once the host has one.
pub fn public(a: &Attachment) -> Value {
    let mut public =
        json!({ "id": a.id, "name": a.name, "mime": a.mime, "size": a.size, "url": a.url });
    if a.voice {
        public["voice"] = Value::Bool(true);
    }
    if let Some(transcript) = &a.transcript {
        public["transcript"] = Value::String(transcript.clone());
    }
    public
}

/// A file name that is safe in a path and a URL: letters, digits, `.`, `_`
/// and `-`, not starting with a dot, at most 100 characters.
fn clean_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "file".into()
    } else {
        cleaned.into()
    }
}

/// A media type of the form `type/subtype`, or `application/octet-stream`.
fn clean_mime(mime: &str) -> String {
    let mime = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let ok = mime.len() <= 100
        && mime.split_once('/').is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && mime
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b"/+.-_".contains(&c))
        });
    if ok {
        mime
    } else {
        "application/octet-stream".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_types_are_cleaned() {
        let names = [
            ("notes.txt", "notes.txt"),
            ("../../etc/passwd", "passwd"),
            ("..\\..\\boot.ini", "boot.ini"),
            (".hidden", "hidden"),
            ("", "file"),
            ("a b<c>.png", "a_b_c_.png"),
        ];
        for (input, expected) in names {
            assert_eq!(clean_name(input), expected, "{input:?}");
        }
        let types = [
            ("text/plain; charset=utf-8", "text/plain"),
            ("IMAGE/PNG", "image/png"),
            ("text/html\r\nx: y", "application/octet-stream"),
            ("nonsense", "application/octet-stream"),
        ];
        for (input, expected) in types {
            assert_eq!(clean_mime(input), expected, "{input:?}");
        }
    }
}
