//! The import graph of one crate's files, read from its source, so a test
//! can fail when a change closes a circle between modules.
//!
//! A file imports another when it names a path into it: in a private `use`
//! (groups and nested groups expanded), inline (`crate::store::now_ms()`,
//! `super::LOCAL_CHANNEL`), or through one of its own child modules
//! (`gate::Gate` in the file that declares `mod gate;`). A path is followed
//! through the modules it names to the deepest one, and through `pub use`
//! re-exports to the file that defines the item: a `pub use` is a way
//! through a module, not a need of its code, so a parent that re-exports
//! its child's type is not mistaken for a link in a circle. A module's own
//! parts (the files under it) may use what it defines, as a method's body
//! uses its type: their imports of it are not counted, so a circle is
//! always between files none of which contains another. Comments and
//! the file's `#[cfg(test)] mod tests` are left out: a unit test may use
//! anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The files of one crate and who imports whom.
pub struct Graph {
    /// Each module file, relative to the crate's `src`.
    pub files: Vec<PathBuf>,
    /// For each file, the files it imports.
    pub imports: Vec<BTreeSet<usize>>,
}

/// A circle: its files, each with the files of the circle it imports.
pub type Circle = Vec<(PathBuf, Vec<PathBuf>)>;

impl Graph {
    /// Reads the crate whose sources are under `src` (`lib.rs` or
    /// `main.rs` at its top).
    pub fn read(src: &Path) -> Graph {
        let mut modules = BTreeMap::new();
        collect(src, src, &mut modules);
        let paths: Vec<Vec<String>> = modules.keys().cloned().collect();
        let index: BTreeMap<Vec<String>, usize> = paths
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, p)| (p, i))
            .collect();
        let files: Vec<PathBuf> = modules.values().cloned().collect();
        let sources: Vec<String> = files
            .iter()
            .map(|f| code_of(&std::fs::read_to_string(src.join(f)).unwrap_or_default()))
            .collect();
        let exports: Vec<BTreeMap<String, Vec<String>>> = paths
            .iter()
            .zip(&sources)
            .map(|(module, code)| {
                let mut names = BTreeMap::new();
                for (public, path) in use_paths(code) {
                    if let (true, Some(path)) = (public, absolute(&path, module, &index)) {
                        if let Some(name) = path.last() {
                            names.insert(name.clone(), path);
                        }
                    }
                }
                names
            })
            .collect();
        let resolver = Resolver {
            index: &index,
            exports: &exports,
        };
        let imports = paths
            .iter()
            .zip(&sources)
            .enumerate()
            .map(|(me, (module, code))| {
                let mut found = BTreeSet::new();
                for path in named_paths(code, module, &index) {
                    // A module's parts may use what it defines: only an
                    // import of a file that does not contain this one counts.
                    if let Some(target) = resolver.file_of(&path) {
                        if target != me && !module.starts_with(&paths[target]) {
                            found.insert(target);
                        }
                    }
                }
                found
            })
            .collect();
        Graph { files, imports }
    }

    /// Every circle: each strongly connected set of two or more files.
    pub fn circles(&self) -> Vec<Circle> {
        strongly_connected(&self.imports)
            .into_iter()
            .filter(|set| set.len() > 1)
            .map(|set| {
                set.iter()
                    .map(|&i| {
                        let within = self.imports[i].iter().filter(|j| set.contains(j));
                        let within = within.map(|&j| self.files[j].clone()).collect();
                        (self.files[i].clone(), within)
                    })
                    .collect()
            })
            .collect()
    }
}

/// Module path (from the crate root) -> file, relative to `src`.
fn collect(src: &Path, dir: &Path, out: &mut BTreeMap<Vec<String>, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(src, &path, out);
            continue;
        }
        let Ok(relative) = path.strip_prefix(src) else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let mut module: Vec<String> = relative
            .with_extension("")
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        match module.last().map(String::as_str) {
            Some("lib" | "main") if module.len() == 1 => module.clear(),
            Some("mod") => {
                module.pop();
            }
            _ => {}
        }
        // A binary beside a library reaches it by the crate's name, not
        // `crate::`: it is a crate of its own.
        if relative == Path::new("main.rs") && src.join("lib.rs").exists() {
            continue;
        }
        out.insert(module, relative.to_path_buf());
    }
}

