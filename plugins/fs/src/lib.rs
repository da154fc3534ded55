//! The fs plugin: file tools for the agent.
//!
//! - `read_file` (read): text, a line range, or base64, capped; an image
//!   file is named for the host to show the model; a document (PDF, DOCX,
//!   XLSX, ODS) is answered with its text;
//! - `write_file` (write): atomic replace, optionally creating folders;
//! - `list_directory` (read): entries, optionally recursive within bounds;
//! - `delete_path` (write): a file, link or folder; never `/` or a home;
//! - `apply_patch` (write): a unified diff over one or more files;
//! - `search_files` (read): names by glob, lines by substring or regex.
//!
//! Relative paths are relative to `$HEARTH_HOME`, `~/` is `$HOME`. What may
//! be touched is the host policy's decision; this plugin resolves and
//! reports paths, and applies the confinement the host sends with a call
//! the owner did not approve to every path it opens ([`paths`]): only it
//! sees the file names inside a patch, and the file a path really leads
//! to.

pub mod args;
pub mod document;
pub mod list;
pub mod patch;
pub mod paths;
pub mod read;
pub mod search;
pub mod write;

use std::path::PathBuf;

use hearth_sdk::protocol::{Description, Floor, Risk, ToolSpec};
use hearth_sdk::{Host, Plugin, PluginError, parse_args};
use serde::Deserialize;
use serde_json::{Value, json};

use paths::Roots;

/// `max_read_bytes` when the config does not set it.
pub const DEFAULT_MAX_READ_BYTES: u64 = 256 * 1024;
/// The largest `max_read_bytes` allowed: base64 grows content by a third
/// and the host caps an answer at 16 MiB.
pub const MAX_READ_BYTES_LIMIT: u64 = 8 * 1024 * 1024;

/// The plugin's state: where paths lead, and the read cap.
pub struct Fs {
    /// Bases for relative and `~` paths.
    pub roots: Roots,
    /// The most bytes `read_file` returns.
    pub max_read_bytes: u64,
    /// How much of a document `read_file` reads (`[documents]`).
    pub documents: hearth_documents::Caps,
}

impl Fs {
    /// Runs one tool on raw JSON arguments.
    pub fn call(&self, tool: &str, args: &Value) -> Result<Value, PluginError> {
        match tool {
            "read_file" => read::read_file(self, args),
            "write_file" => write::write_file(self, args),
            "list_directory" => list::list_directory(self, args),
            "delete_path" => write::delete_path(self, args),
            "apply_patch" => patch::apply_patch(self, args),
            "search_files" => search::search_files(self, args),
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }
}

impl Plugin for Fs {
    const NAME: &'static str = "fs";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let config: Config = parse_args(config)?;
        let max_read_bytes = config.max_read_bytes.unwrap_or(DEFAULT_MAX_READ_BYTES);
        if !(1..=MAX_READ_BYTES_LIMIT).contains(&max_read_bytes) {
            return Err(PluginError::InvalidArguments(format!(
                "[plugins.fs] max_read_bytes must be between 1 and {MAX_READ_BYTES_LIMIT}, not {max_read_bytes}"
            )));
        }
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        Ok(Fs {
            roots: Roots {
                hearth_home: PathBuf::from(info.home),
                user_home: std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(PathBuf::from),
                floor: None,
                hidden: Default::default(),
            },
            max_read_bytes,
            documents: config
                .documents
                .map_or_else(hearth_documents::Caps::default, Into::into),
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: tools(self.max_read_bytes),
            channel: None,
        }
    }

    fn call_tool(&self, tool: &str, args: Value) -> Result<Value, PluginError> {
        self.call(tool, &args)
    }

    fn call_tool_floored(
        &self,
        tool: &str,
        args: Value,
        floor: Option<Floor>,
    ) -> Result<Value, PluginError> {
        let fs = Fs {
            roots: self.roots.confined(floor),
            max_read_bytes: self.max_read_bytes,
            documents: self.documents.clone(),
        };
        fs.call(tool, &args)
    }
}

/// The tools' specs; `max_read_bytes` appears in `read_file`'s description.
pub fn tools(max_read_bytes: u64) -> Vec<ToolSpec> {
    // Relative paths are from $HEARTH_HOME, which read_file's description
    // says once: every property description is paid for on every call.
    let path = json!({ "type": "string", "minLength": 1 });
    let encoding = json!({ "enum": ["text", "base64"] });
    let spec =
        |name: &str, description: String, risk: Risk, properties: Value, required: &[&str]| {
            ToolSpec {
                name: name.into(),
                description,
                parameters: json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": false
                }),
                risk,
                targets: Default::default(),
            }
        };
    let mut tools = vec![
        spec(
            "read_file",
            format!(
                "Reads a file (relative to $HEARTH_HOME unless absolute), or lines from \
                 offset_line. An image is shown to you; a PDF, Word or spreadsheet file comes \
                 as text. At most {max_read_bytes} bytes."
            ),
            Risk::Read,
            json!({
                "path": path,
                "offset_line": { "type": "integer", "minimum": 1 },
                "limit_lines": { "type": "integer", "minimum": 1 },
                "encoding": encoding,
            }),
            &["path"],
        ),
        spec(
            "write_file",
            "Writes a whole file atomically; create_dirs makes missing folders.".into(),
            Risk::Write,
            json!({
                "path": path,
                "content": { "type": "string" },
                "encoding": encoding,
                "create_dirs": { "type": "boolean" },
            }),
            &["path", "content"],
        ),
        spec(
            "list_directory",
            format!(
                "Lists a folder: type, size, modified; recursive goes {} levels, {} entries.",
                list::MAX_DEPTH,
                list::MAX_ENTRIES
            ),
            Risk::Read,
            json!({ "path": path, "recursive": { "type": "boolean" } }),
            &["path"],
        ),
        spec(
            "delete_path",
            "Deletes a file, a symlink or a folder (recursive if not empty).".into(),
            Risk::Write,
            json!({ "path": path, "recursive": { "type": "boolean" } }),
            &["path"],
        ),
        spec(
            "apply_patch",
            "Applies a unified diff under root (default $HEARTH_HOME), every hunk or none.".into(),
            Risk::Write,
            json!({
                "patch": { "type": "string", "minLength": 1 },
                "root": { "type": "string", "minLength": 1 },
            }),
            &["patch"],
        ),
        spec(
            "search_files",
            "Finds files under path by glob, and lines matching pattern (a substring, or \
             regex: true)."
                .into(),
            Risk::Read,
            json!({
                "path": path,
                "glob": { "type": "string", "minLength": 1 },
                "pattern": { "type": "string", "minLength": 1 },
                "regex": { "type": "boolean" },
                "case_insensitive": { "type": "boolean" },
                "max_results": { "type": "integer", "minimum": 1, "maximum": search::MAX_RESULTS },
            }),
            &["path"],
        ),
    ];
    // The paths each tool changes, so the host's policy can confine them
    // (development mode) or ask before protected ones change (production).
    // A patch's own file names stay relative to `root`; the patcher refuses
    // names that climb out of it.
    for tool in &mut tools {
        tool.targets.writes = match tool.name.as_str() {
            "write_file" | "delete_path" => vec!["path".into()],
            "apply_patch" => vec!["root".into()],
            _ => Vec::new(),
        };
        // Every call the owner did not approve comes with the confinement,
        // reads included: they must not reach the credentials.
        tool.targets.floor = true;
    }
    tools
}

/// Config table `[plugins.fs]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    max_read_bytes: Option<u64>,
    /// Set by the host from `[documents]`.
    documents: Option<document::CapsSetting>,
}
