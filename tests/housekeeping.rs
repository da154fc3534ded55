//! Housekeeping end to end: real files in a real home, aged by setting
//! their modification times, a real `hearth.db` holding the conversations
//! that name them, and the real binary's `hearth housekeeping` (the run the
//! daemon makes daily) and `hearth doctor`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hearth_tests::Hearth;
use serde_json::{Value, json};

const DAY: Duration = Duration::from_secs(86_400);

/// Writes `relative` in `h`'s home, `days` old.
fn file(h: &Hearth, relative: &str, days: u64) -> PathBuf {
    let path = h.home().join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, vec![b'x'; 1000]).unwrap();
    age(&path, days);
    path
}

fn age(path: &Path, days: u64) {
    let when = SystemTime::now() - DAY * days as u32;
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

/// A background process's record, ended `days` ago (or running).
fn process(h: &Hearth, id: &str, status: &str, days: u64) -> PathBuf {
    let dir = h.home().join("processes").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let ended = SystemTime::now() - DAY * days as u32;
    let ended_ms = ended
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let meta = json!({"id": id, "pid": 1, "command": "sleep 1", "cwd": "/", "started_at_ms": 0,
        "start_ticks": 0, "boot_id": "x", "status": status,
        "ended_at_ms": (status != "running").then_some(ended_ms),
        "stdout": dir.join("stdout.log"), "stderr": dir.join("stderr.log")});
    std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    std::fs::write(dir.join("stdout.log"), "done\n").unwrap();
    dir
}

fn housekeeping(h: &Hearth) -> Value {
    h.cmd(&["housekeeping", "--json"]).json()["report"].clone()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn retention_removes_old_files_keeps_new_ones_and_forever_keeps_its_kind() {
    let h = Hearth::new("[housekeeping]\nmedia = 10\nvoice = \"forever\"\nworkers = 0\n");
    let old_exec = file(&h, "logs/exec-1-2-3.log", 40);
    let new_exec = file(&h, "logs/exec-4-5-6.log", 2);
    let old_log = file(&h, "logs/plugins/old.log", 31);
    let old_media = file(&h, "media/aaa.jpg", 11);
    let new_media = file(&h, "media/bbb.jpg", 9);
    let old_attachment = file(&h, "attachments/telegram/report.pdf", 40);
    let old_voice = file(&h, "voice/reply-1.ogg", 400);
    let old_worker = file(&h, "workers/worker-1.txt", 400);
    let ended = process(&h, "proc-1", "exited", 40);
    let recent = process(&h, "proc-2", "stopped", 3);
    let running = process(&h, "proc-3", "running", 40);
    age(&running.join("meta.json"), 40);
    // The highest number stays, so the next process is never given an
    // id an old conversation used.
    let newest = process(&h, "proc-12", "gone", 40);
    // A link is never followed: what it points at stays.
    let outside = tempfile::tempdir().unwrap();
    let precious = outside.path().join("photo.jpg");
    std::fs::write(&precious, "mine").unwrap();
    std::os::unix::fs::symlink(outside.path(), h.home().join("media/linked")).unwrap();

    let report = housekeeping(&h);
    for gone in [&old_exec, &old_log, &old_media, &old_attachment, &ended] {
        assert!(!gone.exists(), "{} is still there", gone.display());
    }
    for kept in [
        &new_exec,
        &new_media,
        &old_voice,
        &old_worker,
        &recent,
        &running,
        &newest,
        &precious,
    ] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
    assert_eq!(report["files"], 5, "{report:#}");
    let by_kind = &report["by_kind"];
    for kind in ["exec_logs", "logs", "media", "attachments", "processes"] {
        assert_eq!(by_kind[kind][0], 1, "{kind}: {report:#}");
    }
    assert_eq!(by_kind["media"][1], 1000);
    // A second run finds nothing more.
    assert_eq!(housekeeping(&h)["files"], 0);
}

#[test]
fn a_file_a_conversation_still_needs_is_kept_and_a_removed_one_is_noted_where_it_was_named() {
    let h = Hearth::new("");
    let live = file(&h, "media/live.jpg", 40);
    let ended = file(&h, "media/ended.jpg", 40);
    let stale = file(&h, "attachments/telegram/stale.pdf", 40);
    let unanswered = file(&h, "attachments/telegram/unanswered.ogg", 40);
    let undelivered = file(&h, "voice/undelivered.ogg", 40);
    // The store, made as any command makes it.
    h.cmd(&["schedule", "list"]).ok();
    let db = h.db();
    let now = now_ms();
    let month_and_more = now - 40 * 86_400_000;
    let session = |ended_at: Option<i64>, at: i64| -> i64 {
        db.query_row(
            "INSERT INTO sessions (agent_id, channel, chat, started_at_ms, ended_at_ms) \
             VALUES (1, 'telegram', '1001', ?1, ?2) RETURNING id",
            rusqlite::params![at, ended_at],
            |r| r.get(0),
        )
        .unwrap()
    };
    let message = |session: i64, path: &Path, at: i64| {
        let content = json!({"role": "user", "content": [
            {"type": "image", "name": "x.jpg", "path": path, "media_type": "image/jpeg",
             "sha256": "00", "width": 1, "height": 1, "source": path},
            {"type": "text", "text": format!("[file saved at {}; look]", path.display())}]});
        db.execute(
            "INSERT INTO messages (session_id, role, content, created_at_ms) VALUES (?1, 'user', ?2, ?3)",
            rusqlite::params![session, content.to_string(), at],
        )
        .unwrap();
    };
    // Open and active today: its context still shows the image.
    let open = session(None, month_and_more);
    message(open, &live, month_and_more);
    message(open, &h.home().join("media/other.jpg"), now);
    // Ended, and open but idle for longer than the retention.
    let done = session(Some(month_and_more), month_and_more);
    message(done, &ended, month_and_more);
    let idle = session(None, month_and_more);
    message(idle, &stale, month_and_more);
    // A message not yet answered, a reply not yet delivered.
    let files = |path: &Path| json!([{"name": "f", "path": path}]).to_string();
    db.execute(
        "INSERT INTO inbox (channel, idempotency_key, sender, chat, text, received_at_ms, attachments) \
         VALUES ('telegram', 'k1', '1001', '1001', 'listen', ?1, ?2)",
        rusqlite::params![month_and_more, files(&unanswered)],
    )
    .unwrap();
    db.execute(
        "INSERT INTO outbox (channel, chat, text, next_attempt_at_ms, created_at_ms, attachments) \
         VALUES ('telegram', '1001', 'here', 0, ?1, ?2)",
        rusqlite::params![month_and_more, files(&undelivered)],
    )
    .unwrap();

    let report = housekeeping(&h);
    assert!(live.exists() && unanswered.exists() && undelivered.exists());
    assert!(!ended.exists() && !stale.exists());
    assert_eq!(report["files"], 2, "{report:#}");
    assert_eq!(report["kept_in_use"], 3, "{report:#}");
    assert_eq!(report["annotated"], 2, "{report:#}");
    // Where a removed file was named, the path now says why it is gone;
    // the row is still JSON and the kept file's row is untouched.
    let content = |session: i64| -> Vec<String> {
        let mut stmt = db
            .prepare("SELECT content FROM messages WHERE session_id = ?1 ORDER BY id")
            .unwrap();
        stmt.query_map([session], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    for (session, path) in [(done, &ended), (idle, &stale)] {
        let text = &content(session)[0];
        let parsed: Value = serde_json::from_str(text).unwrap();
        let noted = format!("{} [removed by housekeeping on ", path.display());
        assert!(
            parsed["content"][0]["path"]
                .as_str()
                .unwrap()
                .starts_with(&noted),
            "{text}"
        );
        assert!(
            parsed["content"][1]["text"]
                .as_str()
                .unwrap()
                .contains(&noted),
            "{text}"
        );
    }
    assert!(!content(open)[0].contains("removed by housekeeping"));
}

#[test]
fn the_doctor_shows_the_home_by_kind_and_what_housekeeping_last_removed() {
    let h = Hearth::new("");
    let doctor = |h: &Hearth| {
        let run = h.cmd(&["doctor"]);
        format!("{}{}", run.stdout, run.stderr)
    };
    file(&h, "media/a.jpg", 1);
    file(&h, "attachments/telegram/b.pdf", 1);
    file(&h, "logs/exec-1.log", 40);
    let before = doctor(&h);
    let line = before
        .lines()
        .find(|l| l.contains("home size"))
        .unwrap_or_else(|| panic!("{before}"));
    for part in [
        "media 1000 B",
        "attachments 1000 B",
        "exec_logs 1000 B",
        "database ",
    ] {
        assert!(line.contains(part), "{part}: {line}");
    }
    assert!(before.contains("not run yet"), "{before}");
    housekeeping(&h);
    let after = doctor(&h);
    let line = after
        .lines()
        .find(|l| l.contains("housekeeping") && l.contains("last run"))
        .unwrap_or_else(|| panic!("{after}"));
    assert!(line.contains("removed 1 file(s), 1000 B"), "{line}");
    assert!(line.contains("exec_logs 1"), "{line}");
}

#[test]
fn a_bad_housekeeping_value_is_refused_naming_the_key() {
    let h = Hearth::new("");
    for (table, key) in [
        ("media = -3", "housekeeping.media"),
        ("voice = \"soon\"", "housekeeping.voice"),
        ("logs = 40000", "housekeeping.logs"),
        ("processes = 1.5", "processes"),
        ("medias = 3", "medias"),
    ] {
        h.write_config(&format!("[housekeeping]\n{table}\n"));
        let err = h.cmd(&["housekeeping"]).fails();
        assert!(err.contains(key), "{table}: {err}");
    }
    h.write_config("[housekeeping]\nmedia = \"Forever\"\nlogs = 0\n");
    h.cmd(&["housekeeping"]).ok();
}

#[test]
fn the_daemon_tidies_the_home_shortly_after_it_starts() {
    let h = Hearth::new("");
    let old = file(&h, "logs/exec-9-9-9.log", 45);
    let new = file(&h, "logs/exec-9-9-10.log", 0);
    let _daemon = h.daemon();
    let start = std::time::Instant::now();
    while old.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the daemon did not run housekeeping"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(new.exists());
    let run = h.cmd(&["doctor"]);
    assert!(
        run.stdout
            .contains("removed 1 file(s), 1000 B: exec_logs 1"),
        "{}",
        run.stdout
    );
}
