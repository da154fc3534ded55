//! Lua tools and skills: loaded from disk, validated in a sandbox, swapped
//! in atomically, and run in worker processes under a deadline.
//!
//! Scripts live in roots, each with `lib/`, `tools/` and `skills/`: the
//! bundled `scripts/`, its `examples/` when the config's `examples` is on
//! (Lua examples for script authors, kept out of the model's tools by
//! default), and `$HEARTH_HOME` (where the agent writes its own). A
//! tool is `tools/<file>.lua`; a skill is `skills/<name>/SKILL.md` plus any
//! `skills/<name>/*.lua`, whose tools are named `<name>.<tool>`; a library
//! is `lib/<name>.lua`, loaded with `require("<name>")`. A name (tool or
//! library) is taken by whoever loads first, bundled scripts before the
//! agent's. Libraries load first, and a change to one re-validates the
//! tools that require libraries.
//!
//! Every content of a file under `$HEARTH_HOME` is kept as a version
//! (`history`), whoever saved it: `write_script` records it before it
//! writes, a reload records what an editor saved, a deletion is recorded
//! too.
//!
//! - `wire`: the line protocol between host and worker;
//! - `worker`: the worker process (the sandbox and `hearth.*`);
//! - `pool`: the host's worker processes and the deadline kill;
//! - `catalog`: the loaded scripts and the tool index, swapped whole;
//! - `skill`: `SKILL.md` parsing;
//! - `host_calls`: what a running script may ask of the host;
//! - `history`: versions and rollback of the agent's scripts;
//! - `watch`: hot reload;
//! - `first_load`: the latch callers wait on while the first load runs
//!   on its own thread.

mod catalog;
mod first_load;
mod history;
mod host_calls;
pub(crate) mod pool;
mod skill;
pub mod watch;
pub mod wire;
pub mod worker;

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use first_load::FirstLoad;
use hearth_sdk::protocol::{Risk, ToolSpec};
use serde_json::{Value, json};

pub use catalog::{Catalog, Library, LuaTool, Problem, Skill};
pub use wire::{FailureKind, ScriptFailure};

use catalog::{Entry, Loaded};
use hearth_base::caller::Caller;
use hearth_base::config::ScriptsConfig;
use hearth_base::store::Cold;
use hearth_data::workshop::versions::{Kind, Versions, sha256_hex};
use pool::Pool;
use wire::ToWorker;

/// The largest script file read.
pub const MAX_SCRIPT_BYTES: u64 = 256 << 10;

/// How a script's `hearth.tool` and `hearth.db` calls reach the tools: the
/// tool registry implements it, so scripting never imports the registry
/// that runs its tools (docs/ARCHITECTURE.md, "Layers").
pub trait ToolCalls {
    /// Calls tool `name` with `args` as `caller`, `depth` calls deep; its
    /// result, or the error as the script sees it.
    fn call_as(
        &self,
        caller: &Caller,
        name: &str,
        args: Value,
        depth: u32,
    ) -> Result<Value, String>;
}

/// The folder of the bundled scripts that holds the Lua examples, a root
/// of its own (`examples/tools/*.lua`).
const EXAMPLES_DIR: &str = "examples";

/// The script subsystem.
pub struct Scripts {
    roots: Vec<PathBuf>,
    config: ScriptsConfig,
    pool: Pool,
    catalog: RwLock<Arc<Catalog>>,
    reserved: HashSet<String>,
    kv: Cold,
    http: host_calls::Http,
    versions: Versions,
    reload: Mutex<()>,
    first_load: FirstLoad,
    /// Hot reload, when `config.watch` is on: started by the first load,
    /// stopped by [`Scripts::stop_watching`].
    watcher: Mutex<Option<watch::Watcher>>,
    /// Whether the thread that retires idle workers runs (`keep_reaping`).
    reaping: Mutex<bool>,
    /// This subsystem, for that thread.
    me: Weak<Scripts>,
}

