//! `apply_patch`: applies a unified diff (one or more files) exactly.
//!
//! Written here rather than taken from a crate because the agent needs
//! errors that say which file, which hunk and which line did not match, and
//! several files per patch with creation and deletion; the parser is small.
//!
//! A hunk applies where its header says, or, if the file moved since the
//! diff was made, at the nearest place where all of its context and removed
//! lines match exactly; there is no fuzz. Every file is patched in memory
//! first, so a patch that fails anywhere changes nothing; then each file is
//! replaced atomically.

use std::path::PathBuf;

use hearth_sdk::PluginError;
use serde_json::{Value, json};

use crate::Fs;
use crate::args::{Args, invalid};
use crate::paths::{Roots, io_error};
use crate::write::atomic_write;

/// One file's part of a patch.
#[derive(Debug, PartialEq)]
pub struct FilePatch {
    /// The `---` path; `None` for `/dev/null` (the file is created).
    pub old: Option<String>,
    /// The `+++` path; `None` for `/dev/null` (the file is deleted).
    pub new: Option<String>,
    /// Its hunks, in order.
    pub hunks: Vec<Hunk>,
}

/// One `@@` hunk.
#[derive(Debug, PartialEq)]
pub struct Hunk {
    /// The header line, for error messages.
    pub header: String,
    /// The first old line (1-based; 0 with no old lines at the top).
    pub old_start: usize,
    /// Its lines, in order.
    pub lines: Vec<Line>,
    /// `\ No newline at end of file` followed the old side's last line.
    pub old_no_newline: bool,
    /// `\ No newline at end of file` followed the new side's last line.
    pub new_no_newline: bool,
}

/// One line of a hunk, without its marker and line ending.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// ` `: in both.
    Context(String),
    /// `-`: only in the old file.
    Remove(String),
    /// `+`: only in the new file.
    Add(String),
}

/// Runs `apply_patch`.
pub fn apply_patch(fs: &Fs, args: &Value) -> Result<Value, PluginError> {
    let args = Args::new(args, &["patch", "root"])?;
    let text = args.string("patch")?;
    let roots = match args.opt_string("root")? {
        Some(root) => Roots {
            hearth_home: fs.roots.resolve("root", root)?,
            ..fs.roots.clone()
        },
        None => fs.roots.clone(),
    };
    let files = parse(text).map_err(|e| invalid("patch", &e))?;
    let mut plans: Vec<Plan> = Vec::new();
    for file in &files {
        let plan = plan_file(&roots, file, &plans)?;
        plans.push(plan);
    }
    let mut report = Vec::new();
    for plan in &plans {
        commit(plan).map_err(|e| {
            let done: Vec<String> = report
                .iter()
                .filter_map(|r: &Value| r["path"].as_str().map(str::to_owned))
                .collect();
            PluginError::failed(format!("{e}; already changed: {done:?}"))
        })?;
        let mut entry = json!({
            "path": plan.path.display().to_string(),
            "action": plan.action,
            "hunks": plan.hunks,
        });
        if let Some(from) = &plan.remove_after {
            entry["from"] = json!(from.display().to_string());
        }
        report.push(entry);
    }
    Ok(json!({ "files": report }))
}

/// Parses a unified diff into its files; the error says what and where.
pub fn parse(text: &str) -> Result<Vec<FilePatch>, String> {
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    // The final newline ends the last line; it does not start an empty one,
    // which would read as a blank context line.
    if text.ends_with('\n') {
        lines.pop();
    }
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
            return Err(format!("line {}: binary patches are not supported", i + 1));
        }
        if !(line.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))) {
            // `diff --git`, `index`, mode lines and commentary carry nothing
            // the hunks do not.
            i += 1;
            continue;
        }
        let old = header_path(&line[4..], "a/");
        let new = header_path(&lines[i + 1][4..], "b/");
        if old.is_none() && new.is_none() {
            return Err(format!("line {}: both sides are /dev/null", i + 1));
        }
        let name = new.clone().or_else(|| old.clone()).unwrap_or_default();
        i += 2;
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@") {
            let (hunk, next) = parse_hunk(&lines, i)
                .map_err(|e| format!("file {name}, hunk {}: {e}", hunks.len() + 1))?;
            hunks.push(hunk);
            i = next;
        }
        if hunks.is_empty() {
            return Err(format!(
                "file {name}: no @@ hunks follow its ---/+++ headers"
            ));
        }
        files.push(FilePatch { old, new, hunks });
    }
    if files.is_empty() {
        return Err("no file headers (`--- path` then `+++ path`) found".into());
    }
    Ok(files)
}

