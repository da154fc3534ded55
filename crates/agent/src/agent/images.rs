//! Images in a conversation: an incoming message's image attachments and
//! the images plugin tools return become image blocks (or notes saying why
//! not), and each request decides which stored images the model is sent.
//!
//! The history keeps an image as a reference to its prepared copy
//! (`llm::types::Image`); a request carries the bytes of at most
//! [`MAX_IMAGES_PER_REQUEST`] images from the last `image_turns` turns.
//! Older ones, and every image for a model that cannot see, become a
//! short note naming where the original is saved, so the agent can still
//! open it with a file tool.
//!
//! A plugin tool shows the model an image by answering a JSON object with
//! an `image` member, `{"path": "/abs/file.png"}` (the fs plugin's
//! `read_file` does, for an image file; with `"page": 1` it names a
//! scanned PDF whose first page is shown). The host reads, checks and
//! prepares that file as it does an attachment; the block follows the
//! call's results (Anthropic takes images after `tool_result` blocks in
//! the same message; OpenAI's tool messages cannot hold one, so it goes
//! in a user message after them).

use std::path::Path;

use hearth_sdk::protocol::Attachment;
use serde_json::Value;

use super::Agent;
use hearth_model::llm::types::Image;
use hearth_model::llm::{Block, Llm, Message, Role};
use hearth_model::media::{self, ImageError, ImageSettings, Kind};

/// The most images one request carries, newest first. Anthropic takes
/// more, but shrinks every image of a request with over 20.
pub const MAX_IMAGES_PER_REQUEST: usize = 20;

/// The extensions of files that claim to be images: such a file that is
/// not one gets a note saying so, rather than passing as a document.
const IMAGE_EXTENSIONS: &[&str] = &[
    "jpg", "jpeg", "png", "gif", "webp", "heic", "heif", "avif", "bmp", "tif", "tiff",
];

/// What an attachment or a tool's image became for the model.
pub struct Shown {
    /// The text the model reads about it.
    pub note: String,
    /// The blocks that show it: none when it cannot be shown.
    pub blocks: Vec<Block>,
}

impl Agent {
    /// The image a plugin tool's result names, prepared for `llm`: a note
    /// for the result, and the blocks that follow the results.
    pub(super) async fn tool_image(&self, llm: &Llm, tool: &str, result: &Value) -> Option<Shown> {
        let named = result.get("image")?;
        let path = named.get("path")?.as_str()?.to_owned();
        if !self.base.tools.is_plugin_tool(tool) {
            return None;
        }
        // `"page": 1` names a scanned PDF's first page (read_file's).
        let page = named.get("page").and_then(Value::as_u64) == Some(1);
        let caps = super::document_caps::caps(&self.base.documents);
        let (settings, dir, tool) = (
            llm.image_settings(),
            self.base.media_dir.clone(),
            tool.to_owned(),
        );
        let work = tokio::task::spawn_blocking(move || match page {
            true => first_page_from_tool(&tool, &path, &caps, &settings, &dir),
            false => from_tool(&tool, &path, &settings, &dir),
        });
        match work.await {
            Ok(shown) => Some(shown),
            Err(e) => Some(Shown {
                note: format!("\n[the image could not be prepared: {e}]"),
                blocks: Vec::new(),
            }),
        }
    }
}

/// An attachment as an image: `None` when it is no image and does not
/// claim to be one (it is then an ordinary file).
pub fn attachment(a: &Attachment, settings: &ImageSettings, dir: &Path) -> Option<Shown> {
    let path = Path::new(&a.path);
    let claims = a.mime.starts_with("image/")
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
    if !claims
        && !matches!(
            media::kind_of(path),
            Ok(Kind::Image(_) | Kind::UnsupportedImage(_))
        )
    {
        return None;
    }
    let refused = |e: ImageError| Shown {
        note: format!(
            "\n\n[Attached file: {} ({}, {} bytes), saved at {}; it is not shown as an image: {e}]",
            a.name, a.mime, a.size, a.path
        ),
        blocks: Vec::new(),
    };
    Some(match show(&a.name, &a.path, settings, dir) {
        Ok(Showing::Blind(info)) => Shown {
            note: format!(
                "\n\n{}",
                blind_note(&a.name, info.width, info.height, &a.path)
            ),
            blocks: Vec::new(),
        },
        Ok(Showing::Image { image, original }) => Shown {
            note: format!(
                "\n\n[Attached image: {} ({}x{}), saved at {}; shown below at {}x{}]",
                a.name, original.0, original.1, a.path, image.width, image.height
            ),
            blocks: vec![Block::Image(image)],
        },
        Err(e) => refused(e),
    })
}

/// The image a tool named at `path`, for the tool's result.
fn from_tool(tool: &str, path: &str, settings: &ImageSettings, dir: &Path) -> Shown {
    let name = Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
    match show(&name, path, settings, dir) {
        Ok(Showing::Blind(info)) => Shown {
            note: format!("\n{}", blind_note(&name, info.width, info.height, path)),
            blocks: Vec::new(),
        },
        Ok(Showing::Image { image, .. }) => Shown {
            note: format!(
                "\n[the image is shown after the tool results, at {}x{}]",
                image.width, image.height
            ),
            blocks: vec![
                Block::Text {
                    text: format!("[the image {tool} returned: {path}]"),
                },
                Block::Image(image),
            ],
        },
        Err(e) => Shown {
            note: format!("\n[the image at {path} is not shown: {e}]"),
            blocks: Vec::new(),
        },
    }
}

