//! The daemon's life cycle: readiness, graceful stop in reverse load order,
//! config reload on SIGHUP, and staying up when a plugin is broken.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use hearth_tests::{Hearth, fixture, messages, plugin, probe};

#[test]
fn ready_is_announced_to_systemd() {
    let h = Hearth::with_plugins(&[plugin("echo")], "");
    let socket_path = h.home().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut daemon = h.daemon_with(|cmd| {
        cmd.env("NOTIFY_SOCKET", &socket_path);
    });
    let mut buf = [0u8; 256];
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(String::from_utf8_lossy(&buf[..n]).trim_end(), "READY=1");
    daemon.signal(libc::SIGTERM);
    let (status, _) = daemon.wait_exit(Duration::from_secs(5));
    assert!(status.success());
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(String::from_utf8_lossy(&buf[..n]).trim_end(), "STOPPING=1");
}

#[test]
fn sigterm_stops_within_5s_shutting_plugins_down_in_reverse_load_order() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let h = Hearth::with_plugins(&[plugin("echo"), plugin("hello_c"), probe()], "");
        let mut daemon = h.daemon();
        daemon.signal(signal);
        let (status, took) = daemon.wait_exit(Duration::from_secs(10));
        assert!(status.success(), "exit status {status}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
        let shutdowns: Vec<String> = messages(&daemon.logs())
            .into_iter()
            .filter(|m| m.ends_with("plugin shutdown"))
            .collect();
        assert_eq!(
            shutdowns,
            [
                "probe plugin shutdown",
                "hello-c plugin shutdown",
                "echo plugin shutdown"
            ]
        );
        // The store was closed cleanly: the WAL was checkpointed into the
        // database file (looked at before `h.db()` opens a connection, whose
        // own close would checkpoint it), and the run is recorded.
        let wal = h.home().join("hearth.db-wal");
        let wal_bytes = std::fs::metadata(&wal).map_or(0, |m| m.len());
        assert_eq!(
            wal_bytes,
            0,
            "{} holds data after a clean stop",
            wal.display()
        );
        let clean: i64 = h
            .db()
            .query_row("SELECT clean_stop FROM daemon_runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(clean, 1);
    }
}

#[test]
fn a_plugin_that_hangs_in_shutdown_does_not_hold_the_daemon() {
    let h = Hearth::with_plugins(
        &[plugin("echo"), probe()],
        "[plugins.probe]\nshutdown_sleep_ms = 30000\n[daemon]\nshutdown_timeout_ms = 500\n",
    );
    let mut daemon = h.daemon();
    daemon.signal(libc::SIGTERM);
    let (status, took) = daemon.wait_exit(Duration::from_secs(10));
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(!status.success(), "an overrun stop must not look clean");
    let logs = daemon.logs().join("\n");
    assert!(
        logs.contains("plugin probe did not finish shutting down"),
        "{logs}"
    );
}

#[test]
fn sighup_with_a_broken_config_keeps_the_old_one() {
    let h = Hearth::with_plugins(&[plugin("echo")], "");
    let good = std::fs::read_to_string(h.config()).unwrap();
    let mut daemon = h.daemon();

    h.write_config("[log\nbroken = ");
    daemon.signal(libc::SIGHUP);
    let refused = daemon.wait_for_log(
        |l| l.contains("config reload refused"),
        Duration::from_secs(10),
    );
    assert!(
        refused.contains("hearth.toml") && refused.contains("line 1"),
        "{refused}"
    );

    // Still serving: a valid reload after the broken one is applied.
    h.write_config(&format!("{good}\n[log]\nlevel = \"warn\"\n"));
    daemon.signal(libc::SIGHUP);
    daemon.wait_for_log(|l| l.contains("config reloaded"), Duration::from_secs(10));

    daemon.signal(libc::SIGTERM);
    let (status, _) = daemon.wait_exit(Duration::from_secs(5));
    assert!(status.success());
    // The new level (warn) applied: the info-level "stopped" line is gone.
    assert!(!messages(&daemon.logs()).iter().any(|m| m == "stopped"));
}

#[test]
fn the_daemon_starts_and_serves_despite_broken_plugins() {
    let h = Hearth::with_plugins(
        &[
            fixture("abi_major2.so"),
            fixture("no_entry.so"),
            plugin("echo"),
        ],
        "",
    );
    let mut daemon = h.daemon();
    let logs = daemon.logs().join("\n");
    assert!(
        logs.contains("abi_major2.so") && logs.contains("no_entry.so"),
        "{logs}"
    );
    assert!(logs.contains("\"plugins\":1"), "{logs}");
    daemon.signal(libc::SIGTERM);
    assert!(daemon.wait_exit(Duration::from_secs(5)).0.success());
}

#[test]
fn a_required_plugin_that_fails_stops_the_start() {
    let h = Hearth::with_plugins(
        &[plugin("echo"), probe()],
        "[plugins.probe]\nrequired = true\nfail_init = \"no token\"\n",
    );
    let out = h.cmd(&["run"]).fails();
    assert!(out.contains("required plugin probe did not load"), "{out}");
    assert!(out.contains("init failed: no token"), "{out}");
}
