//! The fuzz driver the parsers' property tests share, on stable Rust.
//!
//! A [`Target`] is a name, a seed corpus (the files under
//! `tests/fixtures/fuzz/<name>/`, plus any given in code), saved
//! regressions (`tests/fixtures/fuzz/regressions/<name>/`) and a
//! dictionary of tokens. [`Target::run`] first checks every regression and
//! seed as it is, then, until its time is up, generates cases: mostly a
//! seed mutated (`mutate`, and `json` for JSON seeds), sometimes random
//! bytes or a soup of tokens. The check is the test's property: it panics
//! when the property fails.
//!
//! A failing case is written to a file and reported with the run's seed
//! and the case's number; `HEARTH_FUZZ_SEED=S HEARTH_FUZZ_CASE=N` replays
//! exactly that case. `HEARTH_FUZZ_SECS` sets how long each target runs
//! (a couple of seconds by default, so `cargo test` stays quick), and a
//! case that runs longer than `HEARTH_FUZZ_HANG_SECS` (60 by default) is
//! reported as a hang and aborts the process: the parsers must terminate
//! on any input. So does a case that grows the process past
//! `HEARTH_FUZZ_MAX_RSS_MB` (1024 by default). A crash nothing can catch
//! (a stack overflow) is found again with `HEARTH_FUZZ_TRACE=1`, which
//! saves each case before it runs. docs/testing.md has the commands.

mod json;
mod mutate;
mod rng;
pub mod shell;

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use mutate::{INVALID_UTF8, MAX_INPUT, UNICODE_EDGES};
pub use rng::Rng;

/// How long each target runs when `HEARTH_FUZZ_SECS` is not set.
pub const DEFAULT_SECS: f64 = 2.0;
/// How long one case may run when `HEARTH_FUZZ_HANG_SECS` is not set.
pub const DEFAULT_HANG_SECS: f64 = 60.0;

/// How large the test process may grow while a case runs, in MiB, when
/// `HEARTH_FUZZ_MAX_RSS_MB` is not set.
pub const DEFAULT_MAX_RSS_MB: u64 = 1024;

/// One fuzz target: its corpus, its dictionary, and how long it runs.
pub struct Target {
    name: String,
    seeds: Vec<Vec<u8>>,
    regressions: Vec<(PathBuf, Vec<u8>)>,
    tokens: Vec<Vec<u8>>,
    json: bool,
    max_len: usize,
    generator: Option<Generator>,
}

/// Builds a case's input from its generator alone.
type Generator = Box<dyn Fn(&mut Rng) -> Vec<u8>>;

impl Target {
    /// The target `name`, with the seeds and regressions saved for it.
    pub fn new(name: &str) -> Target {
        let fixtures = fixtures();
        let seeds = read_dir(&fixtures.join(name))
            .into_iter()
            .map(|(_, bytes)| bytes)
            .collect();
        Target {
            name: name.to_owned(),
            seeds,
            regressions: read_dir(&fixtures.join("regressions").join(name)),
            tokens: Vec::new(),
            json: false,
            max_len: MAX_INPUT,
            generator: None,
        }
    }

    /// Adds a seed.
    pub fn seed(mut self, seed: impl Into<Vec<u8>>) -> Target {
        self.seeds.push(seed.into());
        self
    }

    /// Adds the file at `path` as a seed.
    pub fn seed_file(self, path: impl AsRef<Path>) -> Target {
        let path = path.as_ref();
        let bytes =
            std::fs::read(path).unwrap_or_else(|e| panic!("fuzz corpus {}: {e}", path.display()));
        self.seed(bytes)
    }

    /// Adds every file of another corpus (another target's, say) as seeds.
    pub fn seeds_of(mut self, corpus: &str) -> Target {
        let more = read_dir(&fixtures().join(corpus));
        self.seeds.extend(more.into_iter().map(|(_, bytes)| bytes));
        self
    }

