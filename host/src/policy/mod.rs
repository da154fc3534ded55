//! The policy: what a tool call may do without the owner's say-so.
//!
//! Every call through the registry, from every source (the agent, Lua's
//! `hearth.tool`, `/tool`, the CLI), is ruled on here after its arguments
//! are validated, and recorded in the audit afterwards.
//!
//! - `guard`: reads shell command lines (`guards_file` keeps its rules);
//! - `paths`: where path arguments really lead;
//! - `confirm`: the confirmation gate an "ask" waits at;
//! - `grants`: "always allow this exact call";
//! - `caller`: who asks, and the tools they may ask for;
//! - `audit`: the record of every call.
//!
//! The rules, by mode:
//! - development: a command's `cwd` and every written path must lie in
//!   `$HEARTH_HOME` or `/tmp` (else denied), and every `write` or `exec`
//!   tool asks. Spawned programs are confined by Landlock in the plugin
//!   that spawns them (`HostInfo::confine_to`).
//! - production: full access; a shell command the guard flags, or a write
//!   into a protected path, asks. A command that runs without asking runs
//!   under the kernel floor (`floor`): the protected paths read-only and
//!   its signals scoped to itself, enforced by Landlock in the plugin that
//!   spawns it. An approved command runs without the floor.
//!
//! Architecture invariant: the policy fails closed. A call that should ask
//! and cannot (no channel can show the request, nobody answers in time,
//! the answer comes from someone other than the owner) does not run, and a
//! doubt about what a call does (a command the guard cannot read, an
//! invalid guards file) is an "ask", never an "allow".
//!
//! Architecture invariant: in production mode, on a kernel with Landlock,
//! a command the owner did not approve never runs without the floor. The
//! ruling of every such call carries it, a tool that runs commands without
//! declaring the floor (`Targets::floor`) asks instead, and the plugin
//! refuses a call whose floor it cannot apply.

pub mod audit;
mod caller;
pub mod confirm;
pub mod floor;
pub mod grants;
pub mod guard;
pub mod guards_file;
pub mod landlock;
mod paths;

use std::path::{Path, PathBuf};

use hearth_sdk::protocol::{Floor, Risk, ToolSpec};
use serde_json::Value;

pub use audit::Audit;
pub use caller::{Caller, ToolScope};
pub use confirm::{Board, ConfirmGate};
pub use grants::Grants;
pub use guards_file::{GuardsFile, GuardsFileError};

use crate::config::{Config, Mode};
use confirm::{Answer, Question};
use guard::Verdict;

/// The directories programs spawned by tools may write to: in development
/// mode `$HEARTH_HOME` and `/tmp`; in production, anywhere (empty).
pub fn confinement(config: &Config) -> Vec<PathBuf> {
    roots(config.mode, &config.home)
}

fn roots(mode: Mode, hearth_home: &Path) -> Vec<PathBuf> {
    match mode {
        Mode::Development => vec![hearth_home.to_owned(), PathBuf::from("/tmp")],
        Mode::Production => Vec::new(),
    }
}

/// What the rules say about one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the owner first; the reason is shown on the card.
    Ask(String),
    /// Never run it in this mode; the reason says why.
    Deny(String),
}

/// The policy's ruling on one call, as the audit records it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruling {
    /// `allow`, `ask` or `deny`.
    pub decision: &'static str,
    /// Why it asked or denied.
    pub reason: Option<String>,
    /// `approved`, `granted`, `denied`, `expired`, `withdrawn` or
    /// `unavailable`, when
    /// it asked.
    pub approval: Option<&'static str>,
    /// Who answered.
    pub approver: Option<String>,
    /// Why the call may not run; `None` when it may.
    pub refusal: Option<String>,
    /// The kernel floor its programs run under: production mode, not
    /// approved, a tool that declares the floor, a kernel with Landlock.
    pub floor: Option<Floor>,
}

/// The rules, the gate they ask through, the grants and the audit.
pub struct Policy {
    mode: Mode,
    hearth_home: PathBuf,
    user_home: Option<PathBuf>,
    config_file: Option<PathBuf>,
    roots: Vec<PathBuf>,
    guards: GuardsFile,
    gate: ConfirmGate,
    grants: Grants,
    audit: Audit,
    /// The kernel's Landlock ABI, or why there is none: probed once.
    landlock: Result<i32, String>,
}

/// What a [`Policy`] is made of.
pub struct Parts {
    /// The mode.
    pub mode: Mode,
    /// `$HEARTH_HOME`.
    pub hearth_home: PathBuf,
    /// `$HOME`, for `~/` paths.
    pub user_home: Option<PathBuf>,
    /// The config file the daemon runs with, if any: the floor protects it.
    pub config_file: Option<PathBuf>,
    /// The shell guard's rules.
    pub guards: GuardsFile,
    /// Where asks wait.
    pub gate: ConfirmGate,
    /// Standing grants.
    pub grants: Grants,
    /// The audit trail.
    pub audit: Audit,
}

