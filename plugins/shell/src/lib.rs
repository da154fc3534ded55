//! The shell plugin: commands and background processes for the agent.
//!
//! - `shell_exec` (exec): run a command line with `bash -c` to completion,
//!   with a timeout that kills its whole process group, and its output
//!   capped (the rest goes to a log file the result names);
//! - `process_start` (exec): start a command detached, in its own session,
//!   its output in files under `$HEARTH_HOME/processes/proc-<n>/`;
//! - `process_stop` (write): SIGTERM to its group, SIGKILL after 5 s;
//! - `process_status` (read): one or all, alive or not judged by pid and
//!   start time, so it holds across daemon restarts;
//! - `process_logs` (read): the end of a process's stdout or stderr, after
//!   following it for `follow_s` seconds when asked.
//!
//! A call the host names (`call_id`, in a turn) can be stopped
//! (`tool.cancel`: `shell_exec` kills its process group, a followed log
//! stops being followed), and its output is shown live through
//! `tool.output` ([`live`]).
//!
//! A background process started by this daemon run that fails on its own
//! is reported to the agent through `agent.notify`. Whether a command may
//! run is the host policy's decision (the tools name their `command` and
//! `cwd` arguments as targets for its guard); it runs every command in a
//! session of its own under a seccomp filter, and every command the owner
//! did not approve under the confinement the host sends with the call
//! ([`floor`], [`spawn`]).
//!
//! Config, `[plugins.shell]`, every key optional:
//! - `max_output_lines` (default 200) and `max_output_bytes` (default
//!   65536): per stream, the most `shell_exec` returns whole;
//! - `pass_env`: names of daemon environment variables passed to commands
//!   besides the default few (`PATH`, `HOME`, `LANG`, ...).

pub mod exec;
pub mod floor;
pub mod follow;
pub mod live;
pub mod meta;
pub mod output;
pub mod processes;
pub mod reaper;
pub mod spawn;
pub mod summary;
pub mod tail;

use std::path::PathBuf;
use std::sync::Arc;

use hearth_sdk::calls::Calls;
use hearth_sdk::protocol::{Description, Floor, Risk, Targets, ToolCall, ToolSpec, service};
use hearth_sdk::{Host, Plugin, PluginError, parse_args};
use serde::Deserialize;
use serde_json::{Value, json};

use output::Limits;
use processes::{Notify, Processes};
use spawn::Launcher;
pub use summary::Summarize;

/// The largest `max_output_lines`.
pub const MAX_OUTPUT_LINES_LIMIT: u64 = 100_000;
/// The largest `max_output_bytes`: two streams' worth stays well inside
/// the host's 16 MiB answer cap.
pub const MAX_OUTPUT_BYTES_LIMIT: u64 = 4 * 1024 * 1024;
/// The smallest `max_output_bytes`.
pub const MIN_OUTPUT_BYTES: u64 = 1024;

/// The plugin's state.
pub struct Shell {
    /// How commands are started.
    pub launcher: Launcher,
    /// The output caps of `shell_exec`.
    pub limits: Limits,
    /// The background processes.
    pub processes: Processes,
    /// The calls running now, which the host may stop.
    pub calls: Calls,
    /// Where live output goes (`tool.output`), when the host takes it.
    pub live: Option<Box<live::SendOutput>>,
    /// The cheap model's summaries of long output, when the host offers them.
    pub summarize: Option<Arc<Summarize>>,
}

/// What a [`Shell`] is built from.
pub struct Setup {
    /// `$HEARTH_HOME`.
    pub home: PathBuf,
    /// The `[plugins.shell]` table.
    pub config: Config,
    /// How exit notices reach the agent.
    pub notify: Notify,
    /// Where the live output of a call the host names goes; `None` shows
    /// nothing.
    pub live: Option<Box<live::SendOutput>>,
    /// How long output is summarized; `None` without a cheap model.
    pub summarize: Option<Arc<Summarize>>,
}

