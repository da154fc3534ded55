//! Forwards a plugin's `tracing` events and `log` records to the host's log.
//!
//! Each plugin links its own copy of `tracing` and `log`, with its own global
//! dispatcher, so the host's subscriber never sees a plugin's events unless
//! the plugin hands them over. [`install`] sets a small subscriber, logger
//! and panic hook in the plugin that do exactly that, once per plugin library.

use std::fmt::{self, Write as _};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::{Host, Level};

static INSTALLED: OnceLock<Host> = OnceLock::new();

/// Routes this plugin's `tracing` and `log` output to `host`. A plugin that
/// already set its own global subscriber or logger keeps it.
///
/// Only events the host's log keeps are handed over (`HostInfo::log_level`,
/// at most `debug`): each one crossing the boundary wakes the host's log
/// thread, and a library's debug lines (an HTTP client's, per request)
/// would wake it several times a message only to be thrown away.
pub(crate) fn install(host: Host) {
    if INSTALLED.set(host).is_err() {
        return;
    }
    let max = host
        .info()
        .ok()
        .and_then(|info| info.log_level)
        .map_or(LevelFilter::DEBUG, |level| kept(&level));
    let _ = tracing::subscriber::set_global_default(HostSubscriber {
        host,
        max,
        next_span: AtomicU64::new(1),
    });
    if log::set_logger(&HostLogger).is_ok() {
        log::set_max_level(match max {
            LevelFilter::OFF => log::LevelFilter::Off,
            LevelFilter::ERROR => log::LevelFilter::Error,
            LevelFilter::WARN => log::LevelFilter::Warn,
            LevelFilter::INFO => log::LevelFilter::Info,
            _ => log::LevelFilter::Debug,
        });
    }
    // A cdylib carries its own copy of std, so this hook sees only this
    // plugin's panics: they go to the host's log, not to a stderr the
    // daemon's operator may never read. The panic itself is still caught
    // and returned by the export glue.
    std::panic::set_hook(Box::new(move |info| {
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = panic_message(info.payload());
        host.log(Level::Error, "panic", &format!("panic{place}: {message}"));
    }));
}

/// What a plugin hands over for the host's `log_level`: that level, but
/// never TRACE, which would cost a boundary crossing per event for output
/// the host almost never shows. A level the SDK does not know: `debug`.
fn kept(log_level: &str) -> LevelFilter {
    match log_level {
        "off" => LevelFilter::OFF,
        "error" => LevelFilter::ERROR,
        "warn" => LevelFilter::WARN,
        "info" => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    }
}

/// A `tracing` subscriber that formats each event as one line and hands it
/// to the host. Spans are given ids but not recorded: the host log is flat.
struct HostSubscriber {
    host: Host,
    /// The most verbose level handed over.
    max: LevelFilter,
    next_span: AtomicU64,
}

impl Subscriber for HostSubscriber {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= self.max
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max)
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = LineVisitor::default();
        event.record(&mut line);
        let meta = event.metadata();
        let level = match *meta.level() {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warn,
            tracing::Level::INFO => Level::Info,
            tracing::Level::DEBUG => Level::Debug,
            tracing::Level::TRACE => Level::Trace,
        };
        self.host.log(level, meta.target(), &line.text);
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

/// Renders `message` first, then the other fields as `key=value`.
#[derive(Default)]
struct LineVisitor {
    text: String,
}

impl Visit for LineVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.text.insert_str(0, value);
        } else {
            let _ = write!(self.text, " {}={:?}", field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.text.insert_str(0, &format!("{value:?}"));
        } else {
            let _ = write!(self.text, " {}={:?}", field.name(), value);
        }
    }
}

/// A `log` logger that hands each record to the host.
struct HostLogger;

impl log::Log for HostLogger {
    fn enabled(&self, _metadata: &log::Metadata<'_>) -> bool {
        INSTALLED.get().is_some()
    }

    fn log(&self, record: &log::Record<'_>) {
        let Some(host) = INSTALLED.get() else { return };
        let level = match record.level() {
            log::Level::Error => Level::Error,
            log::Level::Warn => Level::Warn,
            log::Level::Info => Level::Info,
            log::Level::Debug => Level::Debug,
            log::Level::Trace => Level::Trace,
        };
        host.log(level, record.target(), &record.args().to_string());
    }

    fn flush(&self) {}
}

/// The text a panic carried (`panic!`'s message), for the host's log and
/// the error the export glue returns.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_hands_over_what_the_host_keeps_and_never_trace() {
        let cases = [
            ("off", LevelFilter::OFF),
            ("error", LevelFilter::ERROR),
            ("warn", LevelFilter::WARN),
            ("info", LevelFilter::INFO),
            ("debug", LevelFilter::DEBUG),
            ("trace", LevelFilter::DEBUG),
            ("louder", LevelFilter::DEBUG),
        ];
        for (level, max) in cases {
            assert_eq!(kept(level), max, "{level}");
        }
    }
}