/// Why the script subsystem could not start.
#[derive(Debug, thiserror::Error)]
pub enum ScriptsError {
    /// `$HEARTH_HOME/tools` or `skills` could not be created.
    #[error("cannot create {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What a file is, by where it sits in its root.
enum FileKind {
    /// `tools/<x>.lua`, or `skills/<skill>/<x>.lua` with the skill's name.
    Tool(Option<String>),
    /// `skills/<skill>/SKILL.md`.
    SkillDoc(String),
    /// `lib/<name>.lua`, with the name `require` takes.
    Library(String),
}

impl Scripts {
    /// Creates the agent's script folders, starts loading every script on
    /// a thread of its own, and returns the subsystem ([`Scripts::catalog`]
    /// waits for that load). `examples` loads the bundled Lua examples; `reserved`
    /// are tool names Lua may not take; the kv store is kept on `kv`, the
    /// shared cold connection; `hearth.http` puts `secrets` into requests;
    /// workers start under `worker_floor`.
    pub fn start(
        config: &ScriptsConfig,
        examples: bool,
        home: &Path,
        kv: Cold,
        reserved: HashSet<String>,
        secrets: Arc<hearth_base::secrets::Secrets>,
        worker_floor: hearth_sdk::protocol::Floor,
    ) -> Result<Arc<Scripts>, ScriptsError> {
        for dir in ["lib", "tools", "skills"] {
            let path = home.join(dir);
            std::fs::create_dir_all(&path)
                .map_err(|source| ScriptsError::CreateDir { path, source })?;
        }
        let bundled = bundled_dir(config);
        let examples = bundled
            .as_ref()
            .map(|dir| dir.join(EXAMPLES_DIR))
            .filter(|dir| examples && dir.is_dir());
        let mut roots: Vec<PathBuf> = bundled.into_iter().chain(examples).collect();
        roots.push(home.to_owned());
        let program = worker_program();
        let scripts = Arc::new_cyclic(|me| Scripts {
            roots,
            config: config.clone(),
            pool: Pool::new(program, config.memory_mb, config.workers, worker_floor),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            reserved,
            kv: kv.clone(),
            http: host_calls::Http::new(&config.http, secrets),
            versions: Versions::new(kv.clone()),
            reload: Mutex::new(()),
            first_load: FirstLoad::default(),
            watcher: Mutex::new(None),
            reaping: Mutex::new(false),
            me: me.clone(),
        });
        // The first load runs a worker over every file, which takes longer
        // than the rest of start-up together, and nothing needs it before
        // the first turn: it runs on a thread of its own, and whoever asks
        // for the catalog waits for it (`catalog`).
        scripts.record_home_scripts();
        let loader = Arc::clone(&scripts);
        let spawned = std::thread::Builder::new()
            .name("hearth-lua-load".into())
            .spawn(move || loader.load_everything());
        if let Err(e) = spawned {
            tracing::warn!("scripts load before the daemon is ready: no thread for it: {e}");
            scripts.load_everything();
        }
        Ok(scripts)
    }

    /// The current catalog, once the first load is done (a caller during
    /// start-up waits for it, so nobody sees the scripts half loaded).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.first_load.wait();
        self.current()
    }

