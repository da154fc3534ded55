//! `Runtime`: everything a running hearth holds, started and stopped in one
//! place, so the daemon and the one-shot CLI commands share one start-up.
//!
//! Start order: home directory, store, bridge (its threads), plugins,
//! scripts, channel events, policy, tool registry. Stop order is the reverse: intake closes, plugins
//! shut down in reverse load order, the bridge drains its queues, the store
//! closes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hearth_sdk::abi;
use hearth_sdk::protocol::HostInfo;

use hearth_agent::agent::workers::{WorkerLimits, Workers};
use hearth_agent::scheduler::{Clock, Jobs, Scheduler};
use hearth_agent::tools::{
    BuiltinContext, KnowledgeTools, PeopleTools, ScheduleTools, ToolRegistry,
};
use hearth_base::channels::events::ChannelEvents;
use hearth_base::config::Config;
use hearth_base::secrets::Secrets;
use hearth_base::store::{self, Store, StoreError};
use hearth_data::knowledge::identity::Identity;
use hearth_data::knowledge::notes::Notes;
use hearth_data::knowledge::recall::Recall;
use hearth_data::people::{People, Reach};
use hearth_data::router::{Gate, Router};
use hearth_data::workshop::Workshop;
use hearth_model::summary::Summaries;
use hearth_model::usage::{Meter, Settings};
use hearth_plugins::{Bridge, BridgeError, PluginSet, PluginsError, ShutdownTimeout};
use hearth_policy::{
    self as policy, Audit, Confinement, ConfirmGate, Grants, GuardsFile, GuardsFileError, Policy,
};
use hearth_script::{Scripts, ScriptsError};

/// A started hearth.
pub struct Runtime {
    /// The config it started with.
    pub config: Config,
    /// The store.
    pub store: Store,
    /// Every plugin found; shared with the control socket, which reports
    /// their live state.
    pub plugins: Arc<PluginSet>,
    /// Every tool; shared with whatever calls tools from other threads.
    pub tools: Arc<ToolRegistry>,
    /// Warnings from building the registry (name clashes).
    pub tool_warnings: Vec<String>,
    /// The gate and the wake-ups between inbox, agent and outbox.
    pub router: Arc<Router>,
    /// Every agent's memories and scratchpad.
    pub notes: Arc<Notes>,
    /// The contacts, and the directory the gate reads.
    pub people: Arc<People>,
    /// The plugin callbacks, and the way into the inbox.
    pub bridge: Arc<Bridge>,
    /// Streamed text, status and confirmations for the channels that show
    /// them.
    pub events: Arc<ChannelEvents>,
    /// The scheduler (the daemon's; one-shot commands have none).
    pub scheduler: Option<Arc<Scheduler>>,
    /// Agent groups (the daemon's).
    pub groups: Option<Arc<hearth_agent::groups::Groups>>,
    /// `spawn_agent`'s workers (the daemon's).
    pub workers: Option<Arc<Workers>>,
    /// Where the owner is reached.
    pub reach: Arc<Reach>,
    /// The shared cold connection (`store::Cold`).
    pub cold: store::Cold,
    /// The main agent's versioned identity.
    pub identity: Arc<Identity>,
    /// The owner's secrets (`$HEARTH_HOME/secrets.json`).
    pub secrets: Arc<Secrets>,
    /// Every model call's tokens, and the budgets.
    pub usage: Arc<Meter>,
    /// Summaries of long output by the cheap model (connected by the
    /// daemon's services).
    pub summaries: Arc<Summaries>,
    /// Recall by meaning (`[memory.embeddings]`); `None`: keyword search.
    pub recall: Option<Arc<Recall>>,
}

