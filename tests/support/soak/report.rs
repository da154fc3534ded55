//! What a soak saw and how it is judged: the [`Report`], the pass
//! criteria it is held to, and the lines it prints. The long form's
//! printed lines are read into `docs/benchmarks.md` by hand, so their
//! wording and layout stay as they are.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Options, Sample};

/// Everything a soak saw.
pub struct Report {
    /// What was asked for.
    pub options: Options,
    /// The samples taken while messages were being sent.
    pub samples: Vec<Sample>,
    /// One sample once every message was answered and the load had
    /// stopped (shown, not judged).
    pub idle: Sample,
    /// Messages sent.
    pub sent: usize,
    /// Messages answered (once each).
    pub answered: usize,
    /// Answers beyond the first to one message.
    pub duplicates: usize,
    /// Send to answer, sorted.
    pub latencies: Vec<Duration>,
    /// Tool calls the model asked for, by tool.
    pub tool_calls: BTreeMap<String, usize>,
    /// Tool results that came back as errors (the first few, in full).
    pub tool_errors: Vec<String>,
    /// Canvas browsers that connected and left.
    pub canvas_visits: usize,
    /// Warnings and errors in the daemon's log, and what went wrong in
    /// the driver (the first few).
    pub problems: Vec<String>,
    /// How many problems there were in all.
    pub problem_count: usize,
    /// Warnings logged before the load started (shown, not judged).
    pub start_warnings: Vec<String>,
    /// The daemon's exit after SIGTERM.
    pub exit: String,
}

/// The most the RSS may grow from after warm-up to the end, in percent.
pub const RSS_DRIFT_MAX: f64 = 10.0;
/// The most open file descriptors may grow past the after-warm-up count:
/// a sample can catch a few connections in flight (a model request, a
/// `web_fetch`, a browser connecting, a Lua worker's pipes being made).
pub const FD_SLACK: u64 = 16;
/// The most threads may grow past the after-warm-up count: tokio's
/// blocking pool starts threads for tool calls and lets them go after
/// 10 s idle, so a sample sees a few more or fewer.
pub const THREAD_SLACK: u64 = 8;

/// RSS, PSS, fds and threads taken together: the median of a few samples.
#[derive(Clone, Copy, Debug)]
pub struct Figures {
    /// `VmRSS`, KiB.
    pub rss_kib: u64,
    /// `Pss`, KiB, when known.
    pub pss_kib: Option<u64>,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
}

impl Report {
    /// The first sample, taken as the load started.
    pub fn at_start(&self) -> Option<Figures> {
        self.samples
            .first()
            .map(|s| figures(std::slice::from_ref(s)))
    }

    /// The median of the first three samples taken after warm-up: one
    /// sample could land on a burst (a compaction, a Lua worker starting).
    pub fn after_warm_up(&self) -> Option<Figures> {
        let warm_up = self.options.warm_up();
        let after: Vec<Sample> = self
            .samples
            .iter()
            .filter(|s| s.at >= warm_up)
            .take(3)
            .copied()
            .collect();
        (!after.is_empty()).then(|| figures(&after))
    }

    /// The median of the last three samples under load.
    pub fn at_end(&self) -> Option<Figures> {
        let from = self.samples.len().saturating_sub(3);
        (from < self.samples.len()).then(|| figures(&self.samples[from..]))
    }

    /// How far the RSS moved from after warm-up to the end, in percent.
    pub fn rss_drift(&self) -> Option<f64> {
        let (base, end) = (self.after_warm_up()?, self.at_end()?);
        Some((end.rss_kib as f64 - base.rss_kib as f64) * 100.0 / base.rss_kib as f64)
    }

    /// The latency at quantile `q` (0 to 1), if any message was answered.
    pub fn latency(&self, q: f64) -> Option<Duration> {
        let last = self.latencies.len().checked_sub(1)?;
        Some(self.latencies[(last as f64 * q).round() as usize])
    }

