//! A `tools/call` result made into what the model reads.
//!
//! An MCP result is a list of content blocks. Text is joined; structured
//! content passes through; images, audio and embedded binary resources are
//! saved under `$HEARTH_HOME/mcp/<server>/media/` (named by a hash of their
//! bytes, so a repeat costs no space) and named by path, the first image as
//! `image`, which the host shows the model. What reaches the model is
//! bounded: a result whose text passes [`MAX_TEXT`] keeps its head and tail
//! with a marker, and the whole is saved under
//! `$HEARTH_HOME/mcp/<server>/results/` and named in `log` (with
//! `truncated: true`, as the shell plugin does for long output).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use hearth_sdk::PluginError;
use serde_json::{Map, Value, json};

use crate::text::cut;

/// The most text (joined, in bytes) a result shows the model.
pub const MAX_TEXT: usize = 256 << 10;
/// How much of an oversized text is kept from its start.
const HEAD: usize = 160 << 10;
/// ... and from its end.
const TAIL: usize = 64 << 10;
/// The most of an embedded text resource shown.
const MAX_RESOURCE_TEXT: usize = 16 << 10;
/// The most resources listed.
const MAX_RESOURCES: usize = 50;
/// The most of an error's text passed on.
const MAX_ERROR: usize = 64 << 10;

/// Where a server's results and media are saved.
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The directory of `server` under `home` (`$HEARTH_HOME/mcp/<server>`).
    pub fn new(home: &Path, server: &str) -> Store {
        let home = std::path::absolute(home).unwrap_or_else(|_| home.to_owned());
        Store {
            dir: home.join("mcp").join(server),
        }
    }

    /// Saves media bytes; returns the file's absolute path.
    fn save_media(&self, bytes: &[u8], mime: &str) -> Result<PathBuf, String> {
        let dir = self.dir.join("media");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
        let name = format!(
            "{}.{}",
            crate::config::hex(&digest.as_ref()[..8]),
            extension(mime)
        );
        let path = dir.join(name);
        if !path.exists() {
            write_new(&path, bytes)?;
        }
        Ok(path)
    }

    /// Saves a whole result that was cut for the model.
    fn save_result(&self, result: &Value) -> Result<PathBuf, String> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = self.dir.join("results");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{ms}-{}-{n}.json", std::process::id()));
        let text = serde_json::to_vec_pretty(result).map_err(|e| e.to_string())?;
        write_new(&path, &text)?;
        Ok(path)
    }
}

/// Writes a file through a temporary name, so a reader never sees half.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("part");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("could not save {}: {e}", path.display()))
}

/// The file extension for a media type.
fn extension(mime: &str) -> &'static str {
    let base = mime.split(';').next().unwrap_or("").trim();
    match base.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" | "audio/opus" => "ogg",
        "audio/webm" => "webm",
        "audio/mp4" | "audio/m4a" | "audio/x-m4a" => "m4a",
        "audio/flac" => "flac",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "text/plain" => "txt",
        "text/html" => "html",
        "text/csv" => "csv",
        _ => "bin",
    }
}

/// The text of a result that `map` bounded, for a summary: its first
/// 64 KiB and last 192 KiB (the host cuts again to what its model reads).
pub fn long_text(result: &Value) -> String {
    let text = texts(result).join("\n");
    if text.len() <= 256 * 1024 {
        return text;
    }
    head_and_tail(&text, 64 * 1024, 192 * 1024, None)
}

