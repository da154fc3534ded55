//! Backups and restore end to end: `hearth backup` beside a daemon that
//! keeps answering chats, `hearth restore` into a fresh home that then
//! answers with the whole history, the refusals (a running daemon, a
//! newer schema, every kind of bad archive, each leaving nothing written),
//! retention in the backup folder, and the scheduled backup driven by
//! `HEARTH_FAKE_NOW`, once across a restart.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hearth_tests::fake_llm::{FakeLlm, anthropic_text};
use hearth_tests::{Daemon, Hearth};

const WAIT: Duration = Duration::from_secs(30);

fn llm_config(fake: &FakeLlm) -> String {
    format!(
        "[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_API_KEY\"\nretry_base_ms = 10\nmax_retries = 3\n",
        fake.url()
    )
}

fn start(h: &Hearth) -> Daemon {
    start_at(h, None)
}

/// Starts the daemon with its clock at `now` (RFC 3339), or the real one.
fn start_at(h: &Hearth, now: Option<&str>) -> Daemon {
    h.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        if let Some(now) = now {
            cmd.env("HEARTH_FAKE_NOW", now);
        }
    })
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The texts of the messages the agent has answered.
fn answered(db: &rusqlite::Connection) -> Vec<String> {
    let mut stmt = db
        .prepare("SELECT text FROM inbox WHERE status = 'done' ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The archives in `dir` (names that read as one), sorted.
fn archives(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|list| {
            list.filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| hearth::backup::names::parse(n).is_some())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_backup_under_write_load_restores_into_a_home_that_answers_with_the_whole_history() {
    let fake = FakeLlm::start();
    let h = Hearth::new(&llm_config(&fake));
    h.write("lib/notes.lua", "return {}\n");
    h.cmd_with_input(&["secret", "set", "NOTES_TOKEN"], "tok-1234567890\n")
        .ok();
    let daemon = start(&h);
    let (stop, sent) = (AtomicBool::new(false), AtomicUsize::new(0));
    let (before, made, during) = std::thread::scope(|s| {
        // The write load: one chat after another, each stored, answered
        // and delivered, for as long as the test runs.
        s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                fake.push(anthropic_text(&format!("Noted {i}.")));
                let reply = h.chat(&format!("note number {i}"));
                assert_eq!(reply.ok().trim(), format!("Noted {i}."));
                i += 1;
                sent.store(i, Ordering::Relaxed);
            }
        });
        wait_until("five answered chats", || sent.load(Ordering::Relaxed) >= 5);
        let before = answered(&h.db());
        let made = h.cmd(&["backup", "--json"]).json();
        let during = sent.load(Ordering::Relaxed);
        // The daemon kept answering while and after it copied itself.
        wait_until("two more chats after the backup", || {
            sent.load(Ordering::Relaxed) >= during + 2
        });
        stop.store(true, Ordering::Relaxed);
        (before, made, during)
    });
    assert!(during >= 5);
    daemon.wait_for_log(|l| l.contains("\"message\":\"backup made\""), WAIT);
    drop(daemon);

    let archive = PathBuf::from(made["path"].as_str().unwrap());
    assert_eq!(archive.parent().unwrap(), h.home().join("backups"));
    assert_eq!(mode(&archive), 0o600);
    let listed: Vec<&str> = made["manifest"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for file in ["hearth.db", "hearth.toml", "secrets.json", "lib/notes.lua"] {
        assert!(listed.contains(&file), "{file} is not in {listed:?}");
    }
    assert!(made["manifest"]["schema_version"].as_i64().unwrap() > 0);

    let fresh = tempfile::tempdir().unwrap();
    let out = h
        .cmd(&[
            "restore",
            archive.to_str().unwrap(),
            "--home",
            fresh.path().to_str().unwrap(),
        ])
        .ok()
        .to_owned();
    assert!(out.contains("restored"), "{out}");
    let db = rusqlite::Connection::open(fresh.path().join("hearth.db")).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let restored = answered(&db);
    for text in &before {
        assert!(restored.contains(text), "{text:?} is missing after restore");
    }
    // A chat that was stored but not yet answered at the backup's instant
    // is answered by the restored daemon when it starts.
    let unanswered: i64 = db
        .query_row(
            "SELECT count(*) FROM inbox WHERE status != 'done'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(db);
    assert_eq!(mode(&fresh.path().join("hearth.db")), 0o600);
    assert_eq!(mode(&fresh.path().join("secrets.json")), 0o600);
    assert_eq!(
        std::fs::read_to_string(fresh.path().join("lib/notes.lua")).unwrap(),
        "return {}\n"
    );

    // The restored home runs, finds the old messages, and answers with
    // the conversation so far in front of the model.
    let r = Hearth::at(fresh);
    for _ in 0..unanswered {
        fake.push(anthropic_text("Noted, late."));
    }
    let _daemon = start(&r);
    wait_until("the restored daemon's unanswered chats", || {
        answered(&r.db()).len() == restored.len() + unanswered as usize
    });
    let found = r
        .cmd(&[
            "tool",
            "call",
            "search_history",
            r#"{"query": "note number 0"}"#,
        ])
        .json();
    assert!(found.to_string().contains("note number 0"), "{found}");
    fake.push(anthropic_text("Welcome back."));
    assert_eq!(
        r.chat("what did I note first?").ok().trim(),
        "Welcome back."
    );
    let asked = fake.requests().last().unwrap().body.to_string();
    assert!(asked.contains("note number 0"), "{asked}");
    assert!(asked.contains("what did I note first?"), "{asked}");
}

#[test]
fn restore_is_refused_beside_a_running_daemon() {
    let h = Hearth::new("");
    let _daemon = start(&h);
    let made = h.cmd(&["backup", "--json"]).json();
    let archive = made["path"].as_str().unwrap();
    for args in [
        vec!["restore", archive],
        vec!["restore", archive, "--force"],
    ] {
        let out = h.cmd(&args).fails();
        assert!(out.contains("daemon is running"), "{out}");
        assert!(out.contains("stop it first"), "{out}");
    }
    assert!(h.home().join("hearth.db").is_file());
}

/// A home with a store and no daemon.
fn stopped_home(config: &str) -> Hearth {
    let h = Hearth::new(config);
    hearth::store::Store::open(&h.home().join("hearth.db"))
        .unwrap()
        .close()
        .unwrap();
    h
}

#[test]
fn an_archive_from_a_newer_schema_is_refused() {
    let h = stopped_home("");
    let newer = hearth::store::SCHEMA_VERSION + 1;
    h.db().pragma_update(None, "user_version", newer).unwrap();
    // Without a daemon, the CLI makes the archive itself.
    let made = h.cmd(&["backup", "--json"]).json();
    assert_eq!(made["manifest"]["schema_version"], newer);
    let target = tempfile::tempdir().unwrap();
    let home = target.path().join("home");
    let out = h
        .cmd(&[
            "restore",
            made["path"].as_str().unwrap(),
            "--home",
            home.to_str().unwrap(),
        ])
        .fails();
    assert!(out.contains(&format!("schema version {newer}")), "{out}");
    assert!(out.contains("upgrade hearth"), "{out}");
    assert!(!home.exists());
}

/// One entry of an archive, as the tests rewrite them.
#[derive(Clone)]
struct Entry {
    path: Vec<u8>,
    kind: tar::EntryType,
    link: Option<&'static str>,
    data: Vec<u8>,
}

impl Entry {
    fn file(path: &str, data: &[u8]) -> Entry {
        Entry {
            path: path.as_bytes().to_vec(),
            kind: tar::EntryType::Regular,
            link: None,
            data: data.to_vec(),
        }
    }
}

fn read_entries(archive: &Path) -> Vec<Entry> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    tar.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            Entry {
                path: e.path_bytes().into_owned(),
                kind: tar::EntryType::Regular,
                link: None,
                data,
            }
        })
        .collect()
}

