//! `ToolRegistry`: the one table of tools, and the one way to call them.
//!
//! Built-in tools are fixed at start. A plugin's tools are those its
//! `describe` gave until it sets others at run time (`tools.set`: an MCP
//! server's list changed), so the table of built-in and plugin tools is rebuilt
//! whenever the plugins' generation counter moves, and swapped whole.
//! Lua tools come from the script catalog, which hot reload swaps, so they
//! are looked up per call. A Lua tool can never take a plugin's or a
//! built-in's name. Every answer and error leaves it with the owner's
//! secrets redacted (`hearth_base::secrets`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use hearth_sdk::protocol::{Floor, Risk, ToolCall, ToolSpec, method};
use serde_json::Value;

use super::{Builtin, BuiltinContext, TurnContext, schema, secret_args};
use hearth_base::caller::Caller;
use hearth_base::scope;
use hearth_base::secrets::{Redactor, Secrets};
use hearth_plugins::{ActivePlugin, InvokeError, PluginSet};
use hearth_policy::audit::Entry;
use hearth_policy::confirm::fingerprint;
use hearth_policy::{Policy, Ruling};
use hearth_script::{ScriptFailure, Scripts};

/// All tools, by name.
#[derive(Default)]
pub struct ToolRegistry {
    /// The host's own tools, fixed at start.
    own: BTreeMap<String, Arc<Tool>>,
    /// The active plugins, in load order (which wins a name).
    plugins: Vec<Arc<ActivePlugin>>,
    /// The built-in and plugin tools as of a generation, rebuilt when it
    /// moves: one lookup per call.
    table: RwLock<Table>,
    /// Bumped by the bridge when a plugin sets its tools.
    generation: Arc<AtomicU64>,
    scripts: Option<Arc<Scripts>>,
    builtins: BuiltinContext,
    policy: Option<Arc<Policy>>,
}

/// The built-in and plugin tools at one generation of the plugins' tools.
#[derive(Default)]
struct Table {
    generation: u64,
    tools: BTreeMap<String, Arc<Tool>>,
}

/// One fixed tool.
pub struct Tool {
    /// Name, description, schema and risk.
    pub spec: ToolSpec,
    /// What runs it.
    pub provider: Provider,
}

/// What runs a fixed tool.
pub enum Provider {
    /// A native plugin.
    Plugin(Arc<ActivePlugin>),
    /// The host itself.
    Builtin(Builtin),
}

/// A tool as listed by `hearth tools`.
pub struct Listed {
    /// Its spec.
    pub spec: ToolSpec,
    /// Where it comes from (`plugin echo`, `builtin`, `lua tools/x.lua`).
    pub source: String,
}

/// Why a tool call failed. The message is what the caller (the owner, or
/// the model) sees, so it says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// No tool has that name.
    #[error("unknown tool {name:?}{}", suggestion.as_ref().map(|s| format!("; did you mean {s:?}?")).unwrap_or_default())]
    Unknown {
        /// The name asked for.
        name: String,
        /// The closest known name.
        suggestion: Option<String>,
    },
    /// An MCP tool no server has announced: its server has not started
    /// yet (a lazy one learns its tools in the background the first time),
    /// or it has no such tool.
    #[error(
        "unknown tool {name:?}: MCP server {server:?} has not announced it; a server's tools are \
         known once it has started once (a lazy one is started in the background the first time, \
         to learn them): `hearth mcp list` shows its state and tools"
    )]
    McpNotAnnounced {
        /// The name asked for.
        name: String,
        /// The server its name points at.
        server: String,
    },
    /// A tool only the running daemon provides, called without one.
    #[error(
        "{name} is one of the tools only the running daemon provides: start it (`hearth run`, \
         or the service) and call it again"
    )]
    NeedsDaemon {
        /// The tool.
        name: String,
    },
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Which field and why.
        message: String,
    },
    /// A plugin failed or is unavailable.
    #[error("{tool} failed: {error}")]
    Provider {
        /// The tool.
        tool: String,
        /// What the plugin said.
        error: InvokeError,
    },
    /// A Lua tool failed (error, deadline, memory cap).
    #[error("{tool} failed: {}", failure.message)]
    Script {
        /// The tool.
        tool: String,
        /// What went wrong, with the line where known.
        failure: ScriptFailure,
    },
    /// A built-in tool refused or failed.
    #[error("{tool} failed: {message}")]
    Builtin {
        /// The tool.
        tool: String,
        /// Why.
        message: String,
    },
    /// The policy did not let the call run (denied, or not approved).
    #[error("{0}")]
    Refused(String),
    /// The provider answered something that is not JSON.
    #[error("{tool} returned a malformed result: {message}")]
    BadResult {
        /// The tool.
        tool: String,
        /// The parse error.
        message: String,
    },
}