    /// Every pass criterion the run missed, said plainly; empty when it
    /// passed.
    pub fn failures(&self) -> Vec<String> {
        let mut failed = Vec::new();
        let (Some(base), Some(end)) = (self.after_warm_up(), self.at_end()) else {
            return vec![format!(
                "too few samples after warm-up ({} in all)",
                self.samples.len()
            )];
        };
        if let Some(drift) = self.rss_drift()
            && drift > RSS_DRIFT_MAX
        {
            failed.push(format!(
                "RSS grew {drift:.1}% after warm-up ({} -> {} KiB; at most {RSS_DRIFT_MAX}%)",
                base.rss_kib, end.rss_kib
            ));
        }
        if end.fds > base.fds + FD_SLACK {
            failed.push(format!(
                "open fds grew from {} to {} (slack {FD_SLACK})",
                base.fds, end.fds
            ));
        }
        if end.threads > base.threads + THREAD_SLACK {
            failed.push(format!(
                "threads grew from {} to {} (slack {THREAD_SLACK})",
                base.threads, end.threads
            ));
        }
        if self.answered != self.sent {
            failed.push(format!(
                "{} of {} messages unanswered",
                self.sent - self.answered,
                self.sent
            ));
        }
        if self.duplicates > 0 {
            failed.push(format!("{} messages answered twice", self.duplicates));
        }
        if !self.tool_errors.is_empty() {
            failed.push(format!("tool calls failed: {:?}", self.tool_errors));
        }
        if self.problem_count > 0 {
            failed.push(format!(
                "{} warnings or errors in the log or the driver",
                self.problem_count
            ));
        }
        if self.exit != "0" {
            failed.push(format!("the daemon's exit on SIGTERM: {}", self.exit));
        }
        failed
    }

    /// Prints the figures, the problems and a compact time series.
    pub fn print(&self) {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let pss = |f: Option<u64>| f.map_or("-".into(), |k| format!("{:.1}", mib(k)));
        let o = &self.options;
        println!(
            "soak: {:.0} s at {} msg/s, warm-up {:.0} s, a sample every {:.1} s",
            o.duration.as_secs_f64(),
            o.rate,
            o.warm_up().as_secs_f64(),
            o.sample_every().as_secs_f64()
        );
        println!(
            "messages: {} sent, {} answered, {} answered twice; canvas visits: {}",
            self.sent, self.answered, self.duplicates, self.canvas_visits
        );
        let ms = |q| self.latency(q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        println!(
            "reply latency: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            ms(0.5),
            ms(0.99),
            ms(1.0)
        );
        println!("tool calls: {:?}", self.tool_calls);
        for (name, f) in [
            ("at start", self.at_start()),
            ("after warm-up", self.after_warm_up()),
            ("at end", self.at_end()),
        ] {
            if let Some(f) = f {
                println!(
                    "{name:>14}: RSS {:.1} MiB, PSS {} MiB, {} fds, {} threads",
                    mib(f.rss_kib),
                    pss(f.pss_kib),
                    f.fds,
                    f.threads
                );
            }
        }
        println!(
            "{:>14}: RSS {:.1} MiB, PSS {} MiB, {} fds, {} threads",
            "idle after",
            mib(self.idle.rss_kib),
            pss(self.idle.pss_kib),
            self.idle.fds,
            self.idle.threads
        );
        if let Some(drift) = self.rss_drift() {
            println!("RSS drift after warm-up: {drift:+.1}% (at most {RSS_DRIFT_MAX}%)");
            println!(
                "figure: soak RSS drift after warm-up: {drift:.1} % (target <= {RSS_DRIFT_MAX})"
            );
        }
        println!("exit on SIGTERM: {}", self.exit);
        println!("time series (s, RSS MiB, PSS MiB, fds, threads, children, sent, answered):");
        let stride = self.samples.len().div_ceil(60).max(1);
        for s in self.samples.iter().step_by(stride) {
            println!("  {}", row(s));
        }
        for w in &self.start_warnings {
            println!("warned before the load (not judged): {w}");
        }
        if self.problem_count > 0 {
            println!("problems ({} in all, the first shown):", self.problem_count);
            for p in &self.problems {
                println!("  {p}");
            }
        }
    }
}

/// One line of the time series.
pub(super) fn row(s: &Sample) -> String {
    let mib = |kib: u64| kib as f64 / 1024.0;
    let pss = s.pss_kib.map_or("-".into(), |k| format!("{:.1}", mib(k)));
    format!(
        "{:>6.0} {:>7.1} {:>7} {:>4} {:>4} {:>3} {:>7} {:>7}",
        s.at.as_secs_f64(),
        mib(s.rss_kib),
        pss,
        s.fds,
        s.threads,
        s.children,
        s.sent,
        s.answered
    )
}

/// The per-field median of `samples`.
fn figures(samples: &[Sample]) -> Figures {
    fn median(mut values: Vec<u64>) -> u64 {
        values.sort_unstable();
        values[values.len() / 2]
    }
    let pss: Vec<u64> = samples.iter().filter_map(|s| s.pss_kib).collect();
    Figures {
        rss_kib: median(samples.iter().map(|s| s.rss_kib).collect()),
        pss_kib: (!pss.is_empty()).then(|| median(pss)),
        fds: median(samples.iter().map(|s| s.fds).collect()),
        threads: median(samples.iter().map(|s| s.threads).collect()),
    }
}
