//! The daemon's long-running services: the agents' runners, the outbox,
//! the control socket, the scheduler, the search indexer, the scheduled
//! backups, housekeeping and memory capture. Started after the runtime, stopped before it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::task::JoinHandle;

use super::control::{self, Control, Token};
use super::runners::Runners;
use crate::runtime::Runtime;
use hearth_agent::agent::activity::Activity;
use hearth_agent::agent::history::Conversations;
use hearth_agent::agent::profiles;
use hearth_agent::agent::{Agent, AgentBase};
use hearth_base::store;
use hearth_base::store::MAIN_AGENT;
use hearth_data::knowledge::embedding;
use hearth_data::knowledge::index::Indexer;
use hearth_data::router::local::LocalHub;
use hearth_data::router::outbox::Outbox;
use hearth_model::llm::Llm;
use hearth_plugins::PluginState;
use hearth_sdk::protocol::ChannelEvent;

/// The running services.
pub struct Services {
    tasks: Vec<JoinHandle<()>>,
    runners: Arc<Runners>,
    socket: PathBuf,
    token: Arc<Token>,
}

impl Services {
    /// Starts the agent, the outbox and the control socket, serving on
    /// `control` (bound before the runtime started).
    pub fn start(
        runtime: &Runtime,
        control: control::Bound,
        started: Instant,
    ) -> Result<Services, super::DaemonError> {
        let control::Bound {
            listener,
            socket,
            token,
        } = control;
        let db = runtime.config.home.join(store::FILE_NAME);
        let llm = match &runtime.config.llm {
            None => Err("no [llm] section in the config".to_owned()),
            Some(config) => Llm::new(config).map(Arc::new).map_err(|e| e.to_string()),
        };
        let model = llm.as_ref().ok().map(|l| l.model().to_owned());
        let activity = Arc::new(Activity::new(model));
        match &llm {
            Ok(l) => tracing::info!(model = l.model(), "model configured"),
            Err(why) => tracing::warn!("running without a model: {why}"),
        }
        let plugins = runtime
            .plugins
            .reports()
            .into_iter()
            .map(|r| {
                // A plugin that failed says why, so `hearth status` and
                // `/status` show a channel that could not start (its port
                // taken) and what to do, not just its absence.
                let state = match r.state {
                    PluginState::Active => "active".to_owned(),
                    PluginState::Off(_) => "off".to_owned(),
                    PluginState::Failed(why) => format!("failed: {why}"),
                };
                format!(
                    "{} ({state})",
                    r.name.unwrap_or_else(|| r.path.display().to_string())
                )
            })
            .collect();
        let (floor, short) = hearth_policy::landlock::floor_status(runtime.config.mode);
        if short {
            tracing::warn!("the kernel floor is {floor}");
        }
        let conversations = Arc::new(Conversations::new(store::open_connection(&db)?));
        let indexer = Arc::new(Indexer::new(runtime.cold.clone()).waking(runtime.recall.clone()));
        let base = AgentBase {
            conversations,
            notes: Arc::clone(&runtime.notes),
            llm,
            tools: Arc::clone(&runtime.tools),
            router: Arc::clone(&runtime.router),
            config: runtime.config.agent.clone(),
            identity: Arc::clone(&runtime.identity),
            owner: runtime.config.owner.name.clone(),
            plugins,
            floor,
            capture: runtime
                .config
                .memory
                .capture
                .status(runtime.summaries.configured()),
            config_file: runtime
                .config
                .source
                .as_deref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned())),
            channels: runtime
                .plugins
                .active()
                .iter()
                .filter(|p| p.description().channel.is_some())
                .cloned()
                .collect(),
            started,
            events: Arc::clone(&runtime.events),
            workers: runtime.workers.clone(),
            activity: Arc::clone(&activity),
            jobs: runtime.scheduler.as_ref().map(|s| Arc::clone(s.jobs())),
            reach: Arc::clone(&runtime.reach),
            indexer: Some(Arc::clone(&indexer)),
            zone: hearth_agent::agent::stamp::owner_zone(runtime.config.owner.timezone.as_deref()),
            usage: Arc::clone(&runtime.usage),
            media_dir: runtime.config.home.join("media"),
            documents: runtime.config.documents.clone(),
        };
        // Summaries of long output run on this runtime, from any thread.
        runtime.summaries.connect(tokio::runtime::Handle::current());
        connect_workers(runtime, &base.llm, &activity);
        let base_llm = base.llm.clone();
        let main = runtime
            .people
            .read(|conn| profiles::get(conn, MAIN_AGENT))
            .and_then(|p| p.ok_or(rusqlite::Error::QueryReturnedNoRows))
            .map_err(store::StoreError::Sqlite)?;
        let agent = Arc::new(Agent::new(&base, main));
        agent.announce(false);
        let runners = Runners::new(base, Arc::clone(&runtime.people));
        let hub = Arc::new(LocalHub::default());
        let outbox = Arc::new(Outbox::new(
            runtime.cold.clone(),
            runtime.plugins.active(),
            Arc::clone(&hub),
        ));
        let clock = runtime
            .scheduler
            .as_ref()
            .map_or_else(hearth_agent::scheduler::Clock::system, |s| s.jobs().clock());
        let backups = Arc::new(crate::backup::Backups::new(&runtime.config, clock));
        let control = Arc::new(Control {
            bridge: Arc::clone(&runtime.bridge),
            hub,
            outbox: Arc::clone(&outbox),
            agent: Arc::clone(&agent),
            plugins: Arc::clone(&runtime.plugins),
            tools: Arc::clone(&runtime.tools),
            db: db.clone(),
            model_configured: runtime.config.llm.is_some(),
            backups: Arc::clone(&backups),
            token: Arc::clone(&token),
            board: Arc::clone(&runtime.router.confirmations),
        });
        runners.start(agent);
        let mut tasks = vec![
            tokio::spawn(Arc::clone(&runners).supervise()),
            tokio::spawn(outbox.run(Arc::clone(&runtime.router.outbox_wake))),
            tokio::spawn(control::serve(listener, control)),
        ];
        tasks.push(tokio::spawn(indexer.run()));
        match &runtime.recall {
            Some(recall) => tasks.push(tokio::spawn(embedding::run(
                Arc::clone(recall),
                runtime.cold.clone(),
            ))),
            // Nothing is queued for embedding without an endpoint.
            None => {
                if let Err(e) = embedding::configure(&runtime.cold.lock(), None, None) {
                    tracing::warn!("cannot turn embedding off: {e}");
                }
            }
        }
        if let Some(scheduler) = &runtime.scheduler {
            tasks.push(tokio::spawn(Arc::clone(scheduler).run()));
        }
        if let Some(groups) = &runtime.groups {
            groups.connect(base_llm, &runtime.tools);
            tasks.push(tokio::spawn(Arc::clone(groups).run()));
        }
        if let Some(task) = scheduled_backups(&runtime.config, backups) {
            tasks.push(task);
        }
        // Old logs, media and the rest go by [housekeeping], in the
        // background: shortly after start, then daily.
        tasks.push(tokio::spawn(crate::housekeeping::daily::run(Arc::new(
            runtime.config.clone(),
        ))));
        // What the cheap model picks out of quiet conversations becomes
        // memories ([memory.capture]).
        if let Some(capture) = crate::capture::Capture::new(
            &runtime.config,
            &db,
            &runtime.summaries,
            &runtime.notes,
            &runtime.secrets,
        ) {
            tasks.push(tokio::spawn(capture.run()));
        }
        Ok(Services {
            tasks,
            runners,
            socket,
            token,
        })
    }

    /// Stops them. A turn cut short here is re-run after the next start.
    pub fn stop(self) {
        for task in self.tasks {
            task.abort();
        }
        self.runners.stop();
        let _ = std::fs::remove_file(&self.socket);
        self.token.remove();
    }
}

