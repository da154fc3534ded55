//! The command line: `hearth run | check | plugins | tools | tool call |
//! chat | status | canvas-url | approvals | audit | contacts | agents |
//! schedule | identity | secret | usage | mcp | doctor | service | backup |
//! restore | groups`.
//!
//! This is the top of the program, the one place that uses `anyhow`: every
//! library error arrives here with its own message and is printed as
//! `error: ...` with the causes, and the exit code says whether it worked.

/// `println!` for the CLI's answers: a reader that went away (`hearth tools
/// | head`) ends the program quietly instead of panicking on the closed
/// pipe. Defined before the submodules so that they can use it.
macro_rules! outln {
    () => {
        $crate::cli::print_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::print_line(format_args!($($arg)*))
    };
}

mod backup;
mod browser;
mod chat;
mod client;
mod doctor;
mod groups;
mod housekeeping;
mod identity;
mod inventory;
mod mcp;
mod model;
mod people;
mod records;
mod schedule;
mod scripts;
mod secret;
mod service;
mod setup;
mod setup_heartbeat;
mod setup_signal;
mod setup_telegram;
mod tool_call;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::{Parser, Subcommand};

use client::Daemon;

use crate::runtime::Runtime;
use hearth_base::config::{self, Config, LogFormat, LogLevel};

/// Writes one line to standard output for `outln!`. A closed pipe is the
/// reader saying it has seen enough, so it ends the program with success,
/// as `head` expects; any other failure (a full disk) ends it with a
/// message and failure.
pub(crate) fn print_line(line: std::fmt::Arguments) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing the answer to standard output: {e}");
        std::process::exit(1);
    }
}

/// Cuts a listing's row to the terminal's width, ending it with "…", so a
/// long description never wraps into the next row. Output to a pipe or a
/// file keeps the whole line, for grep.
pub(crate) fn fit(line: String) -> String {
    cut(line, terminal_width())
}

/// `line` cut to `width` characters, the last one "…" when cut.
fn cut(line: String, width: Option<usize>) -> String {
    let Some(width) = width else {
        return line;
    };
    if line.chars().count() <= width {
        return line;
    }
    let mut cut: String = line.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The width of the terminal standard output is, if it is one.
fn terminal_width() -> Option<usize> {
    // SAFETY: isatty and TIOCGWINSZ only read the descriptor's state into
    // a zeroed winsize this function owns.
    unsafe {
        if libc::isatty(1) != 1 {
            return None;
        }
        let mut size: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut size) == 0 && size.ws_col > 0 {
            return Some(usize::from(size.ws_col));
        }
    }
    std::env::var("COLUMNS").ok()?.parse().ok()
}

/// `hearth --version`: the release and the commit it was built from
/// (host/build.rs), so a report names the exact source.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("HEARTH_COMMIT"), ")");