/// Applies `hunks` to `text`; the error names the hunk and the line.
pub fn apply(text: &str, hunks: &[Hunk]) -> Result<String, String> {
    // (content without line ending, line ending) per line.
    let lines: Vec<(&str, &str)> = text
        .split_inclusive('\n')
        .map(|l| match l.strip_suffix("\r\n") {
            Some(body) => (body, "\r\n"),
            None => match l.strip_suffix('\n') {
                Some(body) => (body, "\n"),
                None => (l, ""),
            },
        })
        .collect();
    let eol = lines
        .first()
        .map_or("\n", |(_, e)| if *e == "\r\n" { "\r\n" } else { "\n" });
    let mut out: Vec<(String, &str)> = Vec::new();
    let mut cursor = 0;
    let mut final_newline = text.ends_with('\n') || text.is_empty();
    for (n, hunk) in hunks.iter().enumerate() {
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(s) | Line::Remove(s) => Some(s.as_str()),
                Line::Add(_) => None,
            })
            .collect();
        let expected = if old.is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let at = locate(&lines, &old, expected, cursor).ok_or_else(|| {
            format!(
                "hunk {} ({}): {}",
                n + 1,
                hunk.header,
                mismatch(&lines, &old, expected.max(cursor))
            )
        })?;
        out.extend(lines[cursor..at].iter().map(|&(s, e)| (s.to_owned(), e)));
        let mut source = at;
        for line in &hunk.lines {
            match line {
                Line::Context(_) => {
                    let (s, e) = lines[source];
                    out.push((s.to_owned(), e));
                    source += 1;
                }
                Line::Remove(_) => source += 1,
                Line::Add(s) => out.push((s.clone(), eol)),
            }
        }
        cursor = source;
        if cursor == lines.len() && (hunk.old_no_newline || hunk.new_no_newline) {
            final_newline = !hunk.new_no_newline;
        }
    }
    out.extend(lines[cursor..].iter().map(|&(s, e)| (s.to_owned(), e)));
    let count = out.len();
    let mut result = String::with_capacity(text.len());
    for (i, (body, ending)) in out.into_iter().enumerate() {
        result.push_str(&body);
        // Only the last line may lack an ending, and only if the file did.
        if i + 1 < count || final_newline {
            result.push_str(if ending.is_empty() { eol } else { ending });
        }
    }
    Ok(result)
}

/// A `---`/`+++` header's path: tab-separated timestamps dropped, the git
/// prefix removed, `/dev/null` as `None`.
fn header_path(raw: &str, prefix: &str) -> Option<String> {
    let path = raw.split('\t').next().unwrap_or(raw).trim_end();
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix(prefix).unwrap_or(path).to_owned())
}

/// Parses the hunk whose header is `lines[at]`; returns it and the index
/// of the first line after it.
fn parse_hunk(lines: &[&str], at: usize) -> Result<(Hunk, usize), String> {
    let header = lines[at];
    let (old_start, mut old_left, mut new_left) = parse_header(header)
        .ok_or_else(|| format!("malformed header {header:?}; expected @@ -l,s +l,s @@"))?;
    let mut hunk = Hunk {
        header: header.to_owned(),
        old_start,
        lines: Vec::new(),
        old_no_newline: false,
        new_no_newline: false,
    };
    let mut i = at + 1;
    while old_left > 0 || new_left > 0 {
        let Some(&line) = lines.get(i) else {
            return Err(format!(
                "the patch ends {old_left} old and {new_left} new lines short of what {header:?} promises"
            ));
        };
        // An empty line is a context line whose leading space was stripped.
        let (marker, body) = line.split_at(line.len().min(1));
        let body = body.to_owned();
        match marker {
            " " | "" if old_left > 0 && new_left > 0 => {
                old_left -= 1;
                new_left -= 1;
                hunk.lines.push(Line::Context(body));
            }
            "-" if old_left > 0 => {
                old_left -= 1;
                hunk.lines.push(Line::Remove(body));
            }
            "+" if new_left > 0 => {
                new_left -= 1;
                hunk.lines.push(Line::Add(body));
            }
            "\\" => mark_no_newline(&mut hunk),
            _ => {
                return Err(format!(
                    "patch line {} ({line:?}) does not fit {header:?}: {old_left} old and {new_left} new lines were still expected",
                    i + 1
                ));
            }
        }
        i += 1;
    }
    if lines.get(i).is_some_and(|l| l.starts_with('\\')) {
        mark_no_newline(&mut hunk);
        i += 1;
    }
    Ok((hunk, i))
}

