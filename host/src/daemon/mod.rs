//! `hearth run`: the daemon's life cycle.
//!
//! Start: signals are hooked first (so a SIGTERM during start-up is not
//! lost), then the [`Runtime`] starts, the run is recorded in the store, and
//! readiness is announced twice: `READY=1` to systemd and a `ready` log line
//! with the start-up time. Then the daemon waits for signals:
//! - SIGTERM / SIGINT: graceful stop within `daemon.shutdown_timeout_ms`;
//! - SIGHUP: re-read the config; a bad file is refused with the reason and
//!   the running config stays.
//!
//! Under systemd with `WatchdogSec=`, the main loop pings the watchdog
//! (`watchdog`).

pub mod control;
mod notify;
mod runners;
mod services;
mod watchdog;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::signal::unix::{SignalKind, signal};

use crate::runtime::{Runtime, StartError};
use hearth_base::config::{self, Config};
use hearth_base::logging::LogHandle;
use hearth_base::store;

/// Why the daemon stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// It could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The async runtime or a signal hook could not be set up.
    #[error("cannot set up the daemon: {0}")]
    Setup(#[from] std::io::Error),
    /// It stopped, but not cleanly (a plugin overran the deadline).
    #[error("unclean stop: {0}")]
    Stop(#[from] crate::runtime::StopError),
    /// The agent's tables could not be opened.
    #[error(transparent)]
    Store(#[from] hearth_base::store::StoreError),
    /// The control socket or its token could not be set up.
    #[error(transparent)]
    Control(#[from] control::BindError),
}

/// Runs the daemon until SIGTERM or SIGINT.
pub fn run(config: Config, log: LogHandle, started: Instant) -> Result<(), DaemonError> {
    hide_memory_from_children();
    // One thread for every async task: a personal daemon's work is small,
    // and hand-offs between tasks then cost no cross-thread wake-ups. Work
    // that blocks (tool calls, plugin sends) goes to the blocking pool.
    let rt = tokio::runtime::Builder::new_current_thread()
        .thread_name("hearth-worker")
        .enable_all()
        .build()?;
    // Hook the signals before anything else, so none is lost during start.
    let signals = rt.block_on(async { Signals::hook() })?;
    // The control socket is bound before the plugins start: a CLI command
    // that comes during start-up then waits for this daemon's answer,
    // instead of finding no daemon and starting a second copy of the
    // plugins. A second daemon with this home stops here, loading nothing.
    crate::runtime::create_home(&config.home)?;
    let control = {
        let _entered = rt.enter();
        control::bind(&config.home)?
    };
    // Start outside the async context: start-up blocks (plugin init, script
    // loading), and some parts (the scripts' HTTP client) own a runtime of
    // their own, which must not be created or dropped inside this one.
    let config_path = config.source.clone();
    let runtime = match Runtime::start(config) {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = std::fs::remove_file(&control.socket);
            control.token.remove();
            return Err(e.into());
        }
    };
    rt.block_on(serve(runtime, control, config_path, signals, log, started))
}

/// Makes the daemon non-dumpable. Programs the agent runs have the owner's
/// uid, and could otherwise read `/proc/<daemon>/environ` and `mem`, where
/// the model's API key lives: a secret must never reach the model. It also
/// turns off core dumps, which would hold the same secrets.
fn hide_memory_from_children() {
    // SAFETY: PR_SET_DUMPABLE takes plain integers and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(
            "cannot make the daemon non-dumpable: {}; programs the agent runs may read its environment",
            std::io::Error::last_os_error()
        );
    }
}

struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn hook() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }
}