/// Why hearth could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `$HEARTH_HOME` could not be created.
    #[error("cannot create the data directory {path}: {source}")]
    Home {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The bridge's threads could not start.
    #[error(transparent)]
    Bridge(#[from] BridgeError),
    /// A required plugin failed, or the config's plugin tables are wrong.
    #[error(transparent)]
    Plugins(#[from] PluginsError),
    /// The script subsystem could not start.
    #[error(transparent)]
    Scripts(#[from] ScriptsError),
    /// `$HEARTH_HOME/config/guards.toml` could not be seeded or is invalid.
    #[error(transparent)]
    Guards(#[from] GuardsFileError),
    /// `HEARTH_FAKE_NOW` is set but unreadable.
    #[error("{0}")]
    Clock(String),
}

/// Why a stop was not clean.
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    /// A plugin's shutdown overran the deadline.
    #[error(transparent)]
    Timeout(#[from] ShutdownTimeout),
    /// The store did not close cleanly.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runtime {
    /// Starts everything `config` describes, as the daemon.
    pub fn start(config: Config) -> Result<Runtime, StartError> {
        Runtime::start_as(config, true)
    }

    /// Starts for a one-shot command (`hearth tool call`, `hearth tools`):
    /// the same, except that no channel is asked to show confirmations, so
    /// a call that needs the owner's approval is refused at once instead of
    /// waiting for an answer nobody is there to give.
    pub fn start_one_shot(config: Config) -> Result<Runtime, StartError> {
        Runtime::start_as(config, false)
    }

    fn start_as(config: Config, daemon: bool) -> Result<Runtime, StartError> {
        create_home(&config.home)?;
        // Read before anything starts, so a bad value stops nothing half-way.
        let clock = if daemon {
            Some(Clock::from_env().map_err(StartError::Clock)?)
        } else {
            None
        };
        let guards = GuardsFile::open(&config.home, &user_home().unwrap_or_else(|| "/".into()))?;
        let db = config.home.join(store::FILE_NAME);
        let store = Store::open(&db)?;
        let confinement = Confinement::new(&config, user_home().as_deref(), guards.path());
        policy::roots::install(&confinement);
        let info = HostInfo {
            version: env!("CARGO_PKG_VERSION").into(),
            abi_major: abi::ABI_MAJOR,
            abi_minor: abi::ABI_MINOR,
            home: config.home.display().to_string(),
            mode: config.mode.name().into(),
            confine_to: policy::roots::texts(&confinement.roots),
            hidden: policy::roots::texts(&confinement.hidden),
            serving: daemon,
            // `model.summarize` answers only in the daemon, with a cheap model.
            summaries: daemon && cheap_model(&config).is_some(),
            log_level: Some(log_level()),
        };
        // Every cold path takes turns on one connection (store::Cold).
        let cold = store::Cold::open(&db)?;
        hearth_agent::agent::history::ensure_main_agent(store.conn())
            .map_err(StoreError::Sqlite)?;
        upsert_owner(&config, &cold).map_err(StoreError::Sqlite)?;
        let people = Arc::new(People::open(cold.clone()).map_err(StoreError::Sqlite)?);
        let usage = Arc::new(
            Meter::open(cold.clone(), Settings::from_config(&config))
                .map_err(StoreError::Sqlite)?,
        );
        let summaries = Arc::new(Summaries::new(
            daemon.then(|| cheap_model(&config)).flatten(),
            Arc::clone(&usage),
        ));
        let router = Arc::new(Router::new(Gate::new(
            config.owner.clone(),
            Some(Arc::clone(&people)),
        )));
        // Before the bridge: the canvas serves pages through it.
        let workshop = Arc::new(Workshop::new(&config.home, cold.clone()));
        let bridge = Bridge::start(
            store::open_connection(&db)?,
            cold.clone(),
            hearth_plugins::Served {
                workshop: Arc::clone(&workshop),
                summaries: Arc::clone(&summaries),
            },
            Arc::clone(&router),
            config.daemon.queue_capacity,
            Duration::from_millis(config.daemon.queue_wait_ms),
            &info,
        )?;
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_owned));
        let plugins = match PluginSet::load(
            &config.plugins,
            config.source.as_deref(),
            &config.home,
            exe_dir.as_deref(),
            config.examples,
            &bridge,
        ) {
            Ok(plugins) => plugins,
            Err(e) => {
                bridge.finish();
                return Err(e.into());
            }
        };
        let reserved = ToolRegistry::fixed_names(&plugins);
        let secrets = Arc::new(Secrets::open(&config.home));
        secrets.reserve_for_host(config.host_secrets());
        if let Err(e) = secrets.current() {
            tracing::warn!("{e}");
        }
        hearth_base::logging::redact_with(Arc::clone(&secrets));
        // Hot reload is the daemon's: a CLI command's scripts stay as loaded.
        let scripts_config = hearth_base::config::ScriptsConfig {
            watch: daemon && config.scripts.watch,
            ..config.scripts.clone()
        };
        let scripts = match Scripts::start(
            &scripts_config,
            config.examples,
            &config.home,
            cold.clone(),
            reserved,
            Arc::clone(&secrets),
            policy::floor::sealed(&confinement),
        ) {
            Ok(scripts) => scripts,
            Err(e) => {
                let _ = plugins.shutdown(Duration::from_secs(5));
                bridge.finish();
                return Err(e.into());
            }
        };
        let recall = config.memory.embeddings.as_ref().map(|e| {
            let endpoint = hearth_model::embeddings::Embeddings::new(e);
            Arc::new(Recall::new(Arc::new(endpoint), e))
        });
        let notes = Arc::new(Notes::with_recall(
            store::open_connection(&db)?,
            recall.clone(),
        ));
        let identity = Arc::new(
            Identity::open(cold.clone(), || identity_seed(&config)).map_err(StoreError::Sqlite)?,
        );
        let events = Arc::new(if daemon {
            ChannelEvents::start(plugins.active())
        } else {
            ChannelEvents::default()
        });
        if daemon {
            let shown: Vec<Arc<dyn hearth_plugins::views::Shows>> = plugins
                .active()
                .iter()
                .map(|p| Arc::clone(p) as Arc<dyn hearth_plugins::views::Shows>)
                .collect();
            bridge.serve_views(hearth_plugins::views::Views::new(
                Arc::clone(&events),
                &shown,
            ));
        }
        let reach = Arc::new(Reach {
            owner: config.owner.clone(),
            channels: plugins
                .active()
                .iter()
                .filter_map(|p| p.description().channel.clone())
                .map(|c| (c.name.clone(), c))
                .collect(),
        });
        // Jobs fire only in the daemon.
        let scheduler = if let Some(clock) = clock {
            if clock.is_fake() {
                tracing::warn!(now = %clock.now(), "the scheduler's clock is moved by HEARTH_FAKE_NOW");
            }
            let zone = hearth_base::schedule::owner_zone(config.owner.timezone.as_deref());
            let jobs = Arc::new(Jobs::new(
                cold.clone(),
                clock,
                config.scheduler.clone(),
                zone,
            ));
            // The heartbeat's job follows the config; a failure leaves
            // it as it was and the daemon serving.
            if let Err(e) =
                hearth_agent::scheduler::heartbeat::sync(&jobs, &config.heartbeat, &config.home)
            {
                tracing::error!("cannot set the heartbeat ([heartbeat]): {e}");
            }
            Some(Arc::new(Scheduler::new(
                jobs,
                Arc::clone(&router),
                Arc::clone(&events),
            )))
        } else {
            None
        };
        // Groups run only in the daemon.
        let groups = daemon.then(|| {
            hearth_agent::groups::Groups::new(hearth_agent::groups::Parts {
                cold: cold.clone(),
                home: config.home.clone(),
                config: config.groups.clone(),
                usage: Arc::clone(&usage),
                reach: Arc::clone(&reach),
                router: Arc::clone(&router),
                events: Arc::clone(&events),
            })
        });
        // `spawn_agent`'s workers, a daemon's; the registry's tools hold
        // them as `SpawnWorkers`, the turn and the daemon as themselves.
        let workers = daemon.then(|| {
            Arc::new(Workers::new(
                cold.clone(),
                Arc::clone(&usage),
                Arc::clone(&summaries),
                WorkerLimits {
                    timeout: Duration::from_millis(config.agent.worker_timeout_ms),
                    max_result_chars: config.agent.worker_result_chars,
                    dir: config.home.join("workers"),
                },
            ))
        });
        let builtins = BuiltinContext {
            groups: groups
                .clone()
                .map(|g| g as Arc<dyn hearth_agent::tools::GroupActions>),
            scripts: Some(scripts),
            notes: Some(Arc::clone(&notes)),
            identity: Some(Arc::clone(&identity)),
            // Messages are delivered and agents run only in the daemon.
            people: workers.as_ref().map(|workers| {
                Arc::new(PeopleTools {
                    people: Arc::clone(&people),
                    router: Arc::clone(&router),
                    reach: Arc::clone(&reach),
                    max_hops: config.agent.max_agent_hops,
                    ask_before_messaging: config.agent.ask_before_messaging_contacts,
                    contact_agent: config.agent.contact_agent.clone(),
                    workers: Arc::clone(workers) as Arc<dyn hearth_agent::tools::SpawnWorkers>,
                })
            }),
            knowledge: Some(Arc::new(KnowledgeTools { cold: cold.clone() })),
            secrets: Some(Arc::clone(&secrets)),
            schedule: scheduler.as_ref().map(|scheduler| {
                Arc::new(ScheduleTools {
                    scheduler: Arc::clone(scheduler),
                    people: Arc::clone(&people),
                })
            }),
            workshop: Some(workshop),
            speech: Some(Arc::new(hearth_model::speech::Speech::new(&config))),
        };
        let gate = ConfirmGate::new(
            Arc::clone(&router.confirmations),
            Arc::clone(&events),
            cold.clone(),
            Duration::from_millis(config.policy.confirm_timeout_ms),
            config.mode.name(),
        );
        let policy = Arc::new(Policy::new(policy::Parts {
            mode: config.mode,
            hearth_home: config.home.clone(),
            user_home: user_home(),
            ask_inside_roots: config
                .policy
                .ask_inside_roots
                .unwrap_or(config.mode == hearth_base::config::Mode::Development),
            confinement: confinement.clone(),
            guards,
            gate,
            grants: Grants::new(cold.clone()),
            audit: Audit::new(cold.clone(), known_secrets(&config), Arc::clone(&secrets)),
        }));
        let (tools, tool_warnings) = ToolRegistry::new(&plugins, builtins, policy);
        let cold_handle = cold;
        Ok(Runtime {
            config,
            store,
            plugins: Arc::new(plugins),
            tools: Arc::new(tools),
            tool_warnings,
            router,
            notes,
            people,
            bridge,
            events,
            scheduler,
            groups,
            workers,
            reach,
            cold: cold_handle,
            identity,
            secrets,
            usage,
            summaries,
            recall,
        })
    }

    /// Stops intake: plugins' `submit` answers `CLOSED` from now on.
    pub fn close_intake(&self) {
        self.bridge.close_intake();
    }

    /// Stops everything, giving plugins `deadline` in all to shut down.
    pub fn stop(self, deadline: Duration) -> Result<(), StopError> {
        self.bridge.close_intake();
        self.events.close();
        let plugins = self.plugins.shutdown(deadline);
        // After the plugins, whose last calls may still be finishing, and
        // before the store closes: a clean stop loses no audit row.
        self.tools.close_audit();
        self.usage.close();
        if plugins.is_ok() {
            // Only once every plugin has stopped may its queued log lines and
            // messages be flushed: a hung plugin could still be adding more.
            self.bridge.finish();
        }
        self.store.close()?;
        plugins.map_err(StopError::from)
    }
}

/// Makes the owner's contact row match `[owner]` (the in-memory owner
/// check stays the authority; the row lets contacts and the owner be
/// listed together).
fn upsert_owner(config: &Config, cold: &store::Cold) -> rusqlite::Result<()> {
    let identities: Vec<(String, String)> = config
        .owner
        .identities
        .iter()
        .flat_map(|(channel, ids)| ids.iter().map(move |id| (channel.clone(), id.clone())))
        .collect();
    let name = config.owner.name.as_deref().unwrap_or("owner");
    hearth_data::people::contacts::upsert_owner(&cold.lock(), name, &identities).map(|_| ())
}

/// What seeds the identity's first version: `[agent] identity_file`, or
/// the built-in text. Read only while the store has no version yet.
fn identity_seed(config: &Config) -> String {
    match &config.agent.identity_file {
        Some(path) => std::fs::read_to_string(path).unwrap_or_else(|e| {
            tracing::warn!(file = %path.display(), "cannot read the identity file, using the default: {e}");
            hearth_agent::agent::prompt::DEFAULT_IDENTITY.to_owned()
        }),
        None => hearth_agent::agent::prompt::DEFAULT_IDENTITY.to_owned(),
    }
}

/// `$HOME`, if set.
fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The secret values this daemon knows besides the owner's secrets, so the
/// audit can scrub them: the model's API key, the canvas login token and
/// the control token (written before the runtime starts).
fn known_secrets(config: &Config) -> Vec<String> {
    let api_key = config
        .llm
        .as_ref()
        .and_then(|l| l.api_key_env.as_ref())
        .and_then(|name| std::env::var(name).ok());
    let token = |file: &str| {
        std::fs::read_to_string(config.home.join(file))
            .ok()
            .map(|t| t.trim().to_owned())
    };
    api_key
        .into_iter()
        .chain(token("canvas.token"))
        .chain(token(crate::daemon::control::TOKEN_FILE))
        .collect()
}

/// Creates `$HEARTH_HOME` readable by the owner alone: it holds the
/// conversation history and, later, tokens.
pub fn create_home(home: &Path) -> Result<(), StartError> {
    use std::os::unix::fs::DirBuilderExt;
    let err = |source| StartError::Home {
        path: home.to_owned(),
        source,
    };
    if home.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home)
        .map_err(err)
}

/// `[llm.cheap]`, if the config has one.
fn cheap_model(config: &Config) -> Option<hearth_base::config::CheapConfig> {
    config
        .llm
        .as_ref()
        .and_then(|llm| llm.cheap.as_deref())
        .cloned()
}

/// The most verbose level the host's log keeps, for `HostInfo::log_level`:
/// the installed subscriber's own hint (the loosest of its directives).
fn log_level() -> String {
    use tracing::level_filters::LevelFilter;
    match LevelFilter::current() {
        LevelFilter::OFF => "off",
        LevelFilter::ERROR => "error",
        LevelFilter::WARN => "warn",
        LevelFilter::INFO => "info",
        LevelFilter::DEBUG => "debug",
        _ => "trace",
    }
    .to_owned()
}
