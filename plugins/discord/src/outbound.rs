//! A reply as the messages Discord is sent: the text split at 2,000
//! characters, and the files the agent attached after it, at most ten a
//! message, on the text's last piece (or on their own when there is no
//! text). A file over the upload limit, or one that cannot be read, is not
//! sent: the text names it instead, so the owner knows it is missing and
//! the reply does not fail again and again on a file that will never go.

use std::path::Path;
use std::sync::Arc;

use hearth_sdk::protocol::Attachment;

use crate::rest::Upload;
use crate::split;

/// The most files Discord takes in one message.
pub const MAX_FILES: usize = 10;

/// One message to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// Its text; empty only when it carries files.
    pub content: String,
    /// The files attached to it.
    pub files: Vec<Upload>,
}

/// The files of a reply read to send, and a note for each one that is not
/// sent, in the reply's order.
pub fn read(attachments: &[Attachment], limit: u64) -> (Vec<Upload>, Vec<String>) {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    for attachment in attachments {
        let name = display_name(attachment);
        match read_one(attachment, limit) {
            Ok(bytes) => files.push(Upload {
                name,
                mime: if attachment.mime.trim().is_empty() {
                    "application/octet-stream".into()
                } else {
                    attachment.mime.clone()
                },
                bytes,
            }),
            Err(Unsent::TooLarge(size)) => {
                tracing::warn!(
                    file = %attachment.path,
                    size,
                    limit,
                    "discord: a file is over the upload limit"
                );
                notes.push(too_large(&name));
            }
            Err(Unsent::Unreadable(why)) => {
                tracing::warn!(file = %attachment.path, "discord: cannot read a file to send: {why}");
                notes.push(format!("({name} could not be read, so it was not sent)"));
            }
        }
    }
    (files, notes)
}

/// The note that names a file too large to send.
pub fn too_large(name: &str) -> String {
    format!("({name} was too large to send)")
}

/// `text`, with `notes` after it, and `files` as the messages that carry
/// them: split at 2,000 characters, the files on the last piece, ten a
/// message, the rest in messages of their own.
pub fn plan(text: &str, files: Vec<Upload>, notes: &[String]) -> Vec<Planned> {
    let mut text = text.trim_end().to_owned();
    if !notes.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&notes.join("\n"));
    }
    let mut messages: Vec<Planned> = split::split(&text, split::MAX_CHARS)
        .into_iter()
        .map(|content| Planned {
            content,
            files: Vec::new(),
        })
        .collect();
    let mut files = files.into_iter().peekable();
    let mut first = true;
    while files.peek().is_some() {
        let batch: Vec<Upload> = files.by_ref().take(MAX_FILES).collect();
        match messages.last_mut() {
            Some(last) if first => last.files = batch,
            _ => messages.push(Planned {
                content: String::new(),
                files: batch,
            }),
        }
        first = false;
    }
    messages
}

/// Why a file is not sent.
enum Unsent {
    /// Over the limit, at this many bytes.
    TooLarge(u64),
    /// It could not be read.
    Unreadable(String),
}

/// The bytes of `attachment`, if it is within `limit`. The size is asked
/// first, so a file far over it is never read into memory.
fn read_one(attachment: &Attachment, limit: u64) -> Result<Arc<[u8]>, Unsent> {
    let path = Path::new(&attachment.path);
    let meta = std::fs::metadata(path).map_err(|e| Unsent::Unreadable(e.to_string()))?;
    if meta.len() > limit {
        return Err(Unsent::TooLarge(meta.len()));
    }
    let bytes = std::fs::read(path).map_err(|e| Unsent::Unreadable(e.to_string()))?;
    // It may have grown since it was measured.
    if bytes.len() as u64 > limit {
        return Err(Unsent::TooLarge(bytes.len() as u64));
    }
    Ok(bytes.into())
}

/// The name a file is shown under: the one the agent gave, else the
/// path's last part. Control characters go, as a line break would end
/// the form part's header early.
fn display_name(attachment: &Attachment) -> String {
    let name = if attachment.name.trim().is_empty() {
        Path::new(&attachment.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        attachment.name.clone()
    };
    let name: String = name.chars().filter(|c| !c.is_control()).collect();
    match name.trim() {
        "" => "file".into(),
        name => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(name: &str) -> Upload {
        Upload {
            name: name.into(),
            mime: "text/plain".into(),
            bytes: Arc::from(&b"x"[..]),
        }
    }

    fn shape(plan: &[Planned]) -> Vec<(usize, usize)> {
        plan.iter()
            .map(|m| (m.content.chars().count(), m.files.len()))
            .collect()
    }

    #[test]
    fn files_go_on_the_last_piece_ten_a_message() {
        assert_eq!(
            plan("hi", vec![upload("a"), upload("b")], &[]),
            [Planned {
                content: "hi".into(),
                files: vec![upload("a"), upload("b")],
            }]
        );
        let long = format!("{}\n\n{}", "a ".repeat(900).trim(), "b ".repeat(900).trim());
        let files: Vec<Upload> = (0..12).map(|n| upload(&format!("f{n}"))).collect();
        let planned = plan(&long, files, &[]);
        assert_eq!(shape(&planned), [(1799, 0), (1799, 10), (0, 2)]);
        assert_eq!(planned[2].files[0].name, "f10");
    }

    #[test]
    fn files_without_text_are_a_message_of_their_own_and_notes_join_the_text() {
        assert_eq!(shape(&plan("", vec![upload("a")], &[])), [(0, 1)]);
        assert_eq!(plan("  \n", Vec::new(), &[]), []);
        let notes = [too_large("big.pdf")];
        let planned = plan("Here.", vec![upload("a")], &notes);
        assert_eq!(
            planned[0].content,
            "Here.\n\n(big.pdf was too large to send)"
        );
        assert_eq!(planned[0].files.len(), 1);
        assert_eq!(
            plan("", Vec::new(), &notes)[0].content,
            "(big.pdf was too large to send)"
        );
    }

    #[test]
    fn a_file_over_the_limit_or_missing_is_named_and_not_read() {
        let dir = std::env::temp_dir().join(format!("hearth-discord-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small.txt");
        let big = dir.join("big.bin");
        std::fs::write(&small, "hello").unwrap();
        std::fs::write(&big, vec![0; 100]).unwrap();
        let attachment = |path: &Path, name: &str| Attachment {
            name: name.into(),
            path: path.display().to_string(),
            ..Attachment::default()
        };
        let (files, notes) = read(
            &[
                attachment(&small, "notes\r\n.txt"),
                attachment(&big, ""),
                attachment(&dir.join("gone.txt"), "gone.txt"),
            ],
            50,
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].name, "notes.txt", "no line break in a name");
        assert_eq!(files[0].mime, "application/octet-stream");
        assert_eq!(&files[0].bytes[..], b"hello");
        assert_eq!(
            notes,
            [
                "(big.bin was too large to send)",
                "(gone.txt could not be read, so it was not sent)"
            ]
        );
    }
}
