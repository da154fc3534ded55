//! The confinement of commands the owner did not approve, on the real
//! kernel: writes only beneath the writable roots, the credentials neither
//! read nor written however they are reached, no typing into terminals,
//! no reach into other processes' limits or priorities, and a session of
//! their own. Each outcome is checked on disk or on the process, not in
//! the tool's words.
//!
//! Every test fails when the kernel lacks Landlock ABI 6, unless
//! `HEARTH_TEST_NO_LANDLOCK=1` says the machine has none.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use common::{Fixture, eventually, roots_floor};
use hearth_shell::Config;
use serde_json::{Value, json};

/// A fixture whose calls are confined to its home and `extra`, hiding
/// `secret` in the home; `None` (skipped) only where the machine is known
/// to lack Landlock.
fn confined(extra: &Path) -> Option<Fixture> {
    if !hearth_sdk::landlock::required_for_tests(hearth_sdk::floor::SIGNAL_SCOPE_ABI) {
        return None;
    }
    let extra = extra.canonicalize().unwrap();
    Some(Fixture::with(Config::default(), |home| {
        std::fs::write(home.join("secrets.json"), "{\"API\":\"s3cr3t-value-42\"}").unwrap();
        Some(roots_floor(&[home, &extra], &[&home.join("secrets.json")]))
    }))
}

fn run(f: &Fixture, command: &str) -> Value {
    f.ok("shell_exec", json!({ "command": command }))
}

#[test]
fn a_confined_command_writes_only_beneath_the_roots() {
    let root = tempfile::tempdir().unwrap();
    // Writable for this user, but not a root: only Landlock can refuse it.
    let outside = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let home = f.home();
    let root = root.path().canonicalize().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    std::fs::write(outside.join("keep.txt"), "kept").unwrap();
    std::fs::create_dir(home.join("work")).unwrap();

    let inside = run(
        &f,
        &format!(
            "touch {0}/in-root && mkdir {0}/dir && echo x > {1}/work/in-home && echo quiet > /dev/null && echo out",
            root.display(),
            home.display()
        ),
    );
    assert_eq!(inside["exit_code"], 0, "{inside}");
    assert!(inside["floor"].as_str().unwrap().contains("writable roots"));
    assert!(root.join("in-root").exists() && root.join("dir").is_dir());
    assert!(home.join("work/in-home").exists());

    // A name of this run's own: a file left by a run whose floor failed
    // (a mutation run) would let `touch` succeed by only changing its
    // times, which Landlock does not cover.
    let in_etc = format!("/etc/hearth-x-{}", std::process::id());
    let _made = Removed(in_etc.clone());
    let cases = [
        format!("touch {in_etc}"),
        format!("touch {}/x", outside.display()),
        format!("mkdir {}/d", outside.display()),
        format!("ln -s /etc/passwd {}/link", outside.display()),
        format!("mv {}/in-root {}/moved", root.display(), outside.display()),
        format!("gzip -r {}", outside.display()),
    ];
    for command in cases {
        let got = run(&f, &command);
        assert_ne!(got["exit_code"], 0, "{command}: {got}");
        // The result says which path and how to ask the owner.
        let note = got["confinement"].as_str().unwrap_or_default();
        assert!(note.contains("outside_roots"), "{command}: {got}");
    }
    assert!(!Path::new(&in_etc).exists(), "{in_etc} was made");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_to_string(outside.join("keep.txt")).unwrap(),
        "kept"
    );
    assert!(root.join("in-root").exists());
    // Reading and running programs anywhere still works, from anywhere.
    let read = f.ok(
        "shell_exec",
        json!({"command": "head -c 10 /etc/passwd >/dev/null && ls >/dev/null && echo ok", "cwd": "/etc"}),
    );
    assert_eq!(read["stdout"], "ok\n", "{read}");
}

#[test]
fn a_confined_background_process_is_confined_too() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let outside = outside.path().canonicalize().unwrap();
    let started = f.ok(
        "process_start",
        json!({"command": format!("touch {}/x; cat {}/secrets.json", outside.display(), f.home().display())}),
    );
    assert!(started["floor"].is_string(), "{started}");
    eventually(Duration::from_secs(5), "the process to end", || {
        f.ok("process_status", json!({"id": "proc-1"}))["status"] == "exited"
    });
    let stderr = f.ok("process_logs", json!({"id": "proc-1", "stream": "stderr"}));
    assert!(
        stderr["text"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{stderr}"
    );
    assert!(!outside.join("x").exists());
    let stdout = f.ok("process_logs", json!({"id": "proc-1", "stream": "stdout"}));
    assert!(!stdout.to_string().contains("s3cr3t"), "{stdout}");
}