    /// Adds each line of `file` (under `tests/fixtures`) that is neither
    /// blank nor a `#` comment as a seed.
    pub fn seed_lines(mut self, file: &str) -> Target {
        let path = fixtures()
            .parent()
            .map(|p| p.join(file))
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("fuzz corpus {}: {e}", path.display()));
        self.seeds.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .map(|l| l.as_bytes().to_vec()),
        );
        self
    }

    /// Adds tokens the mutations insert and the generator strings together.
    pub fn tokens(mut self, tokens: &[&str]) -> Target {
        self.tokens
            .extend(tokens.iter().map(|t| t.as_bytes().to_vec()));
        self
    }

    /// Mutates seeds that are JSON as trees, not only as bytes.
    pub fn json(mut self) -> Target {
        self.json = true;
        self
    }

    /// Cuts every generated input to `max_len` bytes: for a parser that
    /// refuses longer input outright, the interesting cases are shorter.
    pub fn max_len(mut self, max_len: usize) -> Target {
        self.max_len = max_len;
        self
    }

    /// Builds every generated case with `generator` instead of mutating
    /// the seeds: for properties that hold only for inputs of a shape.
    pub fn generator(mut self, generator: impl Fn(&mut Rng) -> Vec<u8> + 'static) -> Target {
        self.generator = Some(Box::new(generator));
        self
    }

    /// Checks every regression and seed, then generated cases until the
    /// time is up. `check` panics when its property fails; it gets the
    /// case's generator for choices of its own (chunkings, limits).
    pub fn run(self, check: impl Fn(&[u8], &mut Rng)) {
        let seed = env_u64("HEARTH_FUZZ_SEED").unwrap_or_else(clock_seed);
        let secs = env_f64("HEARTH_FUZZ_SECS").unwrap_or(DEFAULT_SECS);
        let hang = env_f64("HEARTH_FUZZ_HANG_SECS").unwrap_or(DEFAULT_HANG_SECS);
        let max_rss = env_u64("HEARTH_FUZZ_MAX_RSS_MB").unwrap_or(DEFAULT_MAX_RSS_MB) << 20;
        let watchdog = Watchdog::start(&self.name, Duration::from_secs_f64(hang), max_rss);
        for (path, bytes) in &self.regressions {
            let what = format!("regression {}", path.display());
            self.case(&watchdog, &what, bytes, &mut Rng::new(0, 0), &check);
        }
        for (i, bytes) in self.seeds.iter().enumerate() {
            let what = format!("seed {i}");
            self.case(&watchdog, &what, bytes, &mut Rng::new(0, i as u64), &check);
        }
        if let Some(case) = env_u64("HEARTH_FUZZ_CASE") {
            let mut rng = Rng::new(seed, case);
            let input = self.generate(&mut rng);
            let what = format!("case {case} of seed {seed}");
            self.case(&watchdog, &what, &input, &mut rng, &check);
            return;
        }
        // Before the cases: a crash that aborts the process leaves this.
        eprintln!("fuzz {}: seed {seed}", self.name);
        let started = Instant::now();
        let deadline = Duration::from_secs_f64(secs);
        let mut cases = 0u64;
        while started.elapsed() < deadline {
            let mut rng = Rng::new(seed, cases);
            let input = self.generate(&mut rng);
            let what = format!("case {cases} of seed {seed}");
            self.case(&watchdog, &what, &input, &mut rng, &check);
            cases += 1;
        }
        eprintln!(
            "fuzz {}: {cases} cases in {:.1} s (seed {seed}, {} seeds, {} regressions)",
            self.name,
            started.elapsed().as_secs_f64(),
            self.seeds.len(),
            self.regressions.len()
        );
    }

    fn generate(&self, rng: &mut Rng) -> Vec<u8> {
        let mut input = self.mutated(rng);
        input.truncate(self.max_len);
        input
    }

    fn mutated(&self, rng: &mut Rng) -> Vec<u8> {
        if let Some(generator) = &self.generator {
            return generator(rng);
        }
        if self.seeds.is_empty() || rng.one_in(8) {
            return mutate::generate(rng, &self.tokens);
        }
        let seed = rng.pick(&self.seeds);
        let mut input = match self.json && rng.one_in(2) {
            true => json::mutate(rng, seed).unwrap_or_else(|| seed.clone()),
            false => seed.clone(),
        };
        if !self.json || rng.one_in(3) {
            mutate::mutate(rng, &mut input, &self.seeds, &self.tokens);
        }
        input
    }

    fn case(
        &self,
        watchdog: &Watchdog,
        what: &str,
        input: &[u8],
        rng: &mut Rng,
        check: &impl Fn(&[u8], &mut Rng),
    ) {
        watchdog.begin(what, input);
        if std::env::var_os("HEARTH_FUZZ_TRACE").is_some() {
            // For crashes nothing can catch (a stack overflow): the last
            // case written is the one that crashed.
            eprintln!(
                "fuzz {}: {what} saved to {}",
                self.name,
                save(&self.name, "last", input)
            );
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| check(input, rng)));
        watchdog.end();
        if let Err(panic) = outcome {
            let saved = save(&self.name, what, input);
            eprintln!(
                "fuzz {}: {what} failed; input ({} bytes) saved to {saved}: {}\n\
                 replay with HEARTH_FUZZ_SEED and HEARTH_FUZZ_CASE set to the numbers \
                 above; keep it as a regression by copying the file to \
                 tests/fixtures/fuzz/regressions/{}/",
                self.name,
                input.len(),
                shown(input),
                self.name
            );
            resume_unwind(panic);
        }
    }
}