/// The first page of the scanned PDF a tool named at `path`, as an
/// image after the tool's results, or a note saying why not.
fn first_page_from_tool(
    tool: &str,
    path: &str,
    caps: &hearth_documents::Caps,
    settings: &ImageSettings,
    dir: &Path,
) -> Shown {
    let name = Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
    let picture = std::fs::read(path)
        .map_err(|e| format!("cannot read it: {e}"))
        .and_then(|bytes| {
            hearth_documents::first_page_image(&bytes, caps).map_err(|e| e.to_string())
        })
        .and_then(|page| {
            let name = format!("{name}, page 1");
            document_picture(&name, &page.bytes, path, settings, dir)
        });
    match picture {
        Ok(image) => Shown {
            note: format!(
                "\n[the scan's first page is shown after the tool results, at {}x{}]",
                image.width, image.height
            ),
            blocks: vec![
                Block::Text {
                    text: format!("[the first page of the scan {tool} read: {path}]"),
                },
                Block::Image(image),
            ],
        },
        Err(why) => Shown {
            note: format!("\n[the scan's first page cannot be shown: {why}]"),
            blocks: Vec::new(),
        },
    }
}

/// What a model is given for an image file.
enum Showing {
    /// The model cannot see: the image's header, for a note.
    Blind(media::Info),
    /// The prepared copy, saved; and the original's size.
    Image { image: Image, original: (u32, u32) },
}

/// Reads and checks the image at `path`; for a model that sees, prepares
/// and saves its copy in `dir`.
fn show(
    name: &str,
    path: &str,
    settings: &ImageSettings,
    dir: &Path,
) -> Result<Showing, ImageError> {
    let bytes = media::read_image(Path::new(path))?;
    show_bytes(name, &bytes, path, settings, dir)
}