impl Policy {
    /// A policy from its parts.
    pub fn new(parts: Parts) -> Policy {
        let hearth_home = paths::canonical_roots(std::slice::from_ref(&parts.hearth_home))
            .pop()
            .unwrap_or(parts.hearth_home);
        let roots = paths::canonical_roots(&roots(parts.mode, &hearth_home));
        Policy {
            mode: parts.mode,
            hearth_home,
            user_home: parts.user_home,
            config_file: parts.config_file,
            roots,
            guards: parts.guards,
            gate: parts.gate,
            grants: parts.grants,
            audit: parts.audit,
            landlock: hearth_sdk::landlock::abi_version(),
        }
    }

    /// Rules on one call, asking the owner when the rules say so. Blocks
    /// while the owner decides: call it from a thread that may block.
    pub fn rule(&self, spec: &ToolSpec, args: &Value, fingerprint: &str) -> Ruling {
        self.rule_asking(spec, args, fingerprint, None)
    }

    /// [`Policy::rule`], asking the owner in either mode when `ask` gives a
    /// reason (a message to someone other than the owner, say): a grant
    /// still answers for the owner.
    pub fn rule_asking(
        &self,
        spec: &ToolSpec,
        args: &Value,
        fingerprint: &str,
        ask: Option<String>,
    ) -> Ruling {
        // A targeted argument of the wrong shape cannot be checked: ask.
        let read = Call::read(spec, args, &self.hearth_home, self.user_home.as_deref());
        let decision = match &read {
            Ok(_) if ask.is_some() => Decision::Ask(ask.unwrap_or_default()),
            Ok(call) => match self.mode {
                Mode::Development => self.development(spec, call),
                Mode::Production => self.production(spec, call),
            },
            Err(why) => Decision::Ask(why.clone()),
        };
        let reason = match decision {
            Decision::Allow => {
                let floored = self.mode == Mode::Production
                    && spec.targets.floor
                    && self.landlock.is_ok()
                    && read.as_ref().is_ok_and(|c| c.command.is_some());
                return Ruling {
                    decision: "allow",
                    floor: floored.then(|| self.floor()),
                    ..Ruling::default()
                };
            }
            Decision::Deny(why) => {
                return Ruling {
                    decision: "deny",
                    refusal: Some(format!("{} was not run: {why}", spec.name)),
                    reason: Some(why),
                    ..Ruling::default()
                };
            }
            Decision::Ask(why) => why,
        };
        let mut ruling = Ruling {
            decision: "ask",
            reason: Some(reason.clone()),
            ..Ruling::default()
        };
        match self.grants.take(fingerprint) {
            Ok(true) => {
                ruling.approval = Some("granted");
                return ruling;
            }
            Ok(false) => {}
            Err(e) => tracing::error!("cannot read the grants, so the owner is asked: {e}"),
        }
        let call = read.as_ref().ok();
        let command = call.and_then(|c| c.command.as_deref());
        let cwd = call
            .and_then(|c| c.cwd.as_ref())
            .map(|p| p.display().to_string());
        let question = Question {
            tool: &spec.name,
            args,
            fingerprint,
            command,
            cwd,
            reason: &reason,
        };
        let tool = &spec.name;
        match self.gate.ask(&question) {
            Answer::Approved { by, always } => {
                if always && let Err(e) = self.grants.add(tool, fingerprint, args, command, &by) {
                    tracing::error!(tool, "cannot store the grant: {e}");
                }
                ruling.approval = Some(if always {
                    "approved always"
                } else {
                    "approved"
                });
                ruling.approver = Some(by);
            }
            Answer::Denied { by } => {
                ruling.approval = Some("denied");
                ruling.approver = Some(by);
                ruling.refusal = Some(format!("the owner denied running {tool}; it was not run"));
            }
            Answer::Expired => {
                ruling.approval = Some("expired");
                ruling.refusal = Some(format!(
                    "the owner did not answer within {} s, so {tool} was not run",
                    self.gate.timeout().as_secs()
                ));
            }
            Answer::Withdrawn => {
                ruling.approval = Some("withdrawn");
                ruling.refusal = Some(format!(
                    "the request to run {tool} was withdrawn before the owner answered; it was \
                     not run"
                ));
            }
            Answer::Cancelled => {
                ruling.approval = Some("cancelled");
                ruling.refusal = Some(format!(
                    "the owner stopped the turn (/stop) before answering; {tool} was not run"
                ));
            }
            Answer::Unavailable => {
                ruling.approval = Some("unavailable");
                ruling.refusal = Some(format!(
                    "{tool} needs the owner's approval ({reason}), and no channel that can ask \
                     the owner is running (the canvas shows confirmations); it was not run"
                ));
            }
            Answer::Failed(why) => {
                ruling.approval = Some("unavailable");
                ruling.refusal = Some(format!("{tool} was not run: {why}"));
            }
        }
        ruling
    }

    /// Records a finished (or refused) call in the audit.
    pub fn record(&self, entry: &audit::Entry) {
        self.audit.record(entry);
    }

    /// The audit trail, for waiting on its writer (`flush`, `close`).
    pub fn audit(&self) -> &Audit {
        &self.audit
    }

