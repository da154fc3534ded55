//! A full disk: `$HEARTH_HOME` on a small tmpfs that a filler file fills
//! while the daemon runs with the Telegram plugin against the fake Bot
//! API. Inbound messages are then refused upstream (Telegram's updates are
//! not acknowledged, `hearth chat` gets a clear error), nothing stored is
//! harmed, the daemon keeps serving and says why in its log, and once the
//! filler is removed the refused updates are stored and answered. A turn
//! whose reply the full disk refused runs again once space is back, and a
//! reply sent while the disk is full is not sent again for want of its
//! `delivered` mark.

use std::time::{Duration, Instant};

use hearth_tests::Hearth;
use hearth_tests::fake_llm::{Reply, anthropic_text};
use hearth_tests::small_fs::with_small_fs;
use hearth_tests::telegram_home::{OWNER, TelegramHome};

#[test]
fn a_full_disk_refuses_messages_upstream_and_recovers_when_space_is_freed() {
    with_small_fs(
        "32m",
        "disk_full::a_full_disk_refuses_messages_upstream_and_recovers_when_space_is_freed",
        |fs| {
            let s = TelegramHome::inside(fs.path(), "", "");
            s.llm.respond_with(|_| anthropic_text("got it"));
            let mut daemon = s.start();
            let before: Vec<i64> = (0..3).map(|n| push(&s, &format!("before {n}"))).collect();
            s.wait_sent_to(OWNER, 3);
            s.home
                .chat("from the terminal, before the disk filled")
                .ok();

            // Full: the write-ahead log emptied first, so no write fits
            // into room it already has; then every free block taken.
            empty_the_log(&s.home);
            assert!(fs.fill() > 0, "the filler found no room");
            let refused: Vec<i64> = (0..3)
                .map(|n| push(&s, &format!("while full {n}")))
                .collect();
            let chat = s
                .home
                .cmd(&["chat", "-m", "while the disk is full", "--timeout", "10"])
                .fails();
            assert!(chat.contains("disk is full"), "{chat}");
            std::thread::sleep(Duration::from_secs(3));
            // Telegram still holds every refused update: the poller has not
            // moved its offset past any of them.
            assert_eq!(s.telegram.pending_updates().len(), 3);
            assert!(acknowledged_below(&s) <= refused[0]);
            // The daemon serves and says what is wrong, once, without a panic.
            s.home.cmd(&["status"]).ok();
            let logs = daemon.logs().join("\n");
            let errors = logs.matches("cannot store inbound messages").count();
            assert!(errors >= 1 && logs.contains("disk is full"), "{logs}");
            assert!(errors <= 2, "the error is logged once a minute: {logs}");
            assert!(!logs.contains("panicked"), "{logs}");
            // What was stored before is whole.
            assert_eq!(integrity(&s.home), "ok");
            assert_eq!(stored_updates(&s.home), before);

            fs.free();
            s.wait_sent_to(OWNER, 6);
            wait_until("Telegram's updates all acknowledged", || {
                s.telegram.pending_updates().is_empty()
            });
            let all: Vec<i64> = before.iter().chain(&refused).copied().collect();
            assert_eq!(stored_updates(&s.home), all);
            s.home.chat("from the terminal, after").ok();
            let logs = daemon.logs().join("\n");
            assert!(logs.contains("inbound messages are stored again"), "{logs}");
            daemon.signal(libc::SIGTERM);
            daemon.wait_exit(Duration::from_secs(30));
            assert_eq!(integrity(&s.home), "ok");
        },
    );
}

#[test]
fn a_turn_the_disk_filled_under_is_run_again_once_space_is_freed() {
    with_small_fs(
        "32m",
        "disk_full::a_turn_the_disk_filled_under_is_run_again_once_space_is_freed",
        |fs| {
            let s = TelegramHome::inside(fs.path(), "", "");
            // The first model call waits; its answer cannot be stored.
            s.llm.push(Reply::Hang);
            s.llm
                .push(anthropic_text("an answer the full disk swallowed"));
            s.llm.respond_with(|_| anthropic_text("got it"));
            let mut daemon = s.start();
            push(&s, "a question");
            assert!(s.llm.wait_for_requests(1, Duration::from_secs(30)));
            empty_the_log(&s.home);
            fs.fill();
            s.llm.release();
            std::thread::sleep(Duration::from_secs(2));
            assert!(s.sent_to(OWNER).is_empty());
            let logs = daemon.logs().join("\n");
            assert!(logs.contains("cannot store the reply"), "{logs}");

            fs.free();
            let sent = s.wait_sent_to(OWNER, 1);
            assert_eq!(sent.len(), 1, "{sent:#?}");
            assert!(sent[0].text.contains("got it"), "{sent:#?}");
            daemon.signal(libc::SIGTERM);
            daemon.wait_exit(Duration::from_secs(30));
            assert_eq!(integrity(&s.home), "ok");
        },
    );
}

#[test]
fn a_reply_sent_while_the_disk_is_full_is_not_sent_again() {
    with_small_fs(
        "32m",
        "disk_full::a_reply_sent_while_the_disk_is_full_is_not_sent_again",
        |fs| {
            let s = TelegramHome::inside(fs.path(), "", "");
            s.llm.respond_with(|_| anthropic_text("got it"));
            let mut daemon = s.start();
            // Telegram holds the send while the disk fills, so the
            // outbox cannot mark the reply delivered.
            s.telegram.hang(true);
            push(&s, "a question");
            wait_until("the reply's send", || {
                !s.telegram.requests_for("sendMessage").is_empty()
            });
            empty_the_log(&s.home);
            fs.fill();
            s.telegram.hang(false);
            std::thread::sleep(Duration::from_secs(2));
            let sends = s.telegram.requests_for("sendMessage").len();
            assert_eq!(sends, 1, "sent {sends} times while the disk was full");

            fs.free();
            std::thread::sleep(Duration::from_secs(3));
            assert_eq!(s.sent_to(OWNER).len(), 1, "{:#?}", s.sent_to(OWNER));
            let undelivered: i64 = s
                .home
                .db()
                .query_row(
                    "SELECT COUNT(*) FROM outbox WHERE status != 'delivered'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(undelivered, 0);
            daemon.signal(libc::SIGTERM);
            daemon.wait_exit(Duration::from_secs(30));
        },
    );
}

fn push(s: &TelegramHome, text: &str) -> i64 {
    s.telegram.push_message(OWNER, OWNER, text)
}

/// `PRAGMA wal_checkpoint(TRUNCATE)` beside the daemon, until no reader
/// was in the way.
fn empty_the_log(home: &Hearth) {
    let db = home.db();
    wait_until("an empty write-ahead log", || {
        db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        })
        .expect("checkpoint")
            == 0
    });
}

/// The offset of the poller's last `getUpdates`: every update below it is
/// acknowledged.
fn acknowledged_below(s: &TelegramHome) -> i64 {
    s.telegram
        .requests_for("getUpdates")
        .iter()
        .filter_map(|r| r.params["offset"].as_i64())
        .max()
        .unwrap_or(0)
}

/// The Telegram updates in the inbox, in order, each once.
fn stored_updates(home: &Hearth) -> Vec<i64> {
    let db = home.db();
    let mut stmt = db
        .prepare("SELECT idempotency_key FROM inbox WHERE channel = 'telegram' ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|key| key.unwrap().parse().unwrap())
        .collect()
}

fn integrity(home: &Hearth) -> String {
    home.db()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
