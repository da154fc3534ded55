//! How files that came with a message are shown to the model.
//!
//! The model gets a note per file (name, type, size and where it is saved,
//! so a file tool can open it), and the content itself when the file is
//! small text: that answers "what does this say?" without a tool call. An
//! audio file the turn transcribed is shown by what it says
//! (`voice::heard`); an image is shown as an image (`images`), to a model
//! that can see; a document (PDF, Word, spreadsheet, CSV) as its text, or
//! a PDF as the file itself (`documents`).

use std::path::Path;

use hearth_sdk::protocol::Attachment;

use super::{Agent, documents, images};
use hearth_base::config::DocumentsConfig;
use hearth_model::llm::{Block, Llm};
use hearth_model::media::ImageSettings;

/// Text files up to this size are shown inline.
const INLINE_MAX: u64 = 16 * 1024;

impl Agent {
    /// The text and image blocks of an incoming message: its text, a note
    /// per attachment, and the images and documents prepared for `llm`
    /// (decoded and read on a blocking thread).
    pub(super) async fn incoming(
        &self,
        llm: &Llm,
        text: &str,
        attachments: Vec<Attachment>,
    ) -> (String, Vec<Block>) {
        let owned = text.to_owned();
        if attachments.is_empty() {
            // Nothing to decode: no trip to a blocking thread and back.
            return (owned, Vec::new());
        }
        let (settings, dir) = (llm.image_settings(), self.base.media_dir.clone());
        let config = self.base.documents.clone();
        let work = tokio::task::spawn_blocking(move || {
            with_attachments(&owned, &attachments, &settings, &config, &dir)
        });
        match work.await {
            Ok(shown) => shown,
            Err(e) => {
                tracing::error!("preparing a message's attachments failed: {e}");
                let text = format!(
                    "{text}\n\n[hearth: the files that came with this message could not be read: {e}]"
                );
                (text, Vec::new())
            }
        }
    }
}

/// `text` followed by a note for each attachment, and the blocks of the
/// images and documents among them, prepared for `settings` and
/// `documents` and saved in `media_dir`. Decodes images and reads
/// documents: call it off the async threads.
pub fn with_attachments(
    text: &str,
    attachments: &[Attachment],
    settings: &ImageSettings,
    documents: &DocumentsConfig,
    media_dir: &Path,
) -> (String, Vec<Block>) {
    let mut out = text.to_owned();
    let mut blocks = Vec::new();
    for a in attachments {
        if let Some(heard) = super::voice::heard(a) {
            out.push_str(&heard);
            continue;
        }
        if let Some(shown) = images::attachment(a, settings, media_dir) {
            out.push_str(&shown.note);
            blocks.extend(shown.blocks);
            continue;
        }
        if let Some(shown) = documents::attachment(a, documents, settings, media_dir) {
            out.push_str(&shown.note);
            blocks.extend(shown.blocks);
            continue;
        }
        out.push_str(&format!(
            "\n\n[Attached file: {} ({}, {} bytes), saved at {}]",
            a.name, a.mime, a.size, a.path
        ));
        if let Some(content) = inline_text(a) {
            out.push_str(&format!("\n```\n{content}\n```"));
        }
    }
    (out, blocks)
}

fn inline_text(a: &Attachment) -> Option<String> {
    let texty = a.mime.starts_with("text/")
        || matches!(
            a.mime.as_str(),
            "application/json" | "application/toml" | "application/x-yaml"
        );
    if !texty || a.size > INLINE_MAX {
        return None;
    }
    let bytes = std::fs::read(&a.path).ok()?;
    if bytes.len() as u64 > INLINE_MAX {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attachment(path: &std::path::Path, mime: &str, size: u64) -> Attachment {
        Attachment {
            id: "a1".into(),
            name: "notes.txt".into(),
            mime: mime.into(),
            size,
            path: path.display().to_string(),
            url: None,
            transcript: None,
            voice: false,
        }
    }

    #[test]
    fn small_text_is_inlined_and_everything_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "attached content 42").unwrap();
        let cases = [
            ("text/plain", 19, true),
            ("image/png", 19, false),
            ("text/plain", INLINE_MAX + 1, false),
        ];
        let settings = ImageSettings {
            vision: true,
            turns: 3,
            limits: hearth_model::media::Limits::for_provider(
                hearth_base::config::ProviderKind::Anthropic,
                None,
            ),
            pdfs: true,
        };
        for (mime, size, inlined) in cases {
            let (text, blocks) = with_attachments(
                "look",
                &[attachment(&path, mime, size)],
                &settings,
                &DocumentsConfig::default(),
                dir.path(),
            );
            assert!(blocks.is_empty(), "{mime}: {blocks:?}");
            assert!(
                text.starts_with("look\n\n[Attached file: notes.txt"),
                "{text}"
            );
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert_eq!(
                text.contains("attached content 42"),
                inlined,
                "{mime} {size}: {text}"
            );
        }
    }
}
