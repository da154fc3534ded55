//! Benchmark: Lua tools. Prints five figures:
//! - a trivial Lua tool called through the registry (median, p99);
//! - what `require` of a 1,000-line library adds to a call (the medians of
//!   the same tool with and without it, calls interleaved);
//! - from saving a file to the new version answering (p50, p99), through
//!   the real watcher;
//! - how far past its deadline each hostile script ends (max overshoot);
//! - 1,000 reloads alternating good and broken versions while a caller
//!   hammers the tool: half-loaded answers seen, and RSS growth.
//!
//! Run with `cargo build --release --workspace && cargo bench -p hearth --bench lua`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hearth::config;
use hearth::runtime::Runtime;
use hearth::scripting::watch;
use serde_json::json;

fn main() {
    let home = tempfile::tempdir().expect("temp dir");
    let tools = home.path().join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    std::fs::write(
        tools.join("trivial.lua"),
        script("trivial", "return args.n + 1"),
    )
    .expect("write");
    // A library of 1,000 lines: a module table, 998 functions, its return.
    let mut library = String::from("local M = {}\n");
    for i in 0..998 {
        library.push_str(&format!("function M.f{i}(x) return x + {i} end\n"));
    }
    library.push_str("return M\n");
    std::fs::create_dir_all(home.path().join("lib")).expect("lib dir");
    std::fs::write(home.path().join("lib/big.lua"), library).expect("write");
    std::fs::write(
        tools.join("with_lib.lua"),
        script(
            "with_lib",
            "local big = require('big')\nreturn big.f1(args.n)",
        ),
    )
    .expect("write");
    let hostile = [
        ("loop", "while true do end"),
        (
            "pcall_loop",
            "while true do pcall(function() while true do end end) end",
        ),
        (
            "coroutine_loop",
            "coroutine.wrap(function() while true do end end)()",
        ),
        (
            "tostring_bomb",
            "error(setmetatable({}, {__tostring = function() while true do end end}))",
        ),
        ("pattern", "return ('x'):rep(40000):find('.-.-.-.-b')"),
    ];
    for (name, body) in hostile {
        std::fs::write(tools.join(format!("{name}.lua")), script(name, body)).expect("write");
    }
    let text = format!(
        "home = {:?}\n[plugins]\nexe_dir = false\n[scripts]\ndeadline_ms = 1000\n",
        home.path().display().to_string()
    );
    let rt = Runtime::start(config::parse(&text, None).expect("config")).expect("start");

    // 1. A trivial call through the registry.
    let mut samples = Vec::with_capacity(5_000);
    for i in 0..5_200 {
        let start = Instant::now();
        let out = rt.tools.call("trivial", json!({ "n": i })).expect("call");
        let took = start.elapsed();
        assert_eq!(out, json!(i + 1));
        if i >= 200 {
            samples.push(took);
        }
    }
    let (p50, p99) = percentiles(&mut samples);
    println!(
        "lua: trivial tool through the registry, {} calls",
        samples.len()
    );
    println!("  median {:>8.1} µs   p99 {:>8.1} µs", us(p50), us(p99));
    println!(
        "figure: Lua tool call median: {:.1} µs (target <= 50)",
        us(p50)
    );

    // 1b. The same call with a require of the big library, interleaved
    // with the trivial one so both see the same machine.
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..3_200 {
        for (tool, samples) in [("with_lib", &mut with), ("trivial", &mut without)] {
            let start = Instant::now();
            let out = rt.tools.call(tool, json!({ "n": i })).expect("call");
            let took = start.elapsed();
            assert_eq!(out, json!(i + 1));
            if i >= 200 {
                samples.push(took);
            }
        }
    }
    let (with50, _) = percentiles(&mut with);
    let (without50, _) = percentiles(&mut without);
    let added = with50.saturating_sub(without50);
    println!(
        "lua: require of a 1,000-line library, {} calls each",
        with.len()
    );
    println!(
        "  median with {:>8.1} µs   without {:>8.1} µs",
        us(with50),
        us(without50)
    );
    println!(
        "figure: require of a 1,000-line library adds (median) {:.3} ms (target <= 0.5)",
        ms(added)
    );

    // 2. Save to callable, through the watcher.
    let scripts = Arc::clone(rt.tools.scripts().expect("scripts"));
    let watcher = watch::start(Arc::clone(&scripts)).expect("watch");
    let path = tools.join("hot.lua");
    let mut reloads = Vec::new();
    for v in 1..=60u64 {
        let tmp = tools.join(".hot.lua.tmp");
        std::fs::write(&tmp, script("hot", &format!("return {v}"))).expect("write");
        let saved = Instant::now();
        std::fs::rename(&tmp, &path).expect("rename");
        while rt.tools.call("hot", json!({})).ok() != Some(json!(v)) {
            assert!(
                saved.elapsed() < Duration::from_secs(10),
                "reload {v} never arrived"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        reloads.push(saved.elapsed());
    }
    drop(watcher);
    let (r50, r99) = percentiles(&mut reloads);
    println!(
        "lua: save to callable, {} saves (write temp, rename)",
        reloads.len()
    );
    println!("  p50 {:>8.1} ms   p99 {:>8.1} ms", ms(r50), ms(r99));
    println!(
        "figure: Lua save to callable p99: {:.1} ms (target <= 300)",
        ms(r99)
    );

    // 3. Hostile scripts against a 1,000 ms deadline.
    println!("lua: hostile scripts, deadline 1000 ms");
    let mut worst = Duration::ZERO;
    for (name, _) in hostile {
        let start = Instant::now();
        let err = rt.tools.call(name, json!({})).expect_err(name);
        let over = start.elapsed().saturating_sub(Duration::from_millis(1000));
        worst = worst.max(over);
        println!(
            "  {name:<16} ended {:>6.1} ms past the deadline: {}",
            ms(over),
            short(&err.to_string())
        );
    }
    println!("  max overshoot {:>6.1} ms", ms(worst));

    // 4. 1,000 reloads, good and broken, while a caller checks every answer.
    let good = |v: u64| {
        script(
            "flip",
            &format!("return {{ version = {v}, check = {v} * 2 }}"),
        )
    };
    let flip = tools.join("flip.lua");
    std::fs::write(&flip, good(0)).expect("write");
    scripts.reload_paths(std::slice::from_ref(&flip));
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, torn) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let caller = {
        let (tools, stop, calls, torn) = (
            Arc::clone(&rt.tools),
            Arc::clone(&stop),
            Arc::clone(&calls),
            Arc::clone(&torn),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let out = tools
                    .call("flip", json!({}))
                    .expect("flip always has a good version");
                let (v, check) = (out["version"].as_u64(), out["check"].as_u64());
                if v.map(|v| v * 2) != check {
                    torn.fetch_add(1, Ordering::Relaxed);
                }
                calls.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let rss_before = rss_kib();
    for i in 1..=1_000u64 {
        let text = if i % 2 == 0 {
            good(i)
        } else {
            "return { version = ".to_owned()
        };
        std::fs::write(&flip, text).expect("write");
        scripts.reload_paths(std::slice::from_ref(&flip));
    }
    let rss_after = rss_kib();
    stop.store(true, Ordering::Relaxed);
    caller.join().expect("caller");
    println!("lua: 1000 reloads alternating good and broken, with a caller running");
    println!(
        "  calls {}   half-loaded answers {}   RSS {:.1} MiB -> {:.1} MiB (+{:.2} MiB)",
        calls.load(Ordering::Relaxed),
        torn.load(Ordering::Relaxed),
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / 1024.0
    );
    rt.stop(Duration::from_secs(5)).expect("stop");
}

fn script(name: &str, body: &str) -> String {
    format!(
        "return {{ name = {name:?}, description = \"bench\", run = function(args, ctx)\n{body}\nend }}\n"
    )
}

fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let n = samples.len();
    (samples[n / 2], samples[(n * 99 / 100).min(n - 1)])
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn short(s: &str) -> String {
    s.chars().take(70).collect()
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}