/// Writes `entries` as a tar.gz, names as given, byte for byte (the tar
/// crate's own path setter refuses `..` and absolute paths).
fn write_entries(path: &Path, entries: &[Entry]) {
    let file = std::fs::File::create(path).unwrap();
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..entry.path.len()].copy_from_slice(&entry.path);
        header.set_entry_type(entry.kind);
        header.set_mode(0o600);
        header.set_size(entry.data.len() as u64);
        if let Some(link) = entry.link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        tar.append(&header, entry.data.as_slice()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
}

#[test]
fn bad_archives_are_refused_with_the_reason_and_nothing_is_written() {
    let h = stopped_home("");
    h.write("tools/readme.txt", "the agent's notes\n");
    let made = h.cmd(&["backup", "--json"]).json();
    let good = PathBuf::from(made["path"].as_str().unwrap());
    let bytes = std::fs::read(&good).unwrap();
    let entries = read_entries(&good);
    assert_eq!(entries[0].path, b"manifest.json");
    let with = |extra: Entry| {
        let mut all = entries.clone();
        all.push(extra);
        all
    };
    let scratch = tempfile::tempdir().unwrap();
    type Make<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, Make<'_>, &str)> = vec![
        (
            "not gzip",
            Box::new(|p| std::fs::write(p, "this is not a backup").unwrap()),
            "not gzip-compressed",
        ),
        (
            "truncated",
            Box::new(|p| std::fs::write(p, &bytes[..bytes.len() / 2]).unwrap()),
            "truncated",
        ),
        (
            "no manifest",
            Box::new(|p| write_entries(p, &entries[1..])),
            "not manifest.json",
        ),
        (
            "a changed byte",
            Box::new(|p| {
                let mut changed = entries.clone();
                let db = changed.iter_mut().find(|e| e.path == b"hearth.db").unwrap();
                let middle = db.data.len() / 2;
                db.data[middle] ^= 0xff;
                write_entries(p, &changed);
            }),
            "hearth.db is not what the manifest lists",
        ),
        (
            "a parent path",
            Box::new(|p| write_entries(p, &with(Entry::file("../escaped", b"x")))),
            "leaves the home",
        ),
        (
            "an absolute path",
            Box::new(|p| write_entries(p, &with(Entry::file("/tmp/hearth-escaped", b"x")))),
            "an absolute path",
        ),
        (
            "a symbolic link",
            Box::new(|p| {
                write_entries(
                    p,
                    &with(Entry {
                        kind: tar::EntryType::Symlink,
                        link: Some("/etc/passwd"),
                        ..Entry::file("tools/link", b"")
                    }),
                )
            }),
            "a symbolic link",
        ),
        (
            "a file the manifest does not list",
            Box::new(|p| write_entries(p, &with(Entry::file("tools/extra.lua", b"x")))),
            "not in the manifest",
        ),
    ];
    for (what, make, expected) in cases {
        let archive = scratch.path().join(format!("{what}.tar.gz"));
        make(&archive);
        let home = scratch.path().join(format!("home for {what}"));
        let out = h
            .cmd(&[
                "restore",
                archive.to_str().unwrap(),
                "--home",
                home.to_str().unwrap(),
            ])
            .fails();
        assert!(out.contains(expected), "{what}: {out}");
        assert!(
            !home.exists(),
            "{what}: the restore wrote {}",
            home.display()
        );
    }
    assert!(!Path::new("/tmp/hearth-escaped").exists());
    assert!(!scratch.path().join("escaped").exists());

    // The good archive restores; into a home that holds files only with
    // --force, which moves the replaced files aside.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("hearth.db"), "the old database").unwrap();
    let target = home.path().to_str().unwrap();
    let out = h
        .cmd(&["restore", good.to_str().unwrap(), "--home", target])
        .fails();
    assert!(out.contains("is not empty"), "{out}");
    assert!(out.contains("--force"), "{out}");
    let out = h
        .cmd(&[
            "restore",
            good.to_str().unwrap(),
            "--home",
            target,
            "--force",
        ])
        .ok()
        .to_owned();
    assert!(out.contains("before-restore-"), "{out}");
    let aside: Vec<PathBuf> = std::fs::read_dir(home.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("before-restore-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read_to_string(aside[0].join("hearth.db")).unwrap(),
        "the old database"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("tools/readme.txt")).unwrap(),
        "the agent's notes\n"
    );
}