/// Records `\ No newline at end of file` against the line before it.
fn mark_no_newline(hunk: &mut Hunk) {
    match hunk.lines.last() {
        Some(Line::Remove(_)) => hunk.old_no_newline = true,
        Some(Line::Add(_)) => hunk.new_no_newline = true,
        Some(Line::Context(_)) => {
            hunk.old_no_newline = true;
            hunk.new_no_newline = true;
        }
        None => {}
    }
}

/// `@@ -l[,s] +l[,s] @@ ...` → (old start, old count, new count).
fn parse_header(header: &str) -> Option<(usize, usize, usize)> {
    let rest = header.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_len) = range(old)?;
    let (_, new_len) = range(new)?;
    Some((old_start, old_len, new_len))
}

/// What committing one file does.
struct Plan {
    path: PathBuf,
    /// The new content; `None` deletes the file.
    content: Option<String>,
    action: &'static str,
    hunks: usize,
    /// A rename's source, deleted once the new file is written.
    remove_after: Option<PathBuf>,
}

fn plan_file(roots: &Roots, file: &FilePatch, earlier: &[Plan]) -> Result<Plan, PluginError> {
    let resolve = |p: &str| {
        let path = roots.resolve("patch", p)?;
        roots.check_writable("patch", &path)?;
        roots.check_readable("patch", &path)?;
        Ok::<_, PluginError>(path)
    };
    let old_path = file.old.as_deref().map(resolve).transpose()?;
    let new_path = file.new.as_deref().map(resolve).transpose()?;
    // An earlier file of the same patch may already have changed this one.
    let current = |path: &PathBuf| -> Result<Option<String>, PluginError> {
        if let Some(plan) = earlier.iter().rev().find(|p| &p.path == path) {
            return Ok(plan.content.clone());
        }
        if !path.exists() {
            return Ok(None);
        }
        let bytes = std::fs::read(path).map_err(|e| io_error("cannot read", path, &e))?;
        String::from_utf8(bytes).map(Some).map_err(|_| {
            PluginError::failed(format!(
                "{} is not UTF-8 text; it cannot be patched",
                path.display()
            ))
        })
    };
    let shown = |p: &PathBuf| p.display().to_string();
    let (original, path) = match (&old_path, &new_path) {
        (None, Some(new)) => {
            if current(new)?.is_some() {
                return Err(PluginError::failed(format!(
                    "the patch creates {} but it already exists",
                    shown(new)
                )));
            }
            (String::new(), new.clone())
        }
        (Some(old), _) => {
            let text = current(old)?.ok_or_else(|| {
                PluginError::failed(format!(
                    "the patch changes {}, which does not exist",
                    shown(old)
                ))
            })?;
            (text, new_path.clone().unwrap_or_else(|| old.clone()))
        }
        (None, None) => return Err(invalid("patch", "a file with /dev/null on both sides")),
    };
    let patched = apply(&original, &file.hunks)
        .map_err(|e| PluginError::failed(format!("{}, {e}", shown(&path))))?;
    let hunks = file.hunks.len();
    match (&old_path, &new_path) {
        (None, _) => Ok(Plan {
            path,
            content: Some(patched),
            action: "created",
            hunks,
            remove_after: None,
        }),
        (_, None) => {
            if !patched.is_empty() {
                return Err(PluginError::failed(format!(
                    "the patch deletes {} but leaves {} bytes in it: the file has lines the patch does not remove",
                    shown(&path),
                    patched.len()
                )));
            }
            Ok(Plan {
                path,
                content: None,
                action: "deleted",
                hunks,
                remove_after: None,
            })
        }
        (Some(old), Some(new)) if old != new => Ok(Plan {
            path,
            content: Some(patched),
            action: "renamed",
            hunks,
            remove_after: Some(old.clone()),
        }),
        _ => Ok(Plan {
            path,
            content: Some(patched),
            action: "modified",
            hunks,
            remove_after: None,
        }),
    }
}

fn commit(plan: &Plan) -> Result<(), PluginError> {
    match &plan.content {
        Some(text) => {
            if let Some(parent) = plan.path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| io_error("cannot create the folder", parent, &e))?;
            }
            atomic_write(&plan.path, text.as_bytes())?;
            if let Some(from) = &plan.remove_after {
                std::fs::remove_file(from).map_err(|e| io_error("cannot delete", from, &e))?;
            }
        }
        None => std::fs::remove_file(&plan.path)
            .map_err(|e| io_error("cannot delete", &plan.path, &e))?,
    }
    Ok(())
}