#[test]
fn the_credentials_cannot_be_read_or_written_however_they_are_reached() {
    let root = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let home = f.home();
    let secret = home.join("secrets.json");
    let root = root.path().canonicalize().unwrap();
    let s = secret.display();
    let r = root.display();
    let h = home.display();
    let forms = [
        format!("cat {s}"),
        format!("base64 {s}"),
        format!("cd {h} && cat ./secrets.json"),
        format!("cat {h}/../$(basename {h})/secrets.json"),
        format!("cat /proc/self/root{s}"),
        format!("cat /proc/$$/root{s}"),
        format!("ln -s {s} {r}/sym; cat {r}/sym"),
        format!("ln {s} {r}/hard; cat {r}/hard"),
        format!("ln {s} {h}/hard2; cat {h}/hard2"),
        format!("cp {s} {r}/copy; cat {r}/copy"),
        format!("tar -cf - -C {h} . | tar -xOf -"),
        format!("exec 3<{s}; cat <&3"),
        format!("python3 -c 'print(open(\"{s}\").read())'"),
        format!("dd if={s} status=none"),
        format!("head -c 100 {s}"),
        format!("sh -c 'cat /dev/fd/3' 3<{s}"),
        format!("echo gone > {s}"),
        format!("rm -f {s}"),
        format!("mv {s} {r}/moved"),
        format!("truncate -s 0 {s}"),
    ];
    for form in &forms {
        let got = run(&f, form);
        let shown = got.to_string();
        assert!(!shown.contains("s3cr3t-value-42"), "{form}: {shown}");
        assert!(
            !shown.contains(&base64_of("s3cr3t-value-42")[..12]),
            "{form}: {shown}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "{\"API\":\"s3cr3t-value-42\"}",
        "the secret file is intact"
    );
    assert!(!root.join("moved").exists());
}

#[test]
fn a_confined_command_types_into_no_terminal_and_has_none_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let (pty, name) = open_pty();
    // TIOCSTI on a terminal the command can open: refused by seccomp.
    let inject = format!(
        "python3 -c 'import fcntl, termios; fd = open(\"{}\", \"rb+\", buffering=0); \
         [fcntl.ioctl(fd, termios.TIOCSTI, c.to_bytes(1, \"big\")) for c in b\"id\\n\"]'",
        name.display()
    );
    let got = run(&f, &inject);
    assert_ne!(got["exit_code"], 0, "{got}");
    assert!(
        got["stderr"]
            .as_str()
            .unwrap()
            .contains("Operation not permitted"),
        "{got}"
    );
    assert_eq!(pending_input(&pty, &name), 0, "nothing was typed");
    // Approved commands cannot type either.
    let approved = Fixture::new();
    let got = approved.ok("shell_exec", json!({ "command": inject }));
    assert_ne!(got["exit_code"], 0, "{got}");
    assert_eq!(pending_input(&pty, &name), 0, "nothing was typed");
    // A session of its own, with no controlling terminal.
    let session = run(
        &f,
        "test \"$(cut -d' ' -f6 /proc/$$/stat)\" = \"$$\" && ! (exec 3</dev/tty) 2>/dev/null && echo alone",
    );
    assert_eq!(session["stdout"], "alone\n", "{session}");
}

#[test]
fn a_confined_command_cannot_change_another_process() {
    let root = tempfile::tempdir().unwrap();
    let Some(f) = confined(root.path()) else {
        return;
    };
    let mut stranger = Stranger::start();
    let pid = stranger.pid();
    let before = limits(pid);
    let forms = [
        format!("prlimit --pid {pid} --cpu=1:1"),
        format!("prlimit --pid {pid} --nofile=3:3"),
        format!("renice -n 19 -p {pid}"),
        format!("taskset -p 1 {pid}"),
        format!("ionice -c 3 -p {pid}"),
        format!("chrt -i -p 0 {pid}"),
        format!("kill -9 {pid}"),
        format!("kill -STOP {pid}"),
        "renice -n 19 -u root".to_owned(),
    ];
    for form in &forms {
        let got = run(&f, form);
        assert_ne!(got["exit_code"], 0, "{form}: {got}");
    }
    assert!(common::alive(pid as i32), "the stranger lives");
    assert_eq!(
        limits(pid),
        before,
        "its limits, nice and affinity are unchanged"
    );
    // Its own limits and priority it may change.
    let own = run(
        &f,
        "ulimit -n 100 && renice -n 5 -p $$ >/dev/null; nice -n 3 true && echo ok",
    );
    assert_eq!(own["stdout"], "ok\n", "{own}");
    // Approved, the owner's command reaches it.
    let approved = Fixture::new();
    let got = approved.ok(
        "shell_exec",
        json!({"command": format!("renice -n 7 -p {pid}")}),
    );
    assert_eq!(got["exit_code"], 0, "{got}");
    stranger.stop();
}

/// A process the shell plugin did not start.
struct Stranger(Child);

impl Stranger {
    fn start() -> Stranger {
        Stranger(Command::new("sleep").arg("300").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A process's limits, nice value and affinity, as /proc shows them.
fn limits(pid: u32) -> String {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let nice = stat
        .rsplit(") ")
        .next()
        .unwrap()
        .split(' ')
        .nth(16)
        .unwrap()
        .to_owned();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let affinity: String = status
        .lines()
        .filter(|l| l.starts_with("Cpus_allowed"))
        .collect();
    format!("{limits}\nnice {nice}\n{affinity}")
}

/// A pseudo-terminal: its controller and its follower's path.
fn open_pty() -> (std::fs::File, PathBuf) {
    use std::os::fd::FromRawFd;
    let (mut controller, mut follower) = (0, 0);
    // SAFETY: openpty writes two descriptors; no name buffer, termios or
    // window size is passed.
    let rc = unsafe {
        libc::openpty(
            &mut controller,
            &mut follower,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    let name = std::fs::read_link(format!("/proc/self/fd/{follower}")).unwrap();
    // SAFETY: both descriptors are new and owned here; the follower stays
    // open (leaked) so the terminal lives for the test.
    (unsafe { std::fs::File::from_raw_fd(controller) }, name)
}

/// Bytes waiting in the terminal's input queue (FIONREAD on the follower).
fn pending_input(_controller: &std::fs::File, name: &Path) -> i32 {
    use std::os::fd::AsRawFd;
    let follower = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name)
        .unwrap();
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let rc = unsafe { libc::ioctl(follower.as_raw_fd(), libc::FIONREAD, &mut waiting) };
    assert_eq!(rc, 0, "FIONREAD");
    waiting
}

fn base64_of(text: &str) -> String {
    let out = Command::new("base64")
        .arg("-w0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Removes a file when dropped, whether or not the test passed.
struct Removed(String);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
