//! The policy: what a tool call may do without the owner's say-so.
//!
//! Every call through the registry, from every source (the agent, Lua's
//! `hearth.tool`, `/tool`, the CLI), is ruled on here after its arguments
//! are validated, and recorded in the audit afterwards.
//!
//! - `roots`: the writable roots and the credentials;
//! - `floor`: the confinement a call the owner did not approve runs under;
//! - `guard`: reads shell command lines (`guards_file` keeps its rules);
//! - `paths`: where path arguments really lead;
//! - `confirm`: the confirmation gate an "ask" waits at;
//! - `grants`: "always allow this exact call";
//! - `audit`: the record of every call.
//!
//! The rule, in both modes: a call the owner did not approve runs confined
//! (`floor`): it may write only inside the writable roots (protected paths
//! there excepted) and never read or write the credentials, enforced by
//! Landlock in the plugin that spawns programs and by path checks in the
//! plugin's own code. A call that needs more (a write outside the roots, a
//! command the guard flags, an explicit request to run outside the roots)
//! asks, and once the owner approves that exact call it runs without the
//! confinement. Read-only actions never ask. Development mode also asks
//! before every write and exec tool inside the roots, unless `[policy]
//! ask_inside_roots = false`; production does not.
//!
//! Architecture invariant: the policy fails closed. A call that should ask
//! and cannot (no channel can show the request, nobody answers in time,
//! the answer comes from someone other than the owner) does not run, and a
//! doubt about what a call does (a command the guard cannot read, an
//! invalid guards file) is an "ask", never an "allow".
//!
//! Architecture invariant: a call the owner did not approve never runs
//! without the confinement. The ruling of every such call to a tool that
//! declares it (`Targets::floor`) carries it, a tool that runs commands
//! without declaring it asks instead, and the plugin refuses a call whose
//! confinement it cannot apply on a kernel with Landlock.

pub mod audit;
pub mod confirm;
pub mod floor;
pub mod grants;
pub mod guard;
pub mod guards_file;
pub mod landlock;
mod paths;
pub mod roots;

use std::path::{Path, PathBuf};

use hearth_sdk::protocol::{Floor, Risk, ToolSpec};
use serde_json::Value;

pub use audit::Audit;
pub use confirm::ConfirmGate;
pub use grants::Grants;
pub use guards_file::{GuardsFile, GuardsFileError};
pub use roots::Confinement;

use confirm::{Answer, Question};
use guard::{Reading, Verdict};
use hearth_base::config::Mode;

