//! The catalog: every script file hearth knows, its last good version and
//! its current error, and the index of tool names built from them.
//!
//! A catalog is immutable. A reload builds a new one and swaps it in whole,
//! so a call sees either the old version of a tool or the new one, never a
//! half-loaded mix; a call already running keeps the `Arc` it took.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use hearth_sdk::protocol::ToolSpec;

use super::skill::SkillDoc;

/// A Lua tool ready to run.
#[derive(Debug)]
pub struct LuaTool {
    /// Name, description, schema, risk.
    pub spec: ToolSpec,
    /// The file it was loaded from.
    pub file: PathBuf,
    /// The chunk name in messages (`tools/convert.lua`).
    pub chunk: String,
    /// The source that was validated.
    pub source: Arc<str>,
    /// Its `hearth.kv` namespace: the skill's name, or the tool's.
    pub namespace: String,
    /// Its own deadline, if it set one.
    pub deadline_ms: Option<u64>,
}

/// A Lua library (`lib/<name>.lua`), which tools load with `require`.
#[derive(Debug)]
pub struct Library {
    /// What `require` takes.
    pub name: String,
    /// The file it was loaded from.
    pub file: PathBuf,
    /// The chunk name in messages (`lib/util.lua`).
    pub chunk: String,
    /// The source that was validated.
    pub source: Arc<str>,
    /// SHA-256 of the source, hex: a worker that compiled this version
    /// already is not sent the source again.
    pub hash: String,
}

/// A loaded skill.
#[derive(Debug, PartialEq, Eq)]
pub struct Skill {
    /// The parsed `SKILL.md`.
    pub doc: SkillDoc,
    /// The skill's folder.
    pub dir: PathBuf,
}

/// A script that failed to load (or a name clash).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// The line, when known.
    pub line: Option<u32>,
    /// What is wrong.
    pub message: String,
}

/// What one file contributed.
#[derive(Clone, Debug)]
pub enum Loaded {
    /// A Lua tool.
    Tool(Arc<LuaTool>),
    /// A skill's `SKILL.md`.
    Skill(Arc<Skill>),
    /// A library.
    Library(Arc<Library>),
}

/// One file: its last good version, and its error since then, if any.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    /// The last version that loaded; it keeps serving through errors.
    pub good: Option<Loaded>,
    /// The current version's error.
    pub error: Option<Problem>,
}

/// Every file, in load order, and the tool index.
#[derive(Default)]
pub struct Catalog {
    files: BTreeMap<(usize, PathBuf), Entry>,
    tools: HashMap<String, Arc<LuaTool>>,
    skills: BTreeMap<String, Arc<Skill>>,
    libraries: HashMap<String, Arc<Library>>,
    clashes: Vec<Problem>,
}

impl Catalog {
    /// Builds the index over `files` (keyed by root index, then path, so
    /// bundled scripts come before the agent's). A name that is reserved
    /// (plugin and built-in tools) or already taken is a clash.
    pub fn new(files: BTreeMap<(usize, PathBuf), Entry>, reserved: &HashSet<String>) -> Catalog {
        let mut tools: HashMap<String, Arc<LuaTool>> = HashMap::new();
        let mut skills = BTreeMap::new();
        let mut libraries = HashMap::new();
        let mut clashes = Vec::new();
        for entry in files.values() {
            match &entry.good {
                Some(Loaded::Tool(tool)) => {
                    let name = &tool.spec.name;
                    let taken_by = if reserved.contains(name) {
                        Some("a plugin or built-in tool".to_owned())
                    } else {
                        tools.get(name).map(|t| t.file.display().to_string())
                    };
                    match taken_by {
                        Some(other) => clashes.push(Problem {
                            file: tool.file.clone(),
                            line: None,
                            message: format!("tool name {name} is already taken by {other}; this one is not loaded"),
                        }),
                        None => {
                            tools.insert(name.clone(), Arc::clone(tool));
                        }
                    }
                }
                Some(Loaded::Skill(skill)) => {
                    skills
                        .entry(skill.doc.name.clone())
                        .or_insert_with(|| Arc::clone(skill));
                }
                // As with tools, a name is taken by whoever loads first:
                // the agent cannot change what a bundled tool requires.
                Some(Loaded::Library(library)) => match libraries.get(&library.name) {
                    Some(first) => {
                        let first: &Arc<Library> = first;
                        clashes.push(Problem {
                            file: library.file.clone(),
                            line: None,
                            message: format!(
                                "library name {} is already taken by {}; this one is not loaded",
                                library.name,
                                first.file.display()
                            ),
                        });
                    }
                    None => {
                        libraries.insert(library.name.clone(), Arc::clone(library));
                    }
                },
                None => {}
            }
        }
        Catalog {
            files,
            tools,
            skills,
            libraries,
            clashes,
        }
    }

    /// The files, for building the next catalog.
    pub fn files(&self) -> &BTreeMap<(usize, PathBuf), Entry> {
        &self.files
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&Arc<LuaTool>> {
        self.tools.get(name)
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> Vec<Arc<LuaTool>> {
        let mut tools: Vec<_> = self.tools.values().cloned().collect();
        tools.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        tools
    }

    /// Every skill, sorted by name.
    pub fn skills(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.skills.values()
    }

    /// A skill by name.
    pub fn skill(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.get(name)
    }

    /// A library by name.
    pub fn library(&self, name: &str) -> Option<&Arc<Library>> {
        self.libraries.get(name)
    }

    /// Every current problem: load errors, then name clashes.
    pub fn problems(&self) -> Vec<Problem> {
        self.files
            .values()
            .filter_map(|e| e.error.clone())
            .chain(self.clashes.iter().cloned())
            .collect()
    }
}
