//! Production mode's kernel floor end to end: the real shell plugin `.so`
//! loaded by the real registry and policy, on the real kernel.
//!
//! The commands are spellings the guard does not inspect (a script the
//! agent wrote to a file, run with `sh file`), so only the floor stands
//! between them and a protected path or a stranger's process. The guards
//! file adds a temporary directory to the protected paths, so nothing
//! outside the test's own directories is ever at risk, even when the floor
//! is missing.
//!
//! The probe plugin's `probe_shell` (which runs nothing) shows what the
//! policy sends: the floor to a tool that declares it, and an ask for a
//! tool that runs commands without declaring it.
//!
//! Every test fails when the kernel lacks Landlock ABI 6, unless
//! `HEARTH_TEST_NO_LANDLOCK=1` says the machine has none.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use hearth::runtime::Runtime;
use hearth_tests::{Hearth, call_err, call_ok as ok, plugin, probe};
use serde_json::{Value, json};

/// Whether the kernel can run these tests (it fails them without
/// Landlock ABI 6; see `required_for_tests`).
fn supported() -> bool {
    hearth_sdk::landlock::required_for_tests(hearth_sdk::floor::SIGNAL_SCOPE_ABI)
}

/// A production home with the shell plugin, whose guards file also
/// protects `protected`.
struct Setup {
    h: Hearth,
    rt: Runtime,
    protected: PathBuf,
    open: PathBuf,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn setup() -> Setup {
    let protected_dir = tempfile::tempdir().unwrap();
    let open_dir = tempfile::tempdir().unwrap();
    let protected = protected_dir.path().canonicalize().unwrap();
    let open = open_dir.path().canonicalize().unwrap();
    std::fs::write(protected.join("keys"), "original").unwrap();
    let h = Hearth::with_plugins(&[plugin("shell")], "");
    let defaults = include_str!("../config/guards.toml");
    let guards = defaults.replacen(
        "protected_paths = [",
        &format!(
            "protected_paths = [\n    {:?},",
            protected.display().to_string()
        ),
        1,
    );
    assert_ne!(
        guards, defaults,
        "the guards file has a protected_paths list"
    );
    h.write("config/guards.toml", &guards);
    let rt = h.runtime();
    Setup {
        h,
        rt,
        protected,
        open,
        _dirs: (protected_dir, open_dir),
    }
}

impl Setup {
    /// Writes `body` to a script in `$HEARTH_HOME` and returns the command
    /// line that runs it, which the guard cannot see into.
    fn script(&self, name: &str, body: &str) -> String {
        self.h.write(name, body);
        format!("sh {name}")
    }