impl ToolRegistry {
    /// The names plugins and built-ins take at start (Lua may not take
    /// them). A name a plugin sets later holds a `.` (MCP's do), which no
    /// Lua tool name may.
    pub fn fixed_names(plugins: &PluginSet) -> HashSet<String> {
        let plugin_names = plugins
            .active()
            .iter()
            .flat_map(|p| p.tools().iter().map(|t| t.name.clone()).collect::<Vec<_>>());
        let builtin_names = Builtin::ALL.iter().map(|b| b.spec().name);
        plugin_names.chain(builtin_names).collect()
    }

    /// Collects every active plugin's tools, the built-ins `builtins` can
    /// serve, and the Lua tools of `builtins.scripts`. A plugin tool whose
    /// name is invalid or already taken is skipped with a warning, returned
    /// for `hearth check`.
    pub fn new(
        plugins: &PluginSet,
        builtins: BuiltinContext,
        policy: Arc<Policy>,
    ) -> (ToolRegistry, Vec<String>) {
        let mut registry = ToolRegistry {
            policy: Some(policy),
            plugins: plugins.active().to_vec(),
            generation: plugins.tools_generation(),
            ..ToolRegistry::default()
        };
        for builtin in Builtin::ALL.into_iter().filter(|b| b.available(&builtins)) {
            let mut spec = builtin.spec();
            mark_read_actions(&mut spec);
            registry.own.insert(
                spec.name.clone(),
                Arc::new(Tool {
                    spec,
                    provider: Provider::Builtin(builtin),
                }),
            );
        }
        let (table, warnings) = registry.build_table();
        for why in &warnings {
            tracing::warn!("{why}");
        }
        registry.table = RwLock::new(table);
        registry.scripts = builtins.scripts.clone();
        registry.builtins = builtins;
        (registry, warnings)
    }

    /// How many times the plugins' tools have changed since start: a
    /// listing built at one generation is current until it moves.
    pub fn generation(&self) -> u64 {
        self.with_table(|table| table.generation)
    }

