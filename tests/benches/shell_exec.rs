//! Benchmark: `shell_exec "true"` end to end, in production mode.
//!
//! Each call goes through the runtime's registry (schema validation), the
//! policy (the shell guard reads the command line; the audit records the
//! call), the plugin ABI, and the plugin itself (bash started in its own
//! process group, both pipes and the exit watched with `poll`). For scale,
//! the same `bash -c true` is also started bare with `std::process`, so
//! the difference is what hearth adds. Prints the median and p90 of each.
//!
//! `true` is not guarded, so it runs under the kernel floor where the
//! kernel has Landlock: the plugin plans the floor's ruleset once and keeps
//! it while the directories it was planned from do not change. What
//! planning and building it afresh costs (a call after such a change) is
//! measured on its own too.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth-tests --bench shell_exec`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use hearth_tests::bench::{measure, ms, percentiles};
use hearth_tests::{Hearth, plugin};
use serde_json::json;

const WARM_UP: usize = 20;
const RUNS: usize = 200;

fn main() {
    // The home outside `/tmp`, as in real use: the floor depends on the
    // directories around each protected path (`hearth.db` is one), and on
    // a shared machine `/tmp` changes all the time, so a floor planned
    // there would rarely be kept.
    let h = Hearth::with_plugins_in(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &[plugin("shell")],
        "",
    );
    let rt = h.runtime();
    let call = || {
        let result = rt
            .tools
            .call("shell_exec", json!({"command": "true"}))
            .expect("shell_exec true");
        assert_eq!(result["exit_code"], 0, "{result}");
    };
    let bare = || {
        let status = Command::new("bash")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("bash -c true")
            .status;
        assert!(status.success());
    };
    let floor = rt.tools.floor().expect("a policy");
    let prepare = || {
        if let Err(e) = hearth_sdk::floor::prepare(&floor) {
            panic!("the floor cannot be built here: {e}");
        }
    };
    let floored = hearth_sdk::landlock::abi_version().is_ok();
    let mut through_hearth = measure(WARM_UP, RUNS, call);
    let mut bare_bash = measure(WARM_UP, RUNS, bare);
    let (h50, h90) = percentiles(&mut through_hearth);
    let (b50, b90) = percentiles(&mut bare_bash);
    println!(
        "shell_exec: {RUNS} runs of `true` after {WARM_UP} warm-up runs, production mode, {}",
        if floored {
            "under the kernel floor"
        } else {
            "no Landlock, so no floor"
        }
    );
    println!(
        "  registry + policy + plugin   median {:>7.3} ms   p90 {:>7.3} ms",
        ms(h50),
        ms(h90)
    );
    println!(
        "  bare bash -c true            median {:>7.3} ms   p90 {:>7.3} ms",
        ms(b50),
        ms(b90)
    );
    println!(
        "figure: shell_exec true median: {:.3} ms (target <= 3)",
        ms(h50)
    );
    if floored {
        let mut build = measure(WARM_UP, RUNS, prepare);
        let (f50, f90) = percentiles(&mut build);
        println!(
            "  floor ruleset, built afresh  median {:>7.3} ms   p90 {:>7.3} ms ({} rules)",
            ms(f50),
            ms(f90),
            hearth_sdk::floor::plan(&floor).map_or(0, |rules| rules.len())
        );
        println!(
            "figure: kernel floor ruleset built afresh median: {:.3} ms (target <= 1)",
            ms(f50)
        );
        // What a call pays when the kept ruleset still holds: checking the
        // directories it was planned from.
        let cache = hearth_sdk::floor::Cache::default();
        std::thread::sleep(hearth_sdk::floor::RECENT * 2);
        let kept = || {
            cache.prepare(&floor).expect("the floor");
        };
        let mut reuse = measure(WARM_UP, RUNS, kept);
        let (k50, k90) = percentiles(&mut reuse);
        println!(
            "  floor ruleset, kept          median {:>7.3} ms   p90 {:>7.3} ms",
            ms(k50),
            ms(k90)
        );
    }
    rt.stop(Duration::from_secs(5)).expect("stop the runtime");
}