#[test]
fn retention_after_a_backup_deletes_only_old_archives_in_the_backup_folder() {
    let h = stopped_home("[backup]\nkeep_last = 2\nkeep_monthly = 0\nkeep_yearly = false\n");
    let dir = h.home().join("backups");
    std::fs::create_dir_all(&dir).unwrap();
    let old = [
        "hearth-backup-2020-01-01T033000Z.tar.gz",
        "hearth-backup-2020-01-02T033000Z.tar.gz",
        "hearth-backup-2020-01-03T033000Z.tar.gz",
    ];
    let strangers = ["notes.txt", "hearth-backup-2019-12-31.tar.gz"];
    for name in old.iter().chain(&strangers) {
        std::fs::write(dir.join(name), "x").unwrap();
    }
    let made = h.cmd(&["backup", "--json"]).json();
    let new = Path::new(made["path"].as_str().unwrap())
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(made["pruned"].as_array().unwrap().len(), 2, "{made}");
    assert_eq!(archives(&dir), vec![old[2].to_owned(), new]);
    for name in strangers {
        assert!(dir.join(name).exists(), "{name} was deleted");
    }
    // A folder given with --to is the owner's: nothing there is deleted.
    let elsewhere = tempfile::tempdir().unwrap();
    for name in old {
        std::fs::write(elsewhere.path().join(name), "x").unwrap();
    }
    let made = h
        .cmd(&[
            "backup",
            "--json",
            "--to",
            elsewhere.path().to_str().unwrap(),
        ])
        .json();
    assert!(made["pruned"].as_array().unwrap().is_empty());
    assert_eq!(archives(elsewhere.path()).len(), 4);
}