/// The code of a file: comments removed, string literals emptied, and its
/// unit tests cut off.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                out.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push('"');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Each `use` of `code` expanded into whole paths, with whether it is a
/// public re-export.
fn use_paths(code: &str) -> Vec<(bool, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let tail = &rest[at + 3..];
        let Some(end) = tail.find(';') else { break };
        let tree = without_aliases(&tail[..end]);
        for path in expand(&tree) {
            out.push((public, path));
        }
        rest = &tail[end..];
    }
    out
}

/// A use tree without whitespace and without its `as` renames
/// (`a::{b as c, d}` -> `a::{b,d}`).
fn without_aliases(tree: &str) -> String {
    let mut out = String::new();
    let mut words = tree.split_whitespace();
    while let Some(word) = words.next() {
        if word == "as" {
            let alias = words.next().unwrap_or_default();
            out.extend(
                alias
                    .chars()
                    .filter(|c| !(c.is_alphanumeric() || *c == '_')),
            );
        } else {
            out.push_str(word);
        }
    }
    out
}

/// The byte offset of `word` as a whole word at a statement's start.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let starts = before.is_none_or(|c| c.is_whitespace() || c == ';' || c == '}' || c == '{');
        if starts && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e` (as segments);
/// `self` in a group means the group's own path.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let Some(open) = tree.find('{') else {
        let segments: Vec<String> = tree
            .split("::")
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_owned)
            .collect();
        return vec![segments];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut out = Vec::new();
    for part in split_top(inner) {
        for mut path in expand(part) {
            if path.first().is_some_and(|s| s == "self") {
                path.remove(0);
            }
            out.push(prefix.iter().cloned().chain(path).collect());
        }
    }
    out
}

/// Splits `a, b::{c, d}, e` at its top-level commas.
fn split_top(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

/// Every path `code` names into its own crate, absolute (from the root).
fn named_paths(
    code: &str,
    module: &[String],
    index: &BTreeMap<Vec<String>, usize>,
) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = use_paths(code)
        .into_iter()
        .filter(|(public, _)| !public)
        .filter_map(|(_, path)| absolute(&path, module, index))
        .collect();
    // Inline paths: every run of `ident::ident::...` outside the `use`s.
    let code = without_uses(code);
    let code = code.as_str();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let starts = (c.is_ascii_alphabetic() || c == b'_')
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if !starts {
            i += 1;
            continue;
        }
        let mut end = i;
        let mut segments = Vec::new();
        loop {
            let from = end;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            segments.push(code[from..end].to_owned());
            let next = end + 2;
            let more = code[end..].starts_with("::")
                && next < bytes.len()
                && (bytes[next].is_ascii_alphabetic() || bytes[next] == b'_');
            if !more {
                break;
            }
            end = next;
        }
        if segments.len() > 1 {
            if let Some(path) = absolute(&segments, module, index) {
                out.push(path);
            }
        }
        i = end.max(i + 1);
    }
    out
}

/// `code` with every `use` statement blanked out.
fn without_uses(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `path`, written in `module`, from the crate root; `None` for a path
/// into another crate.
fn absolute(
    path: &[String],
    module: &[String],
    index: &BTreeMap<Vec<String>, usize>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        _ => {
            // A child module of this one, named bare.
            let mut child = module.to_vec();
            child.push(first.clone());
            if !index.contains_key(&child) {
                return None;
            }
            module.to_vec()
        }
    };
    let skip = usize::from(matches!(first.as_str(), "crate" | "self"));
    base.extend(path[skip..].iter().cloned());
    Some(base)
}

struct Resolver<'a> {
    index: &'a BTreeMap<Vec<String>, usize>,
    exports: &'a [BTreeMap<String, Vec<String>>],
}

impl Resolver<'_> {
    /// The file that defines what the absolute `path` names: the deepest
    /// module it walks into, or where that module's re-export leads.
    fn file_of(&self, path: &[String]) -> Option<usize> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let mut depth = 0;
            while depth < path.len() && self.index.contains_key(&path[..=depth]) {
                depth += 1;
            }
            let file = *self.index.get(&path[..depth])?;
            let Some(name) = path.get(depth) else {
                return Some(file);
            };
            match self.exports[file].get(name) {
                Some(target) if target[..] != path[..=depth] => {
                    let mut next = target.clone();
                    next.extend(path[depth + 1..].iter().cloned());
                    path = next;
                }
                _ => return Some(file),
            }
        }
        None
    }
}

/// Tarjan's strongly connected components of `edges`.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        next: usize,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                set.push(w);
                if w == v {
                    break;
                }
            }
            set.reverse();
            s.out.push(set);
        }
    }
    let n = edges.len();
    let mut state = State {
        edges,
        next: 0,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        out: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.out
}