/// Config table `[plugins.shell]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Per stream, the most lines `shell_exec` returns whole.
    pub max_output_lines: Option<u64>,
    /// Per stream, the most bytes `shell_exec` returns whole.
    pub max_output_bytes: Option<u64>,
    /// Daemon environment variables passed to commands besides the default
    /// ones.
    #[serde(default)]
    pub pass_env: Vec<String>,
}

impl Shell {
    /// Checks the config and starts the process reaper.
    pub fn new(setup: Setup) -> Result<Shell, PluginError> {
        let config = setup.config;
        let limits = Limits {
            max_lines: config.max_output_lines.unwrap_or(output::DEFAULT_MAX_LINES),
            max_bytes: config.max_output_bytes.unwrap_or(output::DEFAULT_MAX_BYTES),
        };
        if !(1..=MAX_OUTPUT_LINES_LIMIT).contains(&limits.max_lines) {
            return Err(PluginError::InvalidArguments(format!(
                "[plugins.shell] max_output_lines must be between 1 and {MAX_OUTPUT_LINES_LIMIT}, not {}",
                limits.max_lines
            )));
        }
        if !(MIN_OUTPUT_BYTES..=MAX_OUTPUT_BYTES_LIMIT).contains(&limits.max_bytes) {
            return Err(PluginError::InvalidArguments(format!(
                "[plugins.shell] max_output_bytes must be between {MIN_OUTPUT_BYTES} and {MAX_OUTPUT_BYTES_LIMIT}, not {}",
                limits.max_bytes
            )));
        }
        if let Some(bad) = config
            .pass_env
            .iter()
            .find(|n| n.is_empty() || n.contains(['=', '\0']))
        {
            return Err(PluginError::InvalidArguments(format!(
                "[plugins.shell] pass_env holds {bad:?}, which is not a variable name"
            )));
        }
        let launcher = Launcher::new(&setup.home, &config.pass_env);
        let processes = Processes::new(
            launcher.home.join("processes"),
            setup.notify,
            setup.summarize.clone(),
        )?;
        Ok(Shell {
            launcher,
            limits,
            processes,
            calls: Calls::default(),
            live: setup.live,
            summarize: setup.summarize,
        })
    }

    /// Runs one tool on raw JSON arguments.
    pub fn call(&self, tool: &str, args: &Value) -> Result<Value, PluginError> {
        self.call_floored(tool, args, None)
    }

    /// Runs one tool, the commands it starts under `floor` when given.
    pub fn call_floored(
        &self,
        tool: &str,
        args: &Value,
        floor: Option<&Floor>,
    ) -> Result<Value, PluginError> {
        self.call_as(tool, args, floor, None)
    }

    /// Runs one tool as the call `call_id`, when the host named one: the
    /// host can stop it ([`Shell::cancel`]) and its output is shown live.
    pub fn call_as(
        &self,
        tool: &str,
        args: &Value,
        floor: Option<&Floor>,
        call_id: Option<&str>,
    ) -> Result<Value, PluginError> {
        let running = self.calls.start(call_id);
        let watching = || exec::Watching {
            stop: Some(running.stop()),
            live: self
                .live
                .as_deref()
                .zip(call_id)
                .map(|(send, id)| live::Live::new(send, id)),
        };
        match tool {
            "shell_exec" => exec::shell_exec(self, args, floor, watching()),
            "process_start" => self.processes.start(&self.launcher, args, floor),
            "process_stop" => self.processes.stop(args),
            "process_status" => self.processes.status(args),
            "process_logs" => self.processes.logs(args, watching()),
            other => Err(PluginError::Unsupported(format!("no tool {other:?}"))),
        }
    }

    /// Stops the running call `call_id`; whether it was running.
    pub fn cancel(&self, call_id: &str) -> bool {
        self.calls.cancel(call_id)
    }
}