async fn serve(
    runtime: Runtime,
    control: control::Bound,
    config_path: Option<PathBuf>,
    mut signals: Signals,
    log: LogHandle,
    started: Instant,
) -> Result<(), DaemonError> {
    let deadline = Duration::from_millis(runtime.config.daemon.shutdown_timeout_ms);
    let run_id = record_start(&runtime);
    let services = services::Services::start(&runtime, control, started)?;
    // Start-up read the whole schema and wrote the first rows through
    // these two; their page caches need not keep it (the hot connections
    // fill theirs by use).
    let _ = runtime.store.conn().release_memory();
    let _ = runtime.cold.lock().release_memory();
    notify::ready();
    // systemd arms the watchdog at READY=1, so the pings start here.
    let pings = watchdog::start();
    tracing::info!(
        // Tenths of a millisecond are all a start-up time can mean.
        startup_ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0,
        plugins = runtime.plugins.active().len(),
        // Lua tools are counted when they have loaded ("scripts loaded").
        tools = runtime.tools.fixed_count(),
        home = %runtime.config.home.display(),
        pid = std::process::id(),
        "ready"
    );
    // What start-up alone ran is given back once the daemon has settled,
    // on this thread: it takes a millisecond or two, once, and a thread of
    // its own would stay resident after.
    tokio::spawn(async {
        tokio::time::sleep(crate::resident::AFTER_READY).await;
        let began = Instant::now();
        let released = crate::resident::give_back();
        tracing::debug!(
            mappings = released.mappings,
            resident_kib = released.resident_kib,
            refused = released.refused,
            took_us = began.elapsed().as_micros() as u64,
            "start-up pages given back"
        );
    });

    let mut current = runtime.config.clone();
    let signal_name = loop {
        tokio::select! {
            _ = signals.term.recv() => break "SIGTERM",
            _ = signals.int.recv() => break "SIGINT",
            _ = signals.hup.recv() => {
                reload(config_path.as_ref(), &mut current, &log, &runtime.usage)
            }
        }
    };

    tracing::info!(signal = signal_name, "stopping");
    if let Some(scripts) = runtime.tools.scripts() {
        scripts.stop_watching();
    }
    if let Some(pings) = pings {
        pings.abort();
    }
    services.stop();
    notify::stopping();
    let stop_started = Instant::now();
    runtime.close_intake();
    record_stop(&runtime, run_id);
    // Plugin shutdowns block (they join threads): keep them off the async
    // workers.
    let outcome = tokio::task::spawn_blocking(move || runtime.stop(deadline))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    match &outcome {
        Ok(()) => tracing::info!(
            stop_ms = (stop_started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0,
            "stopped"
        ),
        Err(e) => tracing::error!("{e}; exiting anyway"),
    }
    outcome.map_err(DaemonError::from)
}

/// Re-reads the config; applies what can change live (the log level, the
/// token budgets and the prices), keeps the rest.
fn reload(
    path: Option<&PathBuf>,
    current: &mut Config,
    log: &LogHandle,
    usage: &hearth_model::usage::Meter,
) {
    notify::reloading();
    let Some(path) = path else {
        tracing::warn!(
            "SIGHUP: running on built-in defaults, so there is no config file to reload"
        );
        notify::reloaded();
        return;
    };
    match config::load(Some(path)) {
        Err(e) => tracing::error!("config reload refused, the running config stays: {e}"),
        Ok(new) => {
            let restart_needed: Vec<&str> = [
                ("home", new.home != current.home),
                ("mode", new.mode != current.mode),
                ("log.format", new.log.format != current.log.format),
                ("daemon", new.daemon != current.daemon),
                ("plugins", new.plugins != current.plugins),
            ]
            .into_iter()
            .filter_map(|(key, changed)| changed.then_some(key))
            .collect();
            if !restart_needed.is_empty() {
                tracing::warn!(
                    "config reloaded; changes to {} take effect at the next restart",
                    restart_needed.join(", ")
                );
            }
            // Logged before a new level applies, so it shows even when the
            // new level hides info lines.
            tracing::info!(path = %path.display(), level = ?new.log.level, "config reloaded");
            if new.log.level != current.log.level {
                log.set_level(new.log.level);
            }
            usage.configure(&new);
            *current = new;
        }
    }
    notify::reloaded();
}

fn record_start(runtime: &Runtime) -> Option<i64> {
    let now = store::now_ms();
    let result = runtime.store.conn().execute(
        "INSERT INTO daemon_runs (pid, version, started_at_ms, ready_at_ms) VALUES (?1, ?2, ?3, ?3)",
        rusqlite::params![std::process::id(), env!("CARGO_PKG_VERSION"), now],
    );
    match result {
        Ok(_) => Some(runtime.store.conn().last_insert_rowid()),
        Err(e) => {
            tracing::warn!("cannot record this run in the store: {e}");
            None
        }
    }
}

fn record_stop(runtime: &Runtime, run_id: Option<i64>) {
    let Some(id) = run_id else { return };
    if let Err(e) = runtime.store.conn().execute(
        "UPDATE daemon_runs SET stopped_at_ms = ?1, clean_stop = 1 WHERE id = ?2",
        rusqlite::params![store::now_ms(), id],
    ) {
        tracing::warn!("cannot record the stop in the store: {e}");
    }
}
