//! The host's log: `tracing` to stderr, as text or JSON, with a level that a
//! config reload can change while the daemon runs.
//!
//! Plugins' log lines arrive through the bridge and are re-emitted here with
//! target `plugin` and a `plugin` field, so one filter and one format cover
//! the whole process.

use std::io::IsTerminal;

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry, reload};

use crate::config::{LogFormat, LogLevel};

/// Changes the level of the installed logger.
pub struct LogHandle {
    filter: reload::Handle<Targets, Registry>,
}

/// Installs the global logger. Call once, first thing.
pub fn init(format: LogFormat, level: LogLevel) -> LogHandle {
    let (filter, handle) = reload::Layer::new(targets(level));
    let output: Box<dyn Layer<_> + Send + Sync> = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .boxed(),
    };
    // A second `init` (in tests) keeps the first logger.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(output)
        .try_init();
    LogHandle { filter: handle }
}

impl LogHandle {
    /// Switches to `level`.
    pub fn set_level(&self, level: LogLevel) {
        if let Err(e) = self.filter.reload(targets(level)) {
            tracing::warn!("cannot change the log level: {e}");
        }
    }
}

fn targets(level: LogLevel) -> Targets {
    Targets::new().with_default(match level {
        LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Trace => LevelFilter::TRACE,
    })
}