    /// The registry name a model meant by `name`: the name itself when a
    /// tool has it, else the dotted name whose wire form it is
    /// (`mcp__files__read_file` is `mcp.files.read_file`).
    pub fn resolve<'a>(&self, name: &'a str) -> Cow<'a, str> {
        // Only a name with `__` can be a wire form: the rest are looked up
        // as they are, with no lookup here.
        let Some(dotted) = super::from_wire(name) else {
            return Cow::Borrowed(name);
        };
        if self.find(name).is_some() || self.is_lua_tool(name) || self.find(&dotted).is_none() {
            return Cow::Borrowed(name);
        }
        Cow::Owned(dotted)
    }

    /// The active plugins, in load order.
    pub fn plugins(&self) -> &[Arc<ActivePlugin>] {
        &self.plugins
    }

    /// The contact and agent tools' context, in a daemon.
    pub fn people_tools(&self) -> Option<&Arc<super::PeopleTools>> {
        self.builtins.people.as_ref()
    }

    /// `manage_schedule`'s parts, in a daemon.
    pub fn schedule_tools(&self) -> Option<&Arc<super::ScheduleTools>> {
        self.builtins.schedule.as_ref()
    }

    /// The agent groups, in a daemon.
    pub fn groups(&self) -> Option<&Arc<dyn super::groups::GroupActions>> {
        self.builtins.groups.as_ref()
    }

    /// Whether `name` is a native plugin's tool: code the owner installed,
    /// trusted to name an image file it read for the model to see.
    pub fn is_plugin_tool(&self, name: &str) -> bool {
        self.find(name)
            .is_some_and(|t| matches!(t.provider, Provider::Plugin(_)))
    }

    /// The owner's secrets, when this registry has them.
    pub fn secrets(&self) -> Option<&Arc<Secrets>> {
        self.builtins.secrets.as_ref()
    }

    /// Speech-to-text and text-to-speech, when this registry has them.
    pub fn speech(&self) -> Option<&Arc<hearth_model::speech::Speech>> {
        self.builtins.speech.as_ref()
    }

    /// The script subsystem, when there is one.
    pub fn scripts(&self) -> Option<&Arc<Scripts>> {
        self.scripts.as_ref()
    }

    /// The command line a call of `name` with `args` runs, for a tool
    /// whose targets name one (`shell_exec`): how the owner is told what
    /// was cut short or is running.
    pub fn command_line(&self, name: &str, args: &Value) -> Option<String> {
        let tool = self.find(name)?;
        let key = tool.spec.targets.command.as_deref()?;
        args.get(key)?.as_str().map(str::to_owned)
    }

    /// How many built-in and plugin tools there are; unlike [`Self::list`],
    /// this does not wait for the scripts' first load.
    pub fn fixed_count(&self) -> usize {
        self.with_table(|table| table.tools.len())
    }

    /// Every tool, sorted by name.
    pub fn list(&self) -> Vec<Listed> {
        let fixed: Vec<Listed> = self.with_table(|table| {
            table
                .tools
                .values()
                .map(|t| Listed {
                    spec: t.spec.clone(),
                    source: t.provider.describe(),
                })
                .collect()
        });
        let lua: Vec<Listed> = self
            .scripts
            .iter()
            .flat_map(|s| s.catalog().tools())
            .map(|t| Listed {
                spec: t.spec.clone(),
                source: format!("lua {}", t.file.display()),
            })
            .collect();
        let mut all: Vec<Listed> = fixed.into_iter().chain(lua).collect();
        all.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        all
    }

    /// The tools only the running daemon provides, when this registry
    /// lacks them (a one-shot command's): listed so that `hearth tools`
    /// shows everything the agent has, each marked as needing the daemon.
    pub fn daemon_only(&self) -> Vec<Listed> {
        Builtin::ALL
            .into_iter()
            .filter(|b| b.daemon_only() && !b.available(&self.builtins))
            .map(|b| Listed {
                spec: b.spec(),
                source: "builtin (needs the daemon)".into(),
            })
            .collect()
    }

    /// Validates `args` and runs the tool for someone at this machine
    /// ([`Caller::local`]). Blocks until it answers: call it from a thread
    /// that may block.
    pub fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.call_as(&Caller::local(), name, args, 0)
    }

    /// Validates `args`, asks the policy, runs the tool and records the
    /// call in the audit. `depth` counts the `hearth.tool` calls it is
    /// nested in.
    pub fn call_as(
        &self,
        caller: &Caller,
        name: &str,
        args: Value,
        depth: u32,
    ) -> Result<Value, ToolError> {
        self.call_with(caller, None, name, args, depth)
    }

    /// [`ToolRegistry::call_as`] for a call the model made in a turn: the
    /// built-ins that act for the agent (messages, other agents) read
    /// `turn`.
    pub fn call_in_turn(
        &self,
        caller: &Caller,
        turn: &TurnContext,
        name: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        self.call_with(caller, Some(turn), name, args, 0)
    }

    fn call_with(
        &self,
        caller: &Caller,
        turn: Option<&TurnContext>,
        name: &str,
        args: Value,
        depth: u32,
    ) -> Result<Value, ToolError> {
        let started = Instant::now();
        if let Some(tool) = self.find(name) {
            let (ask, risk) = match &tool.provider {
                Provider::Builtin(builtin) => (
                    builtin.asks(&self.builtins, &args),
                    builtin.risk(&self.builtins, &args),
                ),
                Provider::Plugin(_) => (None, None),
            };
            // A tool whose tier depends on the call is ruled on this call's.
            let spec = match risk {
                Some(risk) => Cow::Owned(ToolSpec {
                    risk,
                    ..tool.spec.clone()
                }),
                None => Cow::Borrowed(&tool.spec),
            };
            return self.guarded(caller, &spec, args, ask, started, |args, floor| {
                match &tool.provider {
                    Provider::Plugin(plugin) => {
                        let filled =
                            secret_args::fill(&tool.spec, args, self.secrets().map(|s| &**s))
                                .map_err(|message| ToolError::InvalidArguments {
                                    tool: name.to_owned(),
                                    message,
                                })?;
                        call_plugin(plugin, name, filled, floor)
                    }
                    // A built-in has no command target, so no floor.
                    Provider::Builtin(builtin) => builtin
                        .call(&self.builtins, caller, turn, &args)
                        .map_err(|message| ToolError::Builtin {
                            tool: name.to_owned(),
                            message,
                        }),
                }
            });
        }
        let scripts = self.scripts.as_ref();
        // The call keeps this snapshot: its `require`s are served from it.
        let catalog = scripts.map(|s| s.catalog());
        let lua = catalog.as_ref().and_then(|c| c.tool(name).cloned());
        match (scripts, catalog, lua) {
            (Some(scripts), Some(catalog), Some(tool)) => {
                // A Lua tool has no targets, so no floor; the tools it
                // calls through `hearth.tool` are ruled on one by one.
                self.guarded(caller, &tool.spec, args, None, started, |args, _| {
                    scripts
                        .call(&catalog, &tool, args, depth, caller, self)
                        .map_err(|failure| ToolError::Script {
                            tool: name.to_owned(),
                            failure,
                        })
                })
            }
            _ if self.daemon_only().iter().any(|t| t.spec.name == name) => {
                Err(ToolError::NeedsDaemon {
                    name: name.to_owned(),
                })
            }
            _ => {
                let suggestion = self.closest(name);
                // A name of an MCP server none of whose tools is known: its
                // server has not started yet, not a typo of another's tool.
                let unannounced = name
                    .strip_prefix("mcp.")
                    .and_then(|rest| rest.split_once('.'))
                    .map(|(server, _)| server)
                    .filter(|server| {
                        !suggestion
                            .as_deref()
                            .is_some_and(|s| s.starts_with(&format!("mcp.{server}.")))
                    });
                Err(match unannounced {
                    Some(server) => ToolError::McpNotAnnounced {
                        name: name.to_owned(),
                        server: server.to_owned(),
                    },
                    None => ToolError::Unknown {
                        name: name.to_owned(),
                        suggestion,
                    },
                })
            }
        }
    }

    /// Validates, rules, runs `run` if the ruling allows, and audits. `ask`
    /// makes the policy ask whatever the mode, for the reason it gives.
    fn guarded(
        &self,
        caller: &Caller,
        spec: &ToolSpec,
        args: Value,
        ask: Option<String>,
        started: Instant,
        run: impl FnOnce(Value, Option<Floor>) -> Result<Value, ToolError>,
    ) -> Result<Value, ToolError> {
        let fingerprint = fingerprint(&spec.name, &args);
        let (ruling, result) = match check_args(&spec.name, &args, &spec.parameters) {
            Err(invalid) => (
                Ruling {
                    decision: "invalid",
                    ..Ruling::default()
                },
                Err(invalid),
            ),
            // A scoped caller (a sub-agent, a worker, Lua inside their
            // calls) reaches only its tools, whatever the policy says.
            Ok(()) if !caller.may_use(&spec.name) => {
                let why = format!(
                    "{} is not among the tools this agent may use; the owner sets them with manage_agents",
                    spec.name
                );
                (
                    Ruling {
                        decision: "deny",
                        reason: Some(why.clone()),
                        ..Ruling::default()
                    },
                    Err(ToolError::Refused(why)),
                )
            }
            Ok(()) => {
                let ruling = self.rule(spec, &args, &fingerprint, ask);
                let result = match &ruling.refusal {
                    Some(why) => Err(ToolError::Refused(why.clone())),
                    None => run(args.clone(), ruling.floor.clone()),
                };
                (ruling, result)
            }
        };
        // Whatever provider ran, no value of the owner's secrets goes back
        // to the model, the store or the audit.
        // One reading of them serves the result and the audit row: the
        // file is checked once per call, not twice.
        let snapshot = self.builtins.secrets.as_ref().map(|s| s.latest());
        let result = match &snapshot {
            Some(snapshot) => redact(result, snapshot.redactor()),
            None => result,
        };
        if let Some(policy) = &self.policy {
            let detail = result.as_ref().err().map(ToString::to_string);
            policy.record(&Entry {
                caller,
                tool: &spec.name,
                args: &args,
                fingerprint: &fingerprint,
                decision: ruling.decision,
                reason: ruling.reason.as_deref(),
                approval: ruling.approval,
                approver: ruling.approver.as_deref(),
                outcome: match &result {
                    // Whatever it answered, the owner stopped it.
                    _ if scope::current().is_some_and(|s| s.is_cancelled()) => "cancelled",
                    Ok(_) => "ok",
                    Err(ToolError::Refused(_)) => "refused",
                    Err(_) => "error",
                },
                detail: detail.as_deref(),
                duration: started.elapsed(),
                secrets: snapshot.as_deref(),
            });
        }
        result
    }

    /// The kernel floor a production command would run under now, for
    /// `hearth check`; `None` without a policy.
    pub fn floor(&self) -> Option<Floor> {
        self.policy.as_ref().map(|p| p.floor())
    }

    /// Waits until the audit rows of every call made so far are committed.
    pub fn flush_audit(&self) {
        if let Some(policy) = &self.policy {
            policy.audit().flush();
        }
    }

    /// Commits the audit's queued rows and stops its writer thread; a call
    /// made after this still leaves its row, written in place.
    pub fn close_audit(&self) {
        if let Some(policy) = &self.policy {
            policy.audit().close();
        }
    }

    /// Asks the policy; without one (a registry built for listing only),
    /// anything beyond reading and writing is refused.
    fn rule(
        &self,
        spec: &ToolSpec,
        args: &Value,
        fingerprint: &str,
        ask: Option<String>,
    ) -> Ruling {
        match &self.policy {
            Some(policy) => policy.rule(spec, args, fingerprint, ask),
            None if ask.is_none() && (spec.risk == Risk::Read || spec.risk == Risk::Write) => {
                Ruling {
                    decision: "allow",
                    ..Ruling::default()
                }
            }
            None => Ruling {
                decision: "ask",
                refusal: Some(format!(
                    "{} needs the owner's approval and this process cannot ask; it was not run",
                    spec.name
                )),
                ..Ruling::default()
            },
        }
    }

    /// The built-in or plugin tool named `name`, as the table is now.
    fn find(&self, name: &str) -> Option<Arc<Tool>> {
        self.with_table(|table| table.tools.get(name).cloned())
    }

    fn is_lua_tool(&self, name: &str) -> bool {
        self.scripts
            .as_ref()
            .is_some_and(|s| s.catalog().tool(name).is_some())
    }

    /// Runs `f` on the table as of now: rebuilt first if a plugin set its
    /// tools since it was built. A call pays a lock and a comparison.
    fn with_table<T>(&self, f: impl FnOnce(&Table) -> T) -> T {
        let now = self.generation.load(Ordering::SeqCst);
        {
            let table = self.table.read().unwrap_or_else(|p| p.into_inner());
            if table.generation == now {
                return f(&table);
            }
        }
        let mut table = self.table.write().unwrap_or_else(|p| p.into_inner());
        if table.generation != now {
            let (fresh, warnings) = self.build_table();
            for why in warnings {
                tracing::warn!("{why}");
            }
            *table = fresh;
        }
        f(&table)
    }

    /// The built-ins, then every plugin's current tools in load order: a
    /// plugin's name that is invalid or already taken (by a built-in or an
    /// earlier plugin) is skipped, with a warning saying so.
    fn build_table(&self) -> (Table, Vec<String>) {
        let generation = self.generation.load(Ordering::SeqCst);
        let mut tools = self.own.clone();
        let mut warnings = Vec::new();
        for plugin in &self.plugins {
            for spec in plugin.tools().iter() {
                let refusal = match (super::check_name(&spec.name), tools.get(&spec.name)) {
                    (Err(why), _) => Some(why),
                    (Ok(()), Some(existing)) => Some(format!(
                        "tool {} is already provided by {}; this one is skipped",
                        spec.name,
                        existing.provider.describe()
                    )),
                    (Ok(()), None) => None,
                };
                match refusal {
                    Some(why) => warnings.push(format!("plugin {}: {why}", plugin.name)),
                    None => {
                        tools.insert(
                            spec.name.clone(),
                            Arc::new(Tool {
                                spec: spec.clone(),
                                provider: Provider::Plugin(Arc::clone(plugin)),
                            }),
                        );
                    }
                }
            }
        }
        (Table { generation, tools }, warnings)
    }

    /// The known name with the longest common prefix, if it shares at
    /// least three characters.
    fn closest(&self, name: &str) -> Option<String> {
        self.list()
            .into_iter()
            .map(|t| t.spec.name)
            .map(|k| {
                (
                    k.bytes()
                        .zip(name.bytes())
                        .take_while(|(a, b)| a == b)
                        .count(),
                    k,
                )
            })
            .filter(|(n, _)| *n >= 3)
            // On a tie, the shorter name: "ech" suggests "echo", not "echo_panic".
            .max_by_key(|(n, k)| (*n, std::cmp::Reverse(k.len())))
            .map(|(_, k)| k)
    }
}