    /// The catalog as it is now, without waiting for the first load.
    fn current(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Records the agent's scripts (under `$HEARTH_HOME`) as they are at
    /// start as versions, before the daemon is ready: the load that does
    /// this too runs later, and an edit made the moment the daemon is ready
    /// must be a version of its own, not the first one seen.
    fn record_home_scripts(&self) {
        let home = self.roots.len() - 1;
        for file in self.scan_root(home) {
            if let Ok(source) = read_script(&file) {
                self.record_by_hand(home, &file, Some(&source));
            }
        }
    }

    /// Scans every root, loads what it finds and marks the first load
    /// done, whatever happens on the way.
    fn load_everything(&self) {
        let _done = self.first_load.done_on_drop();
        let began = std::time::Instant::now();
        // Watching first, then loading: a file saved before its folder is
        // watched is read by this load, one saved after is an event, so
        // no save is missed. Here and not on the daemon's start-up path:
        // each watch is a round trip to notify's thread.
        if self.config.watch
            && let Some(me) = self.me.upgrade()
        {
            match watch::start(me) {
                Ok(watcher) => {
                    *self.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(watcher)
                }
                Err(e) => {
                    tracing::warn!("script hot reload is off: cannot watch the script folders: {e}")
                }
            }
        }
        let files = self.scan();
        self.reload_paths(&files);
        // Loading used a worker; an idle daemon keeps none.
        self.pool.retire_idle(Duration::ZERO);
        let catalog = self.current();
        tracing::info!(
            tools = catalog.tools().len(),
            problems = catalog.problems().len(),
            took_ms = began.elapsed().as_millis() as u64,
            "scripts loaded"
        );
    }

    /// Stops hot reload (the daemon, at shutdown); waits for the first
    /// load, which starts it.
    pub fn stop_watching(&self) {
        self.first_load.wait();
        let watcher = self
            .watcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        drop(watcher);
    }

    /// The script roots (bundled first, then the examples when on, then
    /// `$HEARTH_HOME`).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The root `path` is in: the deepest that holds it, since the
    /// examples' root is inside the bundled one.
    fn root_of(&self, path: &Path) -> Option<usize> {
        (0..self.roots.len())
            .filter(|&root| path.starts_with(&self.roots[root]))
            .max_by_key(|&root| self.roots[root].components().count())
    }

    /// Re-reads `paths` (files or folders, changed, new or deleted) and
    /// swaps in the resulting catalog. Errors are recorded, not returned:
    /// the last good version of a file keeps serving.
    pub fn reload_paths(&self, paths: &[PathBuf]) {
        let _one_at_a_time = self.reload.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.current();
        let mut files = current.files().clone();
        let mut libraries_changed = false;
        // Files loaded in this pass after the last library was: they saw
        // every library's new version already (a folder scan loads `lib/`
        // first), so they need no second load below.
        let mut current_with_libraries = HashSet::new();
        let mut refresh =
            |files: &mut BTreeMap<(usize, PathBuf), Entry>, root: usize, file: &Path| {
                self.refresh(files, root, file);
                if file.starts_with(self.roots[root].join("lib")) {
                    current_with_libraries.clear();
                } else {
                    current_with_libraries.insert((root, file.to_owned()));
                }
            };
        for path in paths {
            let Some(root) = self.root_of(path) else {
                continue;
            };
            libraries_changed |= path.starts_with(self.roots[root].join("lib"));
            if path.is_dir() {
                for file in self.scan_dir(root, path) {
                    refresh(&mut files, root, &file);
                }
                // Files that were in the folder but are gone now.
                let stale: Vec<_> = files
                    .keys()
                    .filter(|(r, f)| *r == root && f.starts_with(path) && !f.exists())
                    .cloned()
                    .collect();
                for key in stale {
                    self.forget(&mut files, key);
                }
            } else if path.exists() {
                refresh(&mut files, root, path);
            } else {
                // A deleted file, or a deleted folder and all it held.
                let gone: Vec<_> = files
                    .keys()
                    .filter(|(r, f)| *r == root && f.starts_with(path))
                    .cloned()
                    .collect();
                for key in gone {
                    self.forget(&mut files, key);
                }
            }
        }
        if libraries_changed {
            // A tool that requires a library is checked against its new
            // version; one that no longer loads keeps its last good self.
            let dependents: Vec<(usize, PathBuf)> = files
                .iter()
                .filter(|(_, e)| matches!(&e.good, Some(Loaded::Tool(t)) if t.source.contains("require")))
                .map(|(k, _)| k.clone())
                .filter(|k| !current_with_libraries.contains(k))
                .collect();
            for (root, file) in dependents {
                self.refresh(&mut files, root, &file);
            }
        }
        let next = Catalog::new(files, &self.reserved);
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
    }

    /// Runs `tool` with validated `args`. `depth` counts nested
    /// `hearth.tool` calls; `registry` (the tool registry) serves them.
    pub fn call(
        &self,
        catalog: &Catalog,
        tool: &LuaTool,
        args: Value,
        depth: u32,
        caller: &Caller,
        registry: &dyn ToolCalls,
    ) -> Result<Value, ScriptFailure> {
        let deadline_ms = tool
            .deadline_ms
            .unwrap_or(self.config.deadline_ms)
            .min(self.config.max_deadline_ms);
        let request = ToWorker::Call {
            chunk: tool.chunk.clone(),
            source: tool.source.to_string(),
            args,
            ctx: json!({ "tool": tool.spec.name, "deadline_ms": deadline_ms }),
            deadline_ms,
        };
        let mut host = |method: &str, params: Value| {
            let caller = caller.through(&tool.spec.name);
            host_calls::handle(
                self, catalog, tool, depth, &caller, registry, method, params,
            )
        };
        let answer = self.pool.request(
            &tool.chunk,
            &request,
            Duration::from_millis(deadline_ms),
            depth > 0,
            &mut host,
        );
        self.keep_reaping();
        answer
    }

    /// Validates and writes an agent script (`tools/<x>.lua`,
    /// `lib/<x>.lua`, `skills/<skill>/SKILL.md` or `skills/<skill>/<x>.lua`,
    /// relative to `$HEARTH_HOME`), atomically, records it as a version by
    /// `author` (`note` says what the save was), and answers with the load
    /// result.
    pub fn write_script(
        &self,
        relative: &str,
        source: &str,
        author: &str,
        note: &str,
    ) -> Result<Value, String> {
        let home = self.roots.last().ok_or("no script root")?;
        let root = self.roots.len() - 1;
        let rel = Path::new(relative);
        if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(format!(
                "path {relative:?} must be relative to $HEARTH_HOME, without `..`"
            ));
        }
        let path = home.join(rel);
        let kind = classify(home, &path).ok_or_else(|| {
            format!("path {relative:?} is not a script: use tools/<name>.lua, lib/<name>.lua, skills/<skill>/SKILL.md or skills/<skill>/<name>.lua")
        })?;
        if source.len() as u64 > MAX_SCRIPT_BYTES {
            return Err(format!("the script is over {MAX_SCRIPT_BYTES} bytes"));
        }
        // Refuse before writing: a broken script never replaces a good one.
        let catalog = self.catalog();
        let loaded = self
            .load(root, &path, &kind, source, &|name| {
                catalog.library(name).cloned()
            })
            .map_err(|problem| describe_problem(&problem))?;
        if let Loaded::Tool(tool) = &loaded {
            let name = &tool.spec.name;
            let taken_by = match self.catalog().tool(name) {
                _ if self.reserved.contains(name) => Some("a plugin or built-in tool".to_owned()),
                Some(other) if other.file != path => Some(other.file.display().to_string()),
                _ => None,
            };
            if let Some(other) = taken_by {
                return Err(format!(
                    "tool name {name} is already taken by {other}; choose another name"
                ));
            }
        }
        let dir = path.parent().ok_or("no parent directory")?;
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // Recorded first: the reload that follows sees this content as
        // already recorded and adds nothing.
        let version = self
            .versions
            .record(Kind::Script, relative, Some(source), author, note)
            .map_err(|e| format!("cannot record the version: {e}"))?;
        write_atomically(&path, source.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        self.reload_paths(std::slice::from_ref(&path));
        let catalog = self.catalog();
        let clash = catalog.problems().into_iter().find(|p| p.file == path);
        match clash {
            Some(problem) => Err(describe_problem(&problem)),
            None => Ok(json!({ "written": path, "loaded": true, "version": version })),
        }
    }

    /// Loads one file into `files`, keeping the last good version on error.
    fn refresh(&self, files: &mut BTreeMap<(usize, PathBuf), Entry>, root: usize, path: &Path) {
        let Some(kind) = classify(&self.roots[root], path) else {
            return;
        };
        let source = read_script(path);
        if let Ok(source) = &source {
            self.record_by_hand(root, path, Some(source));
        }
        let outcome = source.and_then(|source| {
            self.load(root, path, &kind, &source, &|name| {
                library_in(files, name).or_else(|| self.library_on_disk(name))
            })
        });
        let entry = files.entry((root, path.to_owned())).or_default();
        match outcome {
            Ok(loaded) => {
                tracing::info!(file = %path.display(), "script loaded");
                entry.good = Some(loaded);
                entry.error = None;
            }
            Err(problem) => {
                tracing::warn!(file = %path.display(), line = problem.line, "script not loaded: {}", problem.message);
                entry.error = Some(problem);
            }
        }
    }

    /// Library `name` as its file is now, for a load that requires one not
    /// loaded yet (it loads later in the same scan, or it is part of a
    /// cycle, which then shows as one).
    fn library_on_disk(&self, name: &str) -> Option<Arc<Library>> {
        let file = self
            .roots
            .iter()
            .map(|root| root.join("lib").join(format!("{name}.lua")))
            .find(|file| file.is_file())?;
        let source = read_script(&file).ok()?;
        Some(Arc::new(Library {
            name: name.to_owned(),
            chunk: format!("lib/{name}.lua"),
            hash: sha256_hex(&source),
            source: source.into(),
            file,
        }))
    }

    /// Drops a file that is gone from `files`, recording the deletion.
    fn forget(&self, files: &mut BTreeMap<(usize, PathBuf), Entry>, key: (usize, PathBuf)) {
        self.record_by_hand(key.0, &key.1, None);
        files.remove(&key);
    }

    /// Validates one script's source; `libraries` serves the `require`s
    /// of its top level.
    fn load(
        &self,
        root: usize,
        path: &Path,
        kind: &FileKind,
        source: &str,
        libraries: &dyn Fn(&str) -> Option<Arc<Library>>,
    ) -> Result<Loaded, Problem> {
        let problem = |line, message| Problem {
            file: path.to_owned(),
            line,
            message,
        };
        let chunk = path
            .strip_prefix(&self.roots[root])
            .unwrap_or(path)
            .display()
            .to_string();
        match kind {
            FileKind::SkillDoc(folder) => {
                let doc = skill::parse(source).map_err(|(line, m)| problem(Some(line), m))?;
                if &doc.name != folder {
                    return Err(problem(
                        None,
                        format!(
                            "the skill's name {:?} must match its folder {folder:?}",
                            doc.name
                        ),
                    ));
                }
                let dir = path.parent().unwrap_or(path).to_owned();
                Ok(Loaded::Skill(Arc::new(Skill { doc, dir })))
            }
            FileKind::Tool(skill) => {
                let request = ToWorker::Load {
                    chunk: chunk.clone(),
                    source: source.to_owned(),
                    deadline_ms: self.config.load_deadline_ms,
                };
                let spec = self
                    .validate(&chunk, &request, libraries)
                    .map_err(|f| problem(f.line, f.message))?;
                let tool = tool_from_spec(spec, skill.as_deref())
                    .map_err(|m| problem(None, format!("{chunk}: {m}")))?;
                let namespace = skill.clone().unwrap_or_else(|| tool.spec.name.clone());
                Ok(Loaded::Tool(Arc::new(LuaTool {
                    deadline_ms: tool.deadline_ms,
                    spec: tool.spec,
                    file: path.to_owned(),
                    chunk,
                    source: source.into(),
                    namespace,
                })))
            }
            FileKind::Library(name) => {
                let request = ToWorker::LoadLibrary {
                    chunk: chunk.clone(),
                    name: name.clone(),
                    source: source.to_owned(),
                    deadline_ms: self.config.load_deadline_ms,
                };
                self.validate(&chunk, &request, libraries)
                    .map_err(|f| problem(f.line, f.message))?;
                Ok(Loaded::Library(Arc::new(Library {
                    name: name.clone(),
                    file: path.to_owned(),
                    chunk,
                    source: source.into(),
                    hash: sha256_hex(source),
                })))
            }
        }
    }

    /// Runs a load request in a worker; only `require` is served meanwhile.
    fn validate(
        &self,
        chunk: &str,
        request: &ToWorker,
        libraries: &dyn Fn(&str) -> Option<Arc<Library>>,
    ) -> Result<Value, ScriptFailure> {
        let mut host = |method: &str, params: Value| match method {
            "require" => host_calls::require(libraries, &params),
            _ => Err(format!(
                "{method} is not available while a script loads; call it from run()"
            )),
        };
        let answer = self.pool.request(
            chunk,
            request,
            Duration::from_millis(self.config.load_deadline_ms),
            false,
            &mut host,
        );
        self.keep_reaping();
        answer
    }

    /// Makes sure idle workers are retired: a helper thread runs while the
    /// pool has workers and ends with the last one, so an idle daemon has
    /// neither workers nor the thread (nor its wake-ups).
    fn keep_reaping(&self) {
        // The first load retires its worker itself when it ends.
        if !self.first_load.is_done() {
            return;
        }
        let mut running = self.reaping.lock().unwrap_or_else(|p| p.into_inner());
        if *running || self.pool.live() == 0 {
            return;
        }
        let idle = Duration::from_millis(self.config.worker_idle_ms);
        let every = (idle / 2).max(Duration::from_millis(100));
        let me = self.me.clone();
        let spawned = std::thread::Builder::new()
            .name("hearth-lua-reaper".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(every);
                    let Some(scripts) = me.upgrade() else {
                        return;
                    };
                    scripts.pool.retire_idle(idle);
                    // Checked under the flag: a call that starts a worker
                    // after this sees the thread gone and starts another.
                    let mut running = scripts.reaping.lock().unwrap_or_else(|p| p.into_inner());
                    if scripts.pool.live() == 0 {
                        *running = false;
                        return;
                    }
                }
            });
        match spawned {
            Ok(_) => *running = true,
            Err(e) => tracing::warn!("idle script workers will not be retired: {e}"),
        }
    }

    /// Every script file in every root, in load order.
    fn scan(&self) -> Vec<PathBuf> {
        (0..self.roots.len())
            .flat_map(|root| self.scan_root(root))
            .collect()
    }

    /// Script files in one root, libraries first: tools require them as
    /// they load.
    fn scan_root(&self, root: usize) -> Vec<PathBuf> {
        ["lib", "tools", "skills"]
            .iter()
            .flat_map(|dir| self.scan_dir(root, &self.roots[root].join(dir)))
            .collect()
    }

    /// Script files under `dir` (two levels deep at most), sorted.
    fn scan_dir(&self, root: usize, dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let p = entry.path();
                if p.is_dir() {
                    if p.strip_prefix(&self.roots[root])
                        .map_or(0, |r| r.components().count())
                        < 3
                    {
                        stack.push(p);
                    }
                } else if classify(&self.roots[root], &p).is_some() {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }

    fn kv(&self) -> std::sync::MutexGuard<'_, rusqlite::Connection> {
        self.kv.lock()
    }
}