/// Splits `bytes` at `cuts` (sorted offsets inside it).
pub fn chunks<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for &cut in cuts {
        out.push(&bytes[from..cut]);
        from = cut;
    }
    out.push(&bytes[from..]);
    out
}

/// Reports a case that never finishes, or that makes the process grow
/// past a limit, then aborts: neither can be caught like a panic, and
/// waiting for the test harness (or the kernel's OOM killer) would hide
/// which input it was.
struct Watchdog {
    begin: mpsc::Sender<Option<(String, Vec<u8>)>>,
}

impl Watchdog {
    fn start(name: &str, limit: Duration, max_rss: u64) -> Watchdog {
        let (begin, cases) = mpsc::channel::<Option<(String, Vec<u8>)>>();
        let name = name.to_owned();
        std::thread::spawn(move || {
            let mut current: Option<(String, Vec<u8>, Instant)> = None;
            loop {
                match cases.recv_timeout(Duration::from_millis(50)) {
                    Ok(next) => {
                        current = next.map(|(what, input)| (what, input, Instant::now()));
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                    Err(RecvTimeoutError::Timeout) => {}
                }
                let Some((what, input, started)) = &current else {
                    continue;
                };
                let rss = rss_bytes();
                let why = if started.elapsed() > limit {
                    format!("still runs after {} s: a hang", limit.as_secs_f64())
                } else if rss > max_rss {
                    format!("grew the process to {} MiB: a memory blow-up", rss >> 20)
                } else {
                    continue;
                };
                let saved = save(&name, what, input);
                eprintln!(
                    "fuzz {name}: {what} {why}; input saved to {saved}: {}",
                    shown(input)
                );
                std::process::abort();
            }
        });
        Watchdog { begin }
    }

    fn begin(&self, what: &str, input: &[u8]) {
        let _ = self.begin.send(Some((what.to_owned(), input.to_vec())));
    }

    fn end(&self) {
        let _ = self.begin.send(None);
    }
}

/// The process's resident memory, from `/proc/self/statm` (0 where there
/// is none: the limit is then never reached).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// `tests/fixtures/fuzz`.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fuzz")
}

/// The files of `dir`, sorted by name; none when it does not exist.
fn read_dir(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let bytes =
                std::fs::read(&p).unwrap_or_else(|e| panic!("fuzz corpus {}: {e}", p.display()));
            (p, bytes)
        })
        .collect()
}

/// Writes a failing input where it can be copied into the regressions.
fn save(name: &str, what: &str, input: &[u8]) -> String {
    let dir = std::env::temp_dir().join("hearth-fuzz");
    let file: String = format!("{name}-{what}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = dir.join(file);
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input)) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("(nowhere: {e})"),
    }
}

/// The input for the report: escaped, and cut in the middle when long.
fn shown(input: &[u8]) -> String {
    let text = String::from_utf8_lossy(input);
    let escaped: String = text.escape_debug().collect();
    if escaped.chars().count() <= 2000 {
        return format!("\"{escaped}\"");
    }
    let head: String = escaped.chars().take(1000).collect();
    let tail: String = escaped
        .chars()
        .rev()
        .take(500)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("\"{head}\" … \"{tail}\"")
}

fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number")),
    )
}

fn env_f64(name: &str) -> Option<f64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .trim()
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)
            .unwrap_or_else(|| panic!("{name}={value:?} is not a number of seconds")),
    )
}
