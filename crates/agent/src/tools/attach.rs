//! `attach_file`'s check of a file, shared with `send_message`'s
//! attachments: an absolute path to a regular file within the size limit,
//! never one of hearth's credentials, described for the reply.

use serde_json::{Value, json};

/// The name of the tool whose results the turn collects as attachments.
pub const ATTACH_FILE: &str = "attach_file";
/// The largest file `attach_file` takes: what the Bot API uploads.
const MAX_ATTACHMENT_BYTES: u64 = 50 << 20;

/// Checks a file for `attach_file` (and `send_message`'s attachments) and
/// describes it for the reply.
pub fn attach(args: &Value) -> Result<Value, String> {
    let path = std::path::Path::new(args["path"].as_str().unwrap_or_default());
    if !path.is_absolute() {
        return Err(format!(
            "field `path`: {} is not an absolute path",
            path.display()
        ));
    }
    if hearth_policy::roots::is_credential(path) {
        return Err(format!(
            "field `path`: {} is one of hearth's credentials (secrets, tokens, the store, the \
             config), which is never sent",
            path.display()
        ));
    }
    let meta =
        std::fs::metadata(path).map_err(|e| format!("field `path`: {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("field `path`: {} is not a file", path.display()));
    }
    if meta.len() > MAX_ATTACHMENT_BYTES {
        return Err(format!(
            "field `path`: {} is {} bytes, over the {MAX_ATTACHMENT_BYTES}-byte limit",
            path.display(),
            meta.len()
        ));
    }
    let name = args["name"].as_str().map(str::to_owned).unwrap_or_else(|| {
        path.file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned())
    });
    Ok(json!({ "attached": {
        "id": "",
        "name": name,
        "mime": mime_of(path),
        "size": meta.len(),
        "path": path.display().to_string(),
    }}))
}

/// A media type from the file's extension; channels pick photo or document
/// by it.
fn mime_of(path: &std::path::Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "pdf" => "application/pdf",
        "txt" | "log" | "md" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "mp4" => "video/mp4",
        "ogg" => "audio/ogg",
        "mp3" => "audio/mpeg",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}