/// What the loader returns for a tool, before it gets a file and a source.
struct ToolDraft {
    spec: ToolSpec,
    deadline_ms: Option<u64>,
}

fn tool_from_spec(spec: Value, skill: Option<&str>) -> Result<ToolDraft, String> {
    let name = spec["name"].as_str().unwrap_or_default();
    if !(1..=64).contains(&name.len())
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "tool name {name:?} is invalid: use 1-64 characters of a-z, 0-9, `_` and `-`"
        ));
    }
    let risk: Risk = serde_json::from_value(spec["risk"].clone()).map_err(|e| e.to_string())?;
    let full_name = match skill {
        Some(skill) => format!("{skill}.{name}"),
        None => name.to_owned(),
    };
    Ok(ToolDraft {
        spec: ToolSpec {
            name: full_name,
            description: spec["description"].as_str().unwrap_or_default().to_owned(),
            parameters: spec["parameters"].clone(),
            risk,
            targets: Default::default(),
        },
        deadline_ms: spec["deadline_ms"].as_u64(),
    })
}

/// Where `path` sits in `root`, or `None` when it is not a script (or an
/// editor's temporary file).
fn classify(root: &Path, path: &Path) -> Option<FileKind> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<&str> = rel.iter().map(|c| c.to_str()).collect::<Option<_>>()?;
    let file = *parts.last()?;
    if is_temporary(file) {
        return None;
    }
    let valid_folder = |s: &str| {
        (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    };
    match parts.as_slice() {
        ["tools", f] if f.ends_with(".lua") => Some(FileKind::Tool(None)),
        ["lib", f] => f
            .strip_suffix(".lua")
            .filter(|name| valid_folder(name))
            .map(|name| FileKind::Library(name.to_owned())),
        ["skills", skill, "SKILL.md"] if valid_folder(skill) => {
            Some(FileKind::SkillDoc((*skill).to_owned()))
        }
        ["skills", skill, f] if f.ends_with(".lua") && valid_folder(skill) => {
            Some(FileKind::Tool(Some((*skill).to_owned())))
        }
        _ => None,
    }
}

