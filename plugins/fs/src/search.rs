//! `search_files`: files under a folder whose names match a glob, and the
//! lines in them that contain a substring or match a regex.
//!
//! Bounded on every side: matches (default 200, at most 1000), files visited,
//! file size (1 MiB) and line length (300 characters), and it skips binary
//! files and `.git` folders, so one call stays fast and its answer small.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use hearth_sdk::PluginError;
use regex::{Regex, RegexBuilder};
use serde_json::{Value, json};

use crate::Fs;
use crate::args::{Args, invalid};
use crate::paths::{Roots, io_error};

/// Matches returned when `max_results` is not given.
pub const DEFAULT_RESULTS: u64 = 200;
/// The most matches one call may ask for.
pub const MAX_RESULTS: u64 = 1000;
/// Files larger than this are skipped.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// A matching line is cut to this many characters.
pub const MAX_LINE_CHARS: usize = 300;
/// The most entries (files and folders) one search visits.
pub const MAX_VISITED: usize = 100_000;

/// Runs `search_files`.
pub fn search_files(fs: &Fs, args: &Value) -> Result<Value, PluginError> {
    let args = Args::new(
        args,
        &[
            "path",
            "glob",
            "pattern",
            "regex",
            "case_insensitive",
            "max_results",
        ],
    )?;
    let root = fs.roots.resolve("path", args.string("path")?)?;
    let glob = args.opt_string("glob")?.map(compile_glob).transpose()?;
    let case_insensitive = args.bool("case_insensitive", false)?;
    let matcher = match args.opt_string("pattern")? {
        None => None,
        Some("") => return Err(invalid("pattern", "must not be empty")),
        Some(p) if args.bool("regex", false)? => Some(Matcher::Regex(
            RegexBuilder::new(p)
                .case_insensitive(case_insensitive)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| invalid("pattern", &format!("is not a valid regex: {e}")))?,
        )),
        Some(p) if case_insensitive => Some(Matcher::Folded(p.to_lowercase())),
        Some(p) => Some(Matcher::Exact(p.to_owned())),
    };
    let limit = args.opt_u64("max_results", 1)?.unwrap_or(DEFAULT_RESULTS);
    if limit > MAX_RESULTS {
        return Err(invalid(
            "max_results",
            &format!("{limit} is more than the maximum, {MAX_RESULTS}"),
        ));
    }
    let meta = std::fs::metadata(&root).map_err(|e| io_error("cannot search", &root, &e))?;
    fs.roots.check_readable("path", &root)?;
    let mut search = Search {
        roots: &fs.roots,
        glob,
        matcher,
        limit: limit as usize,
        matches: Vec::new(),
        files_searched: 0,
        skipped_binary: 0,
        skipped_large: 0,
        visited: 0,
        truncated: false,
    };
    if meta.is_dir() {
        search.dir(&root, &root);
    } else {
        search.file(&root, &root);
    }
    Ok(json!({
        "path": root.display().to_string(),
        "matches": search.matches,
        "files_searched": search.files_searched,
        "skipped_binary": search.skipped_binary,
        "skipped_large": search.skipped_large,
        "truncated": search.truncated,
    }))
}

enum Matcher {
    Exact(String),
    Folded(String),
    Regex(Regex),
}

impl Matcher {
    fn is_match(&self, line: &str) -> bool {
        match self {
            Matcher::Exact(p) => line.contains(p.as_str()),
            Matcher::Folded(p) => line.to_lowercase().contains(p.as_str()),
            Matcher::Regex(r) => r.is_match(line),
        }
    }
}

/// A glob without `/` matches file names; one with `/` matches the path
/// relative to the search root, where `*` stays within one folder.
struct NameGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

fn compile_glob(pattern: &str) -> Result<NameGlob, PluginError> {
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| invalid("glob", &format!("is not a valid glob: {e}")))?;
    Ok(NameGlob {
        matcher: glob.compile_matcher(),
        whole_path: pattern.contains('/'),
    })
}

struct Search<'a> {
    /// What this call may not read.
    roots: &'a Roots,
    glob: Option<NameGlob>,
    matcher: Option<Matcher>,
    limit: usize,
    matches: Vec<Value>,
    files_searched: u64,
    skipped_binary: u64,
    skipped_large: u64,
    visited: usize,
    truncated: bool,
}

impl Search<'_> {
    fn full(&mut self) -> bool {
        if self.matches.len() >= self.limit || self.visited >= MAX_VISITED {
            self.truncated = true;
        }
        self.truncated
    }

    /// Searches `dir` in name order; symlinks are not followed, so a link
    /// loop cannot trap the walk. Unreadable folders are skipped.
    fn dir(&mut self, root: &Path, dir: &Path) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        let mut children: Vec<_> = read.filter_map(Result::ok).collect();
        children.sort_by_key(|e| e.file_name());
        for child in children {
            if self.full() {
                return;
            }
            self.visited += 1;
            let Ok(kind) = child.file_type() else {
                continue;
            };
            let path = child.path();
            if kind.is_dir() {
                if child.file_name() != ".git" {
                    self.dir(root, &path);
                }
            } else if kind.is_file() {
                self.file(root, &path);
            }
        }
    }

    fn file(&mut self, root: &Path, path: &Path) {
        if self.roots.is_hidden(path) {
            return;
        }
        if let Some(glob) = &self.glob {
            let subject = if glob.whole_path {
                path.strip_prefix(root).unwrap_or(path)
            } else {
                Path::new(path.file_name().unwrap_or(path.as_os_str()))
            };
            if !glob.matcher.is_match(subject) {
                return;
            }
        }
        let shown = path.display().to_string();
        let Some(matcher) = &self.matcher else {
            self.files_searched += 1;
            self.matches.push(json!({ "file": shown }));
            return;
        };
        match std::fs::metadata(path) {
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                self.skipped_large += 1;
                return;
            }
            Ok(_) => {}
            Err(_) => return,
        }
        let Ok(bytes) = std::fs::read(path) else {
            return;
        };
        // NUL bytes or invalid UTF-8: binary, not worth a line search.
        let text = match String::from_utf8(bytes) {
            Ok(t) if !t.contains('\0') => t,
            _ => {
                self.skipped_binary += 1;
                return;
            }
        };
        self.files_searched += 1;
        for (index, line) in text.lines().enumerate() {
            if matcher.is_match(line) {
                if self.matches.len() >= self.limit {
                    self.truncated = true;
                    return;
                }
                let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
                self.matches
                    .push(json!({ "file": shown, "line": index + 1, "text": cut }));
            }
        }
    }
}