/// Starts the scheduled backups, when `[backup]` enables them.
fn scheduled_backups(
    config: &hearth_base::config::Config,
    backups: Arc<crate::backup::Backups>,
) -> Option<JoinHandle<()>> {
    if !config.backup.enabled {
        return None;
    }
    let zone = hearth_base::schedule::owner_zone(config.owner.timezone.as_deref());
    // Checked when the config was read; a failure here is a zone that
    // vanished from the system since.
    match hearth_base::schedule::Schedule::cron(&config.backup.schedule, &zone) {
        Ok(schedule) => Some(tokio::spawn(crate::backup::scheduled::run(
            backups, schedule,
        ))),
        Err(e) => {
            tracing::error!("no scheduled backups: [backup] schedule: {e}");
            None
        }
    }
}

/// Gives `spawn_agent`'s workers the model, the registry and the way to
/// show them as busy, and marks the runs a crash cut short.
fn connect_workers(runtime: &Runtime, llm: &Result<Arc<Llm>, String>, activity: &Arc<Activity>) {
    let Some(workers) = &runtime.workers else {
        return;
    };
    match workers.recover() {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            count = n,
            "workers cut short by the last stop are marked interrupted"
        ),
        Err(e) => tracing::error!("cannot mark interrupted workers: {e}"),
    }
    let (events, activity) = (Arc::clone(&runtime.events), Arc::clone(activity));
    workers.connect(
        llm.clone(),
        &runtime.tools,
        tokio::runtime::Handle::current(),
        Box::new(move |name, busy| {
            let now = activity.other(name, busy);
            events.broadcast(&ChannelEvent::Status {
                busy: now.main_busy,
                model: activity.model().map(str::to_owned),
                working: now.working,
            });
        }),
    );
}