/// The good library `name` in `files`, a bundled one first.
fn library_in(files: &BTreeMap<(usize, PathBuf), Entry>, name: &str) -> Option<Arc<Library>> {
    files.values().find_map(|e| match &e.good {
        Some(Loaded::Library(library)) if library.name == name => Some(Arc::clone(library)),
        _ => None,
    })
}

/// Editors write swap and backup files next to the real one; they are never
/// scripts.
pub fn is_temporary(file: &str) -> bool {
    file.starts_with('.')
        || file.ends_with('~')
        || file == "4913"
        || [".swp", ".swx", ".swo", ".tmp", ".bak"]
            .iter()
            .any(|s| file.ends_with(s))
}

fn read_script(path: &Path) -> Result<String, Problem> {
    let problem = |message: String| Problem {
        file: path.to_owned(),
        line: None,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| problem(format!("cannot read: {e}")))?;
    if meta.len() > MAX_SCRIPT_BYTES {
        return Err(problem(format!(
            "the file is over {MAX_SCRIPT_BYTES} bytes"
        )));
    }
    std::fs::read_to_string(path).map_err(|e| problem(format!("cannot read: {e}")))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("script");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// `file:line: message`, the form editors and the agent can jump to.
pub fn describe_problem(p: &Problem) -> String {
    match p.line {
        Some(line) if !p.message.contains(&format!(":{line}:")) => {
            format!("{}:{line}: {}", p.file.display(), p.message)
        }
        _ => format!("{}: {}", p.file.display(), p.message),
    }
}

/// The bundled scripts: configured, or found next to the binary.
fn bundled_dir(config: &ScriptsConfig) -> Option<PathBuf> {
    if let Some(dir) = &config.bundled_dir {
        return Some(dir.clone());
    }
    let exe = std::env::current_exe().ok()?;
    let exe_dir = exe.parent()?;
    if exe_dir.join("scripts/tools").is_dir() {
        return Some(exe_dir.join("scripts"));
    }
    // A cargo build: <repo>/target/<profile>/hearth, or a test binary one
    // level deeper.
    exe_dir
        .ancestors()
        .take(5)
        .find(|d| d.join("scripts/tools").is_dir() && d.join("Cargo.toml").is_file())
        .map(|d| d.join("scripts"))
}

/// The binary that runs `__lua-worker`: this one when it is `hearth`, else
/// the `hearth` next to (or one level above) it, as in test builds.
fn worker_program() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hearth"));
    if exe.file_stem().is_some_and(|s| s == "hearth") {
        return exe;
    }
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join("hearth"))
        .find(|p| p.is_file())
        .unwrap_or(exe)
}
