//! The host's log: `tracing` to stderr, as text or JSON, with a level that a
//! config reload can change while the daemon runs.
//!
//! Plugins' log lines arrive through the bridge and are re-emitted here with
//! target `plugin` and a `plugin` field, so one filter and one format cover
//! the whole process. Every formatted line passes through [`Scrubbed`] on
//! its way out, which replaces the owner's secrets' values by
//! `[secret:NAME]`, whatever logged them.
//!
//! Under systemd, when standard error is the journal's stream, events go to
//! the journal as structured entries instead (`journal`), redacted alike.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, PoisonError, RwLock};

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry, reload};

use crate::config::{LogFormat, LogLevel};
use crate::secrets::Secrets;

mod journal;

/// The secrets whose values are scrubbed from every log line, once a
/// runtime has opened them.
static SECRETS: RwLock<Option<Arc<Secrets>>> = RwLock::new(None);

/// Scrubs the values of `secrets` from every log line from now on.
pub fn redact_with(secrets: Arc<Secrets>) {
    *SECRETS.write().unwrap_or_else(PoisonError::into_inner) = Some(secrets);
}

/// `text` with the secrets' values replaced, once a runtime has opened
/// them.
fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    let secrets = SECRETS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    match secrets {
        Some(secrets) => secrets.redact_text(text),
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// Standard error, with secrets' values replaced in each formatted line.
/// The formatter writes a whole line in one call, so a value is never
/// split between two writes.
pub struct Scrubbed;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Scrubbed {
    type Writer = Scrubbed;

    fn make_writer(&'a self) -> Scrubbed {
        Scrubbed
    }
}

impl Write for Scrubbed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let secrets = SECRETS
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut err = std::io::stderr().lock();
        match (secrets, std::str::from_utf8(buf)) {
            (Some(secrets), Ok(text)) => err.write_all(secrets.redact_text(text).as_bytes())?,
            _ => err.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Changes the level of the installed logger.
pub struct LogHandle {
    filter: reload::Handle<Targets, Registry>,
}

/// Installs the global logger. Call once, first thing.
pub fn init(format: LogFormat, level: LogLevel) -> LogHandle {
    let (filter, handle) = reload::Layer::new(targets(level));
    let output: Box<dyn Layer<_> + Send + Sync> = match format {
        // systemd reads structured entries better than any line format.
        _ if journal::stderr_is_journal() => journal::Journal::new(journal::socket_path()).boxed(),
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(Scrubbed)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(Scrubbed)
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