/// A picture made from a document (a scanned PDF's first page), prepared
/// and saved as a photo is: its image, or why it is not shown.
pub fn document_picture(
    name: &str,
    bytes: &[u8],
    source: &str,
    settings: &ImageSettings,
    dir: &Path,
) -> Result<Image, String> {
    if !settings.vision {
        return Err("this model cannot see images".to_owned());
    }
    match show_bytes(name, bytes, source, settings, dir) {
        Ok(Showing::Image { image, .. }) => Ok(image),
        Ok(Showing::Blind(_)) => Err("this model cannot see images".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// [`show`] on bytes already read from `source`.
fn show_bytes(
    name: &str,
    bytes: &[u8],
    source: &str,
    settings: &ImageSettings,
    dir: &Path,
) -> Result<Showing, ImageError> {
    if !settings.vision {
        return media::inspect(bytes).map(Showing::Blind);
    }
    let prepared = media::prepare(bytes, &settings.limits)?;
    let (saved, sha256) = media::save(dir, &prepared)?;
    Ok(Showing::Image {
        image: Image {
            name: name.to_owned(),
            path: saved.display().to_string(),
            media_type: prepared.media_type.to_owned(),
            sha256,
            width: prepared.width,
            height: prepared.height,
            source: source.to_owned(),
            data: None,
        },
        original: prepared.original,
    })
}

/// The note for a model that cannot see images.
fn blind_note(name: &str, width: u32, height: u32, path: &str) -> String {
    format!("[image: {name}, {width}x{height}, saved at {path}; this model cannot see images]")
}

/// The messages of a request: the history with each image either carrying
/// its bytes (within the last `settings.turns` turns, the newest
/// [`MAX_IMAGES_PER_REQUEST`], for a model that sees) or replaced by a
/// note.
pub fn for_request(history: &[(i64, Message)], settings: &ImageSettings) -> Vec<Message> {
    let mut messages: Vec<Message> = history.iter().map(|(_, m)| m.clone()).collect();
    let mut turns_after = 0;
    let mut sent = 0;
    for message in messages.iter_mut().rev() {
        for block in message.content.iter_mut().rev() {
            let Block::Image(image) = block else { continue };
            let note = if !settings.vision {
                Some(blind_note(
                    &image.name,
                    image.width,
                    image.height,
                    &image.source,
                ))
            } else if turns_after >= settings.turns || sent >= MAX_IMAGES_PER_REQUEST {
                Some(format!(
                    "[image {} ({}x{}), shown in an earlier turn; saved at {}]",
                    image.name, image.width, image.height, image.source
                ))
            } else {
                match media::encoded(image, &settings.limits) {
                    Ok(()) => {
                        sent += 1;
                        None
                    }
                    Err(e) => {
                        tracing::warn!(image = %image.path, "an image is not sent: {e}");
                        Some(format!(
                            "[image {} cannot be sent: {e}; the original is at {}]",
                            image.name, image.source
                        ))
                    }
                }
            };
            if let Some(text) = note {
                *block = Block::Text { text };
            }
        }
        if starts_turn(message) {
            turns_after += 1;
        }
    }
    messages
}

/// A user message that is not tool results: one turn's start.
fn starts_turn(m: &Message) -> bool {
    m.role == Role::User
        && !m
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_base::config::ProviderKind;
    use hearth_model::media::Limits;

    fn settings(vision: bool, turns: u32) -> ImageSettings {
        ImageSettings {
            vision,
            turns,
            limits: Limits::for_provider(ProviderKind::Anthropic, None),
            pdfs: vision,
        }
    }

    /// A small real image, prepared and saved in `dir` as `name`.
    fn saved(dir: &Path, name: &str) -> Image {
        let source = dir.join(name);
        let mut png = Vec::new();
        image::DynamicImage::new_rgb8(8, 6)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        std::fs::write(&source, png).unwrap();
        match show(
            name,
            &source.display().to_string(),
            &settings(true, 3),
            &dir.join("media"),
        ) {
            Ok(Showing::Image { image, .. }) => image,
            _ => panic!("the test image is not shown"),
        }
    }

    fn typed(text: &str, images: &[&Image]) -> (i64, Message) {
        let mut m = Message::user_text(text);
        m.content
            .extend(images.iter().map(|i| Block::Image((*i).clone())));
        (0, m)
    }

    fn answer() -> (i64, Message) {
        (
            0,
            Message {
                role: Role::Assistant,
                content: vec![Block::Text { text: "ok".into() }],
            },
        )
    }

    /// Per message: how many images carry their bytes, and the notes.
    fn shape(messages: &[Message]) -> Vec<(usize, Vec<String>)> {
        messages
            .iter()
            .map(|m| {
                let sent = m
                    .content
                    .iter()
                    .filter(|b| matches!(b, Block::Image(i) if i.data.is_some()))
                    .count();
                let notes = m
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        Block::Text { text } if text.starts_with("[image") => Some(text.clone()),
                        _ => None,
                    })
                    .collect();
                (sent, notes)
            })
            .collect()
    }

    #[test]
    fn images_are_sent_for_their_turns_and_then_named() {
        let dir = tempfile::tempdir().unwrap();
        let cat = saved(dir.path(), "cat.png");
        let dog = saved(dir.path(), "dog.png");
        let results = (
            0,
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        tool_use_id: "t".into(),
                        content: "{}".into(),
                        is_error: false,
                    },
                    Block::Image(dog.clone()),
                ],
            },
        );
        // cat came two turns ago, dog in this turn's tool results.
        let history = vec![
            typed("a cat", &[&cat]),
            answer(),
            typed("and?", &[]),
            answer(),
            typed("fetch the dog", &[]),
            results,
        ];
        let two = shape(&for_request(&history, &settings(true, 2)));
        assert_eq!(two[0].0, 0, "cat is past its 2 turns");
        assert!(
            two[0].1[0].starts_with("[image cat.png (8x6), shown in an earlier turn; saved at ")
        );
        assert_eq!(two[5], (1, Vec::new()), "dog is in its first turn");
        let three = shape(&for_request(&history, &settings(true, 3)));
        assert_eq!((three[0].0, three[5].0), (1, 1));
        let blind = shape(&for_request(&history, &settings(false, 3)));
        assert!(blind[0].1[0].starts_with("[image: cat.png, 8x6, saved at "));
        assert!(blind[5].1[0].ends_with("this model cannot see images]"));
        // A copy made under larger limits than today's is shrunk again.
        let small = ImageSettings {
            limits: Limits::for_provider(ProviderKind::Anthropic, Some(4)),
            ..settings(true, 3)
        };
        let shrunk = for_request(&history, &small);
        match &shrunk[0].content[1] {
            Block::Image(i) => assert_eq!((i.width, i.height, i.data.is_some()), (4, 3, true)),
            other => panic!("{other:?}"),
        }
        // A copy changed since it was saved is named, not sent.
        std::fs::write(&dog.path, b"something else").unwrap();
        let changed = shape(&for_request(&history, &settings(true, 3)));
        assert!(
            changed[5].1[0].contains("has changed since it was saved"),
            "{changed:?}"
        );
        // The stored history is left as it was.
        assert!(matches!(&history[0].1.content[1], Block::Image(i) if i.data.is_none()));
    }

    #[test]
    fn a_request_carries_at_most_its_share_of_images() {
        let dir = tempfile::tempdir().unwrap();
        let cat = saved(dir.path(), "cat.png");
        let many: Vec<&Image> = std::iter::repeat_n(&cat, MAX_IMAGES_PER_REQUEST + 2).collect();
        let messages = for_request(&[typed("an album", &many)], &settings(true, 3));
        let shape = shape(&messages);
        assert_eq!(shape[0].0, MAX_IMAGES_PER_REQUEST);
        assert_eq!(shape[0].1.len(), 2);
        // The newest are the ones sent.
        assert!(matches!(messages[0].content.last(), Some(Block::Image(i)) if i.data.is_some()));
    }
}