    fn keys(&self) -> String {
        std::fs::read_to_string(self.protected.join("keys")).unwrap()
    }
}

/// A process outside any command's domain, killed at the end.
struct Stranger(Child);

impl Stranger {
    fn start() -> Stranger {
        Stranger(Command::new("sleep").arg("60").spawn().unwrap())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stderr(result: &Value) -> &str {
    result["stderr"].as_str().unwrap_or_default()
}

#[test]
fn an_unguarded_write_to_a_protected_path_gets_eacces_unless_approved() {
    if !supported() {
        return;
    }
    let s = setup();
    let target = s.protected.join("keys");
    let command = s.script(
        "overwrite.sh",
        &format!("echo replaced > {}\n", target.display()),
    );
    let floored = ok(&s.rt, "shell_exec", json!({ "command": command }));
    assert_ne!(floored["exit_code"], 0, "{floored}");
    assert!(stderr(&floored).contains("Permission denied"), "{floored}");
    assert!(
        floored["floor"]
            .as_str()
            .is_some_and(|f| f.contains("signals scoped")),
        "{floored}"
    );
    assert_eq!(s.keys(), "original");
    // Removing or renaming it is refused as well.
    for body in [
        format!("rm -f {}", target.display()),
        format!("mv {} {}/moved", target.display(), s.protected.display()),
        format!("mv {} {}/moved", s.protected.display(), s.open.display()),
    ] {
        let command = s.script("remove.sh", &format!("{body}\n"));
        let result = ok(&s.rt, "shell_exec", json!({ "command": command }));
        assert_ne!(result["exit_code"], 0, "{body}: {result}");
    }
    assert_eq!(s.keys(), "original");
    // Spelled so that the guard sees the write, the same command asks; with
    // the owner's standing grant for exactly this call it is approved, runs
    // without the floor, and succeeds.
    let args = json!({ "command": format!("echo replaced > {}", target.display()) });
    s.h.grant("shell_exec", &args);
    let approved = ok(&s.rt, "shell_exec", args);
    assert_eq!(approved["exit_code"], 0, "{approved}");
    assert!(approved.get("floor").is_none(), "{approved}");
    assert_eq!(s.keys(), "replaced\n");
    s.rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn an_unguarded_kill_of_an_outside_process_gets_eperm_unless_approved() {
    if !supported() {
        return;
    }
    let s = setup();
    let mut stranger = Stranger::start();
    let command = s.script("stop.sh", &format!("kill {}\n", stranger.pid()));
    let floored = ok(&s.rt, "shell_exec", json!({ "command": command }));
    assert_ne!(floored["exit_code"], 0, "{floored}");
    assert!(
        stderr(&floored).contains("Operation not permitted"),
        "{floored}"
    );
    assert!(stranger.alive(), "the outside process was killed");
    // Spelled so that the guard sees the kill, it asks; approved by the
    // owner's standing grant, it runs without the floor and lands.
    let args = json!({ "command": format!("kill {}", stranger.pid()) });
    s.h.grant("shell_exec", &args);
    let approved = ok(&s.rt, "shell_exec", args);
    assert_eq!(approved["exit_code"], 0, "{approved}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while stranger.alive() {
        assert!(Instant::now() < deadline, "the approved kill did not land");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn under_the_floor_other_paths_stay_writable() {
    if !supported() {
        return;
    }
    let s = setup();
    let open = s.open.display();
    let command = s.script(
        "work.sh",
        &format!(
            "mkdir -p {open}/build && echo built > {open}/build/out && cat {open}/build/out \
             && rm -r {open}/build && echo scratch > /dev/null\n"
        ),
    );
    let result = ok(&s.rt, "shell_exec", json!({ "command": command }));
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["stdout"], "built\n");
    assert!(result["floor"].is_string(), "{result}");
    assert!(!Path::new(&format!("{open}/build")).exists());
    s.rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn process_stop_still_stops_a_process_started_under_the_floor() {
    if !supported() {
        return;
    }
    let s = setup();
    let command = s.script(
        "serve.sh",
        &format!(
            "echo up\necho replaced > {}\nexec sleep 60\n",
            s.protected.join("keys").display()
        ),
    );
    let started = ok(
        &s.rt,
        "process_start",
        json!({ "command": command, "name": "server" }),
    );
    assert!(started["floor"].is_string(), "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let logs = ok(
            &s.rt,
            "process_logs",
            json!({ "id": id, "stream": "stderr" }),
        );
        if logs["text"]
            .as_str()
            .is_some_and(|t| t.contains("Permission denied"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no refusal in the log: {logs}");
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(s.keys(), "original");
    let stopped = ok(&s.rt, "process_stop", json!({ "id": id }));
    assert_eq!(stopped["ended_by"], "terminated", "{stopped}");
    assert_eq!(stopped["alive"], false, "{stopped}");
    s.rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn hearth_check_and_status_report_the_floor_and_what_it_protects() {
    if !supported() {
        return;
    }
    let s = setup();
    s.rt.stop(Duration::from_secs(5)).unwrap();
    let out = s.h.cmd(&["check"]);
    let text = out.ok();
    assert!(text.contains("floor: on (Landlock ABI"), "{text}");
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line: {text}"))
            .to_owned()
    };
    let roots = line("writable: ");
    let protects = line("read-only: ");
    let hidden = line("credentials (hidden): ");
    assert!(roots.contains("/tmp"), "{roots}");
    assert!(
        protects.contains(&s.protected.display().to_string()),
        "{protects}"
    );
    for path in [
        s.h.home().join("hearth.db-wal").display().to_string(),
        s.h.home().join("secrets.json").display().to_string(),
        s.h.config().display().to_string(),
    ] {
        assert!(hidden.contains(&path), "{path} not in {hidden}");
    }
    // The running daemon's `/status` (here through `hearth status`) says so.
    let _daemon = s.h.daemon();
    let status = s.h.cmd(&["status"]);
    assert!(
        status.ok().contains("floor: on (Landlock ABI"),
        "{}",
        status.stdout
    );
}

#[test]
fn the_floor_reaches_tools_that_declare_it_and_a_tool_that_does_not_asks() {
    if !supported() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exec_log = dir.path().join("exec");
    for (floorless, runs) in [(false, true), (true, false)] {
        let h = Hearth::with_plugins(
            &[probe()],
            &format!("[plugins.probe]\nexec_log = {exec_log:?}\nfloorless = {floorless}\n"),
        );
        let rt = h.runtime();
        let args = json!({ "command": "ls" });
        if runs {
            let result = ok(&rt, "probe_shell", args);
            let hidden = result["floor"]["hidden"].to_string();
            let db = h.home().canonicalize().unwrap().join("hearth.db-shm");
            assert!(hidden.contains(&db.display().to_string()), "{result}");
            assert_eq!(result["floor"]["protect"][0], "/", "{result}");
        } else {
            // Nothing beneath the guard would hold, so the owner is asked;
            // with no channel to ask on, it does not run.
            let err = call_err(&rt, "probe_shell", args);
            assert!(
                err.contains("runs commands without hearth's confinement"),
                "{err}"
            );
        }
        rt.stop(Duration::from_secs(5)).unwrap();
    }
}