/// Where `old` matches `lines` exactly at or after `cursor`: `expected`
/// first, else the nearest place to it.
fn locate(lines: &[(&str, &str)], old: &[&str], expected: usize, cursor: usize) -> Option<usize> {
    let fits = |at: usize| {
        at >= cursor
            && at + old.len() <= lines.len()
            && old
                .iter()
                .zip(&lines[at..])
                .all(|(want, (have, _))| want == have)
    };
    if fits(expected) {
        return Some(expected);
    }
    if old.is_empty() {
        return None;
    }
    (1..=lines.len()).find_map(|d| {
        [expected.checked_sub(d), expected.checked_add(d)]
            .into_iter()
            .flatten()
            .find(|&at| fits(at))
    })
}

/// Describes the first line at `at` where the file differs from `old`.
fn mismatch(lines: &[(&str, &str)], old: &[&str], at: usize) -> String {
    for (k, want) in old.iter().enumerate() {
        match lines.get(at + k) {
            None => {
                return format!(
                    "expected line {} to be {want:?}, but the file has only {} lines, and the hunk's lines match nowhere else",
                    at + k + 1,
                    lines.len()
                );
            }
            Some((have, _)) if have != want => {
                return format!(
                    "line {} of the file is {have:?} but the patch expects {want:?}, and the hunk's lines match nowhere else",
                    at + k + 1
                );
            }
            Some(_) => {}
        }
    }
    format!(
        "the hunk's position (line {}) is outside the file ({} lines) or overlaps the hunk before",
        at + 1,
        lines.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch_one(text: &str, diff: &str) -> Result<String, String> {
        let files = parse(diff)?;
        apply(text, &files[0].hunks)
    }

    #[test]
    fn applies_exactly_or_at_the_nearest_match() {
        let base = "a\nb\nc\nd\ne\n";
        let cases: &[(&str, &str, &str)] = &[
            // Replace one line.
            (
                "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n",
                base,
                "a\nb\nC\nd\ne\n",
            ),
            // Header off by two: found nearby.
            (
                "--- f\n+++ f\n@@ -4,2 +4,2 @@\n b\n-c\n+X\n",
                base,
                "a\nb\nX\nd\ne\n",
            ),
            // Insert at the top, no context.
            (
                "--- f\n+++ f\n@@ -0,0 +1 @@\n+top\n",
                base,
                "top\na\nb\nc\nd\ne\n",
            ),
            // Append at the end.
            (
                "--- f\n+++ f\n@@ -5 +5,2 @@\n e\n+f\n",
                base,
                "a\nb\nc\nd\ne\nf\n",
            ),
            // Drop the final newline.
            (
                "--- f\n+++ f\n@@ -5 +5 @@\n-e\n+e\n\\ No newline at end of file\n",
                base,
                "a\nb\nc\nd\ne",
            ),
            // CRLF files keep CRLF.
            (
                "--- f\n+++ f\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n",
                "x\r\ny\r\n",
                "x\r\nz\r\n",
            ),
            // Two hunks.
            (
                "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+A\n@@ -5 +5 @@\n-e\n+E\n",
                base,
                "A\nb\nc\nd\nE\n",
            ),
        ];
        for (diff, text, want) in cases {
            assert_eq!(patch_one(text, diff).as_deref(), Ok(*want), "{diff}");
        }
    }

    #[test]
    fn failures_name_the_hunk_and_line() {
        let base = "a\nb\nc\n";
        let cases: &[(&str, &str)] = &[
            (
                "--- f\n+++ f\n@@ -2 +2 @@\n-B\n+x\n",
                "hunk 1 (@@ -2 +2 @@): line 2 of the file is \"b\" but the patch expects \"B\"",
            ),
            ("--- f\n+++ f\n@@ -2,2 +2,2 @@\n b\n", "the patch ends"),
            ("--- f\n+++ f\n@@ -x +1 @@\n", "malformed header"),
            ("--- f\n+++ f\n", "no @@ hunks"),
            ("hello", "no file headers"),
            (
                "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n*b\n b\n",
                "does not fit",
            ),
        ];
        for (diff, want) in cases {
            let err = patch_one(base, diff).unwrap_err();
            assert!(err.contains(want), "{diff:?}: {err}");
        }
    }

    #[test]
    fn parses_several_files_with_dev_null() {
        let diff = "diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+new\n--- a/y\t2024-01-01\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n";
        let files = parse(diff).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(
            (files[0].old.as_deref(), files[0].new.as_deref()),
            (None, Some("x"))
        );
        assert_eq!(
            (files[1].old.as_deref(), files[1].new.as_deref()),
            (Some("y"), None)
        );
    }
}