impl Provider {
    /// Where the tool comes from, for listings and messages.
    pub fn describe(&self) -> String {
        match self {
            Provider::Plugin(p) => format!("plugin {}", p.name),
            Provider::Builtin(_) => "builtin".into(),
        }
    }
}

/// `result` with every value `redactor` knows replaced, in the answer or
/// in each text of the error.
fn redact(result: Result<Value, ToolError>, redactor: &Redactor) -> Result<Value, ToolError> {
    if redactor.is_empty() {
        return result;
    }
    let clean = |text: String| match redactor.redact_text(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clean) => clean,
    };
    let error = match result {
        Ok(value) => return Ok(redactor.redact_json(value)),
        Err(error) => error,
    };
    Err(match error {
        unknown @ (ToolError::Unknown { .. }
        | ToolError::NeedsDaemon { .. }
        | ToolError::McpNotAnnounced { .. }) => unknown,
        ToolError::InvalidArguments { tool, message } => ToolError::InvalidArguments {
            tool,
            message: clean(message),
        },
        ToolError::Provider { tool, error } => ToolError::Provider {
            tool,
            error: match error {
                InvokeError::Unavailable { plugin, reason } => InvokeError::Unavailable {
                    plugin,
                    reason: clean(reason),
                },
                InvokeError::Failed { plugin, message } => InvokeError::Failed {
                    plugin,
                    message: clean(message),
                },
                InvokeError::Refused { plugin, message } => InvokeError::Refused {
                    plugin,
                    message: clean(message),
                },
                InvokeError::Panicked { plugin, message } => InvokeError::Panicked {
                    plugin,
                    message: clean(message),
                },
                InvokeError::BadAnswer { plugin, why } => InvokeError::BadAnswer {
                    plugin,
                    why: clean(why),
                },
            },
        },
        ToolError::Script { tool, mut failure } => {
            failure.message = clean(failure.message);
            ToolError::Script { tool, failure }
        }
        ToolError::Builtin { tool, message } => ToolError::Builtin {
            tool,
            message: clean(message),
        },
        ToolError::Refused(why) => ToolError::Refused(clean(why)),
        ToolError::BadResult { tool, message } => ToolError::BadResult {
            tool,
            message: clean(message),
        },
    })
}