/// What the rules say about one call.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Decision {
    /// Run it, confined.
    Allow,
    /// Ask the owner first; the reason is shown on the card. `outside`:
    /// once approved, the call runs without the confinement (it needs to
    /// change something outside the writable roots, or the guard flagged
    /// it); otherwise it runs confined whatever the answer.
    Ask { why: String, outside: bool },
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
    confinement: Confinement,
    ask_inside_roots: bool,
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
    /// The writable roots and the credentials.
    pub confinement: Confinement,
    /// Whether write and exec tools ask inside the roots too.
    pub ask_inside_roots: bool,
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
        Policy {
            mode: parts.mode,
            hearth_home,
            user_home: parts.user_home,
            confinement: parts.confinement,
            ask_inside_roots: parts.ask_inside_roots,
            guards: parts.guards,
            gate: parts.gate,
            grants: parts.grants,
            audit: parts.audit,
            landlock: hearth_sdk::landlock::abi_version(),
        }
    }

    /// Rules on one call, asking the owner when the rules say so, and in
    /// either mode when `ask` gives a reason (a message to someone other
    /// than the owner, say): a grant still answers for the owner. Blocks
    /// while the owner decides: call it from a thread that may block.
    pub fn rule(
        &self,
        spec: &ToolSpec,
        args: &Value,
        fingerprint: &str,
        ask: Option<String>,
    ) -> Ruling {
        // A targeted argument of the wrong shape cannot be checked: ask,
        // and run confined whatever the answer.
        let read = Call::read(spec, args, &self.hearth_home, self.user_home.as_deref());
        let decision = match &read {
            Ok(call) => match self.decide(spec, call) {
                Decision::Allow => match ask {
                    Some(why) => Decision::Ask {
                        why,
                        outside: false,
                    },
                    None => Decision::Allow,
                },
                asks => asks,
            },
            Err(why) => Decision::Ask {
                why: why.clone(),
                outside: false,
            },
        };
        let confined = |outside: bool| (spec.targets.floor && !outside).then(|| self.floor());
        let (reason, outside) = match decision {
            Decision::Allow => {
                return Ruling {
                    decision: "allow",
                    floor: confined(false),
                    ..Ruling::default()
                };
            }
            Decision::Ask { why, outside } => (why, outside),
        };
        let mut ruling = Ruling {
            decision: "ask",
            reason: Some(reason.clone()),
            floor: confined(outside),
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

    /// What the rules say about `call`, before grants and the owner.
    fn decide(&self, spec: &ToolSpec, call: &Call) -> Decision {
        let outside = |why: String| Decision::Ask { why, outside: true };
        if let Some(reason) = &call.escalate {
            return outside(format!(
                "asks to run outside the writable roots ({}): {reason}",
                self.confinement.roots_list()
            ));
        }
        for (text, path) in &call.writes {
            if self.confinement.hides(path) {
                return outside(format!("{text:?} is one of hearth's credentials"));
            }
            if !self.confinement.writable(path) {
                return outside(format!(
                    "{text:?} ({}) is outside the writable roots ({})",
                    path.display(),
                    self.confinement.roots_list()
                ));
            }
            if let Verdict::Ask(why) = self.guards.check_write(text, &self.hearth_home) {
                return outside(why);
            }
        }
        if let Some(command) = &call.command {
            let cwd = call.cwd_or_home(&self.hearth_home);
            // A command the kernel will confine is read as a seatbelt: what
            // the guard cannot see into runs, and fails for lack of access
            // if it reaches beyond the roots.
            let reading = if spec.targets.floor && self.landlock.is_ok() {
                Reading::Seatbelt
            } else {
                Reading::Strict
            };
            if let Verdict::Ask(why) = self.guards.check_as(command, cwd, &call.env, reading) {
                return outside(why);
            }
            if !spec.targets.floor {
                return outside(format!(
                    "{} runs commands without hearth's confinement, so nothing would keep them \
                     inside the writable roots",
                    spec.name
                ));
            }
            if self.mode == Mode::Development
                && let Err(why) = &self.landlock
            {
                return Decision::Ask {
                    why: format!(
                        "the kernel cannot confine commands ({why}), so development mode asks \
                         before every command"
                    ),
                    outside: false,
                };
            }
        }
        if !call.strangers.is_empty() {
            // Writing to people is not confined by any root: whoever is not
            // the owner hears from hearth only with the owner's say-so.
            return Decision::Ask {
                why: format!(
                    "it writes to someone other than the owner: {}",
                    call.strangers.join(", ")
                ),
                outside: false,
            };
        }
        let risk = match &call.action {
            Some(action) if spec.targets.read_actions.contains(action) => Risk::Read,
            _ => spec.risk,
        };
        if risk == Risk::Read || !self.ask_inside_roots {
            return Decision::Allow;
        }
        let tier = if risk == Risk::Write { "write" } else { "exec" };
        Decision::Ask {
            why: format!(
                "{} mode asks before every {tier} tool; it runs confined to the writable roots",
                self.mode.name()
            ),
            outside: false,
        }
    }

    /// The confinement for a call run now.
    pub fn floor(&self) -> Floor {
        floor::build(
            &self.guards.path_lists(),
            &self.confinement,
            &self.hearth_home,
            self.user_home.as_deref(),
        )
    }
}

/// The argument that holds a command's environment variables, beside its
/// command target.
const ENV_ARGUMENT: &str = "env";

/// The argument that names what a many-action tool does
/// (`Targets::read_actions`).
const ACTION_ARGUMENT: &str = "action";

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
    /// The call's `action` argument, for tools with read-only actions.
    action: Option<String>,
    /// The reason given for running outside the writable roots.
    escalate: Option<String>,
    /// The recipients named who are not the owner (`Targets::recipients`).
    strangers: Vec<String>,
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
        let action = args
            .get(ACTION_ARGUMENT)
            .and_then(Value::as_str)
            .map(str::to_owned);
        let escalate = match &t.escalate {
            Some(key) => text(key)?.filter(|reason| !reason.trim().is_empty()),
            None => None,
        };
        let strangers = strangers(args, t)?;
        Ok(Call {
            command,
            cwd,
            env,
            writes,
            action,
            escalate,
            strangers,
        })
    }

    fn cwd_or_home<'a>(&'a self, hearth_home: &'a Path) -> &'a Path {
        self.cwd.as_deref().unwrap_or(hearth_home)
    }
}

/// The addresses in the recipient arguments that are not the owner's; an
/// argument of the wrong shape is a doubt.
fn strangers(args: &Value, targets: &hearth_sdk::protocol::Targets) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for key in &targets.recipients {
        let values: Vec<&str> = match args.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => s.split(',').collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(Value::as_str)
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    format!("argument `{key}` holds a recipient that is not a string")
                })?,
            Some(_) => return Err(format!("argument `{key}` is not a list of recipients")),
        };
        for value in values {
            let address = bare_address(value);
            if address.is_empty() {
                continue;
            }
            let owner = targets
                .owner_recipients
                .iter()
                .any(|o| o.trim().eq_ignore_ascii_case(&address));
            if !owner && !out.contains(&address) {
                out.push(address);
            }
        }
    }
    Ok(out)
}

/// `addr` of `"Name <addr>"`, or the text itself, trimmed.
fn bare_address(text: &str) -> String {
    let text = text.trim();
    match (text.rfind('<'), text.rfind('>')) {
        (Some(open), Some(close)) if open < close => text[open + 1..close].trim().to_owned(),
        _ => text.to_owned(),
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use hearth_sdk::protocol::Targets;
    use serde_json::json;

    use super::*;

    #[test]
    fn only_recipients_other_than_the_owner_are_strangers() {
        let targets = Targets {
            recipients: vec!["to".into(), "cc".into()],
            owner_recipients: vec!["Anna@Example.org".into()],
            ..Targets::default()
        };
        for (args, expected) in [
            (json!({ "to": "anna@example.org" }), Ok(vec![])),
            (json!({ "to": ["Anna <ANNA@example.org>"] }), Ok(vec![])),
            (
                json!({ "to": "anna@example.org, bob@example.org", "cc": ["eve@evil.example"] }),
                Ok(vec![
                    "bob@example.org".to_owned(),
                    "eve@evil.example".to_owned(),
                ]),
            ),
            (
                json!({ "to": "Bob <bob@example.org>", "cc": "bob@example.org" }),
                Ok(vec!["bob@example.org".to_owned()]),
            ),
            (json!({}), Ok(vec![])),
        ] {
            assert_eq!(strangers(&args, &targets), expected, "{args}");
        }
        for bad in [json!({ "to": 7 }), json!({ "cc": ["a@b", 1] })] {
            assert!(strangers(&bad, &targets).is_err(), "{bad}");
        }
    }
}