impl Plugin for Shell {
    const NAME: &'static str = "shell";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn init(host: Host, config: Value) -> Result<Self, PluginError> {
        let config: Config = parse_args(config)?;
        let info = host
            .info()
            .map_err(|e| PluginError::failed(format!("cannot ask the host where it lives: {e}")))?;
        let notify: Notify = Box::new(move |notice| {
            let request = serde_json::to_value(notice).map_err(|e| e.to_string())?;
            host.call(service::AGENT_NOTIFY, &request)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        let summarize: Option<Arc<Summarize>> = info.summaries.then(|| {
            Arc::new(move |about: &str, text: &str| {
                host.summarize(about, text).map_err(|e| e.to_string())
            }) as Arc<Summarize>
        });
        Shell::new(Setup {
            home: PathBuf::from(info.home),
            config,
            notify,
            live: Some(Box::new(move |output| host.tool_output(output))),
            summarize,
        })
    }

    fn describe(&self) -> Description {
        Description {
            tools: tools(),
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
        self.call_floored(tool, &args, floor.as_ref())
    }

    fn run_call(&self, call: ToolCall) -> Result<Value, PluginError> {
        self.call_as(
            &call.tool,
            &call.args,
            call.floor.as_ref(),
            call.call_id.as_deref(),
        )
    }

    fn cancel_call(&self, call_id: &str) -> Result<bool, PluginError> {
        Ok(self.cancel(call_id))
    }

    fn shutdown(&self) {
        self.processes.shutdown();
    }
}

/// The tools' specs; the default timeout appears in `shell_exec`'s description.
pub fn tools() -> Vec<ToolSpec> {
    // Only what a property's name does not say is described: every
    // description is sent, and paid for, on every model call.
    let command = json!({ "type": "string", "minLength": 1 });
    let cwd = json!({ "type": "string", "minLength": 1 });
    let env = json!({ "type": "object", "additionalProperties": { "type": "string" } });
    let id = json!({ "type": "string", "minLength": 1 });
    let outside = json!({ "type": "string", "minLength": 1,
        "description": "Why it must write outside the writable roots." });
    let runs = || Targets {
        command: Some("command".into()),
        cwd: Some("cwd".into()),
        floor: true,
        escalate: Some("outside_roots".into()),
        ..Targets::default()
    };
    let spec = |name: &str,
                description: String,
                risk: Risk,
                targets: Targets,
                properties: Value,
                required: &[&str]| ToolSpec {
        name: name.into(),
        description,
        parameters: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        }),
        risk,
        targets,
    };
    vec![
        spec(
            "shell_exec",
            format!(
                "Runs a bash command line to completion (empty stdin, timeout_s default {}); long \
                 output keeps head and tail, and `log` names the whole.",
                exec::DEFAULT_TIMEOUT_S
            ),
            Risk::Exec,
            runs(),
            json!({
                "command": command,
                "cwd": cwd,
                "timeout_s": { "type": "integer", "minimum": 1, "maximum": exec::MAX_TIMEOUT_S },
                "env": env,
                "outside_roots": outside,
            }),
            &["command"],
        ),
        spec(
            "process_start",
            "Starts a command line in the background, detached; returns its id.".into(),
            Risk::Exec,
            runs(),
            json!({
                "command": command,
                "cwd": cwd,
                "env": env,
                "name": { "type": "string", "minLength": 1, "maxLength": 100 },
                "outside_roots": outside,
            }),
            &["command"],
        ),
        spec(
            "process_stop",
            format!(
                "Stops a background process and its children (SIGKILL after {} s).",
                processes::STOP_GRACE.as_secs()
            ),
            Risk::Write,
            Targets::default(),
            json!({ "id": id }),
            &["id"],
        ),
        spec(
            "process_status",
            "A background process's status by id, or all.".into(),
            Risk::Read,
            Targets::default(),
            json!({ "id": id }),
            &[],
        ),
        spec(
            "process_logs",
            "The last lines of a background process's output; follow_s waits for more first."
                .into(),
            Risk::Read,
            Targets::default(),
            json!({
                "id": id,
                "stream": { "enum": ["stdout", "stderr"] },
                "lines": { "type": "integer", "minimum": 1, "maximum": processes::MAX_LOG_LINES },
                "follow_s": { "type": "integer", "minimum": 1, "maximum": follow::MAX_FOLLOW_S },
            }),
            &["id"],
        ),
    ]
}
