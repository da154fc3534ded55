//! Running the browser scripts in `tests/browser/` from a Rust test.
//!
//! Every browser test needs the same things: node's `playwright-core` and
//! Debian's Chromium installed (a clear message when not), the canvas's
//! login URL and base in the script's environment, a folder for its
//! screenshots, and the conversation a script holds with the test driving
//! the daemon: the script prints `STEP name`, the test does what that step
//! needs on the daemon's side and answers `OK` or `FAIL why`.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::canvas::Canvas;
use crate::target_dir;

/// Where the browser scripts are and what they run with.
pub struct Browser {
    root: PathBuf,
    chromium: String,
    /// Where the scripts save screenshots.
    pub artifacts: PathBuf,
}

impl Browser {
    /// Checks that `playwright-core` and Chromium are installed and makes
    /// the screenshots' folder (emptied first when `fresh`).
    pub fn new(fresh: bool) -> Browser {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace root")
            .to_owned();
        assert!(
            root.join("tests/browser/node_modules/playwright-core")
                .is_dir(),
            "playwright-core is not installed: run `npm ci` in tests/browser (.ci/run does)"
        );
        let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        assert!(
            Path::new(&chromium).is_file(),
            "{chromium} is missing: install Debian's chromium package (.ci/run does)"
        );
        let artifacts = target_dir().join("browser-artifacts");
        if fresh {
            let _ = std::fs::remove_dir_all(&artifacts);
        }
        std::fs::create_dir_all(&artifacts).expect("make the screenshots' folder");
        Browser {
            root,
            chromium,
            artifacts,
        }
    }

    /// Runs `tests/browser/<script>` against `canvas`, with `env` added to
    /// its environment, answering each `STEP` it prints with `step`; panics
    /// (naming the screenshots' folder) when the script fails.
    pub fn run(
        &self,
        script: &str,
        canvas: &Canvas,
        env: &[(&str, &OsStr)],
        mut step: impl FnMut(&str) -> Result<(), String>,
    ) {
        let mut node = Command::new("node");
        node.arg(self.root.join("tests/browser").join(script))
            .current_dir(&self.root)
            .env("HEARTH_CANVAS_LOGIN", canvas.login_url())
            .env("HEARTH_CANVAS_BASE", canvas.base())
            .env("HEARTH_ARTIFACTS", &self.artifacts)
            .env("CHROMIUM", &self.chromium)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in env {
            node.env(key, value);
        }
        let mut node = node.spawn().expect("run node (install Node.js)");
        let mut to_node = node.stdin.take().expect("node's stdin");
        let from_node = BufReader::new(node.stdout.take().expect("node's stdout"));
        for line in from_node.lines().map_while(Result::ok) {
            let Some(name) = line.strip_prefix("STEP ") else {
                eprintln!("{line}");
                continue;
            };
            let reply = match step(name) {
                Ok(()) => "OK".to_owned(),
                Err(why) => format!("FAIL {why}"),
            };
            writeln!(to_node, "{reply}").expect("answer the browser script");
        }
        let status = node.wait().expect("wait for node");
        assert!(
            status.success(),
            "the browser test {script} failed ({status}); screenshots in {}",
            self.artifacts.display()
        );
    }
}