fn check_args(name: &str, args: &Value, schema: &Value) -> Result<(), ToolError> {
    schema::validate(args, schema).map_err(|message| ToolError::InvalidArguments {
        tool: name.to_owned(),
        message,
    })
}

fn call_plugin(
    plugin: &Arc<ActivePlugin>,
    name: &str,
    filled: secret_args::Filled,
    floor: Option<Floor>,
) -> Result<Value, ToolError> {
    // In a turn, the call can be stopped and its output shown.
    let tracked = scope::current().map(|scope| plugin.track(scope));
    let payload = serde_json::to_vec(&ToolCall {
        tool: name.to_owned(),
        args: filled.args,
        floor,
        call_id: tracked.as_ref().map(|t| t.id().to_owned()),
        secrets: filled.keys,
    })
    .map_err(|e| ToolError::InvalidArguments {
        tool: name.to_owned(),
        message: e.to_string(),
    })?;
    let answer = plugin
        .invoke(method::TOOL_CALL, &payload)
        .map_err(|error| ToolError::Provider {
            tool: name.to_owned(),
            error,
        })?;
    serde_json::from_slice(&answer).map_err(|e| ToolError::BadResult {
        tool: name.to_owned(),
        message: e.to_string(),
    })
}

/// Actions that only look: a many-action tool's call with one of them is
/// judged as a `read` tool (`Targets::read_actions`), so listing the
/// schedule or reading a note never asks.
pub const READ_ACTIONS: [&str; 6] = ["help", "list", "show", "read", "history", "search"];

/// Sets `spec`'s read-only actions: those of its `action` enum that
/// [`READ_ACTIONS`] names.
fn mark_read_actions(spec: &mut ToolSpec) {
    let Some(actions) = spec.parameters["properties"]["action"]["enum"].as_array() else {
        return;
    };
    spec.targets.read_actions = actions
        .iter()
        .filter_map(Value::as_str)
        .filter(|a| READ_ACTIONS.contains(a))
        .map(str::to_owned)
        .collect();
}

/// Lua's `hearth.tool` and `hearth.db` run here, ruled and audited like
/// the model's calls.
impl hearth_script::ToolCalls for ToolRegistry {
    fn call_as(
        &self,
        caller: &Caller,
        name: &str,
        args: Value,
        depth: u32,
    ) -> Result<Value, String> {
        ToolRegistry::call_as(self, caller, name, args, depth).map_err(|e| e.to_string())
    }
}