    fn development(&self, spec: &ToolSpec, call: &Call) -> Decision {
        let roots = || {
            self.roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        };
        if let Some(cwd) = &call.cwd
            && !paths::inside(cwd, &self.roots)
        {
            return Decision::Deny(format!(
                "development mode runs commands only in {}; {} is outside",
                roots(),
                cwd.display()
            ));
        }
        for (text, path) in &call.writes {
            if !paths::inside(path, &self.roots) {
                return Decision::Deny(format!(
                    "development mode writes only in {}; {text:?} is {}",
                    roots(),
                    path.display()
                ));
            }
        }
        match spec.risk {
            Risk::Read => Decision::Allow,
            Risk::Write | Risk::Exec => {
                let tier = if spec.risk == Risk::Write {
                    "write"
                } else {
                    "exec"
                };
                let flagged = call.command.as_deref().and_then(|command| {
                    match self
                        .guards
                        .check(command, call.cwd_or_home(&self.hearth_home), &call.env)
                    {
                        Verdict::Ask(why) => Some(why),
                        Verdict::Allow => None,
                    }
                });
                Decision::Ask(match flagged {
                    Some(why) => why,
                    None => format!("development mode asks before every {tier} tool"),
                })
            }
        }
    }

    /// The kernel floor for a command run now.
    pub fn floor(&self) -> Floor {
        floor::build(
            &self.guards.path_lists(),
            &floor::Homes {
                hearth_home: &self.hearth_home,
                user_home: self.user_home.as_deref(),
                guards_file: self.guards.path(),
                config_file: self.config_file.as_deref(),
            },
        )
    }

    fn production(&self, spec: &ToolSpec, call: &Call) -> Decision {
        let cwd = call.cwd_or_home(&self.hearth_home);
        if let Some(command) = &call.command {
            if let Verdict::Ask(why) = self.guards.check(command, cwd, &call.env) {
                return Decision::Ask(why);
            }
            if !spec.targets.floor && self.landlock.is_ok() {
                return Decision::Ask(format!(
                    "{} runs commands without the kernel floor, so nothing beneath the guard \
                     would protect your files",
                    spec.name
                ));
            }
        }
        for (text, _) in &call.writes {
            if let Verdict::Ask(why) = self.guards.check_write(text, &self.hearth_home) {
                return Decision::Ask(why);
            }
        }
        Decision::Allow
    }
}

/// The argument that holds a command's environment variables, beside its
/// command target.
const ENV_ARGUMENT: &str = "env";

/// The parts of a call the rules look at, read through the tool's targets.
struct Call {
    command: Option<String>,
    cwd: Option<PathBuf>,
    /// The variables the command runs with: a tool with a command target
    /// may take them in an `env` argument (as `shell_exec` and
    /// `process_start` do), and the guard judges them as it judges
    /// `export`s in the line.
    env: Vec<(String, String)>,
    /// Each written path as given and as resolved.
    writes: Vec<(String, PathBuf)>,
}

impl Call {
    /// Reads the targeted arguments; a targeted argument of the wrong
    /// shape is a doubt, so the caller asks.
    fn read(
        spec: &ToolSpec,
        args: &Value,
        hearth_home: &Path,
        user_home: Option<&Path>,
    ) -> Result<Call, String> {
        let t = &spec.targets;
        let text = |key: &String| -> Result<Option<String>, String> {
            match args.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!(
                    "argument `{key}` is not a string, so it cannot be checked"
                )),
            }
        };
        let command = match &t.command {
            Some(key) => {
                Some(text(key)?.ok_or_else(|| format!("the command argument `{key}` is missing"))?)
            }
            None => None,
        };
        let cwd_text = match &t.cwd {
            Some(key) => text(key)?,
            None => None,
        };
        // A command without a cwd runs in $HEARTH_HOME.
        let cwd = match (&cwd_text, &command) {
            (Some(c), _) => Some(paths::resolve(c, hearth_home, user_home)),
            (None, Some(_)) => Some(hearth_home.to_owned()),
            (None, None) => None,
        };
        let env = match (&command, args.get(ENV_ARGUMENT)) {
            (None, _) | (_, None | Some(Value::Null)) => Vec::new(),
            (Some(_), Some(Value::Object(vars))) => vars
                .iter()
                .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    format!("argument `{ENV_ARGUMENT}` holds a value that is not a string")
                })?,
            (Some(_), Some(_)) => {
                return Err(format!(
                    "argument `{ENV_ARGUMENT}` is not an object of strings, so it cannot be checked"
                ));
            }
        };
        let mut writes = Vec::new();
        for key in &t.writes {
            let values: Vec<String> = match args.get(key) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<_>>()
                    .ok_or_else(|| format!("argument `{key}` holds a non-string path"))?,
                Some(_) => return Err(format!("argument `{key}` is not a path")),
            };
            for value in values {
                let resolved = paths::resolve(&value, hearth_home, user_home);
                writes.push((value, resolved));
            }
        }
        Ok(Call {
            command,
            cwd,
            env,
            writes,
        })
    }

    fn cwd_or_home<'a>(&'a self, hearth_home: &'a Path) -> &'a Path {
        self.cwd.as_deref().unwrap_or(hearth_home)
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