#[test]
fn a_scheduled_backup_fires_at_its_time_once_across_a_restart_and_catches_up_once() {
    let h = Hearth::new("[backup]\nschedule = \"30 3 * * *\"\n\n[owner]\ntimezone = \"UTC\"\n");
    let dir = h.home().join("backups");
    let mut daemon = start_at(&h, Some("2026-11-27T03:29:57Z"));
    wait_until("the scheduled backup", || !archives(&dir).is_empty());
    daemon.wait_for_log(|l| l.contains("scheduled backup made"), WAIT);
    assert_eq!(
        archives(&dir),
        vec!["hearth-backup-2026-11-27T033000Z.tar.gz"]
    );
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit(WAIT);

    // Restarted seconds later: that run is done, nothing fires again.
    let mut daemon = start_at(&h, Some("2026-11-27T03:30:20Z"));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(archives(&dir).len(), 1, "{:?}", archives(&dir));
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit(WAIT);

    // Down over the next night's run: one backup at start, not one per
    // missed run.
    let daemon = start_at(&h, Some("2026-11-30T05:00:00Z"));
    wait_until("the missed backup", || archives(&dir).len() == 2);
    daemon.wait_for_log(|l| l.contains("missed while hearth was down"), WAIT);
    std::thread::sleep(Duration::from_millis(500));
    let names = archives(&dir);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names[1].starts_with("hearth-backup-2026-11-30T0500"),
        "{names:?}"
    );
}

#[test]
fn backup_config_errors_name_the_file_line_and_key() {
    let cases = [
        ("[backup]\nschedul = \"30 3 * * *\"\n", "line 2"),
        (
            "[backup]\nschedule = \"61 3 * * *\"\n",
            "key `backup.schedule`",
        ),
        ("[backup]\nschedule = \"0 0 30 2 *\"\n", "never fires"),
        ("[backup]\nkeep_last = 0\n", "key `backup.keep_last`"),
        (
            "[backup]\nkeep_monthly = 5000\n",
            "key `backup.keep_monthly`",
        ),
        ("[backup]\ndir = \"\"\n", "key `backup.dir`"),
        ("[backup]\nenabled = \"yes\"\n", "line 2"),
    ];
    for (config, expected) in cases {
        let h = Hearth::exact(config);
        let out = h.cmd(&["check"]).fails();
        assert!(out.contains("hearth.toml"), "{config}: {out}");
        assert!(out.contains(expected), "{config}: {out}");
    }
}

/// What people sent and the agent made (photos, files, voice notes) is in
/// the archive and comes back with a restore, unless the owner leaves it
/// out; logs never go in.
#[test]
fn media_attachments_and_voice_notes_are_backed_up_unless_left_out() {
    let files = [
        "media/photo-1.jpg",
        "attachments/telegram/42-0-plan.pdf",
        "voice/reply-7.ogg",
    ];
    for (config, kept) in [("", true), ("[backup]\ninclude_media = false\n", false)] {
        let h = stopped_home(config);
        for file in files {
            let path = h.home().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("bytes of {file}")).unwrap();
        }
        std::fs::create_dir_all(h.home().join("logs")).unwrap();
        std::fs::write(h.home().join("logs/hearth.log"), "a log line").unwrap();
        let made = h.cmd(&["backup", "--json"]).json();
        let listed: Vec<String> = made["manifest"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect();
        for file in files {
            assert_eq!(
                listed.contains(&file.to_owned()),
                kept,
                "{config:?}: {file} in {listed:?}"
            );
        }
        assert!(!listed.iter().any(|f| f.starts_with("logs/")), "{listed:?}");
        let fresh = tempfile::tempdir().unwrap();
        h.cmd(&[
            "restore",
            made["path"].as_str().unwrap(),
            "--home",
            fresh.path().to_str().unwrap(),
        ])
        .ok();
        for file in files {
            let back = std::fs::read_to_string(fresh.path().join(file)).ok();
            assert_eq!(back.is_some(), kept, "{config:?}: {file} restored");
            if kept {
                assert_eq!(back.unwrap(), format!("bytes of {file}"));
            }
        }
    }
}