fn texts(result: &Value) -> Vec<&str> {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// Maps a `CallToolResult`; a result with `isError` becomes the tool's
/// error, with its text.
pub fn map(result: &Value, store: &Store) -> Result<Value, PluginError> {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut texts: Vec<&str> = Vec::new();
    let mut images: Vec<Value> = Vec::new();
    let mut audio: Vec<Value> = Vec::new();
    let mut resources: Vec<Value> = Vec::new();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let field = |k: &str| block.get(k).and_then(Value::as_str);
        match kind {
            "text" => texts.extend(field("text")),
            "image" | "audio" => {
                let mime = field("mimeType").unwrap_or("application/octet-stream");
                let saved = decode(field("data").unwrap_or(""))
                    .and_then(|bytes| store.save_media(&bytes, mime));
                let entry = match saved {
                    Ok(path) => json!({"path": path.to_string_lossy(), "mime": mime}),
                    Err(e) => json!({"mime": mime, "error": e}),
                };
                if kind == "image" {
                    images.push(entry);
                } else {
                    audio.push(entry);
                }
            }
            "resource_link" => {
                let mut link = Map::new();
                for key in ["uri", "name", "title", "description", "mimeType", "size"] {
                    if let Some(v) = block.get(key) {
                        link.insert(key.into(), v.clone());
                    }
                }
                resources.push(Value::Object(link));
            }
            "resource" => {
                let r = block.get("resource").unwrap_or(&Value::Null);
                let text_of = |k: &str| r.get(k).and_then(Value::as_str);
                let mut entry = Map::new();
                for key in ["uri", "mimeType"] {
                    if let Some(v) = r.get(key) {
                        entry.insert(key.into(), v.clone());
                    }
                }
                if let Some(text) = text_of("text") {
                    entry.insert("text".into(), cut(text, MAX_RESOURCE_TEXT).into());
                    if text.len() > MAX_RESOURCE_TEXT {
                        entry.insert("truncated".into(), true.into());
                    }
                } else if let Some(blob) = text_of("blob") {
                    let mime = text_of("mimeType").unwrap_or("application/octet-stream");
                    match decode(blob).and_then(|b| store.save_media(&b, mime)) {
                        Ok(path) => entry.insert("path".into(), path.to_string_lossy().into()),
                        Err(e) => entry.insert("error".into(), e.into()),
                    };
                }
                resources.push(Value::Object(entry));
            }
            other => tracing::debug!("ignoring content of type {other:?}"),
        }
    }
    let text = texts.join("\n");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = if text.trim().is_empty() {
            "the tool reported an error without a message".to_owned()
        } else {
            cut(&text, MAX_ERROR)
        };
        return Err(PluginError::Failed(message));
    }

    let mut out = Map::new();
    let structured = result.get("structuredContent").filter(|s| !s.is_null());
    let structured_size = structured.map_or(0, |s| s.to_string().len());
    let oversized = text.len() > MAX_TEXT || structured_size > MAX_TEXT;
    if oversized {
        match store.save_result(result) {
            Ok(path) => {
                let path = path.to_string_lossy().into_owned();
                out.insert(
                    "text".into(),
                    head_and_tail(&text, HEAD, TAIL, Some(&path)).into(),
                );
                out.insert("truncated".into(), true.into());
                out.insert("log".into(), path.into());
            }
            Err(e) => {
                out.insert(
                    "text".into(),
                    head_and_tail(&text, HEAD, TAIL, Some("nowhere")).into(),
                );
                out.insert("truncated".into(), true.into());
                out.insert("log_error".into(), e.into());
            }
        }
    } else {
        out.insert("text".into(), text.into());
    }
    if let Some(structured) = structured {
        if structured_size > MAX_TEXT {
            out.insert(
                "structured_omitted".into(),
                format!("{structured_size} bytes of structured content; see log").into(),
            );
        } else {
            out.insert("structured".into(), structured.clone());
        }
    }
    if let Some(first) = images.iter().find(|i| i.get("path").is_some()) {
        out.insert("image".into(), first.clone());
    }
    if !images.is_empty() {
        out.insert("images".into(), images.into());
    }
    if !audio.is_empty() {
        out.insert("audio".into(), audio.into());
    }
    if !resources.is_empty() {
        let listed = resources.len();
        resources.truncate(MAX_RESOURCES);
        out.insert("resources".into(), resources.into());
        if listed > MAX_RESOURCES {
            out.insert("resources_omitted".into(), (listed - MAX_RESOURCES).into());
        }
    }
    Ok(Value::Object(out))
}

fn decode(data: &str) -> Result<Vec<u8>, String> {
    let clean: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(clean.as_bytes())
        .map_err(|e| format!("its base64 data could not be decoded ({e})"))
}