/// hearth: one person's AI agent, on their own always-on PC.
#[derive(Parser, Debug)]
#[command(name = "hearth", version = VERSION, about, propagate_version = true)]
pub struct Cli {
    /// Config file [default: $HEARTH_CONFIG, else $HEARTH_HOME/hearth.toml if present]
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log format, overriding `[log] format`.
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    /// Log level, overriding `[log] level` (other commands than `run` default to warn).
    #[arg(long, global = true, value_enum)]
    log_level: Option<LogLevel>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the daemon until SIGTERM or SIGINT; SIGHUP reloads the config.
    Run,
    /// Validate the config, load the plugins, print the inventory; exit 1 on any problem.
    Check,
    /// List the plugins found and whether each one loaded.
    Plugins {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List every tool in the registry.
    Tools {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Work with one tool.
    Tool {
        #[command(subcommand)]
        action: ToolAction,
    },
    /// Chat with the running daemon as the owner.
    Chat {
        /// Send this one message, print the reply and exit.
        #[arg(short, long)]
        message: Option<String>,
        /// With -m: how long to wait for the reply, in seconds.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
    /// Show the running daemon's status (model, uptime, plugins, tools, queue).
    Status,
    /// Print the canvas's login link (it holds the login token: keep it private).
    CanvasUrl,
    /// List the standing "always allow" grants, or revoke one.
    Approvals {
        #[command(subcommand)]
        action: Option<ApprovalAction>,
        /// Include revoked grants.
        #[arg(long)]
        all: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show the audit trail of tool calls, oldest first.
    Audit {
        /// Only calls of this tool.
        #[arg(long)]
        tool: Option<String>,
        /// How many of the newest calls to show.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the contacts and the pairing codes waiting; approve a code.
    Contacts {
        #[command(subcommand)]
        action: Option<ContactAction>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the agents: the main agent and its sub-agents.
    Agents {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Reminders and scheduled tasks: list them, fire one now, enable,
    /// disable or remove one.
    Schedule {
        #[command(subcommand)]
        action: Option<ScheduleAction>,
        /// Print JSON instead of a table.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Agent groups: list and show them, create and staff them, give one
    /// a mission, approve or reject its plan, assign a plan by hand.
    Groups {
        #[command(subcommand)]
        action: Option<GroupsAction>,
        /// Print JSON instead of text.
        #[arg(long, global = true)]
        json: bool,
    },
    /// The main agent's identity: its versions, one version's text, a
    /// rollback.
    Identity {
        #[command(subcommand)]
        action: IdentityAction,
    },
    /// The versions of the agent's scripts (tools, libraries, skills), and
    /// rollback.
    Scripts {
        #[command(subcommand)]
        action: ScriptsAction,
    },
    /// The agent's browser: log in to a site by hand in a visible window
    /// on its profile, so the agent stays logged in.
    Browser {
        #[command(subcommand)]
        action: BrowserAction,
    },
    /// The owner's secrets, used by tools by name: set one (the value
    /// from stdin, never the command line), list their names, remove one.
    Secret {
        #[command(subcommand)]
        action: SecretAction,
    },
    /// The model the owner's conversation uses; with NAME, switch to one of
    /// the configured ones (`[llm] model`, `fallback_models`) from the next
    /// message; `default` goes back to `[llm] model`.
    Model {
        /// A configured model's name, or `default`.
        name: Option<String>,
    },
    /// Tokens and estimated cost per model, today and this month (in the
    /// owner's time zone), and the token budgets.
    Usage {
        /// Only today.
        #[arg(long, conflicts_with = "month")]
        day: bool,
        /// Only this month.
        #[arg(long)]
        month: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The MCP servers whose tools the agent uses: their state and tools.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Check everything a running hearth needs (config, home, store, disk,
    /// Landlock, the service, plugins, channels, the model); each line OK,
    /// WARN or FAIL with the fix. Exits 1 when anything failed.
    Doctor {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Back up the databases (online, the daemon need not stop), the
    /// agent's files, the config and the secrets into one archive.
    Backup {
        /// The folder to write it to [default: `[backup] dir`, else $HEARTH_HOME/backups].
        #[arg(long, value_name = "DIR")]
        to: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove what `[housekeeping]` keeps no longer (old logs, media,
    /// attachments, voice notes, workers' results, ended processes' records),
    /// now; the daemon does it daily.
    Housekeeping {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Set hearth up: the model and its key, the mode, your time zone;
    /// writes $HEARTH_HOME/hearth.toml, runs the doctor, offers the service.
    Setup(setup::SetupArgs),
    /// Install or remove hearth as a systemd service.
    Service {
        #[command(subcommand)]
        action: ServiceAction,
    },
    /// Restore a backup archive into a stopped home.
    Restore {
        /// The archive, a `hearth-backup-*.tar.gz`.
        archive: PathBuf,
        /// The home to restore into [default: the config's home].
        #[arg(long, value_name = "DIR")]
        home: Option<PathBuf>,
        /// Restore into a home that holds files: those the restore
        /// replaces are moved into `before-restore-<time>/` in it.
        #[arg(long)]
        force: bool,
    },
    /// Internal: a Lua worker process, started by the daemon.
    #[command(name = "__lua-worker", hide = true)]
    LuaWorker {
        /// The Lua heap cap, in MiB.
        #[arg(long, default_value_t = 64)]
        memory_mb: u64,
    },
}

#[derive(Subcommand, Debug)]
enum ServiceAction {
    /// Write the unit (this binary, the config, $HEARTH_HOME; the
    /// production drop-in in production mode), reload systemd, and print
    /// the command that starts it.
    Install {
        #[command(flatten)]
        target: ServiceTarget,
        /// The user a system unit runs as [default: $SUDO_USER, else the
        /// current user].
        #[arg(long, value_name = "USER", conflicts_with = "user")]
        owner: Option<String>,
    },
    /// Stop and disable the service, remove its unit, reload systemd.
    Uninstall {
        #[command(flatten)]
        target: ServiceTarget,
    },
}

#[derive(clap::Args, Debug)]
struct ServiceTarget {
    /// A user unit (the owner's own service manager) instead of a system
    /// unit.
    #[arg(long)]
    user: bool,
    /// Write the unit in DIR instead of systemd's unit directory (for
    /// packagers and tests; systemctl is still run).
    #[arg(long, value_name = "DIR")]
    unit_dir: Option<PathBuf>,
}

impl ServiceTarget {
    fn into_target(self, owner: Option<String>) -> service::Target {
        service::Target {
            scope: if self.user {
                service::Scope::User
            } else {
                service::Scope::System
            },
            unit_dir: self.unit_dir,
            owner,
        }
    }
}

#[derive(Subcommand, Debug)]
enum McpAction {
    /// Each configured server: its state, why, and its tools.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum ApprovalAction {
    /// Revoke a grant: the call asks again from now on.
    Revoke {
        /// The grant's number, from `hearth approvals`.
        id: i64,
    },
}

#[derive(Subcommand, Debug)]
enum ContactAction {
    /// Approve a pairing code a stranger got: they become a contact.
    Approve {
        /// The code, as the stranger was sent it.
        code: String,
        /// Their display name (default: the name their channel gives).
        #[arg(long)]
        name: Option<String>,
        /// The agent that answers them (default: `[agent] contact_agent`).
        #[arg(long)]
        agent: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum ScriptsAction {
    /// Every version of a script, oldest first.
    Log {
        /// A tool, library or skill name, or a path under $HEARTH_HOME.
        name: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Restore a version as the newest one (validated and reloaded).
    Rollback {
        /// A tool, library or skill name, or a path under $HEARTH_HOME.
        name: String,
        /// The version's number, from `hearth scripts log`.
        #[arg(value_name = "VERSION")]
        number: i64,
    },
}

#[derive(Subcommand, Debug)]
enum IdentityAction {
    /// Every version, newest first.
    Log,
    /// One version's text.
    Show {
        /// The version's number, from `hearth identity log`.
        #[arg(value_name = "VERSION")]
        number: i64,
    },
    /// Restore a version; the restore is a new version.
    Rollback {
        /// The version's number.
        #[arg(value_name = "VERSION")]
        number: i64,
    },
}

#[derive(Subcommand, Debug)]
enum BrowserAction {
    /// Open URL in a visible browser on the agent's profile; log in, then
    /// close the window. The agent's browser is stopped meanwhile.
    Login {
        /// The login page's address (http or https).
        url: String,
    },
}

#[derive(Subcommand, Debug)]
enum SecretAction {
    /// Set a secret: the value is read from stdin (typed without echo on
    /// a terminal), one trailing newline dropped.
    Set {
        /// Its name: A-Z first, then A-Z, 0-9 and `_`, up to 64 (like
        /// GITHUB_TOKEN).
        name: String,
    },
    /// List the secrets' names and when each was set (never the values).
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove a secret.
    Rm {
        /// Its name.
        name: String,
    },
}

#[derive(Subcommand, Debug)]
enum GroupsAction {
    /// Every group with its status (the default).
    List,
    /// One group: members, deliverables, the plan's problems, the summary.
    Show {
        /// The group's name.
        group: String,
    },
    /// A new group, named or given a random name.
    Create {
        /// Its name (lower-case letters, digits, hyphens).
        name: Option<String>,
        /// Run its plans without asking for approval.
        #[arg(long)]
        auto_execute: bool,
    },
    /// Rename a group.
    Rename {
        /// The group.
        group: String,
        /// Its new name.
        new_name: String,
    },
    /// An agent joins a group (the first one leads).
    Add {
        /// The group.
        group: String,
        /// The agent's name.
        agent: String,
        /// What it does in the group.
        #[arg(long, default_value = "")]
        role: String,
    },
    /// A member leaves a group.
    Remove {
        /// The group.
        group: String,
        /// The member.
        agent: String,
    },
    /// A member leads the group.
    Leader {
        /// The group.
        group: String,
        /// The member.
        agent: String,
    },
    /// Put a group away.
    Archive {
        /// The group.
        group: String,
    },
    /// Give a group its mission: its leader plans it.
    Mission {
        /// The group.
        group: String,
        /// The mission, in words.
        #[arg(required = true, num_args = 1..)]
        mission: Vec<String>,
    },
    /// Approve the plan waiting for you: the members start.
    Approve {
        /// The group.
        group: String,
    },
    /// Send the plan back to the leader, with your reason.
    Reject {
        /// The group.
        group: String,
        /// Why, in words (the leader reads it).
        reason: Vec<String>,
    },
    /// Assign a deliverable of the waiting plan to a member.
    Assign {
        /// The group.
        group: String,
        /// The deliverable's id (D2).
        deliverable: String,
        /// The member.
        agent: String,
    },
    /// Give the whole plan yourself (markdown with YAML frontmatter); it
    /// runs at once.
    Plan {
        /// The group.
        group: String,
        /// The plan file.
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum ScheduleAction {
    /// Every job, soonest first (the default).
    List,
    /// Fire a job now, outside its schedule.
    Run {
        /// The job's id, from `hearth schedule list`.
        id: i64,
    },
    /// Let a job fire again (from its next run after now).
    Enable {
        /// The job's id.
        id: i64,
    },
    /// Stop a job from firing, keeping it.
    Disable {
        /// The job's id.
        id: i64,
    },
    /// Remove a job.
    Remove {
        /// The job's id.
        id: i64,
    },
}

#[derive(Subcommand, Debug)]
enum ToolAction {
    /// Call a tool through the registry and print its JSON result (run by
    /// the daemon when it runs; Ctrl-C withdraws a call waiting for approval).
    Call {
        /// The tool's name.
        name: String,
        /// Arguments as a JSON object; `-` reads them from stdin.
        #[arg(default_value = "{}")]
        args: String,
    },
}

/// Parses the command line, runs the command, and turns the outcome into an
/// exit code.
pub fn main() -> ExitCode {
    let started = Instant::now();
    let cli = Cli::parse();
    // A worker needs no config and must write nothing but protocol lines.
    if let Command::LuaWorker { memory_mb } = cli.command {
        return hearth_script::worker::main(memory_mb);
    }
    match run(cli, started) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", causes(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, joined by ": ", each said once: an error
/// whose message already quotes its cause (`cannot read config x: No such
/// file or directory`) is not followed by the cause again.
fn causes(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

fn run(cli: Cli, started: Instant) -> anyhow::Result<ExitCode> {
    // Setup writes the config, so it must not need one.
    if let Command::Setup(args) = cli.command {
        return setup::run(args);
    }
    // Removing the service needs no config: a broken one must not stop it.
    if let Command::Service {
        action: ServiceAction::Uninstall { target },
    } = cli.command
    {
        return service::uninstall(&target.into_target(None));
    }
    let is_daemon = matches!(cli.command, Command::Run);
    let path = config::resolve_path(cli.config.as_deref());
    // With no config named or in the home, a one-shot command uses the
    // one the running daemon runs with, so both tell the same story.
    let path = match path {
        None if !is_daemon => client::running_config(),
        path => path,
    };
    let loaded = config::load(path.as_deref());
    // Log before the config is known to be good, so a config error in `run`
    // still reaches the log collector in the requested format.
    let (format, level) = match &loaded {
        Ok(c) => (c.log.format, c.log.level),
        Err(_) => (LogFormat::default(), LogLevel::default()),
    };
    let level = cli
        .log_level
        .unwrap_or(if is_daemon { level } else { LogLevel::Warn });
    let log = hearth_base::logging::init(cli.log_format.unwrap_or(format), level);
    let config = match loaded {
        Ok(config) => config,
        Err(e) if matches!(cli.command, Command::Check) => {
            outln!("config: {e}");
            return Ok(ExitCode::FAILURE);
        }
        // The doctor reports a broken config and checks the rest anyway.
        Err(e) if matches!(cli.command, Command::Doctor { .. }) => {
            let json = matches!(cli.command, Command::Doctor { json: true });
            return doctor::run(path.as_deref(), Err(e), json);
        }
        Err(e) => return Err(e.into()),
    };
    match cli.command {
        Command::Run => {
            crate::daemon::run(config, log, started)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check => check(config),
        // These go to the daemon when it runs, so they show its live state
        // and never start a second copy of its plugins.
        Command::Plugins { json } => match Daemon::find(&config.home)? {
            Some(mut daemon) => inventory::plugins_live(&mut daemon, json),
            None => with_runtime(config, |rt| {
                inventory::plugins(rt, inventory::Whose::NoDaemon, json)
            }),
        },
        Command::Tools { json } => match Daemon::find(&config.home)? {
            Some(mut daemon) => inventory::tools_live(&mut daemon, json),
            None => with_runtime(config, |rt| inventory::tools(rt, json)),
        },
        Command::Tool {
            action: ToolAction::Call { name, args },
        } => {
            let terminal = tool_call::owner_terminal(args == "-");
            let args = tool_call::parse_args(&args)?;
            match Daemon::find(&config.home)? {
                Some(daemon) => {
                    tool_call::call_live(daemon, &name, args, tool_call::print_json, terminal)
                }
                None => with_runtime(config, |rt| {
                    tool_call::call(rt, &name, args, tool_call::print_json)
                }),
            }
        }
        Command::Chat { message, timeout } => match message {
            Some(text) => chat::once(&config.home, &text, std::time::Duration::from_secs(timeout)),
            None => chat::interactive(&config.home),
        },
        Command::Status => chat::status(&config.home),
        Command::CanvasUrl => canvas_url(&config),
        // Without a daemon these open the store and nothing else.
        Command::Approvals { action, all, json } => {
            let mut daemon = Daemon::find(&config.home)?;
            match action {
                Some(ApprovalAction::Revoke { id }) => {
                    records::revoke(&config, daemon.as_mut(), id)
                }
                None => records::approvals(&config, daemon.as_mut(), all, json),
            }
        }
        Command::Contacts { action, json } => {
            let mut daemon = Daemon::find(&config.home)?;
            match action {
                Some(ContactAction::Approve { code, name, agent }) => people::approve(
                    &config,
                    daemon.as_mut(),
                    &code,
                    name.as_deref(),
                    agent.as_deref(),
                ),
                None => people::list_contacts(&config, daemon.as_mut(), json),
            }
        }
        Command::Agents { json } => {
            let mut daemon = Daemon::find(&config.home)?;
            people::list_agents(&config, daemon.as_mut(), json)
        }
        Command::Audit { tool, limit, json } => {
            let mut daemon = Daemon::find(&config.home)?;
            records::audit(&config, daemon.as_mut(), tool.as_deref(), limit, json)
        }
        Command::Schedule { action, json } => {
            let mut daemon = Daemon::find(&config.home)?;
            match action {
                None | Some(ScheduleAction::List) => schedule::list(&config, daemon.as_mut(), json),
                Some(ScheduleAction::Run { id }) => schedule::act(daemon.as_mut(), "run_now", id),
                Some(ScheduleAction::Enable { id }) => schedule::act(daemon.as_mut(), "enable", id),
                Some(ScheduleAction::Disable { id }) => {
                    schedule::act(daemon.as_mut(), "disable", id)
                }
                Some(ScheduleAction::Remove { id }) => schedule::act(daemon.as_mut(), "remove", id),
            }
        }
        Command::Groups { action, json } => {
            let mut daemon = Daemon::find(&config.home)?;
            groups::run(daemon.as_mut(), groups::request(action)?, json)
        }
        Command::Identity { action } => {
            let mut daemon = Daemon::find(&config.home)?;
            let action = match action {
                IdentityAction::Log => identity::Action::Log,
                IdentityAction::Show { number } => identity::Action::Show(number),
                IdentityAction::Rollback { number } => identity::Action::Rollback(number),
            };
            identity::run(&config, daemon.as_mut(), action)
        }
        Command::Scripts { action } => {
            let (tool, args, show): (&str, _, tool_call::Show) = match action {
                ScriptsAction::Log { name, json } => (
                    "script_history",
                    serde_json::json!({ "name": name }),
                    if json {
                        tool_call::print_json
                    } else {
                        scripts::print_log
                    },
                ),
                ScriptsAction::Rollback { name, number } => (
                    "script_rollback",
                    serde_json::json!({ "name": name, "version": number }),
                    scripts::print_rollback,
                ),
            };
            match Daemon::find(&config.home)? {
                Some(daemon) => {
                    let terminal = tool_call::owner_terminal(false);
                    tool_call::call_live(daemon, tool, args, show, terminal)
                }
                None => with_runtime(config, |rt| tool_call::call(rt, tool, args, show)),
            }
        }
        Command::Browser {
            action: BrowserAction::Login { url },
        } => browser::login(&config, &url),
        // The secrets file alone: the daemon sees a change at its next use.
        Command::Secret { action } => match action {
            SecretAction::Set { name } => secret::set(&config, &name),
            SecretAction::List { json } => secret::list(&config, json),
            SecretAction::Rm { name } => secret::remove(&config, &name),
        },
        Command::Model { name } => model::run(&config, name.as_deref()),
        Command::Usage { day, month, json } => {
            use hearth_model::usage::report::Which;
            let spans: &[Which] = match (day, month) {
                (true, _) => &[Which::Day],
                (_, true) => &[Which::Month],
                _ => &Which::BOTH,
            };
            match Daemon::find(&config.home)? {
                Some(mut daemon) => usage::show_live(&mut daemon, spans, json),
                None => usage::show(&config, spans, json),
            }
        }
        Command::Doctor { json } => doctor::run(path.as_deref(), Ok(config), json),
        Command::Mcp {
            action: McpAction::List { json },
        } => match Daemon::find(&config.home)? {
            Some(mut daemon) => mcp::list_live(&mut daemon, json),
            None => with_runtime(config, |rt| mcp::list(rt, json)),
        },
        Command::Service { action } => match action {
            ServiceAction::Install { target, owner } => {
                service::install(&config, &target.into_target(owner))
            }
            ServiceAction::Uninstall { target } => service::uninstall(&target.into_target(None)),
        },
        Command::Backup { to, json } => {
            let mut daemon = Daemon::find(&config.home)?;
            backup::backup(&config, daemon.as_mut(), to.as_deref(), json)
        }
        Command::Housekeeping { json } => housekeeping::run(&config, json),
        Command::Restore {
            archive,
            home,
            force,
        } => backup::restore(&archive, &backup::home(&config, home)?, force),
        Command::LuaWorker { .. } | Command::Setup(_) => Ok(ExitCode::FAILURE),
    }
}

/// `hearth check`: everything `run` would do up to `ready`, then a report.
fn check(config: Config) -> anyhow::Result<ExitCode> {
    let shown = config
        .source
        .as_ref()
        .map_or("built-in defaults".into(), |p| p.display().to_string());
    outln!("config: {shown} (ok)");
    outln!(
        "(checks the file with its own copy of the plugins; `hearth status` shows the running daemon)"
    );
    outln!("home: {}", config.home.display());
    outln!("mode: {}", config.mode.name());
    outln!("landlock: {}", hearth_policy::landlock::report());
    outln!(
        "floor: {}",
        hearth_policy::landlock::floor_status(config.mode).0
    );
    outln!(
        "guards: {}",
        config
            .home
            .join(hearth_policy::guards_file::RELATIVE_PATH)
            .display()
    );
    // The model's key: without it the daemon starts but cannot answer,
    // which `hearth doctor` calls a failure too.
    let model_problem = config
        .llm
        .as_ref()
        .and_then(|llm| hearth_model::llm::Llm::new(llm).err())
        .map(|e| format!("[llm]: {e}"));
    with_runtime(config, |rt| {
        if let Some(floor) = rt.tools.floor() {
            outln!("writable: {}", floor.writable.join(", "));
            outln!("read-only: {}", floor.protect.join(", "));
            outln!("credentials (hidden): {}", floor.hidden.join(", "));
        }
        inventory::plugins(rt, inventory::Whose::Check, false)?;
        // Whether the browser tool can work here: a Chromium found, or why not.
        if let Some(part) = hearth_plugins::parts(rt.tools.plugins())
            .into_iter()
            .find(|p| p.plugin == "browser")
        {
            outln!("browser: {}", part.status.detail);
        }
        outln!();
        inventory::tools(rt, false)?;
        let warnings = inventory::warnings(rt);
        if !warnings.is_empty() {
            outln!("\nwarnings:");
            for w in &warnings {
                outln!("  - {w}");
            }
        }
        let mut problems = inventory::problems(rt);
        problems.extend(model_problem);
        if problems.is_empty() {
            outln!("\ncheck passed");
            Ok(ExitCode::SUCCESS)
        } else {
            outln!("\ncheck failed:");
            for p in &problems {
                outln!("  - {p}");
            }
            Ok(ExitCode::FAILURE)
        }
    })
}

/// `hearth canvas-url`: the login link, from the token the canvas made on
/// its first start and the address it listens on.
fn canvas_url(config: &Config) -> anyhow::Result<ExitCode> {
    let token_file = config.home.join("canvas.token");
    let token = std::fs::read_to_string(&token_file).with_context(|| {
        format!(
            "no canvas login token at {}: start the daemon once (`hearth run`) with the canvas \
             plugin, and it makes one",
            token_file.display()
        )
    })?;
    let address = std::fs::read_to_string(config.home.join("canvas.addr"))
        .ok()
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty())
        .or_else(|| {
            config
                .plugins
                .entries
                .get("canvas")
                .and_then(|entry| entry.settings["listen"].as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    outln!("http://{address}/login?token={}", token.trim());
    Ok(ExitCode::SUCCESS)
}

/// Starts a runtime for a one-shot command and always stops it after.
fn with_runtime(
    config: Config,
    f: impl FnOnce(&Runtime) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    let deadline = std::time::Duration::from_millis(config.daemon.shutdown_timeout_ms);
    let rt = Runtime::start_one_shot(config)?;
    let outcome = f(&rt);
    rt.stop(deadline)?;
    outcome
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// A row longer than the terminal is cut to its width, ending in "…";
    /// without a terminal it stays whole.
    #[test]
    fn rows_are_cut_to_the_terminal() {
        let row = "  echo   read   plugin echo   Echoes the text back".to_owned();
        assert_eq!(super::cut(row.clone(), None), row);
        assert_eq!(super::cut(row.clone(), Some(80)), row);
        let cut = super::cut(row, Some(20));
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with('…'), "{cut}");
        assert_eq!(super::cut("éééé".into(), Some(3)), "éé…");
    }

    /// Every command's definition is sound (unique names, valid defaults):
    /// clap checks these only when a command is first parsed.
    #[test]
    fn every_command_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