/// The first `head` and last `tail` bytes of `text` (cut at characters),
/// with a marker saying how much was left out and, given `kept`, where
/// the whole is.
fn head_and_tail(text: &str, head: usize, tail: usize, kept: Option<&str>) -> String {
    let mut head = head.min(text.len());
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len().saturating_sub(tail).max(head);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let kept = kept.map_or(String::new(), |path| {
        format!("; the whole result is in {path}")
    });
    format!(
        "{}\n[... {} bytes left out{kept} ...]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    fn store() -> (tempfile::TempDir, Store) {
        let home = tempfile::tempdir().unwrap();
        let store = Store::new(home.path(), "srv");
        (home, store)
    }

    #[test]
    fn text_and_structured_content_pass_through() {
        let (_home, store) = store();
        let cases = [
            (json!({"content": []}), json!({"text": ""})),
            (
                json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
                json!({"text": "a\nb"}),
            ),
            (
                json!({"content": [{"type": "text", "text": "{\"n\":1}"}], "structuredContent": {"n": 1}}),
                json!({"text": "{\"n\":1}", "structured": {"n": 1}}),
            ),
            (
                json!({"content": [{"type": "unknown"}, {"type": "text", "text": "x"}], "resultType": "complete"}),
                json!({"text": "x"}),
            ),
            (
                json!({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain", "extra": 1}]}),
                json!({"text": "", "resources": [{"uri": "file:///a", "name": "a", "mimeType": "text/plain"}]}),
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "memo://1", "mimeType": "text/plain", "text": "memo"}}]}),
                json!({"text": "", "resources": [{"uri": "memo://1", "mimeType": "text/plain", "text": "memo"}]}),
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(map(&result, &store).unwrap(), expected, "for {result}");
        }
    }

    #[test]
    fn an_error_result_is_the_tools_error() {
        let (_home, store) = store();
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
                "no such file",
            ),
            (
                json!({"content": [], "isError": true}),
                "the tool reported an error without a message",
            ),
        ];
        for (result, expected) in cases {
            match map(&result, &store) {
                Err(PluginError::Failed(m)) => assert_eq!(m, expected),
                other => panic!("{result}: {other:?}"),
            }
        }
    }

    #[test]
    fn media_is_saved_by_hash_and_named_by_path() {
        let (home, store) = store();
        let result = json!({"content": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "blob://1", "mimeType": "application/pdf", "blob": "JVBERg=="}},
            {"type": "image", "data": "not base64!", "mimeType": "image/png"},
        ]});
        let out = map(&result, &store).unwrap();
        let image = out["image"]["path"].as_str().unwrap();
        assert!(Path::new(image).is_absolute());
        assert!(image.starts_with(home.path().join("mcp/srv/media").to_str().unwrap()));
        assert!(image.ends_with(".png"));
        assert_eq!(out["image"]["mime"], "image/png");
        let png = base64::engine::general_purpose::STANDARD
            .decode(PNG)
            .unwrap();
        assert_eq!(std::fs::read(image).unwrap(), png);
        let images = out["images"].as_array().unwrap();
        assert_eq!(images.len(), 3);
        assert_eq!(images[0], images[1], "the same bytes, the same file");
        assert!(images[2]["error"].as_str().unwrap().contains("base64"));
        assert!(out["audio"][0]["path"].as_str().unwrap().ends_with(".wav"));
        assert!(
            out["resources"][0]["path"]
                .as_str()
                .unwrap()
                .ends_with(".pdf")
        );
    }

    #[test]
    fn an_oversized_result_keeps_head_and_tail_and_is_saved_whole() {
        let (_home, store) = store();
        let big = format!("HEAD{}TAIL", "x".repeat(MAX_TEXT + 1000));
        let result = json!({"content": [{"type": "text", "text": big}]});
        let out = map(&result, &store).unwrap();
        assert_eq!(out["truncated"], true);
        let text = out["text"].as_str().unwrap();
        assert!(text.len() < HEAD + TAIL + 200);
        assert!(text.starts_with("HEAD") && text.ends_with("TAIL"));
        let log = out["log"].as_str().unwrap();
        assert!(text.contains(log), "the marker names the file");
        let saved: Value = serde_json::from_slice(&std::fs::read(log).unwrap()).unwrap();
        assert_eq!(saved, result);

        let structured =
            json!({"content": [], "structuredContent": {"blob": "y".repeat(MAX_TEXT + 1)}});
        let out = map(&structured, &store).unwrap();
        assert_eq!(out["truncated"], true);
        assert!(out.get("structured").is_none());
        assert!(
            out["structured_omitted"]
                .as_str()
                .unwrap()
                .contains("bytes")
        );
    }

    #[test]
    fn extensions_follow_the_media_type() {
        for (mime, ext) in [
            ("image/png", "png"),
            ("image/JPEG", "jpg"),
            ("audio/mpeg", "mp3"),
            ("text/plain; charset=utf-8", "txt"),
            ("application/x-unknown", "bin"),
        ] {
            assert_eq!(extension(mime), ext, "for {mime}");
        }
    }
}
